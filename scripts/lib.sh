# Shared by every script in scripts/: paths, messages and timing.
# shellcheck shell=bash

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${KBS_WORK:-$TOP/work}
KTREE=${KBS_KTREE:-$WORK/linux}
. "$TOP/scripts/project.conf"

stage_start=$(date +%s)

# ccache's depend mode, for every kernel compile here: on a miss, the
# compiler's own dependency file (kbuild passes -Wp,-MMD) tells ccache the
# headers, instead of a second run of the preprocessor; a miss then costs
# what the bare compile does, not a fifth more CPU, and a cold ccache
# (every CI run) is a miss almost every time. It cannot see the file of an
# .incbin directive: scripts/ccache-cc, build-kernel's CC, compiles such
# sources without ccache.
export CCACHE_DEPEND=${CCACHE_DEPEND:-1}

log() {
	printf '[%s +%ss] %s\n' "${0##*/}" "$(($(date +%s) - stage_start))" "$*" >&2
}

# A script whose standard output is TAP that tap-summary reads calls
# tap_program first, and tap_plan N to start its TAP (the header and the
# plan). From tap_program on, die() also ends that TAP with a "Bail out!"
# line that says why: after a plan of its own (one test, which the
# bail-out fails) when the script had printed none yet.
tap_state=
tap_program() {
	tap_state=unplanned
}
tap_plan() {
	printf 'TAP version 13\n1..%s\n' "$1"
	tap_state=planned
}

die() {
	printf '%s: error: %s\n' "${0##*/}" "$*" >&2
	[ "$tap_state" != unplanned ] || tap_plan 1
	[ -z "$tap_state" ] || echo "Bail out! ${0##*/}: $*"
	exit 1
}

# load_arch NAME: read arches/NAME.conf (build facts of one architecture).
# Its build directory is work/build/NAME, or KBS_BUILD_DIR (a scratch one).
load_arch() {
	local f="$TOP/arches/$1.conf"
	[ -f "$f" ] || die "unknown arch '$1' (no $f)"
	. "$f"
	BUILD_DIR=${KBS_BUILD_DIR:-$WORK/build/$1}
}

# load_machine NAME: read machines/NAME.conf (how to boot one guest). Its
# EACH_PATCH, where it sets one, wins over its arch's. For one run, to
# compare emulators on the same machine (scripts/hang-loop), KBS_QEMU names
# another QEMU binary, which brings its own firmware (QEMU_FIRMWARE is
# dropped), and KBS_ACCEL replaces the "tcg" of its "-accel tcg".
load_machine() {
	local f="$TOP/machines/$1.conf" walk
	[ -f "$f" ] || die "unknown machine '$1' (no $f)"
	unset EACH_PATCH
	. "$f"
	walk=${EACH_PATCH-}
	load_arch "$ARCH_NAME"
	[ -z "$walk" ] || EACH_PATCH=$walk
	if [ -n "${KBS_QEMU:-}" ]; then
		QEMU=$KBS_QEMU
		QEMU_FIRMWARE=
	fi
	[ -z "${KBS_ACCEL:-}" ] || QEMU_ARGS=${QEMU_ARGS/-accel tcg/-accel $KBS_ACCEL}
}

# qemu_command: set QEMU_CMD to the loaded machine's emulator, its firmware
# directories (-L, found before the system QEMU's) and its QEMU_ARGS.
qemu_command() {
	local dir args
	QEMU_CMD=("$QEMU")
	for dir in ${QEMU_FIRMWARE:-}; do
		QEMU_CMD+=(-L "$dir")
	done
	read -ra args <<<"${QEMU_ARGS:-}"
	QEMU_CMD+=("${args[@]}")
}

# worktree_at DIR COMMIT: make DIR a checkout of COMMIT, as a worktree of
# the kernel tree (added the first time, reset to COMMIT every time).
worktree_at() {
	git -C "$KTREE" worktree prune
	if [ ! -e "$1/.git" ]; then
		git -C "$KTREE" worktree add -q --detach "$1" "$2" >/dev/null 2>&1 ||
			die "cannot add the worktree $1"
	fi
	git -C "$1" am --abort >/dev/null 2>&1 || true
	git -C "$1" checkout -q -f --detach "$2" || die "cannot check out $2 in $1"
}

# base_worktree DIR: make DIR a checkout of the base (worktree_at).
base_worktree() { worktree_at "$1" "$BASE_TAG"; }

# all_confs arch|machine: the names of every arches/ (or machines/) conf.
all_confs() {
	local dir=$TOP/arches
	[ "$1" = arch ] || dir=$TOP/machines
	(cd "$dir" && ls -- *.conf | sed 's/\.conf$//')
}

# walked_confs arch|machine: the names of the arches/ (or machines/) confs
# that the per-patch walk builds (or boots): all but those with EACH_PATCH=no.
walked_confs() {
	local name
	for name in $(all_confs "$1"); do
		if ("load_$1" "$name" && [ "${EACH_PATCH:-yes}" = yes ]); then
			echo "$name"
		fi
	done
}

# apt_private DIR TYPE SUITE: a private apt configuration in $WORK/DIR with
# the single source "TYPE <mirror> SUITE main" (TYPE deb or deb-src), and its
# lists updated. The mirror is one this machine's apt already uses: its
# Debian security mirror for a suite named *-security (or
# $KBS_SECURITY_MIRROR), its main Debian mirror for any other, such as
# bookworm-backports (or $KBS_DEBIAN_MIRROR). The system's apt sources are
# only read, never changed. Sets APT_DIR, APT_MIRROR and APT_OPTS (the
# options that make apt-get use it).
apt_private() {
	local mirrors
	APT_DIR=$WORK/$1
	mirrors=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)')
	case $3 in
	*-security) APT_MIRROR=${KBS_SECURITY_MIRROR:-$(awk '$2 ~ /-security$/ { print $1; exit }' <<<"$mirrors")} ;;
	*) APT_MIRROR=${KBS_DEBIAN_MIRROR:-$(awk '$2 !~ /-(security|updates|backports)$/ { print $1; exit }' <<<"$mirrors")} ;;
	esac
	[ -n "$APT_MIRROR" ] ||
		die "no Debian mirror for $3 in this machine's apt configuration; set KBS_SECURITY_MIRROR or KBS_DEBIAN_MIRROR"
	mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
	echo "$2 [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $APT_MIRROR $3 main" \
		>"$APT_DIR/sources.list"
	APT_OPTS=(-q -o Dir::Etc::SourceList="$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache"
		-o APT::Sandbox::User=root -o APT::Update::Error-Mode=any)
	log "apt-get update of $3 from $APT_MIRROR"
	apt-get "${APT_OPTS[@]}" update >"$APT_DIR/update.log" 2>&1 ||
		die "cannot reach the Debian archive at $APT_MIRROR ($3): see $APT_DIR/update.log"
}

# verify_sha256 FILE SUM: stop unless FILE's sha256 is the pinned SUM.
verify_sha256() {
	local sum
	sum=$(sha256sum "$1" | cut -d' ' -f1)
	[ "$sum" = "$2" ] ||
		die "$1 has sha256 $sum, expected $2 (pinned in scripts/project.conf): refusing it. Delete the file to download it again."
}

# fetch_deb SUITE PACKAGE VERSION SHA256 DEB: download PACKAGE=VERSION from
# Debian's SUITE with apt's own client (apt_private, in $WORK/apt-SUITE)
# into DEB, unless DEB is there; either way, stop unless its sha256 is the
# pinned SHA256.
fetch_deb() {
	local dl
	if [ -f "$5" ]; then
		verify_sha256 "$5" "$4"
		return
	fi
	[ "${APT_DIR:-}" = "$WORK/apt-$1" ] || apt_private "apt-$1" deb "$1"
	mkdir -p "$WORK/cache"
	dl=$(mktemp -d "$WORK/cache/download.XXXXXX")
	log "apt-get download $2=$3"
	if ! (cd "$dl" && apt-get "${APT_OPTS[@]}" download "$2=$3") >"$APT_DIR/download-$2.log" 2>&1; then
		rm -rf "$dl"
		die "$2 $3 is not available from $APT_MIRROR $1: see $APT_DIR/download-$2.log"
	fi
	verify_sha256 "$dl"/*.deb "$4"
	mv "$dl"/*.deb "$5"
	rm -rf "$dl"
}

# initramfs_root DIR BUSYBOX INIT APPLET...: a fresh busybox root in DIR:
# /bin/busybox (a copy of BUSYBOX) with a link per APPLET, INIT as /init,
# /dev/console and empty /dev, /proc, /sys, /tmp.
initramfs_root() {
	local root=$1 bb=$2 init=$3 applet
	shift 3
	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,tmp}
	mknod "$root/dev/console" c 5 1
	cp "$bb" "$root/bin/busybox"
	for applet in "$@"; do
		ln -s busybox "$root/bin/$applet"
	done
	cp "$init" "$root/init"
}

# initramfs_pack DIR CPIO: DIR as an uncompressed newc cpio, owned by root.
initramfs_pack() {
	(cd "$1" && find . | sort | cpio -o -H newc --quiet -R 0:0) >"$2"
}

# mail_headers FILE: the header lines of the mail in FILE, folded lines
# joined (format-patch folds long From:, To: and Cc: headers).
mail_headers() {
	sed -n '/^$/q; p' "$1" | sed -e ':a' -e 'N; $!ba' -e 's/\n[ \t]\+/ /g'
}

# mail_header FILE NAME: the value of header NAME of the mail in FILE.
mail_header() {
	mail_headers "$1" | sed -n "s/^$2: //p"
}

# gate_confs GATE: the arches/ confs that review gate GATE (W=1, sparse,
# libgcc) checks: those of the per-patch walk, and the others whose
# EXTRA_GATES names GATE.
gate_confs() {
	local name
	walked_confs arch
	for name in $(all_confs arch); do
		if (load_arch "$name" && [ "${EACH_PATCH:-yes}" != yes ] &&
			[[ " ${EXTRA_GATES:-} " == *" $1 "* ]]); then
			echo "$name"
		fi
	done
}

# kvm_dirs: the make targets that compile an arch's KVM directories
# (arch/*/kvm/, which also builds virt/kvm/) after load_arch, modules
# included: a directory target compiles obj-m objects only with
# KBUILD_MODULES=1, and KVM is a module in several configs.
kvm_dirs() {
	echo "KBUILD_MODULES=1 arch/$(arch_srcdir)/kvm/"
}

# arch_srcdir: the directory under arch/ that load_arch's KARCH builds.
arch_srcdir() {
	case $KARCH in x86_64 | i386) echo x86 ;; *) echo "$KARCH" ;; esac
}

# without_positions TREE: build-log lines (stdin) as reports that compare
# across commits: TREE's prefix, the ../ hops of a virt/kvm file built from
# arch/*/kvm/, and line and column numbers dropped ("path: message").
without_positions() {
	sed -E "s#$1/##g; s#^([^:]*/)?arch/[a-z0-9]+/kvm/\.\./\.\./\.\./##;
		s#^([^: ]+):[0-9]+(:[0-9]+)?(-[0-9]+)?: #\1: #"
}

# kernel_unchanged COMMIT: COMMIT (in the kernel tree) changes only files
# that no kernel build reads (Documentation/, tools/testing/), so its
# kernels are its parent's.
kernel_unchanged() {
	! command git -C "$KTREE" diff-tree --no-commit-id --name-only -r "$1" |
		grep -qvE '^(Documentation|tools/testing)/'
}

# kernel_unchanged_for SRCDIR COMMIT: COMMIT changes no file that a build
# for arch/SRCDIR reads: only Documentation/, tools/testing/ and the arch/
# directories of other architectures, so that arch's kernels are its
# parent's.
kernel_unchanged_for() {
	command git -C "$KTREE" diff-tree --no-commit-id --name-only -r "$2" |
		awk -v own="arch/$1/" '!/^(Documentation|tools\/testing)\// &&
			(!/^arch\// || index($0, own) == 1) { read = 1 } END { exit read }'
}

# moved_build_dir OLD NEW: NEW is a copy of the build directory OLD (cp -a):
# make it build incrementally there. Kbuild's own objects name the output
# directory relatively, but the host tools built under tools/ (objtool)
# record OLD in their commands and dependencies; left so, make rebuilds
# objtool in NEW, and a new objtool rebuilds every object that it checks,
# which for x86 is the whole kernel.
moved_build_dir() {
	[ -d "$2/tools" ] || return 0
	# The paths as plain strings (a sed pattern would read '.', '#' or '&').
	grep -rlIZF -- "$1" "$2/tools" |
		KBS_OLD=$1 KBS_NEW=$2 xargs -0r perl -pi -e 's/\Q$ENV{KBS_OLD}\E/$ENV{KBS_NEW}/g'
}

# drain_screen TERMINAL: read, in the background, the pty on which
# Bochs's term display draws the VGA screen, and throw it away. Bochs makes
# that pty itself and names it on its own terminal, TERMINAL here ('Bochs
# connected to screen "/dev/pts/N"'), for a user to attach to. Unread, it
# fills after some minutes of redraws, and Bochs then waits in write() for
# good: the guest's clock stops with it, so no time limit inside the guest
# can end the run. Prints the reader's pid; nothing while TERMINAL does not
# name the pty yet.
drain_screen() {
	local pts
	pts=$(grep -a -o -m1 'connected to screen "/dev/pts/[0-9]*"' "$1" 2>/dev/null) || return 0
	pts=${pts#*\"}
	pts=${pts%\"}
	# Raw, and no echo back to Bochs: every byte is read as it comes.
	stty -F "$pts" raw -echo 2>/dev/null || true
	cat "$pts" >/dev/null 2>&1 &
	echo $!
}

# regress_lines NAMES LIST: the lines of a regress.list (build-tests
# regress) that run one of NAMES: a selftest's name, or a unit test's as
# unittests.cfg names it (its line is "kut-run NAME").
regress_lines() {
	awk -v want="$1" 'BEGIN { gsub(/[ \t\n]+/, " ", want); want = " " want " " }
		{ name = $1 == "kut-run" ? $2 : $1 }
		index(want, " " name " ")' "$2"
}

# regress_list LIST FIT TESTS: what a guest of make regress runs of LIST
# (a regress.list): the lines that both FIT (the machine's REGRESS_FIT)
# and TESTS (the run's REGRESS_TESTS) name, an empty one naming every
# test. LIST is only read.
regress_list() {
	local names lines
	lines=$(cat "$1")
	for names in "$2" "$3"; do
		[ -z "${names//[[:space:]]/}" ] ||
			lines=$(regress_lines "$names" /dev/stdin <<<"$lines")
	done
	[ -z "$lines" ] || printf '%s\n' "$lines"
}

# regress_unknown LIST NAMES: the NAMES (a machine's REGRESS_FIT) that no
# line of LIST runs, one a line. LIST is the series head's list, which has
# every test: the base lacks the series' own.
regress_unknown() {
	local name
	for name in $2; do
		[ -n "$(regress_lines "$name" "$1")" ] || echo "$name"
	done
}
