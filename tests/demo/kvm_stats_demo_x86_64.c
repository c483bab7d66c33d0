// SPDX-License-Identifier: GPL-2.0
/*
 * Run by `make check` (`make run` shows tests/guest/kvm-qemu-stats's table
 * instead): a small x86_64 guest writes LOOPS bytes to port 0x3f8 and
 * halts. While that VM is still alive, print its KVM statistics as a table,
 * and check that io_exits counted every port write that reached us.
 *
 * With KVM_CAP_BINARY_STATS_FD the stats come from KVM_GET_STATS_FD on the
 * VM and the vCPU; on a kernel without it (the bare 5.10 base), from the
 * VM's debugfs directory (/sys/kernel/debug/kvm/<pid>-<vm fd>/). It is built
 * against the build machine's own <linux/kvm.h>, a recent upstream one, so
 * it also shows that upstream's userspace ABI reads our stats: every stat
 * must decode, with those headers, to a known type, unit and base, and to a
 * size that fits its type (one value, or the buckets of a histogram, with a
 * bucket width for linear histograms only); booleans must be 0 or 1.
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

static const char *const type_names[] = { "cumulative", "instant", "peak",
					  "linear-hist", "log-hist" };
static const char *const unit_names[] = { "", "bytes", "seconds", "cycles", "boolean" };

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Print every stat of the VM's debugfs directory; return io_exits. */
static uint64_t print_debugfs_stats(int vm_fd)
{
	uint64_t io_exits = UINT64_MAX;
	struct dirent **names;
	char dir[128], path[512], value[64];
	int i, n;

	snprintf(dir, sizeof(dir), "/sys/kernel/debug/kvm/%d-%d", getpid(), vm_fd);
	n = scandir(dir, &names, NULL, by_name);
	if (n < 0)
		fail("scandir %s: %s (is debugfs mounted?)", dir, strerror(errno));
	printf("KVM statistics of the VM, from debugfs (%s)\n", dir);
	printf("%-32s %20s\n", "stat", "value");
	for (i = 0; i < n; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		f = fopen(path, "r");
		/* Skip sub-directories (vcpuN) and anything unreadable. */
		if (f && fgets(value, sizeof(value), f)) {
			value[strcspn(value, "\n")] = 0;
			printf("%-32s %20s\n", names[i]->d_name, value);
			if (!strcmp(names[i]->d_name, "io_exits"))
				io_exits = strtoull(value, NULL, 10);
		}
		if (f)
			fclose(f);
		free(names[i]);
	}
	free(names);
	return io_exits;
}

static void xpread(int fd, void *buf, size_t size, off_t offset)
{
	ssize_t r = pread(fd, buf, size, offset);

	if (r != (ssize_t)size)
		fail("pread(%zu bytes at %lld): %zd (%s)", size, (long long)offset, r,
		     r < 0 ? strerror(errno) : "short read");
}

/* Print every stat of one binary stats file; return io_exits if it has it. */
static uint64_t print_binary_stats(int fd)
{
	uint64_t io_exits = UINT64_MAX, v[64];
	unsigned int i, b, per_type[8] = { 0 }, booleans = 0;
	struct kvm_stats_header h;
	size_t desc_size;
	char id[256], *descs;

	xpread(fd, &h, sizeof(h), 0);
	if (h.name_size == 0 || h.name_size > sizeof(id))
		fail("stats header: name_size %u", h.name_size);
	xpread(fd, id, h.name_size, h.id_offset);
	id[h.name_size - 1] = 0;
	desc_size = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = malloc(h.num_desc * desc_size);
	if (!descs)
		fail("malloc");
	xpread(fd, descs, h.num_desc * desc_size, h.desc_offset);

	printf("\n%s: %u stats (KVM_GET_STATS_FD)\n", id, h.num_desc);
	printf("%-32s %-11s %-8s %20s\n", "stat", "type", "unit", "value");
	for (i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(descs + i * desc_size);
		unsigned int type = (d->flags & KVM_STATS_TYPE_MASK) >> KVM_STATS_TYPE_SHIFT;
		unsigned int unit = (d->flags & KVM_STATS_UNIT_MASK) >> KVM_STATS_UNIT_SHIFT;
		unsigned int base = d->flags & KVM_STATS_BASE_MASK;
		int hist = (d->flags & KVM_STATS_TYPE_MASK) == KVM_STATS_TYPE_LINEAR_HIST ||
			   (d->flags & KVM_STATS_TYPE_MASK) == KVM_STATS_TYPE_LOG_HIST;
		uint64_t sum = 0;
		char shown[48];

		if (type > KVM_STATS_TYPE_MAX >> KVM_STATS_TYPE_SHIFT ||
		    unit > KVM_STATS_UNIT_MAX >> KVM_STATS_UNIT_SHIFT ||
		    base > KVM_STATS_BASE_MAX)
			fail("%s: unknown type %u, unit %u or base %#x", d->name, type, unit, base);
		if (hist ? d->size < 2 || d->size > 64 : d->size != 1)
			fail("%s: size %u for a %s stat", d->name, d->size, type_names[type]);
		if (((d->flags & KVM_STATS_TYPE_MASK) == KVM_STATS_TYPE_LINEAR_HIST) !=
		    (d->bucket_size != 0))
			fail("%s: bucket_size %u for a %s stat", d->name, d->bucket_size,
			     type_names[type]);
		xpread(fd, v, d->size * sizeof(v[0]), h.data_offset + d->offset);
		if ((d->flags & KVM_STATS_UNIT_MASK) == KVM_STATS_UNIT_BOOLEAN) {
			if (v[0] > 1 || d->exponent)
				fail("%s: boolean %llu, exponent %d", d->name,
				     (unsigned long long)v[0], d->exponent);
			booleans++;
		}
		per_type[type]++;
		if (hist) {
			for (b = 0; b < d->size; b++)
				sum += v[b];
			snprintf(shown, sizeof(shown), "%llu in %u buckets",
				 (unsigned long long)sum, d->size);
		} else if (d->exponent) {
			snprintf(shown, sizeof(shown), "%llue%d", (unsigned long long)v[0],
				 d->exponent);
		} else {
			snprintf(shown, sizeof(shown), "%llu", (unsigned long long)v[0]);
		}
		printf("%-32s %-11s %-8s %20s\n", d->name, type_names[type], unit_names[unit],
		       shown);
		if (!strcmp(d->name, "io_exits"))
			io_exits = v[0];
	}
	printf("decoded %u stats: %u cumulative, %u instant, %u peak, %u linear-hist, "
	       "%u log-hist; %u boolean\n", h.num_desc, per_type[0], per_type[1],
	       per_type[2], per_type[3], per_type[4], booleans);
	free(descs);
	return io_exits;
}

int main(void)
{
	unsigned int reason, io_exits_seen = 0;
	uint64_t io_exits;
	struct vm vm;

	vm_create(&vm, CODE_GPA, guest_code, sizeof(guest_code));
	vm_x86_real_mode_at(&vm, CODE_GPA);
	while ((reason = vm_run(&vm)) == KVM_EXIT_IO)
		io_exits_seen++;
	if (reason != KVM_EXIT_HLT || io_exits_seen != LOOPS)
		fail("guest ended with exit reason %u after %u port writes, expected HLT after %u",
		     reason, io_exits_seen, LOOPS);
	printf("guest wrote %u bytes to port 0x3f8 and halted\n", io_exits_seen);

	if (ioctl(vm.kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_BINARY_STATS_FD) > 0) {
		print_binary_stats(xioctl(vm.vm_fd, KVM_GET_STATS_FD, NULL, "KVM_GET_STATS_FD (VM)"));
		io_exits = print_binary_stats(xioctl(vm.vcpu_fd, KVM_GET_STATS_FD, NULL,
						     "KVM_GET_STATS_FD (vCPU)"));
	} else {
		io_exits = print_debugfs_stats(vm.vm_fd);
	}
	if (io_exits != io_exits_seen)
		fail("io_exits is %llu, but %u port writes reached userspace",
		     (unsigned long long)io_exits, io_exits_seen);
	return 0;
}
