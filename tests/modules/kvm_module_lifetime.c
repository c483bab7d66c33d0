// SPDX-License-Identifier: GPL-2.0
/*
 * Module lifetime of the stats fds, in a guest whose KVM is built as modules
 * (the distro machine). For a VM stats fd, then a vCPU stats fd:
 *  - open it, then close every other KVM fd (VM, vCPU, /dev/kvm, kvm_run);
 *  - the stats fd holds a reference on kvm.ko, where its file operations
 *    live (the VM it holds keeps the vendor module);
 *  - unloading the vendor module and kvm.ko must fail: rmmod says the module
 *    is in use (its EBUSY), and delete_module(2) itself, asked not to
 *    wait, answers EWOULDBLOCK; the stats fd must still read a whole,
 *    well-formed file;
 *  - once it is closed, both modules unload, load again, and a new VM runs
 *    real guest code.
 * The vendor module is whichever of kvm_amd and kvm_intel is loaded (the
 * distro machine's and the VMX machine's). The modules come from
 * $KBS_MODDIR/lib/modules/<release>/kernel/arch/x86/kvm.
 * Exit status 0 on success, 1 on any mismatch.
 */
#include "kvm_vm.h"

#include <sys/syscall.h>
#include <sys/utsname.h>

#define CODE_GPA 0x1000

static const uint8_t guest_code[] = {
	0xba, 0xf8, 0x03,	/* mov $0x3f8, %dx */
	0xb0, 'K',		/* mov $'K', %al */
	0xee,			/* out %al, (%dx) */
	0xf4,			/* hlt */
};

static char kvm_ko[512], vendor_ko[512];
static const char *vendor;

/*
 * rmmod @name must fail, saying the module is in use: kmod's rmmod says so
 * in words, busybox's gives delete_module()'s EWOULDBLOCK.
 */
static void rmmod_refused(const char *name, const char *what)
{
	char cmd[128], out[512] = "";
	size_t n;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "rmmod %s 2>&1", name);
	p = popen(cmd, "r");
	if (!p)
		fail("popen %s: %s", cmd, strerror(errno));
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	st = pclose(p);
	if (st == 0 || (!strstr(out, "is in use") && !strstr(out, strerror(EWOULDBLOCK))))
		fail("%s open: 'rmmod %s' gave status %d and '%s', expected 'in use'",
		     what, name, st, out);
}

/* delete_module(2) without waiting: 0 or the errno. */
static int unload(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? errno : 0;
}

static void load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	if (syscall(SYS_finit_module, fd, "", 0))
		fail("finit_module %s: %s", path, strerror(errno));
	close(fd);
}

static int module_loaded(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return access(path, F_OK) == 0;
}

/* The reference count of a loaded module, from sysfs. */
static long refcnt(const char *name)
{
	char path[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt", name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &n) != 1)
		fail("cannot read %s", path);
	fclose(f);
	return n;
}

/* A new VM whose vCPU runs until its first port I/O exit. */
static void vm_start(struct vm *vm)
{
	unsigned int reason;

	vm_create(vm, CODE_GPA, guest_code, sizeof(guest_code));
	vm_x86_real_mode_at(vm, CODE_GPA);
	reason = vm_run(vm);
	if (reason != KVM_EXIT_IO || vm->run->io.port != 0x3f8)
		fail("exit reason %u, expected KVM_EXIT_IO on port 0x3f8", reason);
}

/* Close every fd and mapping of @vm, so that only stats fds hold the VM. */
static void vm_close(struct vm *vm)
{
	int run_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);

	if (run_size <= 0 || munmap(vm->run, run_size))
		fail("unmap kvm_run: %s", strerror(errno));
	close(vm->vcpu_fd);
	close(vm->vm_fd);
	close(vm->kvm_fd);
}

/* Read the whole stats file at @fd and check that it is well-formed. */
static void read_stats(int fd, const char *what)
{
	struct kvm_stats_header h;
	char id[256] = "";
	ssize_t end, n;
	char *buf;

	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		fail("%s: reading the header: %s", what, strerror(errno));
	if (h.num_desc == 0 || h.id_offset != sizeof(h) || h.data_offset <= h.desc_offset)
		fail("%s: bad header (%u descriptors, id at %u, data at %u)", what,
		     h.num_desc, h.id_offset, h.data_offset);
	if (h.name_size == 0 || h.name_size >= sizeof(id) ||
	    pread(fd, id, h.name_size, h.id_offset) != (ssize_t)h.name_size || strncmp(id, "kvm-", 4))
		fail("%s: id '%s' does not start with 'kvm-'", what, id);
	/* The data block ends the file: read past it and see the end. */
	end = h.data_offset + 65536;
	buf = calloc(1, end);
	if (!buf)
		fail("out of memory");
	n = pread(fd, buf, end, 0);
	if (n <= (ssize_t)h.data_offset || n >= end)
		fail("%s: whole read gave %zd bytes, data starts at %u", what, n, h.data_offset);
	printf("# %s '%s' reads %zd bytes with the modules pinned\n", what, id, n);
	free(buf);
}

static void check(const char *what, unsigned long stats_ioctl_on_vcpu)
{
	long kvm_refs = refcnt("kvm");
	struct vm vm;
	int stats, e;

	vm_start(&vm);
	stats = xioctl(stats_ioctl_on_vcpu ? vm.vcpu_fd : vm.vm_fd, KVM_GET_STATS_FD, NULL,
		       "KVM_GET_STATS_FD");
	vm_close(&vm);
	if (refcnt("kvm") != kvm_refs + 1)
		fail("%s open: kvm.ko has %ld references, %ld without it: the fd does not pin kvm.ko",
		     what, refcnt("kvm"), kvm_refs);

	rmmod_refused(vendor, what);
	rmmod_refused("kvm", what);
	e = unload(vendor);
	if (e != EWOULDBLOCK)
		fail("%s open: unloading %s gave '%s', expected EWOULDBLOCK", what, vendor, strerror(e));
	e = unload("kvm");
	if (e != EWOULDBLOCK)
		fail("%s open: unloading kvm gave '%s', expected EWOULDBLOCK", what, strerror(e));
	if (!module_loaded(vendor) || !module_loaded("kvm"))
		fail("%s open: a module went away", what);
	printf("# %s open: rmmod of %s and kvm says 'in use', delete_module EWOULDBLOCK\n",
	       what, vendor);
	read_stats(stats, what);
	close(stats);

	e = unload(vendor);
	if (e)
		fail("%s closed: unloading %s: %s", what, vendor, strerror(e));
	e = unload("kvm");
	if (e)
		fail("%s closed: unloading kvm: %s", what, strerror(e));
	if (module_loaded(vendor) || module_loaded("kvm"))
		fail("%s closed: the modules are still in /sys/module after unloading", what);
	load(kvm_ko);
	load(vendor_ko);
	vm_start(&vm);
	vm_close(&vm);
	printf("# %s closed: both modules unloaded, loaded again, a new VM ran\n", what);
}

int main(void)
{
	const char *dir = getenv("KBS_MODDIR");
	struct utsname u;

	if (!dir)
		fail("KBS_MODDIR is not set: this test needs a kernel with KVM as modules");
	vendor = module_loaded("kvm_intel") ? "kvm_intel" : "kvm_amd";
	if (!module_loaded(vendor) || !module_loaded("kvm"))
		fail("%s and kvm are not loaded as modules", vendor);
	uname(&u);
	snprintf(kvm_ko, sizeof(kvm_ko), "%s/lib/modules/%s/kernel/arch/x86/kvm/kvm.ko",
		 dir, u.release);
	snprintf(vendor_ko, sizeof(vendor_ko), "%s/lib/modules/%s/kernel/arch/x86/kvm/%s.ko",
		 dir, u.release, strcmp(vendor, "kvm_intel") ? "kvm-amd" : "kvm-intel");
	check("VM stats fd", 0);
	check("vCPU stats fd", 1);
	return 0;
}
