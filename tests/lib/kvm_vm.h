/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal KVM helpers shared by the in-guest programs (smoke test, demo,
 * benchmark, stress suite): one VM, one memory slot holding guest code,
 * one vCPU, and each arch's vCPU setup. Every failure exits with a
 * message; these programs have nothing to clean up.
 */
#ifndef KBS_KVM_VM_H
#define KBS_KVM_VM_H

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

struct vm {
	int kvm_fd;
	int vm_fd;
	int vcpu_fd;
	struct kvm_run *run;
};

/*
 * What fail() starts its line with. A program whose own TAP a harness reads
 * sets "Bail out! " once it has printed its plan, so that the reason it
 * stops is on the line that says so.
 */
static const char *fail_prefix = "# FAIL: ";

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s", fail_prefix);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	exit(1);
}

static int xioctl(int fd, unsigned long req, void *arg, const char *what)
{
	int r = ioctl(fd, req, arg);

	if (r < 0)
		fail("%s: %s", what, strerror(errno));
	return r;
}

/* Create a VM whose 64 KiB of memory at guest_phys start with image; no vCPU yet. */
static inline void vm_create_vm(struct vm *vm, uint64_t guest_phys, const void *image, size_t len)
{
	struct kvm_userspace_memory_region region = { 0 };
	size_t mem_size = 0x10000;
	void *mem;

	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0)
		fail("open /dev/kvm: %s", strerror(errno));
	if (ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		fail("KVM_GET_API_VERSION is not %d", KVM_API_VERSION);
	vm->vm_fd = xioctl(vm->kvm_fd, KVM_CREATE_VM, 0, "KVM_CREATE_VM");

	mem = mmap(NULL, mem_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		fail("mmap guest memory: %s", strerror(errno));
	memcpy(mem, image, len);
	region.guest_phys_addr = guest_phys;
	region.memory_size = mem_size;
	region.userspace_addr = (uintptr_t)mem;
	xioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region, "KVM_SET_USER_MEMORY_REGION");
}

/* Add the VM's vCPU 0 and map its kvm_run. */
static inline void vm_add_vcpu(struct vm *vm)
{
	int run_size;

	vm->vcpu_fd = xioctl(vm->vm_fd, KVM_CREATE_VCPU, 0, "KVM_CREATE_VCPU");
	run_size = xioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0, "KVM_GET_VCPU_MMAP_SIZE");
	vm->run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu_fd, 0);
	if (vm->run == MAP_FAILED)
		fail("mmap kvm_run: %s", strerror(errno));
}

/* Create a VM whose memory at guest_phys holds code, and one vCPU. */
static inline void vm_create(struct vm *vm, uint64_t guest_phys, const void *code, size_t len)
{
	vm_create_vm(vm, guest_phys, code, len);
	vm_add_vcpu(vm);
}

/* Run the vCPU until its next exit to userspace; return the exit reason. */
static inline unsigned int vm_run(struct vm *vm)
{
	xioctl(vm->vcpu_fd, KVM_RUN, NULL, "KVM_RUN");
	return vm->run->exit_reason;
}

#ifdef __x86_64__
/* Start the vCPU of vcpu_fd in real mode at guest physical address rip (CS base 0). */
static inline void vcpu_x86_real_mode_at(int vcpu_fd, uint64_t rip)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs = { 0 };

	xioctl(vcpu_fd, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	xioctl(vcpu_fd, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS");
	regs.rip = rip;
	regs.rflags = 0x2;
	xioctl(vcpu_fd, KVM_SET_REGS, &regs, "KVM_SET_REGS");
}

/* The same for the VM's vCPU 0. */
static inline void vm_x86_real_mode_at(struct vm *vm, uint64_t rip)
{
	vcpu_x86_real_mode_at(vm->vcpu_fd, rip);
}
#endif

#ifdef __aarch64__
/* The ONE_REG id of the program counter. */
#define ARM64_REG_PC (KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | \
		      (offsetof(struct kvm_regs, regs.pc) / sizeof(uint32_t)))

/* Initialise the vCPU as the host prefers, plus features; start it at pc. */
static inline void vm_arm64_vcpu_init(int vm_fd, int vcpu_fd, uint64_t pc, uint32_t features)
{
	struct kvm_vcpu_init init;
	struct kvm_one_reg reg = {
		.id = ARM64_REG_PC,
		.addr = (uintptr_t)&pc,
	};

	xioctl(vm_fd, KVM_ARM_PREFERRED_TARGET, &init, "KVM_ARM_PREFERRED_TARGET");
	init.features[0] |= features;
	xioctl(vcpu_fd, KVM_ARM_VCPU_INIT, &init, "KVM_ARM_VCPU_INIT");
	xioctl(vcpu_fd, KVM_SET_ONE_REG, &reg, "KVM_SET_ONE_REG(pc)");
}
#endif

#endif
