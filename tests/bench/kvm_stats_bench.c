// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_stats_bench: what reading KVM's statistics costs, run inside a guest
 * by scripts/bench. Built statically against the build machine's own
 * <linux/kvm.h> (a recent upstream one), so the same binary runs on our
 * 5.10 with the series, on the bare 5.10 base (which has no stats fd: those
 * figures are left out) and on Debian's 6.1.
 *
 * Each figure is one line "bench NAME KEY=VALUE ...", times in ns per
 * operation (a mean over the iterations, after an untimed warm-up):
 *   fd_sample n=N        one pread of the data block of the VM's stats fd
 *                        and of each of its N vCPUs' (the whole sample)
 *   debugfs_sample n=N   open, read, parse and close every file of the VM's
 *                        debugfs directory
 *   copy_stats, copy_tmpfs  one pread of a vCPU's data block, and of as
 *                        many bytes of a file on tmpfs
 *   exit_loop            one KVM_RUN that ends in an I/O exit (OUT)
 *   hlt_timer            one HLT woken by the in-kernel LAPIC timer (50 us)
 *   getppid              a system call that does not touch KVM (a control)
 *   fd_memory            slab bytes per stats fd, over rounds of 1000 fds
 * The last line is "bench checksum", a sum of everything read, so that no
 * read can be left out. Every system call is checked; any failure ends the
 * run with "# FAIL:" and exit status 1, and so does a KVM_RUN that does not
 * return within 10 s (with the vCPU's registers and LAPIC state).
 *
 * Usage: kvm_stats_bench [-s] ("-s": the smoke mode of make check, with
 * one vCPU count and a few hundred iterations).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <time.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "kvm_vm.h"

#define MAX_VCPUS 64
#define GUEST_CODE 0x1000
#define GUEST_MEM 0x10000
#define PORT_EXIT 0x10
#define PORT_HALTS 0x11
#define TIMER_VECTOR 0x20
#define FD_MEMORY_FDS 1000
#define FD_MEMORY_ROUNDS 4

static int smoke;
static uint64_t checksum;

/* Guest code, 16-bit real mode, copied to GUEST_CODE. */
extern const uint8_t exit_guest[], exit_guest_end[];
extern const uint8_t hlt_guest[], hlt_handler[], hlt_guest_end[];
asm(".pushsection .rodata\n"
    ".code16\n"
    /* Exit loop: every OUT is an exit to userspace. */
    "exit_guest:\n"
    "1:	outb %al, $" "0x10" "\n"
    "	jmp 1b\n"
    "exit_guest_end:\n"
    /*
     * HLT loop: x2APIC on, LAPIC timer one-shot on vector 0x20; then, %ebp
     * times, arm the timer for %esi ns (the APIC bus runs at 1 GHz in KVM),
     * halt until it fires; then one OUT to userspace, and again.
     */
    "hlt_guest:\n"
    "	movl $0x1b, %ecx\n"		/* IA32_APIC_BASE: x2APIC */
    "	rdmsr\n"
    "	orl $0xc00, %eax\n"
    "	wrmsr\n"
    "	xorl %edx, %edx\n"
    "	movl $0x80f, %ecx\n"		/* spurious vector register: enable */
    "	movl $0x1ff, %eax\n"
    "	wrmsr\n"
    "	movl $0x83e, %ecx\n"		/* timer divide: by 1 */
    "	movl $0xb, %eax\n"
    "	wrmsr\n"
    "	movl $0x832, %ecx\n"		/* LVT timer: one-shot, vector 0x20 */
    "	movl $0x20, %eax\n"
    "	wrmsr\n"
    "2:	movl %ebp, %edi\n"
    "3:	movl $0x838, %ecx\n"		/* initial count */
    "	movl %esi, %eax\n"
    "	xorl %edx, %edx\n"
    "	wrmsr\n"
    "	sti\n"
    "hlt_insn:\n"
    "	hlt\n"
    "	cli\n"
    "	decl %edi\n"
    "	jnz 3b\n"
    "	outb %al, $0x11\n"
    "	jmp 2b\n"
    "hlt_handler:\n"
    "	pushl %eax\n"
    "	pushl %ecx\n"
    "	pushl %edx\n"
    "	movl $0x80b, %ecx\n"		/* EOI */
    "	xorl %eax, %eax\n"
    "	xorl %edx, %edx\n"
    "	wrmsr\n"
    /*
     * Taken before the HLT (TCG's nested SVM can deliver it inside the STI
     * shadow): return past the HLT, which would otherwise wait for a timer
     * that already fired.
     */
    "	cmpw $(0x1000 + hlt_insn - hlt_guest), 12(%esp)\n"
    "	jne 4f\n"
    "	incw 12(%esp)\n"
    "4:\n"
    "	popl %edx\n"
    "	popl %ecx\n"
    "	popl %eax\n"
    "	iret\n"
    "hlt_guest_end:\n"
    ".code64\n"
    ".popsection\n");

static uint64_t now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		fail("clock_gettime: %s", strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Iterations: the full count, or a fiftieth of it (at least 5) for -s. */
static unsigned int iters(unsigned int full)
{
	unsigned int n = smoke ? full / 50 : full;

	return n < 5 ? 5 : n;
}

static void xpread(int fd, void *buf, size_t len, off_t off, const char *what)
{
	ssize_t r = pread(fd, buf, len, off);

	if (r < 0)
		fail("pread %s: %s", what, strerror(errno));
	if ((size_t)r != len)
		fail("pread %s: %zd bytes, expected %zu", what, r, len);
}

static void xclose(int fd, const char *what)
{
	if (close(fd))
		fail("close %s: %s", what, strerror(errno));
}

static void sum_block(const void *buf, size_t len)
{
	const uint64_t *v = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		checksum += v[i];
}

/* A stats fd and where its data block is. */
struct stats_fd {
	int fd;
	off_t data_offset;
	size_t data_size;
};

static int have_stats_fd(int kvm_fd)
{
#ifdef KVM_CAP_BINARY_STATS_FD
	return ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_BINARY_STATS_FD) > 0;
#else
	(void)kvm_fd;
	return 0;
#endif
}

/* Open the stats fd of a VM or vCPU fd; find its data block's size from the descriptors. */
static void stats_open(struct stats_fd *s, int fd, const char *what)
{
	struct kvm_stats_header h;
	struct kvm_stats_desc *d;
	size_t desc_size, end = 0;
	char *descs;
	uint32_t i;

	s->fd = xioctl(fd, KVM_GET_STATS_FD, NULL, what);
	xpread(s->fd, &h, sizeof(h), 0, "stats header");
	desc_size = sizeof(*d) + h.name_size;
	descs = malloc(desc_size * h.num_desc);
	if (!descs)
		fail("out of memory");
	xpread(s->fd, descs, desc_size * h.num_desc, h.desc_offset, "stats descriptors");
	for (i = 0; i < h.num_desc; i++) {
		d = (struct kvm_stats_desc *)(descs + i * desc_size);
		if (d->offset + d->size * 8u > end)
			end = d->offset + d->size * 8u;
	}
	free(descs);
	if (!end)
		fail("%s: no stats", what);
	s->data_offset = h.data_offset;
	s->data_size = end;
}

/* A VM with n vCPUs (not run), and its debugfs directory's files. */
struct sample_vm {
	int vm_fd;
	int vcpu_fd[MAX_VCPUS];
	int n;
	struct stats_fd stats[MAX_VCPUS + 1];
	char dir[64];
	char (*files)[64];
	int nfiles;
};

static void sample_vm_create(struct sample_vm *vm, int kvm_fd, int n, int fds)
{
	struct dirent *e;
	struct stat st;
	char path[384];
	DIR *d;
	int i;

	vm->n = n;
	vm->vm_fd = xioctl(kvm_fd, KVM_CREATE_VM, 0, "KVM_CREATE_VM");
	for (i = 0; i < n; i++)
		vm->vcpu_fd[i] = xioctl(vm->vm_fd, KVM_CREATE_VCPU, (void *)(long)i, "KVM_CREATE_VCPU");
	if (fds) {
		stats_open(&vm->stats[0], vm->vm_fd, "KVM_GET_STATS_FD (VM)");
		for (i = 0; i < n; i++)
			stats_open(&vm->stats[i + 1], vm->vcpu_fd[i], "KVM_GET_STATS_FD (vCPU)");
	}

	snprintf(vm->dir, sizeof(vm->dir), "/sys/kernel/debug/kvm/%d-%d", getpid(), vm->vm_fd);
	d = opendir(vm->dir);
	if (!d)
		fail("opendir %s: %s", vm->dir, strerror(errno));
	vm->files = NULL;
	vm->nfiles = 0;
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", vm->dir, e->d_name);
		if (stat(path, &st))
			fail("stat %s: %s", path, strerror(errno));
		if (!S_ISREG(st.st_mode) || !(st.st_mode & 0444))
			continue;
		vm->files = realloc(vm->files, (vm->nfiles + 1) * sizeof(*vm->files));
		if (!vm->files)
			fail("out of memory");
		if (strlen(e->d_name) >= sizeof(*vm->files))
			fail("debugfs file name too long: %s", e->d_name);
		strcpy(vm->files[vm->nfiles++], e->d_name);
	}
	if (closedir(d))
		fail("closedir %s: %s", vm->dir, strerror(errno));
	if (!vm->nfiles)
		fail("no files in %s", vm->dir);
}

static void sample_vm_destroy(struct sample_vm *vm, int fds)
{
	int i;

	for (i = 0; fds && i <= vm->n; i++)
		xclose(vm->stats[i].fd, "stats fd");
	for (i = 0; i < vm->n; i++)
		xclose(vm->vcpu_fd[i], "vCPU fd");
	xclose(vm->vm_fd, "VM fd");
	free(vm->files);
}

/* One sample through the stats fds: one pread of each data block. */
static void fd_sample(struct sample_vm *vm, uint64_t *buf)
{
	int i;

	for (i = 0; i <= vm->n; i++) {
		xpread(vm->stats[i].fd, buf, vm->stats[i].data_size, vm->stats[i].data_offset, "stats data");
		sum_block(buf, vm->stats[i].data_size);
	}
}

/* One sample through debugfs: open, read, parse and close every file. */
static void debugfs_sample(struct sample_vm *vm)
{
	char path[160], text[64];	/* dir is 64 bytes, a file name 64 */
	ssize_t r;
	int i, fd;

	for (i = 0; i < vm->nfiles; i++) {
		snprintf(path, sizeof(path), "%s/%s", vm->dir, vm->files[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fail("open %s: %s", path, strerror(errno));
		r = read(fd, text, sizeof(text) - 1);
		if (r < 0)
			fail("read %s: %s", path, strerror(errno));
		text[r] = 0;
		checksum += strtoull(text, NULL, 0);
		xclose(fd, path);
	}
}

static void bench_sampling(int kvm_fd, int fds)
{
	static uint64_t buf[65536 / 8];
	struct sample_vm vm;
	unsigned int i, k;
	uint64_t t0, t1, t2;
	int n, max = smoke ? 1 : MAX_VCPUS;

	for (n = 1; n <= max; n *= 2) {
		unsigned int nfd = iters(20000 / (n + 1) + 200), ndbg = iters(200);

		sample_vm_create(&vm, kvm_fd, n, fds);
		for (i = 0; fds && i <= (unsigned int)vm.n; i++)
			if (vm.stats[i].data_size > sizeof(buf))
				fail("a data block of %zu bytes", vm.stats[i].data_size);
		for (k = 0; k < 2; k++) {	/* k == 0: warm-up */
			unsigned int m = k ? 1 : 10;

			t0 = now_ns();
			for (i = 0; fds && i < nfd / m; i++)
				fd_sample(&vm, buf);
			t1 = now_ns();
			for (i = 0; i < ndbg / m; i++)
				debugfs_sample(&vm);
			t2 = now_ns();
		}
		if (fds)
			printf("bench fd_sample n=%d ns=%llu fds=%d iterations=%u\n", n,
			       (unsigned long long)((t1 - t0) / nfd), n + 1, nfd);
		printf("bench debugfs_sample n=%d ns=%llu files=%d iterations=%u\n", n,
		       (unsigned long long)((t2 - t1) / ndbg), vm.nfiles, ndbg);
		sample_vm_destroy(&vm, fds);
	}
}

/* One pread of a vCPU's data block, and of as many bytes from tmpfs. */
static void bench_copy(int kvm_fd)
{
	static uint64_t buf[65536 / 8];
	unsigned int i, n = iters(20000);
	struct sample_vm vm;
	uint64_t t0, t1, t2;
	size_t len;
	int tmp;

	sample_vm_create(&vm, kvm_fd, 1, 1);
	len = vm.stats[1].data_size;
	tmp = open("/tmp/kvm_stats_bench.copy", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (tmp < 0)
		fail("open /tmp/kvm_stats_bench.copy: %s", strerror(errno));
	memset(buf, 0x5a, len);
	if (pwrite(tmp, buf, len, 0) != (ssize_t)len)
		fail("pwrite /tmp/kvm_stats_bench.copy: %s", strerror(errno));
	for (i = 0; i < n / 10; i++) {
		xpread(vm.stats[1].fd, buf, len, vm.stats[1].data_offset, "vCPU data");
		xpread(tmp, buf, len, 0, "tmpfs file");
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		xpread(vm.stats[1].fd, buf, len, vm.stats[1].data_offset, "vCPU data");
		checksum += buf[0];
	}
	t1 = now_ns();
	for (i = 0; i < n; i++) {
		xpread(tmp, buf, len, 0, "tmpfs file");
		checksum += buf[0];
	}
	t2 = now_ns();
	printf("bench copy_stats ns=%llu bytes=%zu iterations=%u\n",
	       (unsigned long long)((t1 - t0) / n), len, n);
	printf("bench copy_tmpfs ns=%llu bytes=%zu iterations=%u\n",
	       (unsigned long long)((t2 - t1) / n), len, n);
	xclose(tmp, "/tmp/kvm_stats_bench.copy");
	if (unlink("/tmp/kvm_stats_bench.copy"))
		fail("unlink /tmp/kvm_stats_bench.copy: %s", strerror(errno));
	sample_vm_destroy(&vm, 1);
}

/* The HLT loop's VM: one real-mode vCPU with the in-kernel LAPIC. */
static void hlt_vm_create(struct vm *vm, const uint8_t *code, size_t len)
{
	uint16_t handler = GUEST_CODE + (hlt_handler - hlt_guest);
	static uint8_t image[GUEST_MEM];
	struct kvm_cpuid2 *cpuid;

	if (GUEST_CODE + len > sizeof(image))
		fail("the HLT guest does not fit");
	memcpy(image + GUEST_CODE, code, len);
	/* Real-mode vector table entry: offset, then segment 0. */
	memcpy(image + TIMER_VECTOR * 4, &handler, 2);
	vm_create_vm(vm, 0, image, GUEST_CODE + len);
	xioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, NULL, "KVM_CREATE_IRQCHIP");
	vm_add_vcpu(vm);
	/* Whatever KVM supports, x2APIC among it. */
	cpuid = calloc(1, sizeof(*cpuid) + 256 * sizeof(cpuid->entries[0]));
	if (!cpuid)
		fail("out of memory");
	cpuid->nent = 256;
	xioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid, "KVM_GET_SUPPORTED_CPUID");
	xioctl(vm->vcpu_fd, KVM_SET_CPUID2, cpuid, "KVM_SET_CPUID2");
	free(cpuid);
	vm_x86_real_mode_at(vm, GUEST_CODE);
}

static void run_vm_destroy(struct vm *vm)
{
	xclose(vm->vcpu_fd, "vCPU fd");
	xclose(vm->vm_fd, "VM fd");
	xclose(vm->kvm_fd, "/dev/kvm");
}

static void on_alarm(int sig)
{
	(void)sig;	/* only to interrupt KVM_RUN */
}

/* What the vCPU was doing when its KVM_RUN did not return in time. */
static void __attribute__((noreturn)) stuck(struct vm *vm, unsigned int seconds)
{
	struct kvm_vcpu_events ev;
	struct kvm_lapic_state lapic;
	struct kvm_regs regs;
	uint32_t *apic = (uint32_t *)lapic.regs;

	xioctl(vm->vcpu_fd, KVM_GET_REGS, &regs, "KVM_GET_REGS");
	xioctl(vm->vcpu_fd, KVM_GET_VCPU_EVENTS, &ev, "KVM_GET_VCPU_EVENTS");
	printf("# stuck: rip 0x%llx rflags 0x%llx edi %llu; interrupt injected %u nr 0x%x shadow %u; nmi %u\n",
	       (unsigned long long)regs.rip, (unsigned long long)regs.rflags, (unsigned long long)regs.rdi,
	       ev.interrupt.injected, ev.interrupt.nr, ev.interrupt.shadow, ev.nmi.pending);
	if (ioctl(vm->vcpu_fd, KVM_GET_LAPIC, &lapic) == 0)
		printf("# stuck: LAPIC SVR 0x%x LVTT 0x%x TMICT %u TMCCT %u ISR1 0x%x IRR1 0x%x\n",
		       apic[0xf0 / 4], apic[0x320 / 4], apic[0x380 / 4], apic[0x390 / 4],
		       apic[0x110 / 4], apic[0x210 / 4]);
	fail("KVM_RUN did not return in %u s", seconds);
}

/*
 * Run until the next exit, which must be an OUT to port. A KVM_RUN that
 * does not return within 10 s is a hang: say where the vCPU was, and fail.
 */
static void run_to_port(struct vm *vm, uint16_t port)
{
	static int armed;
	unsigned int reason;
	int r;

	if (!armed) {
		struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */

		if (sigaction(SIGALRM, &sa, NULL))
			fail("sigaction: %s", strerror(errno));
		armed = 1;
	}
	alarm(10);
	r = ioctl(vm->vcpu_fd, KVM_RUN, NULL);
	alarm(0);
	if (r < 0 && errno == EINTR)
		stuck(vm, 10);
	if (r < 0)
		fail("KVM_RUN: %s", strerror(errno));
	reason = vm->run->exit_reason;
	if (reason != KVM_EXIT_IO || vm->run->io.port != port)
		fail("exit reason %u (port 0x%x), expected an OUT to 0x%x", reason,
		     reason == KVM_EXIT_IO ? vm->run->io.port : 0, port);
}

/* ns for n runs to port, after n / 10 untimed ones. */
static uint64_t time_runs(struct vm *vm, uint16_t port, unsigned int n)
{
	unsigned int i;
	uint64_t t0;

	for (i = 0; i < n / 10; i++)
		run_to_port(vm, port);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		run_to_port(vm, port);
	return now_ns() - t0;
}

static void bench_exit_loop(void)
{
	unsigned int n = iters(5000);
	uint64_t ns;
	struct vm vm;

	vm_create(&vm, GUEST_CODE, exit_guest, exit_guest_end - exit_guest);
	vm_x86_real_mode_at(&vm, GUEST_CODE);
	ns = time_runs(&vm, PORT_EXIT, n);
	checksum += vm.run->io.port;
	printf("bench exit_loop ns=%llu iterations=%u\n", (unsigned long long)(ns / n), n);
	run_vm_destroy(&vm);
}

static void bench_hlt_timer(void)
{
	unsigned int exits = iters(200), halts = 10, period_ns = 50000;
	struct kvm_regs regs;
	uint64_t ns;
	struct vm vm;

	hlt_vm_create(&vm, hlt_guest, hlt_guest_end - hlt_guest);
	xioctl(vm.vcpu_fd, KVM_GET_REGS, &regs, "KVM_GET_REGS");
	regs.rsi = period_ns;
	regs.rbp = halts;
	regs.rsp = 0x8000;
	xioctl(vm.vcpu_fd, KVM_SET_REGS, &regs, "KVM_SET_REGS");
	ns = time_runs(&vm, PORT_HALTS, exits);
	checksum += vm.run->io.port;
	printf("bench hlt_timer ns=%llu timer_ns=%u iterations=%u\n",
	       (unsigned long long)(ns / (exits * halts)), period_ns, exits * halts);
	run_vm_destroy(&vm);
}

static void bench_getppid(void)
{
	unsigned int i, n = iters(100000);
	uint64_t t0, t1;

	t0 = now_ns();
	for (i = 0; i < n; i++)
		checksum += getppid();
	t1 = now_ns();
	printf("bench getppid ns=%llu iterations=%u\n", (unsigned long long)((t1 - t0) / n), n);
}

/* Slab bytes in use: SReclaimable + SUnreclaim of /proc/meminfo. */
static uint64_t slab_bytes(void)
{
	char line[128];
	unsigned long long kb, total = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		fail("open /proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SReclaimable: %llu kB", &kb) == 1 ||
		    sscanf(line, "SUnreclaim: %llu kB", &kb) == 1)
			total += kb * 1024;
	fclose(f);
	if (!total)
		fail("no slab figures in /proc/meminfo");
	return total;
}

/* Objects in use per slab cache (/proc/slabinfo), into names/objs/size. */
#define MAX_CACHES 512
struct slabs {
	int n;
	char name[MAX_CACHES][40];
	long long objs[MAX_CACHES];
	long long size[MAX_CACHES];
};

static int slabinfo(struct slabs *s)
{
	char line[512];
	FILE *f = fopen("/proc/slabinfo", "r");

	s->n = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && s->n < MAX_CACHES) {
		if (line[0] == '#' || !strncmp(line, "slabinfo", 8))
			continue;
		if (sscanf(line, "%39s %lld %*d %lld", s->name[s->n], &s->objs[s->n], &s->size[s->n]) == 3)
			s->n++;
	}
	fclose(f);
	return 1;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* The median of FD_MEMORY_ROUNDS - 1 values (rounds 2 and later). */
static long long median_rounds(long long *v)
{
	qsort(v + 1, FD_MEMORY_ROUNDS - 1, sizeof(*v), cmp_ll);
	return v[1 + (FD_MEMORY_ROUNDS - 1) / 2];
}

/*
 * Slab bytes per stats fd: FD_MEMORY_ROUNDS rounds, each opening
 * FD_MEMORY_FDS more stats fds of one VM (all kept open), slab usage read
 * before and after each. The first round refills the partly used slabs
 * that were there before; the median of the others is the figure.
 */
static void bench_fd_memory(int kvm_fd)
{
	static int fds[FD_MEMORY_ROUNDS * FD_MEMORY_FDS];
	static struct slabs before, after;
	static long long grew[MAX_CACHES][FD_MEMORY_ROUNDS];
	long long bytes[FD_MEMORY_ROUNDS], b0, b1;
	int vm_fd, i, j, r, have, total = FD_MEMORY_ROUNDS * FD_MEMORY_FDS;
	struct rlimit lim;

	/* Room for the fds, and the fd table grown first: its growth is not the stats fds' cost. */
	if (getrlimit(RLIMIT_NOFILE, &lim))
		fail("getrlimit: %s", strerror(errno));
	if (lim.rlim_cur < (rlim_t)total + 128) {
		lim.rlim_cur = total + 128;
		if (lim.rlim_max < lim.rlim_cur)
			lim.rlim_max = lim.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &lim))
			fail("setrlimit RLIMIT_NOFILE %d: %s", total + 128, strerror(errno));
	}
	if (dup2(kvm_fd, total + 64) < 0)
		fail("dup2: %s", strerror(errno));
	xclose(total + 64, "dup2'ed fd");
	vm_fd = xioctl(kvm_fd, KVM_CREATE_VM, 0, "KVM_CREATE_VM");
	/* The caches' names, in the order of the last reading. */
	have = slabinfo(&after);
	for (r = 0; r < FD_MEMORY_ROUNDS; r++) {
		before = after;
		b0 = slab_bytes();
		for (i = r * FD_MEMORY_FDS; i < (r + 1) * FD_MEMORY_FDS; i++)
			fds[i] = xioctl(vm_fd, KVM_GET_STATS_FD, NULL, "KVM_GET_STATS_FD");
		b1 = slab_bytes();
		slabinfo(&after);
		bytes[r] = b1 - b0;
		for (i = 0; have && i < after.n; i++) {
			grew[i][r] = after.objs[i];
			for (j = 0; j < before.n; j++)
				if (!strcmp(before.name[j], after.name[i]))
					grew[i][r] -= before.objs[j];
		}
	}
	for (i = 0; i < total; i++)
		xclose(fds[i], "stats fd");
	xclose(vm_fd, "VM fd");
	printf("bench fd_memory bytes=%lld fds=%d rounds=%d\n",
	       median_rounds(bytes) / FD_MEMORY_FDS, FD_MEMORY_FDS, FD_MEMORY_ROUNDS - 1);
	/* The caches that grew by at least half an object per fd. */
	for (i = 0; have && i < after.n; i++) {
		long long m = median_rounds(grew[i]);

		if (m >= FD_MEMORY_FDS / 2)
			printf("bench fd_memory_cache cache=%s objects_per_fd=%.2f object_bytes=%lld\n",
			       after.name[i], (double)m / FD_MEMORY_FDS, after.size[i]);
	}
}

int main(int argc, char **argv)
{
	int kvm_fd, fds;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "-s"))
		smoke = 1;
	else if (argc > 1)
		fail("usage: kvm_stats_bench [-s]");
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		fail("open /dev/kvm: %s", strerror(errno));
	fds = have_stats_fd(kvm_fd);
	printf("bench start stats_fd=%d smoke=%d\n", fds, smoke);
	bench_sampling(kvm_fd, fds);
	if (fds) {
		bench_copy(kvm_fd);
		bench_fd_memory(kvm_fd);
	}
	bench_exit_loop();
	bench_hlt_timer();
	bench_getppid();
	printf("bench checksum %llu\n", (unsigned long long)checksum);
	return 0;
}
