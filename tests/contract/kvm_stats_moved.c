// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_stats_moved: which x86 stats a fixed set of small guests moves, so
 * that the same program on kvm_amd (QEMU) and on kvm_intel (Bochs) shows
 * what each vendor module counts (scripts/vendor-table compares the two).
 *
 * Each workload runs in a VM of its own, in real mode, and reads the VM's
 * and the vCPU's stats fds before the VM goes:
 *   io       1000 port writes that exit to userspace, then HLT (no in-kernel
 *            irqchip: the HLT exits to userspace too)
 *   mmio     a read and a write of a guest-physical page with no memslot
 *   spin     a guest that loops without exits, kicked out of KVM_RUN by
 *            a timer's signal: the host's interrupts exit the guest (with
 *            interrupts on in the guest: Bochs's VMX takes an external
 *            interrupt only when the guest's RFLAGS.IF is set)
 *   halt     in-kernel irqchip, halt polling allowed (KVM_CAP_HALT_POLL);
 *            HLT with interrupts off, kicked out of KVM_RUN by signals
 *            (polling, waiting, signal exits)
 *   nmi      two KVM_NMIs at once into a guest that loops on port writes:
 *            the second waits for an NMI window
 *   irq      an interrupt window asked for while the guest has interrupts
 *            off, then KVM_INTERRUPT once it opens
 *   yield    a KVM_HC_SCHED_YIELD hypercall (VMCALL or VMMCALL)
 *   dirty    dirty logging switched on, the guest writes, the log is read
 * For each stat it prints "# moved NAME" or "# still NAME" (a histogram
 * moved if any bucket did; a peak or instant stat if it was ever not 0),
 * then one TAP result per workload. Exit status 0 when every workload ran
 * as expected; what moved is not judged here.
 */
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include "kvm_vm.h"

#define MEM_SIZE 0x10000
#define CODE_GPA 0x1000
#define HANDLER_GPA 0x1800
#define KVM_HC_SCHED_YIELD 11

/* The guests, 16-bit code assembled here and copied to CODE_GPA. */
#define GUEST(name, body)                                                       \
	extern const uint8_t name[], name##_end[];                              \
	asm(".pushsection .rodata\n" #name ":\n.code16\n" body "\n.code64\n"    \
	    #name "_end:\n.popsection")

GUEST(io_code, "mov $0x3f8, %dx\n mov $1000, %cx\n1: out %al, (%dx)\n loop 1b\n hlt");
GUEST(mmio_code, "mov $0xa000, %ax\n mov %ax, %ds\n movb 0x0, %bl\n movb %bl, 0x8\n hlt");
GUEST(spin_code, "sti\n1: inc %ax\n jmp 1b");
GUEST(halt_code, "cli\n1: hlt\n jmp 1b");
GUEST(loop_code, "sti\n1: out %al, $0x80\n jmp 1b");
GUEST(irq_code, "cli\n out %al, $0x80\n sti\n nop\n1: out %al, $0x80\n jmp 1b");
GUEST(vmcall_code, "mov $11, %eax\n xor %ebx, %ebx\n vmcall\n hlt");
GUEST(vmmcall_code, "mov $11, %eax\n xor %ebx, %ebx\n vmmcall\n hlt");
GUEST(write_code, "mov $0x2000, %bx\n mov $14, %cx\n1: movb %cl, (%bx)\n add $0x1000, %bx\n"
		  " loop 1b\n hlt");
/* Interrupt and NMI handlers: return at once. */
GUEST(iret_code, "iret");

struct guest {
	int kvm_fd, vm_fd, vcpu_fd;
	struct kvm_run *run;
	int run_size;
	uint8_t *mem;
};

static int failures, workload;

/* Every stat seen, and whether it moved in any workload. */
static struct seen {
	char name[128];
	int moved;
} seen[512];
static unsigned int nseen;

static void saw(const char *name, int moved)
{
	unsigned int i;

	for (i = 0; i < nseen; i++)
		if (!strcmp(seen[i].name, name))
			break;
	if (i == nseen) {
		if (nseen == sizeof(seen) / sizeof(seen[0]))
			fail("more than %u stats", nseen);
		snprintf(seen[nseen++].name, sizeof(seen[0].name), "%s", name);
	}
	seen[i].moved |= moved;
}

/* Read a whole stats file and note which of its stats are not 0. */
static void note_stats(int fd)
{
	struct kvm_stats_header h;
	size_t desc_size;
	uint64_t *data;
	char *descs;
	unsigned int i, b;
	size_t data_size = 0;

	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		fail("read the stats header: %s", strerror(errno));
	desc_size = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = malloc(h.num_desc * desc_size);
	if (!descs)
		fail("malloc");
	if (pread(fd, descs, h.num_desc * desc_size, h.desc_offset) != (ssize_t)(h.num_desc * desc_size))
		fail("read the descriptors: %s", strerror(errno));
	for (i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(descs + i * desc_size);
		size_t end = (d->offset + d->size * sizeof(uint64_t));

		if (end > data_size)
			data_size = end;
	}
	data = malloc(data_size);
	if (!data)
		fail("malloc");
	if (pread(fd, data, data_size, h.data_offset) != (ssize_t)data_size)
		fail("read the data block: %s", strerror(errno));
	for (i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(descs + i * desc_size);
		int moved = 0;

		for (b = 0; b < d->size; b++)
			moved |= data[d->offset / sizeof(uint64_t) + b] != 0;
		saw(d->name, moved);
	}
	free(data);
	free(descs);
	close(fd);
}

static void guest_create(struct guest *g, const uint8_t *code, const uint8_t *end, int irqchip)
{
	struct kvm_userspace_memory_region region = { 0 };
	struct kvm_sregs sregs;
	struct kvm_regs regs = { 0 };
	g->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (g->kvm_fd < 0)
		fail("open /dev/kvm: %s", strerror(errno));
	g->vm_fd = xioctl(g->kvm_fd, KVM_CREATE_VM, 0, "KVM_CREATE_VM");
	g->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g->mem == MAP_FAILED)
		fail("mmap guest memory: %s", strerror(errno));
	memcpy(g->mem + CODE_GPA, code, end - code);
	memcpy(g->mem + HANDLER_GPA, iret_code, iret_code_end - iret_code);
	/* Real-mode vectors 2 (NMI) and 0x20 point at the iret. */
	for (unsigned int v = 0; v < 256; v++) {
		g->mem[v * 4] = HANDLER_GPA & 0xff;
		g->mem[v * 4 + 1] = HANDLER_GPA >> 8;
	}
	region.memory_size = MEM_SIZE;
	region.userspace_addr = (uintptr_t)g->mem;
	xioctl(g->vm_fd, KVM_SET_USER_MEMORY_REGION, &region, "KVM_SET_USER_MEMORY_REGION");
	if (irqchip)
		xioctl(g->vm_fd, KVM_CREATE_IRQCHIP, NULL, "KVM_CREATE_IRQCHIP");
	g->vcpu_fd = xioctl(g->vm_fd, KVM_CREATE_VCPU, 0, "KVM_CREATE_VCPU");
	g->run_size = xioctl(g->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0, "KVM_GET_VCPU_MMAP_SIZE");
	g->run = mmap(NULL, g->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, g->vcpu_fd, 0);
	if (g->run == MAP_FAILED)
		fail("mmap kvm_run: %s", strerror(errno));
	xioctl(g->vcpu_fd, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	sregs.ss.base = 0;
	sregs.ss.selector = 0;
	xioctl(g->vcpu_fd, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS");
	regs.rip = CODE_GPA;
	regs.rsp = CODE_GPA - 0x10;
	regs.rflags = 0x2;
	xioctl(g->vcpu_fd, KVM_SET_REGS, &regs, "KVM_SET_REGS");
}

/* Note the stats of the VM and its vCPU, then let the VM go. */
static void guest_done(struct guest *g)
{
	note_stats(xioctl(g->vm_fd, KVM_GET_STATS_FD, NULL, "KVM_GET_STATS_FD (VM)"));
	note_stats(xioctl(g->vcpu_fd, KVM_GET_STATS_FD, NULL, "KVM_GET_STATS_FD (vCPU)"));
	munmap(g->run, g->run_size);
	close(g->vcpu_fd);
	close(g->vm_fd);
	close(g->kvm_fd);
	munmap(g->mem, MEM_SIZE);
}

/* KVM_RUN once; the exit reason, or -errno. */
static int run(struct guest *g)
{
	if (ioctl(g->vcpu_fd, KVM_RUN, NULL) < 0)
		return -errno;
	return g->run->exit_reason;
}

static void result(int ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	workload++;
	if (!ok) {
		failures++;
		printf("# %s: ", what);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	printf("%sok %d %s\n", ok ? "" : "not ", workload, what);
}

static void io(void)
{
	struct guest g;
	int r, n = 0;

	guest_create(&g, io_code, io_code_end, 0);
	while ((r = run(&g)) == KVM_EXIT_IO)
		n++;
	guest_done(&g);
	result(r == KVM_EXIT_HLT && n == 1000, "io", "exit %d after %d port writes", r, n);
}

static void mmio(void)
{
	struct guest g;
	int r, reads = 0, writes = 0;

	guest_create(&g, mmio_code, mmio_code_end, 0);
	while ((r = run(&g)) == KVM_EXIT_MMIO) {
		if (g.run->mmio.is_write)
			writes++;
		else
			reads++;
	}
	guest_done(&g);
	result(r == KVM_EXIT_HLT && reads == 1 && writes == 1, "mmio",
	       "exit %d after %d MMIO reads and %d writes", r, reads, writes);
}

static void kicked(int sig)
{
	(void)sig;
}

static void spin(void)
{
	struct itimerval in_20ms = { { 0, 0 }, { 0, 20000 } };
	struct guest g;
	int r;

	signal(SIGALRM, kicked);
	guest_create(&g, spin_code, spin_code_end, 0);
	setitimer(ITIMER_REAL, &in_20ms, NULL);
	r = run(&g);
	guest_done(&g);
	result(r == -EINTR, "spin", "KVM_RUN gave %d, expected -EINTR", r);
}

static void halt(void)
{
	struct itimerval every_5ms = { { 0, 5000 }, { 0, 5000 } }, off = { 0 };
	struct kvm_enable_cap poll_10ms = { .cap = KVM_CAP_HALT_POLL, .args = { 10000000 } };
	struct guest g;
	int r = 0, kicks = 0;

	signal(SIGALRM, kicked);
	guest_create(&g, halt_code, halt_code_end, 1);
	xioctl(g.vm_fd, KVM_ENABLE_CAP, &poll_10ms, "KVM_ENABLE_CAP(KVM_CAP_HALT_POLL)");
	setitimer(ITIMER_REAL, &every_5ms, NULL);
	while (kicks < 5 && (r = run(&g)) == -EINTR)
		kicks++;
	setitimer(ITIMER_REAL, &off, NULL);
	guest_done(&g);
	result(kicks == 5, "halt", "KVM_RUN gave %d after %d signals", r, kicks);
}

static void nmi(void)
{
	struct guest g;
	int r, n = 0;

	guest_create(&g, loop_code, loop_code_end, 0);
	while (n < 10 && (r = run(&g)) == KVM_EXIT_IO) {
		if (n++ == 3) {
			xioctl(g.vcpu_fd, KVM_NMI, NULL, "KVM_NMI");
			xioctl(g.vcpu_fd, KVM_NMI, NULL, "KVM_NMI");
		}
	}
	guest_done(&g);
	result(n == 10, "nmi", "exit %d after %d port writes", r, n);
}

static void irq(void)
{
	struct kvm_interrupt intr = { .irq = 0x20 };
	struct guest g;
	int r, windows = 0, n = 0;

	guest_create(&g, irq_code, irq_code_end, 0);
	g.run->request_interrupt_window = 1;
	while (n < 10) {
		r = run(&g);
		if (r == KVM_EXIT_IRQ_WINDOW_OPEN ||
		    (r == KVM_EXIT_IO && g.run->ready_for_interrupt_injection &&
		     g.run->request_interrupt_window)) {
			windows++;
			g.run->request_interrupt_window = 0;
			xioctl(g.vcpu_fd, KVM_INTERRUPT, &intr, "KVM_INTERRUPT");
		} else if (r != KVM_EXIT_IO) {
			break;
		}
		n++;
	}
	guest_done(&g);
	result(windows == 1 && n == 10, "irq", "%d windows, exit %d after %d exits", windows, r, n);
}

/* AMD's hypercall instruction is VMMCALL; CPUID leaf 0 says whose CPU this is. */
static int amd(void)
{
	unsigned int a = 0, b, c, d;

	asm volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
	return b == 0x68747541; /* "Auth"enticAMD */
}

static void yield(void)
{
	struct guest g;
	int r;

	if (amd())
		guest_create(&g, vmmcall_code, vmmcall_code_end, 0);
	else
		guest_create(&g, vmcall_code, vmcall_code_end, 0);
	r = run(&g);
	guest_done(&g);
	result(r == KVM_EXIT_HLT, "yield", "exit %d", r);
}

static void dirty(void)
{
	struct kvm_userspace_memory_region region = { 0 };
	struct kvm_dirty_log log = { 0 };
	uint64_t bitmap[MEM_SIZE / 4096 / 64 + 1] = { 0 };
	struct guest g;
	int r, pages = 0;
	unsigned int i;

	guest_create(&g, write_code, write_code_end, 0);
	region.memory_size = MEM_SIZE;
	region.userspace_addr = (uintptr_t)g.mem;
	region.flags = KVM_MEM_LOG_DIRTY_PAGES;
	xioctl(g.vm_fd, KVM_SET_USER_MEMORY_REGION, &region, "KVM_SET_USER_MEMORY_REGION (dirty log)");
	r = run(&g);
	log.dirty_bitmap = bitmap;
	xioctl(g.vm_fd, KVM_GET_DIRTY_LOG, &log, "KVM_GET_DIRTY_LOG");
	for (i = 0; i < MEM_SIZE / 4096; i++)
		pages += !!(bitmap[i / 64] & (1ULL << (i % 64)));
	guest_done(&g);
	/* The guest wrote 14 pages, 0x2000 to 0xf000. */
	result(r == KVM_EXIT_HLT && pages >= 14, "dirty", "exit %d, %d dirty pages", r, pages);
}

int main(void)
{
	unsigned int i, moved = 0;

	printf("TAP version 13\n1..8\n");
	io();
	mmio();
	spin();
	halt();
	nmi();
	irq();
	yield();
	dirty();
	for (i = 0; i < nseen; i++) {
		printf("# %s %s\n", seen[i].moved ? "moved" : "still", seen[i].name);
		moved += seen[i].moved;
	}
	printf("# %s: %u of %u stats moved\n", amd() ? "AMD" : "Intel", moved, nseen);
	return failures ? 1 : 0;
}
