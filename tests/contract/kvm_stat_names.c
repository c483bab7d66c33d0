// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvm_stat_names: the running kernel's stats against the contract's table
 * (contract/stat-names.tsv, next to this program as stat-names.tsv).
 *
 * Creates a VM and a vCPU, reads the names and types of their binary
 * stats, lists KVM's debugfs directory, and checks, as TAP:
 *  1. the VM stats file has exactly the table's VM stats for this
 *     architecture (and the generic ones), each of the table's type
 *     (the rows of upstream stats that the series lacks aside);
 *  2. the same for the vCPU stats file;
 *  3. every debugfs file the table names is there, and no other.
 * Built statically against the build machine's <linux/kvm.h>.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#if defined(__x86_64__)
#define ARCH "x86"
#elif defined(__aarch64__)
#define ARCH "arm64"
#else
#error "no table arch for this architecture"
#endif

#define MAX_STATS 512

struct stat_name {
	char kind[8];		/* vm or vcpu */
	char name[64];
	char type[32];
};

struct set {
	struct stat_name s[MAX_STATS];
	int n;
};

static void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

static void add(struct set *set, const char *kind, const char *name, const char *type)
{
	struct stat_name *s;

	if (set->n == MAX_STATS) {
		printf("Bail out! more than %d stats\n", MAX_STATS);
		exit(1);
	}
	s = &set->s[set->n++];
	snprintf(s->kind, sizeof(s->kind), "%s", kind);
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->type, sizeof(s->type), "%s", type);
}

static int has(const struct set *set, const struct stat_name *want, int with_type)
{
	int i;

	for (i = 0; i < set->n; i++)
		if (!strcmp(set->s[i].kind, want->kind) && !strcmp(set->s[i].name, want->name) &&
		    (!with_type || !strcmp(set->s[i].type, want->type)))
			return 1;
	return 0;
}

/* The table's type words, from a descriptor's flags and exponent. */
static const char *type_of(const struct kvm_stats_desc *d)
{
	static char buf[32];
	unsigned int type = d->flags & KVM_STATS_TYPE_MASK;
	unsigned int unit = d->flags & KVM_STATS_UNIT_MASK;
	const char *t = type == KVM_STATS_TYPE_CUMULATIVE ? "cumulative" :
			type == KVM_STATS_TYPE_INSTANT ? "instant" :
			type == KVM_STATS_TYPE_PEAK ? "peak" :
			type == KVM_STATS_TYPE_LOG_HIST ? "log-hist" :
			type == KVM_STATS_TYPE_LINEAR_HIST ? "linear-hist" : "unknown";

	if (type == KVM_STATS_TYPE_LOG_HIST || type == KVM_STATS_TYPE_LINEAR_HIST)
		return t;
	if (unit == KVM_STATS_UNIT_SECONDS && d->exponent == -9)
		snprintf(buf, sizeof(buf), "%s-ns", t);
	else if (unit == KVM_STATS_UNIT_BOOLEAN)
		snprintf(buf, sizeof(buf), "%s-boolean", t);
	else
		snprintf(buf, sizeof(buf), "%s", t);
	return buf;
}

static void read_stats(int fd, const char *kind, struct set *got)
{
	struct kvm_stats_header h;
	size_t size;
	char *descs;
	unsigned int i;

	if (fd < 0)
		die("KVM_GET_STATS_FD");
	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		die("header read");
	size = h.num_desc * (sizeof(struct kvm_stats_desc) + h.name_size);
	descs = malloc(size);
	if (!descs)
		die("malloc");
	if (pread(fd, descs, size, h.desc_offset) != (ssize_t)size)
		die("descriptor read");
	for (i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(descs + i *
			(sizeof(struct kvm_stats_desc) + h.name_size));

		add(got, kind, d->name, type_of(d));
	}
	free(descs);
	close(fd);
}

/* Compare: every wanted stat of @kind is in @got (with its type), and no more. */
static int compare(int n, const char *what, const char *kind, const struct set *want,
		   const struct set *got, int with_type)
{
	int i, bad = 0, count = 0;

	for (i = 0; i < want->n; i++) {
		if (strcmp(want->s[i].kind, kind))
			continue;
		count++;
		if (!has(got, &want->s[i], with_type)) {
			printf("# missing: %s %s (%s)\n", kind, want->s[i].name, want->s[i].type);
			bad++;
		}
	}
	for (i = 0; i < got->n; i++) {
		if (strcmp(got->s[i].kind, kind))
			continue;
		if (!has(want, &got->s[i], with_type)) {
			printf("# not in the table: %s %s (%s)\n", kind, got->s[i].name, got->s[i].type);
			bad++;
		}
	}
	printf("%sok %d %s: %d names as the table has them\n", bad ? "not " : "", n, what, count);
	return bad;
}

int main(int argc, char **argv)
{
	static struct set want_bin, want_dbg, got_bin, got_dbg;
	char path[4096], line[1024];
	const char *dir = argc > 1 ? argv[1] : "/sys/kernel/debug/kvm";
	struct dirent *e;
	FILE *table;
	DIR *debugfs;
	int kvm, vm, vcpu, bad = 0;
	char *slash;

	printf("TAP version 13\n1..3\n");
	snprintf(path, sizeof(path), "%s", argv[0]);
	slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (slash ? slash + 1 - path : 0),
		 "stat-names.tsv");
	table = fopen(path, "r");
	if (!table)
		die(path);
	while (fgets(line, sizeof(line), table)) {
		char *f[7], *save = NULL, *p = line;
		int i;

		if (line[0] == '#' || line[0] == '\n' || !strncmp(line, "arch\t", 5))
			continue;
		line[strcspn(line, "\n")] = 0;
		for (i = 0; i < 7; i++, p = NULL)
			f[i] = strtok_r(p, "\t", &save);
		if (!f[4])
			continue;
		if (strcmp(f[0], ARCH) && strcmp(f[0], "generic"))
			continue;
		/* A stat that upstream has and the series lacks. */
		if (!strcmp(f[2], "-"))
			continue;
		add(&want_bin, f[1], f[2], f[4]);
		/* debugfs holds one value per file: no histograms. */
		if (strcmp(f[4], "log-hist") && strcmp(f[4], "linear-hist"))
			add(&want_dbg, "file", f[3], "");
	}
	fclose(table);

	kvm = open("/dev/kvm", O_RDWR);
	if (kvm < 0)
		die("/dev/kvm");
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM");
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		die("KVM_CREATE_VCPU");
	read_stats(ioctl(vm, KVM_GET_STATS_FD, NULL), "vm", &got_bin);
	read_stats(ioctl(vcpu, KVM_GET_STATS_FD, NULL), "vcpu", &got_bin);
	bad += compare(1, "VM stats file (" ARCH ")", "vm", &want_bin, &got_bin, 1);
	bad += compare(2, "vCPU stats file (" ARCH ")", "vcpu", &want_bin, &got_bin, 1);

	/* KVM's global debugfs files: one per stat, beside the VMs' directories. */
	debugfs = opendir(dir);
	if (!debugfs)
		die(dir);
	while ((e = readdir(debugfs)))
		if (e->d_type == DT_REG)
			add(&got_dbg, "file", e->d_name, "");
	closedir(debugfs);
	bad += compare(3, "debugfs files", "file", &want_dbg, &got_dbg, 0);
	close(vcpu);
	close(vm);
	close(kvm);
	return bad ? 1 : 0;
}
