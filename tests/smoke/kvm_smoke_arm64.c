// SPDX-License-Identifier: GPL-2.0
/*
 * arm64 smoke test: a guest stores 'K' and 'V' to an unbacked address (two
 * MMIO exits), then asks PSCI for SYSTEM_OFF through HVC. Checks that KVM
 * reports both MMIO writes with those bytes, then a shutdown system event.
 * Exit status 0 on success, 1 on any mismatch.
 */
#include "kvm_vm.h"

static const uint32_t guest_code[] = {
	0xd2a40000,	/* mov  x0, #0x20000000 (MMIO_GPA) */
	0xd2800961,	/* mov  x1, #'K' */
	0xf9000001,	/* str  x1, [x0] */
	0xd2800ac1,	/* mov  x1, #'V' */
	0xf9000001,	/* str  x1, [x0] */
	0xd2800100,	/* mov  x0, #0x8 */
	0xf2b08000,	/* movk x0, #0x8400, lsl #16: PSCI 0.2 SYSTEM_OFF */
	0xd4000002,	/* hvc  #0 */
	0x14000000,	/* b    . */
};

#define CODE_GPA 0x10000
#define MMIO_GPA 0x20000000

static void expect_mmio(struct vm *vm, char byte)
{
	struct kvm_run *run = vm->run;
	unsigned int reason = vm_run(vm);

	if (reason != KVM_EXIT_MMIO)
		fail("exit reason %u, expected KVM_EXIT_MMIO (%u)", reason, KVM_EXIT_MMIO);
	if (run->mmio.phys_addr != MMIO_GPA || !run->mmio.is_write || run->mmio.len != 8)
		fail("MMIO exit at %#llx write %u len %u, expected a write of 8 at %#x",
		     (unsigned long long)run->mmio.phys_addr, run->mmio.is_write,
		     run->mmio.len, MMIO_GPA);
	if (run->mmio.data[0] != byte)
		fail("guest wrote '%c', expected '%c'", run->mmio.data[0], byte);
	printf("# MMIO exit: write '%c' at %#x\n", run->mmio.data[0], MMIO_GPA);
}

int main(void)
{
	unsigned int reason;
	struct vm vm;

	vm_create(&vm, CODE_GPA, guest_code, sizeof(guest_code));
	vm_arm64_vcpu_init(vm.vm_fd, vm.vcpu_fd, CODE_GPA, 1u << KVM_ARM_VCPU_PSCI_0_2);

	expect_mmio(&vm, 'K');
	expect_mmio(&vm, 'V');
	reason = vm_run(&vm);
	if (reason != KVM_EXIT_SYSTEM_EVENT)
		fail("exit reason %u, expected KVM_EXIT_SYSTEM_EVENT (%u)",
		     reason, KVM_EXIT_SYSTEM_EVENT);
	if (vm.run->system_event.type != KVM_SYSTEM_EVENT_SHUTDOWN)
		fail("system event %u, expected KVM_SYSTEM_EVENT_SHUTDOWN (%u)",
		     vm.run->system_event.type, KVM_SYSTEM_EVENT_SHUTDOWN);
	printf("# PSCI SYSTEM_OFF: shutdown event\n");
	return 0;
}
