# Sourced by the gate fault tests (tests/gate-faults/), after tap.sh and
# scripts/lib.sh: put the kernel tree on a scratch branch, kbs-gate-fault, at
# the series head, with a fixed identity for the commits a test plants on
# it, and go back to the series branch (the scratch one deleted) on exit,
# whatever happens. series/ is never touched. A test that builds a kernel
# calls scratch_build first, so that no planted kernel is left behind; one
# that then only boots it calls release_tree once its kernel and tests are
# built.
# shellcheck shell=bash
git() { command git -C "$KTREE" "$@"; }
[ -z "$(git status --porcelain)" ] || die "$KTREE has uncommitted changes"
export GIT_AUTHOR_NAME="Gate Fault" GIT_AUTHOR_EMAIL="fault@kvm-binary-stats.invalid"
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
git checkout -q -B kbs-gate-fault "$SERIES_BRANCH" || die "cannot make a scratch branch"
# shellcheck disable=SC2154 # scratch comes from tap.sh
trap 'git checkout -q -f "$SERIES_BRANCH"; git branch -q -D kbs-gate-fault; rm -rf "$scratch"' EXIT

# release_tree: done with the kernel tree (the planted kernel and its tests
# are built): put it back on the series branch now, not on exit, and say so
# by creating the file KBS_TREE_RELEASED names, if any. make check then
# starts the next fault test on the tree while this one boots its guests.
release_tree() {
	if ! git checkout -q -f "$SERIES_BRANCH" || ! git branch -q -D kbs-gate-fault; then
		die "cannot put $KTREE back on $SERIES_BRANCH"
	fi
	trap 'rm -rf "$scratch"' EXIT
	[ -z "${KBS_TREE_RELEASED:-}" ] || : >"$KBS_TREE_RELEASED"
}

# scratch_build ARCH: build (and boot) ARCH in a copy of work/build/ARCH
# under $scratch, removed on exit, so that work/build/ARCH keeps the
# series' kernel; the copy keeps the builds incremental. KEPT is that
# kernel image's checksum (vmlinux for an arch with no bootable image), for
# kept_intact, which fails when there was none.
scratch_build() {
	local real=$WORK/build/$1
	mkdir -p "$scratch/kbuild"
	[ ! -d "$real" ] || cp -a "$real/." "$scratch/kbuild/"
	export KBS_BUILD_DIR=$scratch/kbuild
	moved_build_dir "$real" "$KBS_BUILD_DIR"
	KEPT_IMAGE=$real/$(load_arch "$1" && echo "${KERNEL_IMAGE:-vmlinux}")
	KEPT=$(sha256sum "$KEPT_IMAGE" 2>/dev/null)
}

# kept_intact: the check that the real build directory's kernel is untouched.
kept_intact() {
	check "the planted kernel was built in a scratch directory, not in ${KEPT_IMAGE#"$WORK"/}" \
		test -n "$KEPT" -a "$(sha256sum "$KEPT_IMAGE" 2>/dev/null)" = "$KEPT"
}

# plant_u64_division: commit, on the scratch branch, an exported function
# in virt/kvm that divides a u64 with '/': on i386 a call to libgcc's
# __udivdi3, which kvm.ko cannot link against.
plant_u64_division() {
	cat >>"$KTREE/virt/kvm/binary_stats.c" <<'PLANT'

u64 kvm_stats_planted_div(u64 sum, u32 n)
{
	return sum / n;
}
EXPORT_SYMBOL_GPL(kvm_stats_planted_div);
PLANT
	git commit -q -a -m "KVM: planted: a u64 divided with '/'"
}
