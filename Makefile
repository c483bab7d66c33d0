# kvm-binary-stats: the commands of the README. Everything downloaded or
# built goes to work/ (ignored by git). Each target installs the Debian
# packages it needs on first use.
S := scripts
ARCHES_BOOTED := x86_64 x86_64-distro arm64
ARCHES_COMPILED := mips powerpc-book3s powerpc-booke s390

.PHONY: help deps base tree export checkpatch each-patch review check run bench libvirt \
	$(addprefix kernel-,$(ARCHES_BOOTED) $(ARCHES_COMPILED)) \
	$(addprefix tests-,$(ARCHES_BOOTED)) initramfs-arm64 initramfs-x86_64-distro compile-others \
	boot-x86_64 boot-x86_64-distro boot-x86_64-vmx boot-arm64-vhe boot-arm64-nvhe harness-tests soak hang-loop fresh-machine zero-day \
	regress faults \
	warnings-accepted

help:
	@echo "make run     build and boot the x86_64 kernel with the series; QEMU runs a VM there: its KVM stats"
	@echo "make check   every test: harness, round trip, builds, guests, compile-only arches, review gates"
	@echo "make bench   what the stats fd costs next to debugfs, the base and Debian's 6.1 (7 min; 2 once the base is built)"
	@echo "make libvirt libvirt's virsh domstats --vm --vcpu on the series, in the x86_64 guest"
	@echo "make review  the review gates only: bisect, checkpatch, sparse, W=1, kernel-doc, docs, debug boot, mail, link"
	@echo "make faults  every gate fault test, the heavy ones too (planted kernels built and booted)"
	@echo "make zero-day  the kernel test robot's builds (i386, clang, randconfig, ...) at every patch"
	@echo "make regress KVM's own suites (selftests, kvm-unit-tests) on the base and the series head"
	@echo "make tree    kernel git tree in work/linux: pinned base + series/"
	@echo "make export  write the tree's commits back to series/"

# Debian's packages, and the x86 guests' QEMU 10.0 (unpacked in work/qemu).
deps:
	@$(S)/install-deps
	@$(S)/fetch-qemu >/dev/null

base: deps
	@$(S)/fetch-base >/dev/null

tree: base
	@$(S)/make-base-tree
	@$(S)/apply-series

export:
	@$(S)/export-series

checkpatch: tree
	@$(S)/gates/checkpatch-series

# series/warnings-accepted: the W=1 and sparse reports at the head that the
# base has too, which gates 3 and 4 accept (the bases are built for it).
warnings-accepted: deps tree
	@$(S)/accept-warnings

each-patch: deps tree
	@$(S)/gates/check-each-patch

$(addprefix kernel-,$(ARCHES_BOOTED) $(ARCHES_COMPILED)): kernel-%: tree
	@$(S)/build-kernel $*

$(addprefix tests-,$(ARCHES_BOOTED)): tests-%: kernel-%
	@$(S)/build-tests $*

initramfs-arm64: tests-arm64
	@$(S)/make-initramfs arm64

initramfs-x86_64-distro: tests-x86_64-distro
	@$(S)/make-initramfs x86_64-distro

compile-others: $(addprefix kernel-,$(ARCHES_COMPILED))

boot-x86_64 boot-x86_64-distro: boot-%: tests-%
	@$(S)/boot $* tests.list
	@$(S)/tap-summary work/results/$*.log

# kvm_intel, under Bochs (machines/x86_64-vmx.conf).
boot-x86_64-vmx: initramfs-x86_64-distro
	@$(S)/boot x86_64-vmx tests.list
	@$(S)/tap-summary work/results/x86_64-vmx.log

boot-arm64-vhe boot-arm64-nvhe: boot-arm64-%: initramfs-arm64
	@$(S)/boot arm64-$* tests.list
	@$(S)/tap-summary work/results/arm64-$*.log

# Not part of make check: every 5.10 KVM selftest and (x86_64)
# kvm-unit-tests on the base and on the series head, side by side, judged
# against contract/regress.tsv (scripts/regress; MACHINES="..." to choose,
# REGRESS_TESTS="..." for only some tests).
regress: deps tree
	@$(S)/regress $(MACHINES)

# Not part of make check: 20 boots of the x86_64 guest and 10 of the Intel
# machine (Bochs) beside a kernel build, and the stages up to the first boot
# in a minimal Debian 12 root.
soak: tests-x86_64 initramfs-x86_64-distro
	@$(S)/soak x86_64 20; rc=$$?; $(S)/soak x86_64-vmx 10 || rc=1; exit $$rc

# Not part of make check: the stress suite's case 1 (nested guests in a
# loop) 50 times in the debug guest beside a CPU hog, counting what the
# emulator did to them (scripts/hang-loop; MACHINE=, RUNS= to change).
hang-loop: tree
	@$(S)/build-kernel $(or $(MACHINE),x86_64-debug) && $(S)/build-tests $(or $(MACHINE),x86_64-debug)
	@$(S)/hang-loop $(or $(MACHINE),x86_64-debug) $(or $(RUNS),50)

fresh-machine:
	@$(S)/check-fresh-machine

# Not part of make check: the kernel test robot's build matrix
# (arches/zero-day.cells) at every patch, then the i386 cell shown failing
# on a planted division; CELLS="..." runs only those cells.
zero-day: tree
	@$(S)/install-deps zero-day
	@$(S)/zero-day $(CELLS); rc=$$?; \
	tests/zero-day/planted-division-fails-i386-cell >work/results/zero-day-planted.tap 2>&1; \
	$(S)/tap-summary work/results/zero-day-planted.tap || rc=1; exit $$rc

harness-tests:
	@set -e; for t in tests/harness/test-*; do echo "== $$t"; $$t; done

run: tests-x86_64
	@$(S)/boot x86_64 demo.list work/results/run.log
	@tr -d '\r' <work/results/run.log | sed -n 's/^# //p' | sed '1,/^1 /d'
	@$(S)/tap-summary work/results/run.log

# libvirt's domstats in the x86_64 distro guest, alone (make check's distro
# guest runs it after QEMU's checks).
libvirt: deps tests-x86_64-distro
	@$(S)/boot x86_64-distro libvirt.list work/results/libvirt.log
	@$(S)/tap-summary work/results/libvirt.log

# The benchmark: our kernel, the base (built here) and Debian's 6.1, 3 boots
# each, alternating; the table and the plot land in work/bench/results/full.
bench: deps kernel-x86_64
	@$(S)/bench

review: deps
	@$(S)/check review

# Not part of make check (its light fault tests are): every gate fault
# test, those that build and boot a planted kernel included, after the
# distro and debug kernels they copy (results in work/results/faults).
faults: deps
	@$(S)/check faults

check: deps
	@$(S)/check
