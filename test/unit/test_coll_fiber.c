/*
 * Unit test of coll/bufpool's fibers (ompi-mca-coll-bufpool/coll_bufpool_fiber.h),
 * no MPI: built twice, with the hand-written switch of this machine
 * (test_coll_fiber) and with the ucontext fallback (test_coll_fiber_uc).
 *
 *   - values live across switches survive (the switch keeps callee-saved
 *     registers), a fiber runs to its end and is then done;
 *   - the floating-point control state (MXCSR/x87 or FPCR: rounding mode)
 *     is each side's own;
 *   - many fibers interleave; a fiber suspended by one thread is resumed by
 *     another;
 *   - a stack's deepest use is measured (mincore), and an overflow hits the
 *     guard region (a child process must die of SIGSEGV), also from frames
 *     of 40 KiB that would step over a single guard page onto memory
 *     mapped right below the stack (which must stay untouched);
 *   - --bench N: N switch round trips (resume + yield), nanoseconds per
 *     round trip, and per stack map/unmap.
 */
#define _GNU_SOURCE /* mremap */
#include "coll_bufpool_fiber.h"
#include "unit.h"

#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK_BYTES (256 * 1024)

/* ---------------------------------------------------------------------- */

typedef struct counter {
    bufpool_fiber_t fiber;
    volatile long shared; /* written by both sides */
    int yields;
} counter_t;

static void count_up(void *arg)
{
    counter_t *c = arg;
    /* Locals live across every yield: kept in callee-saved registers (or
     * the fiber's stack) by the compiler. */
    long a = 1, b = 2, s = 0;
    double x = 0.5;
    for (int i = 0; i < c->yields; i++) {
        s += a * i + b;
        x *= 1.5;
        c->shared = s;
        bufpool_fiber_yield(&c->fiber);
        a += 1;
        b += 2;
    }
    c->shared = s + (long)x;
}

static void test_basic(void)
{
    bufpool_fiber_stack_t stack;
    UNIT_REQUIRE(0 == bufpool_fiber_stack_map(&stack, STACK_BYTES));
    UNIT_CHECK(stack.size >= STACK_BYTES);
    counter_t c = {.yields = 50};
    bufpool_fiber_init(&c.fiber, &stack, count_up, &c);
    long a = 1, b = 2, s = 0;
    unsigned long mine = 7;
    double x = 0.5;
    for (int i = 0; i < c.yields; i++) {
        UNIT_CHECK(!c.fiber.done);
        bufpool_fiber_resume(&c.fiber);
        s += a * i + b;
        x *= 1.5;
        a += 1;
        b += 2;
        mine = mine * 3 + 1;
        UNIT_CHECK_EQ_U64(c.shared, s);
    }
    bufpool_fiber_resume(&c.fiber);
    UNIT_CHECK(c.fiber.done);
    UNIT_CHECK_EQ_U64(c.shared, s + (long)x);
    /* A done fiber is not run again. */
    bufpool_fiber_resume(&c.fiber);
    UNIT_CHECK(c.fiber.done);
    unsigned long expect = 7;
    for (int i = 0; i < c.yields; i++) {
        expect = expect * 3 + 1;
    }
    UNIT_CHECK_EQ_U64(mine, expect);
    bufpool_fiber_stack_unmap(&stack);
    UNIT_CHECK(NULL == stack.map);
}

/* ---------------------------------------------------------------------- */

typedef struct rounding {
    bufpool_fiber_t fiber;
    int seen_inside, seen_after_resume;
} rounding_t;

static void set_upward(void *arg)
{
    rounding_t *r = arg;
    r->seen_inside = fegetround();
    fesetround(FE_UPWARD);
    bufpool_fiber_yield(&r->fiber);
    r->seen_after_resume = fegetround();
}

static void test_fp_control(void)
{
    bufpool_fiber_stack_t stack;
    UNIT_REQUIRE(0 == bufpool_fiber_stack_map(&stack, STACK_BYTES));
    rounding_t r = {0};
    fesetround(FE_TONEAREST);
    bufpool_fiber_init(&r.fiber, &stack, set_upward, &r);
    bufpool_fiber_resume(&r.fiber);
    /* The fiber started with its creator's mode and changed only its own. */
    UNIT_CHECK(FE_TONEAREST == r.seen_inside);
    UNIT_CHECK(FE_TONEAREST == fegetround());
    fesetround(FE_DOWNWARD);
    bufpool_fiber_resume(&r.fiber);
    UNIT_CHECK(r.fiber.done);
#if defined(BUFPOOL_FIBER_UCONTEXT)
    /* swapcontext keeps the floating-point environment with the context
     * only where glibc saves it (x86_64 does: fnstenv/stmxcsr). */
    (void)r.seen_after_resume;
#else
    UNIT_CHECK(FE_UPWARD == r.seen_after_resume);
#endif
    UNIT_CHECK(FE_DOWNWARD == fegetround());
    fesetround(FE_TONEAREST);
    bufpool_fiber_stack_unmap(&stack);
}

/* ---------------------------------------------------------------------- */

#define NFIBERS 64

static void test_many(void)
{
    static bufpool_fiber_stack_t stacks[NFIBERS];
    static counter_t cs[NFIBERS];
    for (int i = 0; i < NFIBERS; i++) {
        UNIT_REQUIRE(0 == bufpool_fiber_stack_map(&stacks[i], 64 * 1024));
        cs[i].yields = 10 + i % 7;
        bufpool_fiber_init(&cs[i].fiber, &stacks[i], count_up, &cs[i]);
    }
    int live = NFIBERS, rounds = 0;
    while (live > 0 && rounds < 100) {
        live = 0;
        for (int i = NFIBERS - 1; i >= 0; i--) {
            if (!cs[i].fiber.done) {
                bufpool_fiber_resume(&cs[i].fiber);
                live += !cs[i].fiber.done;
            }
        }
        rounds++;
    }
    UNIT_CHECK_EQ_U64(live, 0);
    UNIT_CHECK_EQ_U64(rounds, 10 + 6 + 1);
    for (int i = 0; i < NFIBERS; i++) {
        long a = 1, b = 2, s = 0;
        double x = 0.5;
        for (int k = 0; k < cs[i].yields; k++) {
            s += a * k + b;
            x *= 1.5;
            a++;
            b += 2;
        }
        UNIT_CHECK_EQ_U64(cs[i].shared, s + (long)x);
        bufpool_fiber_stack_unmap(&stacks[i]);
    }
}

/* ---------------------------------------------------------------------- */
/* Resumed by another thread. */

typedef struct hop {
    bufpool_fiber_t fiber;
    pthread_t threads[3];
} hop_t;

static void record_threads(void *arg)
{
    hop_t *h = arg;
    for (int i = 0; i < 3; i++) {
        h->threads[i] = pthread_self();
        bufpool_fiber_yield(&h->fiber);
    }
}

static void *resume_once(void *arg)
{
    bufpool_fiber_resume(&((hop_t *)arg)->fiber);
    return NULL;
}

static void test_threads(void)
{
    bufpool_fiber_stack_t stack;
    UNIT_REQUIRE(0 == bufpool_fiber_stack_map(&stack, STACK_BYTES));
    hop_t h;
    memset(&h, 0, sizeof(h));
    bufpool_fiber_init(&h.fiber, &stack, record_threads, &h);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        UNIT_REQUIRE(0 == pthread_create(&t[i], NULL, resume_once, &h));
        UNIT_REQUIRE(0 == pthread_join(t[i], NULL));
        UNIT_CHECK(pthread_equal(h.threads[i], t[i]));
    }
    UNIT_CHECK(!h.fiber.done);
    bufpool_fiber_resume(&h.fiber); /* the main thread ends it */
    UNIT_CHECK(h.fiber.done);
    bufpool_fiber_stack_unmap(&stack);
}

/* ---------------------------------------------------------------------- */
/* Stack use and the guard page. */

typedef struct deep {
    bufpool_fiber_t fiber;
    size_t bytes;
} deep_t;

static void touch_deep(void *arg)
{
    deep_t *d = arg;
    volatile char buf[96 * 1024];
    for (size_t i = 0; i < sizeof(buf); i += 512) {
        buf[i] = (char)i;
    }
    d->bytes = sizeof(buf) + (size_t)buf[512];
}

#if !defined(__SANITIZE_ADDRESS__)
/* Under ASan the overflow check below is left out (ASan's own stack checks
 * would report the deliberate overflow), and so is its fiber body. */
static size_t recurse(size_t depth)
{
    volatile char frame[4096];
    frame[0] = (char)depth;
    return depth > 1000000 ? (size_t)frame[0] : recurse(depth + 1) + (size_t)frame[0];
}

static void overflow(void *arg)
{
    (void)arg;
    (void)recurse(0);
}

/* Frames of 40 KiB whose only write is their lowest byte: each step down
 * skips ten pages. */
static size_t recurse_wide(size_t depth)
{
    volatile char frame[40 * 1024];
    frame[0] = (char)(depth | 1);
    return depth > 100000 ? (size_t)frame[0] : recurse_wide(depth + 1) + (size_t)frame[0];
}

static void overflow_wide(void *arg)
{
    (void)arg;
    (void)recurse_wide(0);
}

/* A fiber overflowing with wide frames, in a child, over a stack with
 * 64 KiB of shared memory mapped right below its guard region: the child
 * must die of SIGSEGV and that memory must stay zero (the guard is wider
 * than a frame).  False when the memory could not be placed there (the
 * check is skipped). */
static bool wide_overflow_checked(void)
{
    const size_t page = 64 * 1024;
    char *below = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    UNIT_REQUIRE(MAP_FAILED != below);
    pid_t pid = fork();
    UNIT_REQUIRE(pid >= 0);
    if (0 == pid) {
        bufpool_fiber_stack_t s;
        if (0 != bufpool_fiber_stack_map(&s, 64 * 1024)) {
            _exit(3);
        }
        /* Move the shared memory to just below the mapping. */
        char *want = (char *)s.map - page;
        if (want != mremap(below, page, page, MREMAP_MAYMOVE | MREMAP_FIXED, want)) {
            _exit(4);
        }
        bufpool_fiber_t f;
        bufpool_fiber_init(&f, &s, overflow_wide, NULL);
        bufpool_fiber_resume(&f);
        _exit(0);
    }
    int status = 0;
    UNIT_REQUIRE(pid == waitpid(pid, &status, 0));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
        (void)munmap(below, page);
        return false;
    }
    UNIT_CHECK(WIFSIGNALED(status) && SIGSEGV == WTERMSIG(status));
    for (size_t i = 0; i < page; i++) {
        UNIT_CHECK(0 == below[i]);
    }
    (void)munmap(below, page);
    return true;
}
#endif

static void test_stack(void)
{
    bufpool_fiber_stack_t stack;
    UNIT_REQUIRE(0 == bufpool_fiber_stack_map(&stack, STACK_BYTES));
    size_t before = bufpool_fiber_stack_used(&stack);
    deep_t d = {0};
    bufpool_fiber_init(&d.fiber, &stack, touch_deep, &d);
    bufpool_fiber_resume(&d.fiber);
    UNIT_CHECK(d.fiber.done);
    size_t used = bufpool_fiber_stack_used(&stack);
    printf("stack use: %zu bytes before, %zu after a 96 KiB frame (of %zu)\n", before, used,
           stack.size);
    UNIT_CHECK(before < 16 * 1024);
    UNIT_CHECK(used >= 96 * 1024 && used < STACK_BYTES);
    bufpool_fiber_stack_unmap(&stack);

#if !defined(__SANITIZE_ADDRESS__)
    /* An overflow must fault on the guard page, in a child. */
    pid_t pid = fork();
    UNIT_REQUIRE(pid >= 0);
    if (0 == pid) {
        bufpool_fiber_stack_t s2;
        if (0 != bufpool_fiber_stack_map(&s2, 64 * 1024)) {
            _exit(3);
        }
        bufpool_fiber_t f;
        bufpool_fiber_init(&f, &s2, overflow, NULL);
        bufpool_fiber_resume(&f);
        _exit(0);
    }
    int status = 0;
    UNIT_REQUIRE(pid == waitpid(pid, &status, 0));
    UNIT_CHECK(WIFSIGNALED(status) && SIGSEGV == WTERMSIG(status));
    printf("wide-frame overflow into the guard region: %s\n",
           wide_overflow_checked() ? "checked" : "skipped (no room below the stack)");
#endif
}

/* ---------------------------------------------------------------------- */

typedef struct pingpong {
    bufpool_fiber_t fiber;
    long n;
} pingpong_t;

static void ping(void *arg)
{
    pingpong_t *p = arg;
    for (long i = 0; i < p->n; i++) {
        bufpool_fiber_yield(&p->fiber);
    }
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void bench(long n)
{
    bufpool_fiber_stack_t stack;
    UNIT_REQUIRE(0 == bufpool_fiber_stack_map(&stack, STACK_BYTES));
    pingpong_t p = {.n = n};
    bufpool_fiber_init(&p.fiber, &stack, ping, &p);
    double t0 = now_ns();
    while (!p.fiber.done) {
        bufpool_fiber_resume(&p.fiber);
    }
    double per = (now_ns() - t0) / (double)(n + 1);
    bufpool_fiber_stack_unmap(&stack);
    const int maps = 2000;
    t0 = now_ns();
    for (int i = 0; i < maps; i++) {
        UNIT_REQUIRE(0 == bufpool_fiber_stack_map(&stack, STACK_BYTES));
        bufpool_fiber_stack_unmap(&stack);
    }
    double map_ns = (now_ns() - t0) / maps;
    printf("fiber bench (%s): %ld round trips (resume + yield), %.1f ns each; stack map + "
           "unmap %.0f ns\n",
           bufpool_fiber_kind(), n, per, map_ns);
}

int main(int argc, char **argv)
{
    if (argc == 3 && 0 == strcmp(argv[1], "--bench")) {
        bench(atol(argv[2]));
        return unit_finish("test_coll_fiber --bench");
    }
    printf("switch: %s\n", bufpool_fiber_kind());
    test_basic();
    test_fp_control();
    test_many();
    test_threads();
    test_stack();
    bench(100000);
    return unit_finish("test_coll_fiber");
}
