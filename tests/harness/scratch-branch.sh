# Sourced by the gate fault tests (tests/gate-faults/), after tap.sh and
# scripts/lib.sh: put the kernel tree on a scratch branch, kbs-gate-fault, at
# the series head, with a fixed identity for the commits a test plants on
# it, and go back to the series branch (the scratch one deleted) on exit,
# whatever happens. series/ is never touched.
# shellcheck shell=bash
git() { command git -C "$KTREE" "$@"; }
[ -z "$(git status --porcelain)" ] || die "$KTREE has uncommitted changes"
export GIT_AUTHOR_NAME="Gate Fault" GIT_AUTHOR_EMAIL="fault@kvm-binary-stats.invalid"
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
git checkout -q -B kbs-gate-fault "$SERIES_BRANCH" || die "cannot make a scratch branch"
# shellcheck disable=SC2154 # scratch comes from tap.sh
trap 'git checkout -q -f "$SERIES_BRANCH"; git branch -q -D kbs-gate-fault; rm -rf "$scratch"' EXIT
