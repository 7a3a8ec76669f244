/*
 * Fibers: a function that runs on a stack of its own and can be suspended
 * and resumed, the engine behind coll/bufpool's nonblocking and persistent
 * collectives (coll_bufpool_nb.c).  No Open MPI types: unit tested alone
 * (test/unit/test_coll_fiber.c).
 *
 * A fiber is created on a given stack with an entry function.  Resuming it
 * runs it until it yields or its function returns; yielding (from inside)
 * goes back to whoever resumed it.  A suspended fiber may be resumed by
 * any thread: nothing here is thread-local.
 *
 * The switch is hand-written for x86_64 System V (callee-saved rbx, rbp,
 * r12-r15, rsp, MXCSR and the x87 control word) and aarch64 (x19-x29, lr,
 * sp, d8-d15, FPCR); elsewhere ucontext (swapcontext, which makes a
 * sigprocmask system call per switch: the reason the assembly exists).
 * BUFPOOL_FIBER_UCONTEXT forces the fallback at compile time.  Under
 * AddressSanitizer every switch is announced with
 * __sanitizer_start/finish_switch_fiber, under ThreadSanitizer with
 * __tsan_switch_to_fiber (each fiber a context of its own, so that its
 * frames and accesses are not taken for the resuming thread's); under
 * valgrind (when
 * valgrind/valgrind.h is there) stacks are registered with
 * VALGRIND_STACK_REGISTER.
 */
#ifndef MCA_COLL_BUFPOOL_FIBER_H
#define MCA_COLL_BUFPOOL_FIBER_H

#include <stdbool.h>
#include <stddef.h>

#if !defined(BUFPOOL_FIBER_UCONTEXT) && !defined(__x86_64__) && !defined(__aarch64__)
#define BUFPOOL_FIBER_UCONTEXT 1
#endif
#if defined(BUFPOOL_FIBER_UCONTEXT)
#include <ucontext.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the PROT_NONE guard region below every stack: an overflow
 * faults instead of writing into whatever is mapped below, even from a
 * frame much larger than a page (which would step over a single guard
 * page).  Address space only: nothing is ever resident there. */
#define BUFPOOL_FIBER_GUARD_BYTES ((size_t)64 << 10)

/* A stack: size usable bytes above a PROT_NONE guard region. */
typedef struct bufpool_fiber_stack {
    void *map;        /* the mapping, guard region first */
    size_t map_bytes; /* guard + size */
    char *lo;         /* lowest usable byte */
    size_t size;      /* usable bytes */
    unsigned vg_id;   /* valgrind's stack id (0: none) */
} bufpool_fiber_stack_t;

/* Map a stack of at least size bytes (rounded up to pages).  0, or an
 * errno value (the stack is then left empty). */
int bufpool_fiber_stack_map(bufpool_fiber_stack_t *stack, size_t size);
void bufpool_fiber_stack_unmap(bufpool_fiber_stack_t *stack);
/* Bytes of the stack ever touched, from its top down to the lowest
 * resident page (mincore): the deepest use so far, to a page.  0 if the
 * system cannot tell. */
size_t bufpool_fiber_stack_used(const bufpool_fiber_stack_t *stack);

typedef void (*bufpool_fiber_fn)(void *arg);

typedef struct bufpool_fiber {
#if defined(BUFPOOL_FIBER_UCONTEXT)
    ucontext_t uc, caller_uc;
#else
    void *sp;        /* the fiber's saved stack pointer while suspended */
    void *caller_sp; /* the resumer's, while the fiber runs */
#endif
    bufpool_fiber_fn fn;
    void *arg;
    char *stack_lo;
    size_t stack_size;
    bool done; /* fn returned: never resume again */
    /* AddressSanitizer's view of both sides. */
    void *asan_fake_fiber, *asan_fake_caller;
    const void *asan_caller_lo;
    size_t asan_caller_size;
    /* ThreadSanitizer's contexts of the fiber (from its first resume to
     * its end) and of its resumer. */
    void *tsan_fiber, *tsan_caller;
} bufpool_fiber_t;

/* A fiber that will run fn(arg) on stack (which must outlive it) from its
 * first resume. */
void bufpool_fiber_init(bufpool_fiber_t *fiber, const bufpool_fiber_stack_t *stack,
                        bufpool_fiber_fn fn, void *arg);
/* Run the fiber until it yields or fn returns (then fiber->done). */
void bufpool_fiber_resume(bufpool_fiber_t *fiber);
/* From inside the fiber: back to the resumer; returns at the next resume
 * (possibly on another thread). */
void bufpool_fiber_yield(bufpool_fiber_t *fiber);

/* Which switch was compiled in: "x86_64", "aarch64" or "ucontext". */
const char *bufpool_fiber_kind(void);

#ifdef __cplusplus
}
#endif

#endif /* MCA_COLL_BUFPOOL_FIBER_H */
