// SPDX-License-Identifier: GPL-2.0
/*
 * x86_64 smoke test: a real-mode guest writes 'K' and 'V' to port 0x3f8 and
 * halts. Checks that KVM reports exactly two port I/O exits with those bytes,
 * then a HLT exit. Exit status 0 on success, 1 on any mismatch.
 */
#include "kvm_vm.h"

static const uint8_t guest_code[] = {
	0xba, 0xf8, 0x03,	/* mov $0x3f8, %dx */
	0xb0, 'K',		/* mov $'K', %al */
	0xee,			/* out %al, (%dx) */
	0xb0, 'V',		/* mov $'V', %al */
	0xee,			/* out %al, (%dx) */
	0xf4,			/* hlt */
};

#define CODE_GPA 0x1000

static void expect_io(struct vm *vm, char byte)
{
	struct kvm_run *run = vm->run;
	unsigned int reason = vm_run(vm);
	char got;

	if (reason != KVM_EXIT_IO)
		fail("exit reason %u, expected KVM_EXIT_IO (%u)", reason, KVM_EXIT_IO);
	if (run->io.direction != KVM_EXIT_IO_OUT || run->io.port != 0x3f8 ||
	    run->io.size != 1 || run->io.count != 1)
		fail("I/O exit dir %u port %#x size %u count %u, expected out 0x3f8 1 1",
		     run->io.direction, run->io.port, run->io.size, run->io.count);
	got = *((char *)run + run->io.data_offset);
	if (got != byte)
		fail("guest wrote '%c', expected '%c'", got, byte);
	printf("# port I/O exit: out 0x3f8 '%c'\n", got);
}

int main(void)
{
	unsigned int reason;
	struct vm vm;

	vm_create(&vm, CODE_GPA, guest_code, sizeof(guest_code));
	vm_x86_real_mode_at(&vm, CODE_GPA);

	expect_io(&vm, 'K');
	expect_io(&vm, 'V');
	reason = vm_run(&vm);
	if (reason != KVM_EXIT_HLT)
		fail("exit reason %u, expected KVM_EXIT_HLT (%u)", reason, KVM_EXIT_HLT);
	printf("# HLT exit\n");
	return 0;
}
