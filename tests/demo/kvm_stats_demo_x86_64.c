// SPDX-License-Identifier: GPL-2.0
/*
 * The demo behind `make run`: a small x86_64 guest writes 50 bytes to port
 * 0x3f8 and halts. While that VM is still alive, print its KVM statistics as
 * a table. The stats come from the VM's debugfs directory
 * (/sys/kernel/debug/kvm/<pid>-<vm fd>/), the only source the base kernel has.
 */
#include <dirent.h>
#include "kvm_vm.h"

#define LOOPS 1000

static const uint8_t guest_code[] = {
	0xba, 0xf8, 0x03,	/* mov $0x3f8, %dx */
	0xb9, LOOPS & 0xff, LOOPS >> 8,	/* mov $LOOPS, %cx */
	0xb0, 0x00,		/* mov $0, %al */
	0xee,			/* 1: out %al, (%dx) */
	0xfe, 0xc0,		/* inc %al */
	0xe2, 0xfb,		/* loop 1b */
	0xf4,			/* hlt */
};

#define CODE_GPA 0x1000

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void print_debugfs_stats(int vm_fd)
{
	struct dirent **names;
	char dir[128], path[512], value[64];
	int i, n;

	snprintf(dir, sizeof(dir), "/sys/kernel/debug/kvm/%d-%d", getpid(), vm_fd);
	n = scandir(dir, &names, NULL, by_name);
	if (n < 0)
		fail("scandir %s: %s (is debugfs mounted?)", dir, strerror(errno));
	printf("KVM statistics of VM %s (debugfs)\n", dir);
	printf("%-32s %20s\n", "stat", "value");
	for (i = 0; i < n; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		f = fopen(path, "r");
		/* Skip sub-directories (vcpuN) and anything unreadable. */
		if (f && fgets(value, sizeof(value), f)) {
			value[strcspn(value, "\n")] = 0;
			printf("%-32s %20s\n", names[i]->d_name, value);
		}
		if (f)
			fclose(f);
		free(names[i]);
	}
	free(names);
}

int main(void)
{
	unsigned int reason, io_exits = 0;
	struct vm vm;

	vm_create(&vm, CODE_GPA, guest_code, sizeof(guest_code));
	vm_x86_real_mode_at(&vm, CODE_GPA);

	while ((reason = vm_run(&vm)) == KVM_EXIT_IO)
		io_exits++;
	if (reason != KVM_EXIT_HLT || io_exits != LOOPS)
		fail("guest ended with exit reason %u after %u port writes, expected HLT after %u",
		     reason, io_exits, LOOPS);
	printf("guest wrote %u bytes to port 0x3f8 and halted\n", io_exits);
	print_debugfs_stats(vm.vm_fd);
	return 0;
}
