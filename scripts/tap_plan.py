"""The TAP of a Python script that tap-summary reads, as lib.sh's
tap_program and tap_plan give it to the shell scripts: importing this
module makes an uncaught exception end the script's TAP with a
"Bail out!" line that says why (after a plan of its own, one test that
the bail-out fails, when the script had printed none yet); plan(N) prints
the TAP header and the plan."""
import os
import sys
import traceback

_planned = False


def plan(n):
    """Print the TAP header and a plan of n tests."""
    global _planned
    print("TAP version 13")
    print("1..%d" % n)
    _planned = True


def _bail_out(kind, value, tb):
    traceback.print_exception(kind, value, tb)
    if not _planned:
        plan(1)
    print("Bail out! %s: %s: %s" % (os.path.basename(sys.argv[0]), kind.__name__, value))
    sys.stdout.flush()


sys.excepthook = _bail_out
