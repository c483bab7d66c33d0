# Shared by every script in scripts/: paths, messages and timing.
# shellcheck shell=bash

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${KBS_WORK:-$TOP/work}
KTREE=${KBS_KTREE:-$WORK/linux}
. "$TOP/scripts/project.conf"

stage_start=$(date +%s)

log() {
	printf '[%s +%ss] %s\n' "${0##*/}" "$(($(date +%s) - stage_start))" "$*" >&2
}

die() {
	printf '%s: error: %s\n' "${0##*/}" "$*" >&2
	exit 1
}

# load_arch NAME: read arches/NAME.conf (build facts of one architecture).
load_arch() {
	local f="$TOP/arches/$1.conf"
	[ -f "$f" ] || die "unknown arch '$1' (no $f)"
	. "$f"
	BUILD_DIR=$WORK/build/$1
}

# load_machine NAME: read machines/NAME.conf (how to boot one QEMU guest).
load_machine() {
	local f="$TOP/machines/$1.conf"
	[ -f "$f" ] || die "unknown machine '$1' (no $f)"
	. "$f"
	load_arch "$ARCH_NAME"
}

# base_worktree DIR: make DIR a checkout of the base, as a worktree of the
# kernel tree (added the first time, reset to the base every time).
base_worktree() {
	git -C "$KTREE" worktree prune
	if [ ! -e "$1/.git" ]; then
		git -C "$KTREE" worktree add -q --detach "$1" "$BASE_TAG" >/dev/null 2>&1 ||
			die "cannot add the worktree $1"
	fi
	git -C "$1" am --abort >/dev/null 2>&1 || true
	git -C "$1" checkout -q -f --detach "$BASE_TAG" || die "cannot check out $BASE_TAG in $1"
}

# walked_confs arch|machine: the names of the arches/ (or machines/) confs
# that the per-patch walk builds (or boots): all but those with EACH_PATCH=no.
walked_confs() {
	local dir=$TOP/arches name
	[ "$1" = arch ] || dir=$TOP/machines
	for name in $(cd "$dir" && ls | sed 's/\.conf$//'); do
		if ("load_$1" "$name" && [ "${EACH_PATCH:-yes}" = yes ]); then
			echo "$name"
		fi
	done
}
