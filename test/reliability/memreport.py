#!/usr/bin/env python3
"""Sort the reports of memory checkers by whose code they are in.

    memreport.py LOG...                 valgrind memcheck logs: summary; exit 1
                                        if any report is ours, the test's or
                                        cannot be attributed
    memreport.py --sanitizer LOG...     the same for AddressSanitizer,
                                        LeakSanitizer and UBSan logs
    memreport.py --gen-supp LOG...      anchored valgrind suppressions for the
                                        reports that are Open MPI's
    memreport.py --self-test            the classifier on known reports

A report in *unloaded code* (a frame valgrind can no longer place) cannot
be attributed and fails like one of ours.  A report is *ours* when any frame of its stack is in coll/bufpool or
mpool/regpar (a source file, a function prefix or the .so name), wherever
that frame is: an Open MPI allocation leaked because of a call of ours
counts as ours.  One exception, narrow on purpose: a leak allocated by
coll/libnbc itself (its first frame outside the allocator is in
mca_coll_libnbc) whose only frames of ours are a persistent entry point
(mca_coll_bufpool_<coll>_init, and <coll>_init_previous(_own) under it)
handing the request back to it is libnbc's:
its persistent requests never free their schedule (Open MPI 4.1.4 to 6.0.x,
the leak issue 20 is about), whoever asked for them.  It is the *test's* when its first frame outside the
allocator and libc is in the test program.  Everything else is Open MPI's
(or PMIx', libevent's, hwloc's, the loader's).

The generated suppressions are anchored at the top of the stack: the
allocator or system call, libc's own frames, then exactly one frame of the
library that made the call, and nothing after.  So a suppression can only
ever match a report whose faulty call is made by that library itself; and
valgrind.sh also runs the job without any suppression and feeds every
report to this script, so a report of ours cannot hide behind one.
"""
import re
import sys

OURS = re.compile(
    r"mca_coll_bufpool|mca_mpool_regpar|\b(coll_bufpool|mpool_regpar)_\w*\.c\b|\bregpar_\w*\.c\b"
    r"|\bby 0x[0-9A-F]+: (mca_coll_bufpool_|mca_mpool_regpar_|regpar_|bufpool_)\w*"
    r"|\bat 0x[0-9A-F]+: (mca_coll_bufpool_|mca_mpool_regpar_|regpar_|bufpool_)\w*")
TEST = re.compile(r"\b(collcheck_\w+|rel_job|pvar_util|test_\w+)\.c\b")
FRAME = re.compile(r"^\s*(at|by) 0x[0-9A-Fa-f]+: (\S+)(?: (\((?:in )?([^)]*)\)))?")
# Sanitizers: "#1 0x7f.. in func file.c:12:3" or "#1 0x7f..  (/lib/x.so+0x13cae)"
SAN_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ +(?:in (\S+) ?)?(.*)$")
# Frames that are the allocator, valgrind's preload or libc/the loader
# themselves: skipped when looking for the library that made the call.
RUNTIME_OBJ = re.compile(r"vgpreload_|/libc\.so|/ld-linux|/libstdc\+\+|libsanitizer/|/libasan|/libubsan"
                         r"|^libio/|^string/|^stdlib/|^malloc/")
RUNTIME_SRC = re.compile(r"^[\w.-]+\.[cS]:\d+$")  # glibc's own sources have no directory


SANITIZER = False


def blocks(path):
    """Yield the lines of each report of a log (valgrind's lines start with
    ==PID==, sanitizers' do not; both separate reports by empty lines)."""
    current = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^==\d+== ?(.*)$", line)
            if SANITIZER:
                text = line if not m else ""
            elif not m:
                continue
            else:
                text = m.group(1)
            if text.strip() == "":
                if current:
                    yield current
                current = []
            elif not (not current and re.match(r"^Thread \d+:", text)):
                current.append(text)  # (a report may start with "Thread N:")
    if current:
        yield current


def is_report(block):
    if SANITIZER:
        return any(SAN_FRAME.match(l) for l in block[1:]) and re.search(
            r"leak of|ERROR: AddressSanitizer|runtime error|ERROR: ThreadSanitizer", block[0])
    return any(FRAME.match(l) for l in block[1:]) and not block[0].startswith(
        ("HEAP SUMMARY", "LEAK SUMMARY", "ERROR SUMMARY", "Memcheck", "Copyright", "Using",
         "Command", "Parent PID"))


def frames(block):
    out = []
    for l in block:
        if SANITIZER:
            m = SAN_FRAME.match(l)
            if m:
                where = m.group(2).strip().strip("()")
                if "<unknown module>" in where:
                    out.append(("???", ""))
                else:
                    out.append((m.group(1) or "???", re.sub(r"\+0x[0-9a-f]+$", "", where)))
            continue
        m = FRAME.match(l)
        if m:
            out.append((m.group(2), m.group(4) or ""))
    return out


def is_runtime(fn, where):
    if RUNTIME_OBJ.search(where):
        return True
    if where and RUNTIME_SRC.match(where) and not TEST.search(where):
        return True  # glibc built with debug info: strdup.c:42, writev.c:26
    if fn.startswith("__interceptor_") or fn.startswith("__asan") or fn.startswith("__ubsan"):
        return True
    return fn in ("malloc", "calloc", "realloc", "free", "strdup", "strndup", "memalign",
                  "posix_memalign", "operator")


# A persistent collective bufpool handed back to libnbc (see above): the
# entry point, and its hand-back (<coll>_init_previous, inlined into it,
# and <coll>_init_previous_own, out of line, which may mend a rank's own
# block first).
HANDED_BACK = re.compile(r"^(mca_coll_bufpool_\w+_init|\w+_init_previous(_own)?)$")


def handed_back_to_libnbc(block):
    fs = [(fn, where) for fn, where in frames(block) if not is_runtime(fn, where)]
    if not fs or "mca_coll_libnbc" not in fs[0][1]:
        return False
    ours = [fn for fn, where in fs if OURS.search(fn + " " + where)]
    return bool(ours) and all(HANDED_BACK.match(fn) for fn in ours)


def owner(block):
    text = "\n".join(block)
    if OURS.search(text):
        if header_of(block) == "leak" and handed_back_to_libnbc(block):
            return "openmpi"
        return "ours"
    for fn, where in frames(block):
        if fn == "???" and not where:
            # An address in no object: unloaded before valgrind reported
            # (run with FAULT_KEEP_LOADED=1, see valgrind.sh).  It might be
            # ours.
            return "unknown"
        if is_runtime(fn, where):
            continue
        return "test" if TEST.search(where) else "openmpi"
    return "openmpi"


def header_of(block):
    h = block[0]
    if "lost in loss record" in h or "leak of" in h:
        return "leak"
    h = re.sub(r"^.*runtime error: ", "runtime error: ", h)
    return re.sub(r"0x[0-9a-f]+|\d[\d,]*", "N", h)


def suppression(block):
    head = block[0]
    lines = []
    if "lost in loss record" in head:
        lines += ["Memcheck:Leak", "match-leak-kinds: definite,indirect,possible"]
    elif head.startswith("Syscall param"):
        lines += ["Memcheck:Param", head.split()[2]]
    elif head.startswith("Conditional jump"):
        lines += ["Memcheck:Cond"]
    elif head.startswith("Use of uninitialised value of size"):
        lines += ["Memcheck:Value" + head.split()[-1]]
    elif head.startswith(("Invalid read of size", "Invalid write of size")):
        lines += ["Memcheck:Addr" + head.split()[-1]]
    else:
        return None
    for fn, where in frames(block):
        if is_runtime(fn, where):
            lines.append("fun:" + fn)
            continue
        if where.startswith("/"):
            lib = re.sub(r"\.so[.\d]*$", ".so", where.rsplit("/", 1)[-1])
            lines.append("obj:*/" + lib + "*")
        else:
            lines.append("fun:" + fn)
        break
    return lines


SELF_TEST = [
    # (sanitizer format?, log text, expected owner)
    (True, """Direct leak of 731 byte(s) in 21 object(s) allocated from:
    #0 0x7efe in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x7efe  (/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_coll_libnbc.so+0xf324)
    #2 0x7efe in mca_coll_bufpool_alltoall_init /src/ompi-mca-coll-bufpool/coll_bufpool_nb.c:803
    #3 0x7efe in PMPIX_Alltoall_init (/lib/x86_64-linux-gnu/libmpi.so.40+0xe8aa6)

""", "openmpi"),
    (True, """Direct leak of 2688 byte(s) in 84 object(s) allocated from:
    #0 0x7efe in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x7efe  (/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_coll_libnbc.so+0x13ae5)
    #2 0x7efe in gather_init_previous_own ../../../ompi-mca-coll-bufpool/coll_bufpool_nb.c:629
    #3 0x7efe in gather_init_previous ../../../ompi-mca-coll-bufpool/coll_bufpool_nb.c:629
    #4 0x7efe in mca_coll_bufpool_gather_init ../../../ompi-mca-coll-bufpool/coll_bufpool_nb.c:629
    #5 0x7efe in MPIX_Gather_init (/lib/x86_64-linux-gnu/libmpi.so.40+0xe9dee)

""", "openmpi"),
    (True, """Direct leak of 96 byte(s) in 1 object(s) allocated from:
    #0 0x7efe in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x7efe  (/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_coll_libnbc.so+0xf324)
    #2 0x7efe in task_start /src/ompi-mca-coll-bufpool/coll_bufpool_nb.c:500
    #3 0x7efe in mca_coll_bufpool_alltoall_init /src/ompi-mca-coll-bufpool/coll_bufpool_nb.c:803

""", "ours"),
    (True, """Direct leak of 96 byte(s) in 1 object(s) allocated from:
    #0 0x7efe in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x7efe  (/usr/lib/x86_64-linux-gnu/libopen-pal.so.40+0x1234)
    #2 0x7efe in mca_coll_bufpool_allreduce_init /src/ompi-mca-coll-bufpool/coll_bufpool_nb.c:803

""", "ours"),
    (False, """==1== 8 bytes in 1 blocks are definitely lost in loss record 1 of 2
==1==    at 0x4841: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)
==1==    by 0x4A3B: strdup (strdup.c:42)
==1==    by 0x4C9B: opal_argv_append_nosize (in /usr/lib/x86_64-linux-gnu/libopen-pal.so.40)
==1==    by 0x9000: mca_coll_bufpool_comm_query (coll_bufpool_module.c:77)
==1==    by 0x4C9C: mca_coll_base_comm_select (in /usr/lib/x86_64-linux-gnu/libmpi.so.40)
==1== 
""", "ours"),
    (False, """==1== Invalid read of size 8
==1==    at 0x9100: ??? (in /tmp/b/components/mca_mpool_regpar.so)
==1==    by 0x4C9C: opal_progress (in /usr/lib/x86_64-linux-gnu/libopen-pal.so.40)
==1== 
""", "ours"),
    (False, """==1== 4 bytes in 1 blocks are definitely lost in loss record 2 of 2
==1==    at 0x4841: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)
==1==    by 0xA139: ???
==1==    by 0x4C9B: mca_base_framework_open (in /usr/lib/x86_64-linux-gnu/libopen-pal.so.40)
==1== 
""", "unknown"),
    (False, """==1== 4 bytes in 1 blocks are definitely lost in loss record 2 of 2
==1==    at 0x4841: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)
==1==    by 0x10F8: cc_init (collcheck_common.c:293)
==1==    by 0x10C7: main (rel_job.c:801)
==1== 
""", "test"),
    (False, """==1== 4 bytes in 1 blocks are definitely lost in loss record 2 of 2
==1==    at 0x4841: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)
==1==    by 0x4C9B: mca_base_framework_open (in /usr/lib/x86_64-linux-gnu/libopen-pal.so.40)
==1==    by 0x10F8: cc_init (collcheck_common.c:293)
==1== 
""", "openmpi"),
    (True, """Direct leak of 8 byte(s) in 1 object(s) allocated from:
    #0 0x7f62 in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x7f63 in regpar_pool_create /src/opal-mca-mpool-regpar/regpar_pool.c:700

""", "ours"),
    (True, """/src/ompi-mca-coll-bufpool/coll_bufpool_pipeline.c:12:3: runtime error: signed integer overflow
    #0 0x7f63 in bufpool_segments /src/ompi-mca-coll-bufpool/coll_bufpool_pipeline.c:12

""", "ours"),
    (True, """Direct leak of 8 byte(s) in 1 object(s) allocated from:
    #0 0x7f62 in __interceptor_calloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:77
    #1 0x7f63  (<unknown module>)

""", "unknown"),
    (True, """Direct leak of 136 byte(s) in 1 object(s) allocated from:
    #0 0x7f62 in __interceptor_calloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:77
    #1 0x7f63  (/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4+0x13cae)

""", "openmpi"),
]


def self_test():
    """The classifier on known reports: a check that cannot fail is no check."""
    import os
    import tempfile
    global SANITIZER
    bad = 0
    for sanitizer, text, expected in SELF_TEST:
        SANITIZER = sanitizer
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(text)
        got = [owner(b) for b in blocks(f.name) if is_report(b)]
        os.unlink(f.name)
        if got != [expected]:
            print("memreport self-test: expected %s, got %s for:\n%s" % (expected, got, text))
            bad += 1
    print("memreport self-test: %d of %d cases right" % (len(SELF_TEST) - bad, len(SELF_TEST)))
    return 1 if bad else 0


def main(argv):
    global SANITIZER
    if "--self-test" in argv:
        return self_test()
    SANITIZER = "--sanitizer" in argv
    gen = "--gen-supp" in argv
    paths = [a for a in argv if not a.startswith("--")]
    counts = {"ours": 0, "test": 0, "unknown": 0, "openmpi": 0}
    kinds = {}
    supps = {}
    bad = []
    for p in paths:
        for b in blocks(p):
            if not is_report(b):
                continue
            who = owner(b)
            counts[who] += 1
            kinds[(who, header_of(b))] = kinds.get((who, header_of(b)), 0) + 1
            if who != "openmpi":
                bad.append((p, b))
            elif gen:
                s = suppression(b)
                if s:
                    supps["\n".join(s)] = s
    if gen:
        for i, (key, s) in enumerate(sorted(supps.items())):
            kind = s[0].split(":")[1].lower()
            caller = re.sub(r"^(obj:\*/|fun:)|\.so\*$", "", s[-1])
            print("{\n   %s-in-%s-%02d\n   %s\n}" % (kind, caller, i, "\n   ".join(s)))
        return 0
    tool = "sanitizers" if SANITIZER else "valgrind"
    for (who, kind), n in sorted(kinds.items()):
        print("%s: %-8s %5d x %s" % (tool, who, n, kind))
    print("%s: reports: %d ours, %d the test's, %d in unloaded code, %d Open MPI's (and its "
          "libraries')" % (tool, counts["ours"], counts["test"], counts["unknown"], counts["openmpi"]))
    for p, b in bad[:10]:
        print("--- %s report in %s:" % (owner(b), p))
        print("\n".join("    " + l for l in b[:25]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
