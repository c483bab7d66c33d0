"""Read KVM's stat names out of kernel sources: the series' descriptor tables,
the base's debugfs_entries[] and upstream's descriptor tables.

Used by scripts/check-stat-names; `python3 scripts/stat-names.py draft`
prints the rows of contract/stat-names.tsv as the trees give them, a start
for editing that table when a stat is added.
"""
import os
import re
import subprocess
import sys

# Where each arch keeps its tables (the same file at the base, in the series
# and upstream); "generic" is the stats every arch includes.
FILES = {
    "generic": "include/linux/kvm_host.h",
    "x86": "arch/x86/kvm/x86.c",
    "arm64": "arch/arm64/kvm/guest.c",
    "mips": "arch/mips/kvm/mips.c",
    "book3s": "arch/powerpc/kvm/book3s.c",
    "booke": "arch/powerpc/kvm/booke.c",
    "s390": "arch/s390/kvm/kvm-s390.c",
}

# The series' descriptor macros, and upstream's, by the type they give.
OURS = {
    "COUNTER": "cumulative", "LEVEL": "instant", "PEAK": "peak",
    "TIME_NS": "cumulative-ns", "BOOL": "instant-boolean",
    "LOG_HIST": "log-hist", "LINEAR_HIST": "linear-hist",
}
UPSTREAM = {
    "COUNTER": "cumulative", "ICOUNTER": "instant", "PCOUNTER": "peak",
    "TIME_NSEC": "cumulative-ns", "IBOOLEAN": "instant-boolean",
    "PBOOLEAN": "peak-boolean", "LOGHIST_TIME_NSEC": "log-hist",
    "LINHIST_TIME_NSEC": "linear-hist",
}


def calls(text, pattern):
    """Yield (match, [top-level arguments]) for each call of a macro whose
    name (up to the opening parenthesis) matches pattern."""
    for m in re.finditer(pattern + r"\(", text):
        depth, args, cur, i = 1, [], "", m.end()
        while i < len(text) and depth:
            c = text[i]
            if c == '"':
                j = text.index('"', i + 1)
                cur += text[i:j + 1]
                i = j + 1
                continue
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
                if not depth:
                    break
            if c == "," and depth == 1:
                args.append(cur.strip())
                cur = ""
            else:
                cur += c
            i += 1
        args.append(cur.strip())
        yield m, args


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def tables(text):
    """The text of each stats descriptor table, with its kind (vm/vcpu)."""
    for m in re.finditer(r"kvm_(vm|vcpu)_stats_desc\[\]\s*=\s*\{(.*?)\n\};", text, re.S):
        yield m.group(1), m.group(2)
    for m in re.finditer(r"#define KVM_GENERIC_(VM|VCPU)_STATS\(\)(.*?)(?<!\\)\n", text, re.S):
        yield m.group(1).lower(), m.group(2).replace("\\\n", " ")


def series_stats(text):
    """[(kind, member, binary name, debugfs name, type)] of a series file:
    its descriptor tables, with the debugfs names that its
    kvm_*_stats_debugfs_names[] give."""
    text = strip_comments(text)
    debugfs = {(k.lower(), mem): n for k, mem, n in
               re.findall(r'\bKVM_(VM|VCPU)_STAT_DEBUGFS\(\s*([\w.]+),\s*"([^"]*)"\s*\)', text)}
    out = []
    for kind, body in tables(text):
        for m, args in calls(body, r"\b(?:VM|VCPU)_STAT_([A-Z_]+)"):
            if m.group(1) not in OURS or len(args) < 2:
                continue
            name = args[1].strip('"')
            out.append((kind, args[0], name, debugfs.get((kind, args[0]), name),
                        OURS[m.group(1)]))
    return out


def includes_generic(text):
    """The kinds (vm/vcpu) whose tables include the generic stats."""
    return {k for k, body in tables(strip_comments(text))
            if re.search(r"KVM_GENERIC_%s_STATS\(\)" % k.upper(), body)}


def base_debugfs(text):
    """[(kind, debugfs name, member)] of a base file's debugfs_entries[]."""
    return [(k.lower(), n, f) for k, n, f in
            re.findall(r'\b(VM|VCPU)_STAT\("([^"]+)",\s*(\w+)', strip_comments(text))]


def upstream_stats(text):
    """[(kind, name, type)] of an upstream file's descriptor tables."""
    out = []
    for _, body in tables(strip_comments(text)):
        for m, args in calls(body, r"\bSTATS_DESC_([A-Z_]+)"):
            if m.group(1) in UPSTREAM:
                out.append((args[0].split("_")[0].lower(), args[1], UPSTREAM[m.group(1)]))
    return out


def git_show(tree, rev, path):
    return subprocess.run(["git", "-C", tree, "show", "%s:%s" % (rev, path)],
                          capture_output=True, text=True, check=True).stdout


def read(tree, path):
    with open(os.path.join(tree, path), encoding="utf-8") as f:
        return f.read()


def draft(series_tree, base_rev, upstream_tree):
    """Rows of the name table as the trees give them, upstream guessed."""
    print("arch\tkind\tbinary\tdebugfs\ttype\tupstream\tnote")
    for arch, path in FILES.items():
        up = {(k, n): t for k, n, t in upstream_stats(read(upstream_tree, path))}
        for kind, member, name, debugfs, typ in series_stats(read(series_tree, path)):
            field = member.split(".")[-1]
            guess = next((n for n in (name, field) if (kind, n) in up), "-")
            print("\t".join((arch, kind, name, debugfs, typ, guess, "")))


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "draft":
        sys.exit("usage: stat-names.py draft SERIES_TREE BASE_REV UPSTREAM_TREE")
    draft(*sys.argv[2:])
