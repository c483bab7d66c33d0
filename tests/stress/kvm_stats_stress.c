// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_stats_stress: the stats fd used badly, concurrently and under
 * failing allocations, on x86_64 and arm64 guests. Each case is one TAP
 * result:
 *   1 readers against runners: threads pread random offsets and lengths of
 *     every stats fd of a VM whose vCPUs run guest code that exits to
 *     userspace in a loop, while another thread creates and destroys VMs.
 *     The bytes before the data block never change, no cumulative or peak
 *     vCPU stat goes backwards between two reads of one reader, and a read
 *     stitched from random pieces equals a whole-file read (of the idle
 *     VM's vCPU: exactly, whatever the cuts; of any other file, cut only
 *     between the u64s of the data block: each cumulative or peak vCPU stat
 *     between the whole reads around it). A VM's own stats are not held to
 *     either, not even an idle VM's: host events (compaction, reclaim, THP,
 *     NUMA balancing, KSM) unmap its memory through the MMU notifier, which
 *     zaps its SPTEs and flushes, and the vCPU threads that bump some of
 *     them do so without a common lock.
 *     The runners are stopped with immediate_exit and a signal, and each
 *     vCPU must then be inside the guest code it was given: anywhere else
 *     is an "emulator bug", reported with where it stopped and its stats.
 *   2 lifetime orders: the fds of a VM closed in random orders, with dup(),
 *     a forked child reading, SCM_RIGHTS from a process that then exits,
 *     and pidfd_getfd(); every remaining stats fd is read in full after
 *     each close.
 *   3 the VM is freed: whichever fd is closed last, the VM's debugfs
 *     directory is gone right after; VMs created and freed are equal.
 *   4 error paths: RLIMIT_NOFILE leaving exactly k free fds, and the n-th
 *     allocation of KVM_GET_STATS_FD, KVM_CREATE_VCPU and KVM_CREATE_VM
 *     failed (fail-nth) for n = 1.. until the call succeeds; every failure
 *     is a clean errno and leaves no fd and no VM behind.
 *   5 bad input on the stats fd: the errno upstream's kernels give for
 *     writes, mmap, unknown ioctls, bad offsets and lengths, bad buffers,
 *     preadv2 flags, splice, poll, epoll and lseek; KVM_GET_STATS_FD where
 *     it does not belong; never a byte written past the user's buffer.
 *   6 padding: every byte after the NUL of the id and of every name is 0.
 * Every case also fails on any report in the kernel log while it ran
 * (BUG, WARNING, KASAN, UBSAN, lockdep, refcount, list corruption,
 * kmemleak, hung task, RCU stall). A case whose process the kernel
 * oopsed and left stuck in it (an oops in the exit path: "Fixing recursive
 * fault") is reported STUCK_MS after the oops, and the cases after it are
 * not run: each is a failure. The last lines are the figures and
 * "N passed, N failed, N skipped".
 *
 * Usage: kvm_stats_stress [-t SECONDS] [-c CASES] [-s SEED] [-r] [-f] [-n]
 *   -t  time for cases 1 and 2 together (default 20)
 *   -c  the cases to run, e.g. "1,4" (default: all)
 *   -s  seed of the random choices (default: from the clock; printed)
 *   -r  our own kernels: no usable KVM, no KVM debugfs or no /dev/kmsg is
 *       a failure, not a reason to leave those checks out
 *   -f  a kernel with fault injection: no fail-nth is a failure
 *   -n  do not watch the kernel log (a kernel that is not ours to judge)
 * A kernel with no usable KVM (no /dev/kvm, one that cannot be opened, or
 * no KVM_CAP_BINARY_STATS_FD) has nothing to test: the whole run is one
 * skip, "1..0 # SKIP" and the reason, with exit status 4 (kselftest's
 * KSFT_SKIP); with -r, it bails out. Once the plan is printed, an error
 * that ends the run is a "Bail out!" line that says why. Exit status 0
 * when no case failed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "kvm_vm.h"

#ifndef KVM_GET_STATS_FD
#error "these headers have no KVM_GET_STATS_FD"
#endif
#ifndef RWF_NOWAIT
#define RWF_HIPRI 0x1
#define RWF_DSYNC 0x2
#define RWF_SYNC 0x4
#define RWF_NOWAIT 0x8
#define RWF_APPEND 0x10
#endif
#ifndef SEEK_DATA
#define SEEK_DATA 3
#define SEEK_HOLE 4
#endif

#define MAX_VCPUS 4
/* Upstream's id and name fields: 48 bytes (KVM_STATS_NAME_SIZE in the kernel). */
#define NAME_SIZE 48
#define MEM_SIZE 0x10000
#define FILE_MAX (256 << 10)
#define DEBUGFS_KVM "/sys/kernel/debug/kvm"
#define FREED_WAIT_MS 10000
/* How long a case process may take to exit once the kernel has oopsed. */
#define STUCK_MS 30000

/* Guest code: exit to userspace forever, one exit per loop. */
#ifdef __x86_64__
#define CODE_GPA 0x1000
#define MEM_GPA 0
#define EXIT_REASON KVM_EXIT_IO
static const uint8_t guest_code[] = {
	0xba, 0xf8, 0x03,	/* mov $0x3f8, %dx */
	0xee,			/* 1: out %al, (%dx) */
	0xfe, 0xc0,		/* inc %al */
	0xeb, 0xfb,		/* jmp 1b */
};
#else
#define CODE_GPA 0x10000
#define MEM_GPA 0x10000
#define EXIT_REASON KVM_EXIT_MMIO
static const uint32_t guest_code[] = {
	0xd2a40000,	/* mov x0, #0x20000000 (unbacked: MMIO) */
	0xf9000001,	/* 1: str x1, [x0] */
	0x91000421,	/* add x1, x1, #1 */
	0x17fffffe,	/* b 1b */
};
#endif

static int kvm_fd, run_size, require_all, require_fail_nth, no_kmsg;
static unsigned int seconds = 20;
static unsigned long long seed;
static int have_debugfs, kmsg_fd = -1;
static int cur_case;
static atomic_int case_errors;
/* The figures, shared with the process that runs each case. */
static struct figures {
	atomic_ullong reads, bytes, created, freed, fds, faults, reports;
} *fig;
#define n_reads (fig->reads)
#define n_bytes (fig->bytes)
#define n_created (fig->created)
#define n_freed (fig->freed)
#define n_fds (fig->fds)
#define n_faults (fig->faults)
#define n_reports (fig->reports)
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void __attribute__((format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&case_errors, 1) >= 20)
		return;
	pthread_mutex_lock(&out_lock);
	va_start(ap, fmt);
	printf("# case %d: ", cur_case);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static pid_t gettid_(void)
{
	return syscall(SYS_gettid);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		fail("opendir /proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own fd */
}

/* VM directories ("pid-fd") in KVM's debugfs: one per live VM. */
static int count_vm_dirs(void)
{
	DIR *d;
	struct dirent *e;
	int n = 0, a, b;

	if (!have_debugfs)
		return 0;
	d = opendir(DEBUGFS_KVM);
	if (!d)
		fail("opendir " DEBUGFS_KVM ": %s", strerror(errno));
	while ((e = readdir(d)))
		n += sscanf(e->d_name, "%d-%d", &a, &b) == 2;
	closedir(d);
	return n;
}

/* ---- the kernel log ---- */

/* The first N_OOPS are oopses: the task the kernel was running is killed. */
#define N_OOPS 5
static const char *const report_patterns[] = {
	"Oops", "general protection fault", "invalid opcode:", "Kernel panic",
	"Fixing recursive fault",
	"BUG:", "kernel BUG at", "WARNING:", "cut here", "KASAN:", "UBSAN:", "ODEBUG:",
	"usercopy:", "refcount_t:", "list_add corruption", "list_del corruption",
	"soft lockup", "hung_task", "blocked for more than", "self-detected stall",
	"detected stalls", "turning off the locking correctness validator",
	"unreferenced object", "suspected memory leak",
};

/*
 * Read what the kernel logged since the last call; count the reports, and
 * set *oopsed when one of them is an oops.
 */
static int scan_kmsg(int *oopsed)
{
	char rec[8192];
	int found = 0;
	ssize_t n;
	size_t i;

	if (kmsg_fd < 0)
		return 0;
	for (;;) {
		n = read(kmsg_fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (n <= 0)
			break;
		rec[n] = 0;
		for (i = 0; i < sizeof(report_patterns) / sizeof(report_patterns[0]); i++) {
			if (strstr(rec, report_patterns[i])) {
				char *msg = strchr(rec, ';');

				found++;
				if (i < N_OOPS)
					*oopsed = 1;
				printf("# kernel: %s", msg ? msg + 1 : rec);
				break;
			}
		}
	}
	atomic_fetch_add(&n_reports, found);
	return found;
}

/* ---- stats files ---- */

struct ref {
	struct kvm_stats_header h;
	size_t size, data_size;
	uint8_t *desc;		/* the descriptor region */
	uint8_t *mono;		/* per u64 of data: never decreases */
};
static struct ref ref_vm, ref_vcpu;

static ssize_t read_whole(int fd, uint8_t *buf)
{
	ssize_t n = pread(fd, buf, FILE_MAX, 0);

	atomic_fetch_add(&n_reads, 1);
	return n;
}

/* Check a NUL-terminated string field of len bytes: non-empty, zero after. */
static int check_field(const uint8_t *p, size_t len, const char *what)
{
	size_t i, end = strnlen((const char *)p, len);

	if (end == 0 || end == len) {
		bad("%s: %s", what, end ? "not NUL-terminated" : "empty");
		return -1;
	}
	for (i = end; i < len; i++) {
		if (p[i]) {
			bad("%s \"%s\": byte %zu after the NUL is %#x, not 0", what, p, i, p[i]);
			return -1;
		}
	}
	atomic_fetch_add(&n_bytes, len);
	return 0;
}

/*
 * Read fd in full and check it: header, the id (expected id), the
 * descriptors (the same as ref's once ref is set), the padding of every
 * string, the size. Fills ref if it is empty. Returns the size, or -1.
 */
static ssize_t check_file(int fd, struct ref *ref, const char *id, uint8_t *buf)
{
	ssize_t n = read_whole(fd, buf);
	struct kvm_stats_header h;
	size_t stride, i, data = 0;
	char tail;

	if (n < (ssize_t)sizeof(h)) {
		bad("fd %d: read %zd bytes: %s", fd, n, n < 0 ? strerror(errno) : "short");
		return -1;
	}
	memcpy(&h, buf, sizeof(h));
	stride = sizeof(struct kvm_stats_desc) + h.name_size;
	if (h.flags || h.name_size != NAME_SIZE || h.id_offset != sizeof(h) ||
	    h.desc_offset != h.id_offset + h.name_size ||
	    h.data_offset != h.desc_offset + h.num_desc * stride || h.data_offset > n) {
		bad("fd %d (%s): bad header: flags %#x name_size %u num_desc %u offsets %u %u %u, file %zd bytes",
		    fd, id, h.flags, h.name_size, h.num_desc, h.id_offset, h.desc_offset,
		    h.data_offset, n);
		return -1;
	}
	if (check_field(buf + h.id_offset, h.name_size, "id"))
		return -1;
	if (strcmp((char *)buf + h.id_offset, id)) {
		bad("fd %d: id \"%s\", expected \"%s\"", fd, buf + h.id_offset, id);
		return -1;
	}
	for (i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(buf + h.desc_offset + i * stride);

		if (check_field((uint8_t *)d->name, h.name_size, "stat name"))
			return -1;
		if (d->offset % 8 || !d->size) {
			bad("%s: offset %u size %u", d->name, d->offset, d->size);
			return -1;
		}
		if (d->offset + 8 * d->size > data)
			data = d->offset + 8 * d->size;
	}
	if ((size_t)n != h.data_offset + data) {
		bad("fd %d (%s): %zd bytes, but the header and descriptors make %zu",
		    fd, id, n, h.data_offset + data);
		return -1;
	}
	if (pread(fd, &tail, 1, n) != 0) {
		bad("fd %d: a read at the end of the file (%zd) does not return 0", fd, n);
		return -1;
	}
	if (!ref->desc) {
		ref->h = h;
		ref->size = n;
		ref->data_size = data;
		ref->desc = malloc(h.data_offset - h.desc_offset);
		ref->mono = calloc(data / 8, 1);
		memcpy(ref->desc, buf + h.desc_offset, h.data_offset - h.desc_offset);
		for (i = 0; i < h.num_desc; i++) {
			struct kvm_stats_desc *d = (void *)(buf + h.desc_offset + i * stride);
			uint32_t type = d->flags & KVM_STATS_TYPE_MASK;

			if (type != KVM_STATS_TYPE_INSTANT)
				memset(ref->mono + d->offset / 8, 1, d->size);
		}
	} else if ((size_t)n != ref->size || memcmp(&h, &ref->h, sizeof(h)) ||
		   memcmp(buf + h.desc_offset, ref->desc, h.data_offset - h.desc_offset)) {
		bad("fd %d (%s): header or descriptors differ from the first file of its kind", fd, id);
		return -1;
	}
	atomic_fetch_add(&n_bytes, n);
	return n;
}

/* ---- VMs ---- */

struct tvm {
	int vm, nvcpu, vcpu[MAX_VCPUS], vmstat, vcpustat[MAX_VCPUS];
	struct kvm_run *run[MAX_VCPUS];
	pid_t tid;
	char dir[96], id[32], vcpu_id[MAX_VCPUS][48];
	void *mem;
};

static int stats_fd(int fd)
{
	int r = ioctl(fd, KVM_GET_STATS_FD, NULL);

	if (r < 0)
		fail("KVM_GET_STATS_FD: %s", strerror(errno));
	atomic_fetch_add(&n_fds, 1);
	return r;
}

static void vcpu_setup(struct tvm *t, int i)
{
#ifdef __x86_64__
	vcpu_x86_real_mode_at(t->vcpu[i], CODE_GPA);
#else
	vm_arm64_vcpu_init(t->vm, t->vcpu[i], CODE_GPA, 0);
#endif
}

/* A VM with nvcpu vCPUs and a stats fd on each; with code, runnable. */
static void tvm_create(struct tvm *t, int nvcpu, int code)
{
	int i;

	memset(t, 0, sizeof(*t));
	t->tid = gettid_();
	t->vm = xioctl(kvm_fd, KVM_CREATE_VM, 0, "KVM_CREATE_VM");
	atomic_fetch_add(&n_created, 1);
	snprintf(t->dir, sizeof(t->dir), DEBUGFS_KVM "/%d-%d", t->tid, t->vm);
	snprintf(t->id, sizeof(t->id), "kvm-%d", t->tid);
	if (have_debugfs && access(t->dir, F_OK))
		bad("no debugfs directory %s for a new VM", t->dir);
	if (code) {
		struct kvm_userspace_memory_region region = {
			.guest_phys_addr = MEM_GPA, .memory_size = MEM_SIZE,
		};

		t->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (t->mem == MAP_FAILED)
			fail("mmap: %s", strerror(errno));
		memcpy((char *)t->mem + (CODE_GPA - MEM_GPA), guest_code, sizeof(guest_code));
		region.userspace_addr = (uintptr_t)t->mem;
		xioctl(t->vm, KVM_SET_USER_MEMORY_REGION, &region, "KVM_SET_USER_MEMORY_REGION");
	}
	t->vmstat = stats_fd(t->vm);
	t->nvcpu = nvcpu;
	for (i = 0; i < nvcpu; i++) {
		t->vcpu[i] = xioctl(t->vm, KVM_CREATE_VCPU, (void *)(long)i, "KVM_CREATE_VCPU");
		t->vcpustat[i] = stats_fd(t->vcpu[i]);
		snprintf(t->vcpu_id[i], sizeof(t->vcpu_id[i]), "kvm-%d/vcpu-%d", t->tid, i);
		if (!code)
			continue;
		t->run[i] = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, t->vcpu[i], 0);
		if (t->run[i] == MAP_FAILED)
			fail("mmap kvm_run: %s", strerror(errno));
		vcpu_setup(t, i);
	}
}

/*
 * Wait until the VM whose debugfs directory is dir is gone. After one VM
 * was not, the case is failed: later VMs may share a leaked VM's directory
 * name ("pid-fd"), so no more waiting.
 */
static int wait_freed(const char *dir)
{
	uint64_t end = now_ms() + FREED_WAIT_MS;
	static int leaked;

	if (!have_debugfs) {
		atomic_fetch_add(&n_freed, 1);
		return 0;
	}
	while (!access(dir, F_OK)) {
		if (leaked || now_ms() > end) {
			if (!leaked)
				bad("VM %s not freed %d ms after its last fd was closed",
				    dir, FREED_WAIT_MS);
			leaked = 1;
			return -1;
		}
		usleep(1000);
	}
	atomic_fetch_add(&n_freed, 1);
	return 0;
}

static int alive(const char *dir)
{
	return !have_debugfs || !access(dir, F_OK);
}

static void tvm_unmap(struct tvm *t)
{
	int i;

	for (i = 0; i < t->nvcpu; i++)
		if (t->run[i])
			munmap(t->run[i], run_size);
	if (t->mem)
		munmap(t->mem, MEM_SIZE);
}

/* Close every fd of the VM (the ones still >= 0) and check it is freed. */
static void tvm_destroy(struct tvm *t)
{
	int i;

	tvm_unmap(t);
	for (i = 0; i < t->nvcpu; i++) {
		if (t->vcpustat[i] >= 0)
			close(t->vcpustat[i]);
		if (t->vcpu[i] >= 0)
			close(t->vcpu[i]);
	}
	if (t->vmstat >= 0)
		close(t->vmstat);
	if (t->vm >= 0)
		close(t->vm);
	wait_freed(t->dir);
}

/* Check every stats fd of the VM in full. */
static void tvm_check(struct tvm *t, uint8_t *buf)
{
	int i;

	if (t->vmstat >= 0)
		check_file(t->vmstat, &ref_vm, t->id, buf);
	for (i = 0; i < t->nvcpu; i++)
		if (t->vcpustat[i] >= 0)
			check_file(t->vcpustat[i], &ref_vcpu, t->vcpu_id[i], buf);
}

/* ---- case 1: readers against runners ---- */

static atomic_int stop;
static struct tvm running, idle;
static unsigned long long user_exits[MAX_VCPUS];

static void *runner(void *arg)
{
	int i = (long)arg;
	unsigned int reason;

	while (!atomic_load(&stop)) {
		if (ioctl(running.vcpu[i], KVM_RUN, NULL) < 0) {
			if (errno == EINTR && atomic_load(&stop))
				break;	/* stopped by case_readers() */
			bad("vCPU %d: KVM_RUN: %s", i, strerror(errno));
			break;
		}
		reason = running.run[i]->exit_reason;
		if (reason != EXIT_REASON) {
			bad("vCPU %d: exit reason %u, expected %u", i, reason, EXIT_REASON);
			break;
		}
		user_exits[i]++;
	}
	return NULL;
}

struct fdref {
	int fd;
	struct ref *ref;
	int vcpu;
	uint8_t *image;		/* the whole file when the case began */
};

/* Bytes [off, off + n) of a file read at off, against its first image. */
static void check_piece(struct fdref *f, const uint8_t *p, size_t off, size_t n,
			uint64_t *last)
{
	size_t data = f->ref->h.data_offset, i, end = off + n;

	if (off < data) {
		size_t k = end < data ? end : data;

		if (memcmp(p, f->image + off, k - off))
			bad("fd %d: bytes %zu..%zu before the data block changed", f->fd, off, k);
		atomic_fetch_add(&n_bytes, k - off);
	}
	if (!f->vcpu || !last)
		return;
	/* Every whole u64 of a cumulative or peak vCPU stat: never below this reader's last. */
	for (i = (off < data ? 0 : (off - data + 7) / 8); data + 8 * i + 8 <= end; i++) {
		uint64_t v;

		memcpy(&v, p + (data + 8 * i - off), 8);
		if (f->ref->mono[i] && v < last[i])
			bad("fd %d: u64 %zu of the data block went back from %llu to %llu",
			    f->fd, i, (unsigned long long)last[i], (unsigned long long)v);
		last[i] = v;
		atomic_fetch_add(&n_bytes, 8);
	}
}

static struct fdref case1_fds[2 * (MAX_VCPUS + 1)];
static int case1_nfds, case1_nrunning;

/*
 * Read f in random pieces, in a random order, into out. With whole_u64, no
 * cut falls inside a u64 of the data block: the bytes of a live counter
 * read by two preads, at two times, make a value it never had (a carry
 * between them turns 0x46ff and 0x4733 into 0x4633).
 */
static void stitched(struct fdref *f, uint8_t *out, int whole_u64, uint64_t *s)
{
	size_t size = f->ref->size, data = f->ref->h.data_offset, cuts[9], k, i;
	size_t n = 1 + rnd(s) % 8;
	int order[9];

	cuts[0] = 0;
	for (i = 1; i < n; i++) {
		cuts[i] = rnd(s) % (size + 1);
		if (whole_u64 && cuts[i] > data)
			cuts[i] -= (cuts[i] - data) % 8;
	}
	cuts[n] = size;
	for (i = 1; i < n; i++)	/* sort the cuts */
		for (k = i; k > 0 && cuts[k] < cuts[k - 1]; k--) {
			size_t x = cuts[k];

			cuts[k] = cuts[k - 1];
			cuts[k - 1] = x;
		}
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		k = rnd(s) % (i + 1);
		int x = order[i];

		order[i] = order[k];
		order[k] = x;
	}
	for (i = 0; i < n; i++) {
		size_t a = cuts[order[i]], b = cuts[order[i] + 1];
		ssize_t r = pread(f->fd, out + a, b - a, a);

		atomic_fetch_add(&n_reads, 1);
		if (r != (ssize_t)(b - a))
			bad("fd %d: pread of %zu at %zu returned %zd", f->fd, b - a, a, r);
	}
}

static void *reader(void *arg)
{
	uint64_t s = seed * 2654435761u + (long)arg + 1;
	uint8_t *buf = malloc(FILE_MAX), *w1 = malloc(FILE_MAX), *w2 = malloc(FILE_MAX);
	uint64_t *last[2 * (MAX_VCPUS + 1)];
	int i;

	for (i = 0; i < case1_nfds; i++)
		last[i] = calloc(case1_fds[i].ref->data_size / 8, 8);
	while (!atomic_load(&stop)) {
		int fi = rnd(&s) % case1_nfds;
		struct fdref *f = &case1_fds[fi];
		size_t size = f->ref->size, off, len, want;
		ssize_t r;

		if (rnd(&s) % 16 == 0) {
			/*
			 * A stitched read, bracketed by two whole reads. Only
			 * the idle VM's vCPU is still: nothing but its own
			 * KVM_RUN moves a vCPU's stats.
			 */
			size_t data = f->ref->h.data_offset;
			int idle_vcpu = fi >= case1_nrunning && f->vcpu;

			if (read_whole(f->fd, w1) != (ssize_t)size) {
				bad("fd %d: a whole read did not return %zu bytes", f->fd, size);
				continue;
			}
			stitched(f, buf, !idle_vcpu, &s);
			if (read_whole(f->fd, w2) != (ssize_t)size) {
				bad("fd %d: a whole read did not return %zu bytes", f->fd, size);
				continue;
			}
			check_piece(f, buf, 0, size, NULL);
			for (i = 0; (size_t)i < f->ref->data_size / 8; i++) {
				uint64_t a, b, c;

				memcpy(&a, w1 + data + 8 * i, 8);
				memcpy(&b, buf + data + 8 * i, 8);
				memcpy(&c, w2 + data + 8 * i, 8);
				if (idle_vcpu ? (a != b || b != c) :
				    (f->vcpu && f->ref->mono[i] && (b < a || b > c)))
					bad("fd %d: u64 %d of the data block: stitched %llu, whole reads %llu and %llu",
					    f->fd, i, (unsigned long long)b,
					    (unsigned long long)a, (unsigned long long)c);
			}
			atomic_fetch_add(&n_bytes, 3 * size);
			continue;
		}
		off = rnd(&s) % (size + 16);
		len = rnd(&s) % (size + 16 - (off < size ? off : size));
		want = off >= size ? 0 : (len < size - off ? len : size - off);
		r = pread(f->fd, buf, len, off);
		atomic_fetch_add(&n_reads, 1);
		if (r != (ssize_t)want) {
			bad("fd %d: pread of %zu at %zu returned %zd, expected %zu",
			    f->fd, len, off, r, want);
			continue;
		}
		check_piece(f, buf, off, r, last[fi]);
	}
	for (i = 0; i < case1_nfds; i++)
		free(last[i]);
	free(buf);
	free(w1);
	free(w2);
	return NULL;
}

/* Create, read and destroy VMs and stats fds, until stop. */
static void *churner(void *arg)
{
	uint64_t s = seed + 77;
	uint8_t *buf = malloc(FILE_MAX);
	struct tvm t;

	(void)arg;
	while (!atomic_load(&stop)) {
		tvm_create(&t, 1 + rnd(&s) % 2, 0);
		tvm_check(&t, buf);
		tvm_destroy(&t);
	}
	free(buf);
	return NULL;
}

static void add_fd(int fd, struct ref *ref, int vcpu, const char *id, uint8_t *buf)
{
	struct fdref *f = &case1_fds[case1_nfds++];
	ssize_t n = check_file(fd, ref, id, buf);

	f->fd = fd;
	f->ref = ref;
	f->vcpu = vcpu;
	f->image = malloc(FILE_MAX);
	if (n > 0)
		memcpy(f->image, buf, n);
}

/* The value of the stat called name in the stats file in buf, or -1. */
static long long stat_named(const uint8_t *buf, const char *name)
{
	struct kvm_stats_header h;
	size_t i, stride;
	uint64_t v;

	memcpy(&h, buf, sizeof(h));
	stride = sizeof(struct kvm_stats_desc) + h.name_size;
	for (i = 0; i < h.num_desc; i++) {
		const struct kvm_stats_desc *d = (const void *)(buf + h.desc_offset + i * stride);

		if (!strcmp(d->name, name)) {
			memcpy(&v, buf + h.data_offset + d->offset, 8);
			return v;
		}
	}
	return -1;
}

/*
 * Where vCPU i of the running VM stopped: it must be inside guest_code,
 * the only code it was given. Anywhere else, the emulator under this
 * kernel moved the guest (see case_readers()); say so, with the evidence.
 */
static void check_guest_pc(int i, uint8_t *buf)
{
	unsigned long long pc, base = 0;
#ifdef __x86_64__
	struct kvm_regs regs;
	struct kvm_sregs sregs;

	xioctl(running.vcpu[i], KVM_GET_REGS, &regs, "KVM_GET_REGS");
	xioctl(running.vcpu[i], KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");
	pc = regs.rip;
	base = sregs.cs.base;
#else
	struct kvm_one_reg reg = { .id = ARM64_REG_PC, .addr = (uintptr_t)&pc };

	xioctl(running.vcpu[i], KVM_GET_ONE_REG, &reg, "KVM_GET_ONE_REG(pc)");
#endif
	if (base + pc >= CODE_GPA && base + pc < CODE_GPA + sizeof(guest_code))
		return;
	read_whole(running.vcpustat[i], buf);
	bad("emulator bug: vCPU %d stopped at pc %#llx (code base %#llx), outside the only code it was given (%#x-%#zx); "
	    "it made %llu exits to userspace; its stats (-1: none such): exits %lld, insn_emulation %lld, io_exits %lld",
	    i, pc, base, CODE_GPA, CODE_GPA + sizeof(guest_code) - 1, user_exits[i],
	    stat_named(buf, "exits"), stat_named(buf, "insn_emulation"),
	    stat_named(buf, "io_exits"));
}

/* A signal that does nothing but end a KVM_RUN with EINTR. */
static void kicked(int sig)
{
	(void)sig;
}

static void case_readers(unsigned int ms)
{
	struct sigaction kick = { .sa_handler = kicked };
	enum { NVCPU = 2, NREADERS = 2 };
	pthread_t runners[NVCPU], readers[NREADERS], churn;
	uint8_t *buf = malloc(FILE_MAX);
	long i;

	tvm_create(&running, NVCPU, 1);
	tvm_create(&idle, 1, 1);
	/* Give the idle VM's counters values before it stops. */
	for (i = 0; i < 100; i++)
		xioctl(idle.vcpu[0], KVM_RUN, NULL, "KVM_RUN");
	case1_nfds = 0;
	add_fd(running.vmstat, &ref_vm, 0, running.id, buf);
	for (i = 0; i < NVCPU; i++)
		add_fd(running.vcpustat[i], &ref_vcpu, 1, running.vcpu_id[i], buf);
	case1_nrunning = case1_nfds;
	add_fd(idle.vmstat, &ref_vm, 0, idle.id, buf);
	add_fd(idle.vcpustat[0], &ref_vcpu, 1, idle.vcpu_id[0], buf);

	atomic_store(&stop, 0);
	sigaction(SIGUSR1, &kick, NULL);
	for (i = 0; i < NVCPU; i++)
		pthread_create(&runners[i], NULL, runner, (void *)i);
	for (i = 0; i < NREADERS; i++)
		pthread_create(&readers[i], NULL, reader, (void *)i);
	pthread_create(&churn, NULL, churner, NULL);
	usleep(ms * 1000ull);
	atomic_store(&stop, 1);
	/*
	 * Stop the runners as a VMM stops its vCPUs, not by waiting for the
	 * guest's next exit to userspace: immediate_exit for a KVM_RUN about
	 * to start, a signal for one under way.
	 */
	for (i = 0; i < NVCPU; i++) {
		running.run[i]->immediate_exit = 1;
		pthread_kill(runners[i], SIGUSR1);
	}
	for (i = 0; i < NVCPU; i++)
		pthread_join(runners[i], NULL);
	/*
	 * Each vCPU's exits to userspace: a guest that stopped exiting shows
	 * here (QEMU 7.2's TCG, emulating SVM, can resume the L2 guest at
	 * L1's RIP after VMRUN, where KVM then emulates for good).
	 */
	printf("# exits to userspace: vCPU 0 %llu, vCPU 1 %llu\n", user_exits[0], user_exits[1]);
	fflush(stdout);
	for (i = 0; i < NVCPU; i++)
		check_guest_pc(i, buf);
	for (i = 0; i < NREADERS; i++)
		pthread_join(readers[i], NULL);
	pthread_join(churn, NULL);
	for (i = 0; i < case1_nfds; i++)
		free(case1_fds[i].image);
	tvm_destroy(&running);
	tvm_destroy(&idle);
	free(buf);
}

/* ---- case 2: lifetime orders ---- */

static void shuffle(int *a, int n, uint64_t *s)
{
	int i, k, x;

	for (i = n - 1; i > 0; i--) {
		k = rnd(s) % (i + 1);
		x = a[i];
		a[i] = a[k];
		a[k] = x;
	}
}

/* Every fd of a VM, and what each stats fd must read as. */
struct fdset {
	int n, fd[2 * MAX_VCPUS + 3];
	struct ref *ref[2 * MAX_VCPUS + 3];	/* NULL: not a stats fd */
	const char *id[2 * MAX_VCPUS + 3];
};

static void fdset_of(struct fdset *set, struct tvm *t)
{
	int i;

	set->n = 0;
	set->ref[set->n] = NULL;
	set->fd[set->n++] = t->vm;
	set->ref[set->n] = &ref_vm;
	set->id[set->n] = t->id;
	set->fd[set->n++] = t->vmstat;
	for (i = 0; i < t->nvcpu; i++) {
		set->ref[set->n] = NULL;
		set->fd[set->n++] = t->vcpu[i];
		set->ref[set->n] = &ref_vcpu;
		set->id[set->n] = t->vcpu_id[i];
		set->fd[set->n++] = t->vcpustat[i];
	}
}

static void fdset_check(struct fdset *set, uint8_t *buf)
{
	int i;

	for (i = 0; i < set->n; i++)
		if (set->fd[i] >= 0 && set->ref[i])
			check_file(set->fd[i], set->ref[i], set->id[i], buf);
}

/* Close the set in a random order, checking what is left after each close. */
static void close_randomly(struct fdset *set, uint8_t *buf, uint64_t *s)
{
	int order[2 * MAX_VCPUS + 3], i;

	for (i = 0; i < set->n; i++)
		order[i] = i;
	shuffle(order, set->n, s);
	for (i = 0; i < set->n; i++) {
		close(set->fd[order[i]]);
		set->fd[order[i]] = -1;
		fdset_check(set, buf);
	}
}

static void lifetime_permutation(uint8_t *buf, uint64_t *s)
{
	struct fdset set;
	struct tvm t;
	int k;

	tvm_create(&t, 1 + rnd(s) % 2, 0);
	fdset_of(&set, &t);
	/* A dup() of one of the stats fds, and maybe a second stats fd. */
	k = 1 + 2 * (rnd(s) % (t.nvcpu + 1));
	set.ref[set.n] = set.ref[k];
	set.id[set.n] = set.id[k];
	set.fd[set.n++] = dup(set.fd[k]);
	if (rnd(s) & 1) {
		set.ref[set.n] = &ref_vm;
		set.id[set.n] = t.id;
		set.fd[set.n++] = stats_fd(t.vm);
	}
	close_randomly(&set, buf, s);
	wait_freed(t.dir);
}

static int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* fork(): the child reads the stats fds after the parent closed its fds. */
static void lifetime_fork(uint8_t *buf, uint64_t *s)
{
	int go[2], i, rc;
	struct fdset set;
	struct tvm t;
	pid_t pid;
	char c;

	tvm_create(&t, 1 + rnd(s) % 2, 0);
	fdset_of(&set, &t);
	if (pipe(go))
		fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		/* Close the VM and vCPU fds, wait for the parent to close all. */
		for (i = 0; i < set.n; i++)
			if (!set.ref[i] && !(rnd(s) % 2)) {
				close(set.fd[i]);
				set.fd[i] = -1;
			}
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		atomic_store(&case_errors, 0);
		fdset_check(&set, buf);
		_exit(atomic_load(&case_errors) ? 1 : 0);
	}
	close(go[0]);
	close_randomly(&set, buf, s);
	if (!alive(t.dir))
		bad("VM %s freed while the child still holds its fds", t.dir);
	if (write(go[1], "g", 1) != 1)
		fail("write: %s", strerror(errno));
	close(go[1]);
	rc = wait_child(pid);
	if (rc)
		bad("the forked child's reads failed (status %d)", rc);
	wait_freed(t.dir);
}

/*
 * A child creates a VM and hands its stats fds over, by SCM_RIGHTS or to
 * pidfd_getfd(), then closes everything and exits: the fds must still read.
 */
static void lifetime_handover(uint8_t *buf, int use_pidfd)
{
	int sv[2], fds[2], nums[3], pidfd = -1, i;
	char cbuf[CMSG_SPACE(sizeof(fds))], dir[96], id[2][48];
	struct iovec iov = { .iov_base = nums, .iov_len = sizeof(nums) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		fail("socketpair: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		struct tvm t;
		char c;

		close(sv[0]);
		tvm_create(&t, 1, 0);
		nums[0] = t.vm;
		nums[1] = t.vmstat;
		nums[2] = t.vcpustat[0];
		memset(cbuf, 0, sizeof(cbuf));
		if (!use_pidfd) {
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(fds));
			fds[0] = t.vmstat;
			fds[1] = t.vcpustat[0];
			memcpy(CMSG_DATA(cm), fds, sizeof(fds));
		} else {
			msg.msg_control = NULL;
			msg.msg_controllen = 0;
		}
		if (sendmsg(sv[1], &msg, 0) != sizeof(nums))
			_exit(2);
		/* With pidfd_getfd, wait until the parent has its copies. */
		if (use_pidfd && read(sv[1], &c, 1) != 1)
			_exit(3);
		_exit(0);	/* closes everything */
	}
	close(sv[1]);
	if (!use_pidfd) {
		if (recvmsg(sv[0], &msg, 0) != sizeof(nums))
			fail("recvmsg: %s", strerror(errno));
		cm = CMSG_FIRSTHDR(&msg);
		if (!cm || cm->cmsg_type != SCM_RIGHTS)
			fail("no SCM_RIGHTS in the message");
		memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	} else {
		if (read(sv[0], nums, sizeof(nums)) != sizeof(nums))
			fail("read: %s", strerror(errno));
		pidfd = syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0)
			fail("pidfd_open: %s", strerror(errno));
		for (i = 0; i < 2; i++) {
			fds[i] = syscall(SYS_pidfd_getfd, pidfd, nums[1 + i], 0);
			if (fds[i] < 0)
				fail("pidfd_getfd: %s", strerror(errno));
		}
		if (write(sv[0], "g", 1) != 1)
			fail("write: %s", strerror(errno));
	}
	if (wait_child(pid))
		bad("the child that created the VM failed");
	close(sv[0]);
	if (pidfd >= 0)
		close(pidfd);
	snprintf(dir, sizeof(dir), DEBUGFS_KVM "/%d-%d", pid, nums[0]);
	snprintf(id[0], sizeof(id[0]), "kvm-%d", pid);
	snprintf(id[1], sizeof(id[1]), "kvm-%d/vcpu-0", pid);
	/* Its creator is gone; the VM lives on in the two fds. */
	for (i = 0; i < 2; i++)
		check_file(fds[i], i ? &ref_vcpu : &ref_vm, id[i], buf);
	if (!alive(dir))
		bad("VM %s freed while another process holds its stats fds", dir);
	close(fds[0]);
	check_file(fds[1], &ref_vcpu, id[1], buf);
	close(fds[1]);
	wait_freed(dir);
}

static void case_lifetimes(unsigned int ms)
{
	uint8_t *buf = malloc(FILE_MAX);
	uint64_t s = seed + 2, end = now_ms() + ms;

	do {
		lifetime_permutation(buf, &s);
		lifetime_fork(buf, &s);
		lifetime_handover(buf, 0);
		lifetime_handover(buf, 1);
	} while (now_ms() < end && !atomic_load(&case_errors));
	free(buf);
}

/* ---- case 3: the VM is freed, whichever fd goes last ---- */

static void case_freed(void)
{
	uint8_t *buf = malloc(FILE_MAX);
	int last, round, n, dirs = count_vm_dirs();
	struct fdset set;
	struct tvm t;

	for (round = 0; round < 3; round++) {
		for (last = 0; last < 4; last++) {	/* vm, vm stats, vcpu, vcpu stats */
			int i;

			tvm_create(&t, 1, 0);
			fdset_of(&set, &t);
			for (i = 0; i < set.n; i++)
				if (i != last)
					close(set.fd[i]);
			if (!alive(t.dir))
				bad("VM %s freed while fd %d of it is open", t.dir, last);
			if (set.ref[last])
				check_file(set.fd[last], set.ref[last], set.id[last], buf);
			close(set.fd[last]);
			wait_freed(t.dir);
		}
	}
	n = count_vm_dirs();
	if (n != dirs)
		bad("%d VM directories in debugfs, %d before", n, dirs);
	free(buf);
}

/* ---- case 4: error paths ---- */

static int fail_nth_fd = -1;

/* Free fd slots below lim. */
static int free_below(int lim)
{
	int fd, n = 0;

	for (fd = 0; fd < lim; fd++)
		n += fcntl(fd, F_GETFD) < 0;
	return n;
}

static void emfile(int k)
{
	struct rlimit old, rl;
	int lim, got = 0, fds[16], r, e, before = count_fds();
	struct tvm t;
	int which;

	tvm_create(&t, 1, 0);
	if (getrlimit(RLIMIT_NOFILE, &old))
		fail("getrlimit: %s", strerror(errno));
	for (which = 0; which < 3; which++) {
		/* lim: the (k+1)-th free slot, so exactly k are free below it. */
		for (lim = 0; free_below(lim) < k || fcntl(lim, F_GETFD) >= 0; lim++)
			;
		rl = old;
		rl.rlim_cur = lim;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			fail("setrlimit: %s", strerror(errno));
		got = 0;
		for (;;) {
			if (which == 2)
				r = ioctl(kvm_fd, KVM_CREATE_VM, 0);
			else
				r = ioctl(which ? t.vcpu[0] : t.vm, KVM_GET_STATS_FD, NULL);
			e = errno;
			if (r < 0 || got == 16)
				break;
			fds[got++] = r;
		}
		setrlimit(RLIMIT_NOFILE, &old);
		if (got != k || r >= 0 || e != EMFILE)
			bad("%s with %d free fds: %d succeeded, then %s",
			    which == 2 ? "KVM_CREATE_VM" : "KVM_GET_STATS_FD", k, got,
			    r >= 0 ? "no failure" : strerror(e));
		if (which == 2)
			atomic_fetch_add(&n_created, got);
		while (got--) {
			close(fds[got]);
			if (which == 2) {
				char dir[96];

				snprintf(dir, sizeof(dir), DEBUGFS_KVM "/%d-%d", gettid_(), fds[got]);
				wait_freed(dir);
			}
		}
		atomic_fetch_add(&n_fds, k);
	}
	tvm_destroy(&t);
	lim = count_fds();
	if (lim != before)
		bad("EMFILE with %d free fds: %d fds open, %d before", k, lim, before);
}

static void set_fail_nth(unsigned int n)
{
	char s[16];
	int len = snprintf(s, sizeof(s), "%u", n);

	if (pwrite(fail_nth_fd, s, len, 0) != len)
		fail("write fail-nth: %s", strerror(errno));
}

/* Whether the fault set by set_fail_nth() was injected; disarms it. */
static int fault_injected(void)
{
	char s[16] = "";
	int injected;

	if (pread(fail_nth_fd, s, sizeof(s) - 1, 0) <= 0)
		fail("read fail-nth: %s", strerror(errno));
	injected = atoi(s) == 0;
	set_fail_nth(0);
	return injected;
}

static void write_knob(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return;
	if (write(fd, val, strlen(val)) < 0)
		printf("# %s: %s\n", path, strerror(errno));
	close(fd);
}

/* Fail the n-th allocation of one call, n = 1.. until it succeeds. */
static void fail_nth(int what)
{
	static const char *const names[] = {
		"KVM_GET_STATS_FD on a VM", "KVM_GET_STATS_FD on a vCPU",
		"KVM_CREATE_VCPU", "KVM_CREATE_VM",
	};
	int n, r, e, injected, fds, dirs;
	unsigned int failures = 0;
	struct tvm t;

	for (n = 1; n < 5000; n++) {
		if (what < 3) {
			tvm_create(&t, what == 1, 0);
		} else {
			memset(&t, 0, sizeof(t));
			t.vm = -1;
			t.vmstat = -1;
		}
		fds = count_fds();
		dirs = count_vm_dirs();
		set_fail_nth(n);
		switch (what) {
		case 0: r = ioctl(t.vm, KVM_GET_STATS_FD, NULL); break;
		case 1: r = ioctl(t.vcpu[0], KVM_GET_STATS_FD, NULL); break;
		case 2: r = ioctl(t.vm, KVM_CREATE_VCPU, 0); break;
		default: r = ioctl(kvm_fd, KVM_CREATE_VM, 0); break;
		}
		e = errno;
		injected = fault_injected();
		if (r < 0) {
			int now;

			failures++;
			if (!injected || e != ENOMEM)
				bad("%s, allocation %d failed: %s (%s)", names[what], n,
				    strerror(e), injected ? "expected ENOMEM" : "no fault was injected");
			now = count_fds();
			if (now != fds)
				bad("%s, allocation %d failed: %d fds open, %d before",
				    names[what], n, now, fds);
			now = count_vm_dirs();
			if (now != dirs)
				bad("%s, allocation %d failed: %d VMs, %d before",
				    names[what], n, now, dirs);
		} else {
			if (what == 3) {
				t.vm = r;
				t.tid = gettid_();
				snprintf(t.dir, sizeof(t.dir), DEBUGFS_KVM "/%d-%d", t.tid, r);
				atomic_fetch_add(&n_created, 1);
			} else {
				close(r);
			}
		}
		atomic_fetch_add(&n_faults, injected);
		if (what < 3 || r >= 0) {
			tvm_destroy(&t);	/* the VM must still be freed */
		}
		if (!injected)
			break;
		if (atomic_load(&case_errors))
			return;
	}
	printf("# %s: %u allocation failures injected, %d allocations\n",
	       names[what], failures, n - 1);
}

static void case_errors_paths(void)
{
	int k, before = count_fds(), dirs = count_vm_dirs(), what;

	for (k = 0; k <= 3; k++)
		emfile(k);
	fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (fail_nth_fd < 0) {
		if (require_fail_nth)
			bad("no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION)");
		else
			printf("# no fail-nth: allocation failures not injected\n");
	} else if (access("/sys/kernel/debug/failslab/ignore-gfp-wait", W_OK)) {
		bad("no failslab in debugfs (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS)");
	} else {
		/* Fail sleeping allocations too, and say nothing about each. */
		write_knob("/sys/kernel/debug/failslab/ignore-gfp-wait", "N");
		write_knob("/sys/kernel/debug/failslab/verbose", "0");
		for (what = 0; what < 4 && !atomic_load(&case_errors); what++)
			fail_nth(what);
		write_knob("/sys/kernel/debug/failslab/ignore-gfp-wait", "Y");
		close(fail_nth_fd);
	}
	k = count_fds();
	if (k != before)
		bad("%d fds open, %d before the error paths", k, before);
	k = count_vm_dirs();
	if (k != dirs)
		bad("%d VMs in debugfs, %d before the error paths", k, dirs);
}

/* ---- case 5: bad input ---- */

#define EXPECT_ERR(call, err) do {						\
	errno = 0;								\
	long r_ = (long)(call);							\
	if (r_ != -1 || errno != (err))						\
		bad("%s: returned %ld (%s), expected %s", #call, r_,		\
		    strerror(errno), strerror(err));				\
} while (0)

#define EXPECT_RET(call, want) do {						\
	long r_ = (long)(call);							\
	if (r_ != (long)(want))							\
		bad("%s: returned %ld (%s), expected %ld", #call, r_,		\
		    r_ < 0 ? strerror(errno) : "", (long)(want));		\
} while (0)

/* Random reads into a buffer framed by canaries: nothing written outside. */
static void canaries(int fd, size_t size, uint64_t *s)
{
	enum { PAD = 64 };
	uint8_t *buf = malloc(size + 2 * PAD + 32);
	int i;

	for (i = 0; i < 2000; i++) {
		size_t off = rnd(s) % (size + 8), len = rnd(s) % (size + 16), j;
		size_t want = off >= size ? 0 : (len < size - off ? len : size - off);

		memset(buf, 0xa5, size + 2 * PAD + 32);
		EXPECT_RET(pread(fd, buf + PAD, len, off), want);
		atomic_fetch_add(&n_reads, 1);
		for (j = 0; j < size + 2 * PAD + 32; j++) {
			if ((j < PAD || j >= PAD + want) && buf[j] != 0xa5) {
				bad("pread of %zu at %zu wrote byte %zd of the buffer", len, off,
				    (ssize_t)j - PAD);
				break;
			}
		}
		atomic_fetch_add(&n_bytes, size + 2 * PAD + 32);
	}
	free(buf);
}

static void bad_input_fd(int fd, int owner_fd, size_t size, uint64_t *s)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *buf = malloc(size), *ro, *half;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };
	int p[2], ep, whence, rwf[] = { RWF_DSYNC, RWF_SYNC, RWF_NOWAIT, RWF_APPEND, 0x40000000 };
	volatile size_t huge;
	unsigned int i;
	off_t pos;

	/* Read-only: writes are EBADF, and pwrite ESPIPE (no FMODE_PWRITE). */
	EXPECT_ERR(write(fd, buf, 8), EBADF);
	EXPECT_ERR(pwrite(fd, buf, 8, 0), ESPIPE);
	EXPECT_ERR(writev(fd, &iov, 1), EBADF);
	/* No mmap, no ioctls. */
	for (i = 0; i < 2; i++) {
		void *m = mmap(NULL, page, PROT_READ, i ? MAP_PRIVATE : MAP_SHARED, fd, 0);

		if (m != MAP_FAILED || errno != ENODEV)
			bad("mmap (%s): %s, expected ENODEV", i ? "private" : "shared",
			    m == MAP_FAILED ? strerror(errno) : "mapped");
	}
	EXPECT_ERR(ioctl(fd, KVM_GET_STATS_FD, NULL), ENOTTY);
	EXPECT_ERR(ioctl(fd, KVM_RUN, NULL), ENOTTY);
	EXPECT_ERR(ioctl(fd, _IOR('x', 0x7f, int), buf), ENOTTY);
	/* Offsets and lengths. */
	EXPECT_ERR(pread(fd, buf, 8, -1), EINVAL);
	EXPECT_ERR(pread(fd, buf, 8, LLONG_MIN), EINVAL);
	EXPECT_ERR(pread(fd, buf, 16, LLONG_MAX - 8), EINVAL);
	EXPECT_RET(pread(fd, buf, 0, LLONG_MAX), 0);
	EXPECT_RET(pread(fd, buf, 8, size), 0);
	EXPECT_RET(pread(fd, buf, 8, (off_t)1 << 40), 0);
	/* Lengths past the buffer: what the kernel checks, not the compiler. */
	huge = SIZE_MAX;
	EXPECT_ERR(pread(fd, buf, huge, 0), EFAULT);
	huge = (size_t)1 << 31;
	EXPECT_RET(pread(fd, buf, huge, 0), size);
	/* Bad buffers: unmapped, read-only, and only the first page mapped. */
	ro = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	EXPECT_ERR(pread(fd, ro, size, 0), EFAULT);
	EXPECT_ERR(pread(fd, (void *)8, size, 0), EFAULT);
	half = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (half == MAP_FAILED || mprotect(half + page, page, PROT_NONE))
		fail("mmap: %s", strerror(errno));
	EXPECT_ERR(pread(fd, half + page - 100, size, 0), EFAULT);
	EXPECT_RET(pread(fd, half + page - 100, 100, 0), 100);
	munmap(half, 2 * page);
	munmap(ro, 2 * page);
	/* preadv2: no flag but RWF_HIPRI. */
	EXPECT_RET(preadv2(fd, &iov, 1, 0, 0), size);
	EXPECT_RET(preadv2(fd, &iov, 1, 0, RWF_HIPRI), size);
	for (i = 0; i < sizeof(rwf) / sizeof(rwf[0]); i++)
		EXPECT_ERR(preadv2(fd, &iov, 1, 0, rwf[i]), EOPNOTSUPP);
	/* No splice. */
	if (pipe(p))
		fail("pipe: %s", strerror(errno));
	EXPECT_ERR(sendfile(p[1], fd, NULL, 64), EINVAL);
	EXPECT_ERR(splice(fd, NULL, p[1], NULL, 64, 0), EINVAL);
	close(p[0]);
	close(p[1]);
	/* poll: always ready (no poll method); epoll refuses it. */
	EXPECT_RET(poll(&pfd, 1, 0), 1);
	if (pfd.revents != (POLLIN | POLLOUT))
		bad("poll: revents %#x, expected %#x", pfd.revents, POLLIN | POLLOUT);
	ep = epoll_create1(EPOLL_CLOEXEC);
	EXPECT_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EPERM);
	close(ep);
	/* lseek moves nothing and reports the position read() left. */
	EXPECT_RET(read(fd, buf, 10), 10);
	for (whence = SEEK_SET; whence <= SEEK_HOLE; whence++) {
		EXPECT_RET(lseek(fd, 0, whence), 10);
		EXPECT_RET(lseek(fd, 1000, whence), 10);
		EXPECT_RET(lseek(fd, -5, whence), 10);
	}
	EXPECT_ERR(lseek(fd, 0, SEEK_HOLE + 1), EINVAL);
	pos = lseek(fd, 0, SEEK_CUR);
	EXPECT_RET(read(fd, buf, size), size - pos);
	/* KVM_GET_STATS_FD from a process other than the VM's owner. */
	if (owner_fd >= 0) {
		pid_t pid = fork();

		if (pid == 0) {
			atomic_store(&case_errors, 0);
			EXPECT_ERR(ioctl(owner_fd, KVM_GET_STATS_FD, NULL), EIO);
			_exit(atomic_load(&case_errors) ? 1 : 0);
		}
		if (wait_child(pid))
			bad("KVM_GET_STATS_FD from another process did not fail with EIO");
	}
	canaries(fd, size, s);
	free(buf);
}

static void case_bad_input(void)
{
	uint64_t s = seed + 5;
	struct tvm t;
	int closed;

	tvm_create(&t, 1, 0);
	bad_input_fd(t.vmstat, t.vm, ref_vm.size, &s);
	bad_input_fd(t.vcpustat[0], t.vcpu[0], ref_vcpu.size, &s);
	/* KVM_GET_STATS_FD where it does not belong. */
	EXPECT_ERR(ioctl(kvm_fd, KVM_GET_STATS_FD, NULL), EINVAL);
	EXPECT_ERR(ioctl(t.vmstat, KVM_GET_STATS_FD, NULL), ENOTTY);
	closed = dup(t.vm);
	close(closed);
	EXPECT_ERR(ioctl(closed, KVM_GET_STATS_FD, NULL), EBADF);
	tvm_destroy(&t);
}

/* ---- case 6: padding ---- */

static void case_padding(void)
{
	uint8_t *buf = malloc(FILE_MAX);
	struct tvm t;
	int n;

	/* check_file() checks every byte after each NUL; ids of all lengths. */
	for (n = 1; n <= MAX_VCPUS; n++) {
		tvm_create(&t, n, 0);
		tvm_check(&t, buf);
		tvm_destroy(&t);
	}
	free(buf);
}

/* ---- main ---- */

/*
 * No usable KVM: one skip with the reason, or with -r (our own kernels,
 * which must have it) a bail-out after the plan.
 */
static void __attribute__((noreturn, format(printf, 2, 3)))
no_kvm(int planned, const char *fmt, ...)
{
	va_list ap;

	if (require_all)
		printf("1..%d\nBail out! ", planned);
	else
		printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(require_all ? 1 : 4);
}

static const char *const case_names[] = {
	"", "readers against runners", "lifetime orders", "the VM is freed",
	"error paths: EMFILE and failed allocations", "bad input on the stats fd",
	"padding of the id and names is zero",
};

/*
 * Wait for the process of a case, watching the kernel log meanwhile; the
 * reports found go to *reports. Returns 1 with *status set when it exited,
 * 0 when it is still there STUCK_MS after an oops: a task that oopses again
 * on its way out never exits, and waiting for it would hang the run.
 */
static int wait_case(pid_t pid, int *status, int *reports)
{
	struct pollfd p[2] = {
		{ .fd = syscall(SYS_pidfd_open, pid, 0), .events = POLLIN },
		{ .fd = kmsg_fd, .events = POLLIN },
	};
	uint64_t since = 0;
	int exited, left = -1, oopsed = 0;

	if (p[0].fd < 0)
		fail("pidfd_open: %s", strerror(errno));
	for (;;) {
		*reports += scan_kmsg(&oopsed);
		if (oopsed && !since)
			since = now_ms();
		exited = waitpid(pid, status, WNOHANG);
		if (exited < 0)
			fail("waitpid: %s", strerror(errno));
		if (exited)
			break;
		if (since) {
			left = (int)(since + STUCK_MS - now_ms());
			if (left <= 0)
				break;
		}
		/* The pidfd polls readable when the process has exited. */
		if (poll(p, kmsg_fd >= 0 ? 2 : 1, left) < 0 && errno != EINTR)
			fail("poll: %s", strerror(errno));
	}
	close(p[0].fd);
	*reports += scan_kmsg(&oopsed);
	return exited > 0;
}

int main(int argc, char **argv)
{
	int opt, c, passed = 0, failed = 0, planned = 0, reports, stuck = 0;
	const char *cases = "1,2,3,4,5,6";
	uint8_t *buf;
	struct tvm t;

	seed = now_ms();
	while ((opt = getopt(argc, argv, "t:c:s:rfn")) != -1) {
		switch (opt) {
		case 't': seconds = atoi(optarg); break;
		case 'c': cases = optarg; break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'r': require_all = 1; break;
		case 'f': require_fail_nth = 1; break;
		case 'n': no_kmsg = 1; break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-c CASES] [-s SEED] [-r] [-f] [-n]\n", argv[0]);
			return 2;
		}
	}
	seed |= 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (c = 1; c <= 6; c++)
		planned += !!strchr(cases, '0' + c);
	printf("TAP version 13\n");
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		no_kvm(planned, "cannot open /dev/kvm: %s", strerror(errno));
	if (ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_BINARY_STATS_FD) <= 0)
		no_kvm(planned, "KVM_CAP_BINARY_STATS_FD is not announced");
	printf("1..%d\n", planned);
	/* From here on, an error that ends the run says so on a TAP line. */
	fail_prefix = "Bail out! ";
	printf("# seed %llu, %u s for cases 1 and 2\n", seed, seconds);
	fig = mmap(NULL, sizeof(*fig), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fig == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	run_size = xioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0, "KVM_GET_VCPU_MMAP_SIZE");
	have_debugfs = !access(DEBUGFS_KVM, F_OK);
	if (!have_debugfs && require_all)
		fail("no " DEBUGFS_KVM ": the freed-VM checks need it");
	kmsg_fd = no_kmsg ? -1 : open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd < 0 && !no_kmsg && require_all)
		fail("open /dev/kmsg: %s: the kernel log must be watched", strerror(errno));
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);
	else
		printf("# the kernel log is not watched: %s\n", no_kmsg ? "-n" : strerror(errno));
	if (!have_debugfs)
		printf("# no " DEBUGFS_KVM ": freed VMs are not observed\n");

	buf = malloc(FILE_MAX);
	for (c = 1; c <= 6; c++) {
		uint64_t t0 = now_ms();
		int status, errors;
		pid_t pid;

		if (!strchr(cases, '0' + c))
			continue;
		cur_case = c;
		if (stuck) {
			failed++;
			printf("not ok %d case %d: %s # not run: case %d is stuck in the kernel\n",
			       passed + failed, c, case_names[c], stuck);
			continue;
		}
		fflush(stdout);
		/*
		 * Each case runs in a process of its own, so that a case an
		 * oops kills is still reported, with the kernel's reports.
		 */
		pid = fork();
		if (pid < 0)
			fail("fork: %s", strerror(errno));
		if (pid == 0) {
			/* A case's error is its own result, not the run's end. */
			fail_prefix = "# FAIL: ";
			atomic_store(&case_errors, 0);
			/* The header and descriptors every file of a kind must have. */
			tvm_create(&t, 1, 0);
			tvm_check(&t, buf);
			tvm_destroy(&t);
			if (!ref_vm.desc || !ref_vcpu.desc)
				fail("the first VM's stats files cannot be read");
			if (!passed && !failed)
				printf("# VM file %zu bytes (%u stats), vCPU file %zu bytes (%u stats)\n",
				       ref_vm.size, ref_vm.h.num_desc, ref_vcpu.size,
				       ref_vcpu.h.num_desc);
			switch (c) {
			case 1: case_readers(seconds * 600); break;
			case 2: case_lifetimes(seconds * 400); break;
			case 3: case_freed(); break;
			case 4: case_errors_paths(); break;
			case 5: case_bad_input(); break;
			case 6: case_padding(); break;
			}
			errors = atomic_load(&case_errors);
			_exit(errors > 100 ? 100 : errors);
		}
		reports = 0;
		atomic_store(&case_errors, 0);
		errors = 0;
		if (!wait_case(pid, &status, &reports)) {
			bad("still running %d s after the kernel oopsed: stuck in the kernel",
			    STUCK_MS / 1000);
			stuck = c;
		} else if (WIFSIGNALED(status)) {
			bad("killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
		} else {
			errors = WEXITSTATUS(status);
		}
		if (reports)
			bad("%d report(s) in the kernel log", reports);
		errors += atomic_load(&case_errors);
		if (errors) {
			failed++;
			printf("not ok %d case %d: %s # %d error(s), %llu ms\n", passed + failed,
			       c, case_names[c], errors, (unsigned long long)(now_ms() - t0));
		} else {
			passed++;
			printf("ok %d case %d: %s # %llu ms\n", passed + failed, c, case_names[c],
			       (unsigned long long)(now_ms() - t0));
		}
	}
	c = count_vm_dirs();
	if (c)
		printf("# %d VM directories left in debugfs\n", c);
	printf("# figures: reads %llu, bytes compared %llu, VMs created %llu, freed %llu, "
	       "fds cycled %llu, faults injected %llu, kernel reports %llu\n",
	       atomic_load(&n_reads), atomic_load(&n_bytes), atomic_load(&n_created),
	       atomic_load(&n_freed), atomic_load(&n_fds), atomic_load(&n_faults),
	       atomic_load(&n_reports));
	if (atomic_load(&n_created) != atomic_load(&n_freed)) {
		printf("# VMs created and freed differ\n");
		failed++;
	}
	printf("# %d passed, %d failed, 0 skipped\n", passed, failed);
	return failed ? 1 : 0;
}
