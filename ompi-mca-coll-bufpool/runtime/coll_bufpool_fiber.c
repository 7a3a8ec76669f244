/*
 * Fibers (see coll_bufpool_fiber.h): stacks with a guard region, and the
 * context switch.
 *
 * The switch saves what the calling convention says a function must
 * preserve, on the stack being left, and stores that stack pointer; it
 * then loads the other stack pointer and restores the same registers from
 * there.  Everything else is caller-saved: the compiler has already spilled
 * it around the call.  A new fiber's stack is laid out as if it had been
 * switched away from just before running a small trampoline, which calls
 * fiber_main(fiber).  Measured on this machine (bench in
 * test/unit/test_coll_fiber.c, --bench): see docs/collectives.md,
 * "Nonblocking and persistent collectives".
 */
#include "coll_bufpool_fiber.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define BUFPOOL_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BUFPOOL_FIBER_ASAN 1
#endif
#endif
#if defined(BUFPOOL_FIBER_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define BUFPOOL_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BUFPOOL_FIBER_TSAN 1
#endif
#endif
#if defined(BUFPOOL_FIBER_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define BUFPOOL_FIBER_VALGRIND 1
#endif
#endif

/* ---------------------------------------------------------------------- */
/* Stacks. */

static size_t page_bytes(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

int bufpool_fiber_stack_map(bufpool_fiber_stack_t *stack, size_t size)
{
    const size_t page = page_bytes();
    const size_t guard = (BUFPOOL_FIBER_GUARD_BYTES + page - 1) / page * page;
    memset(stack, 0, sizeof(*stack));
    size = (size + page - 1) / page * page;
    if (0 == size) {
        return EINVAL;
    }
    /* The guard is mapped without access from the start (no window where
     * it is writable), the stack above it read-write. */
    void *map =
        mmap(NULL, size + guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (MAP_FAILED == map) {
        return errno;
    }
    if (0 != mprotect((char *)map + guard, size, PROT_READ | PROT_WRITE)) {
        int err = errno;
        (void)munmap(map, size + guard);
        return err;
    }
#if defined(MADV_NOHUGEPAGE)
    /* Pages, not huge pages: the stack's resident size is its deepest use
     * (bufpool_fiber_stack_used), not 2 MiB. */
    (void)madvise((char *)map + guard, size, MADV_NOHUGEPAGE);
#endif
    stack->map = map;
    stack->map_bytes = size + guard;
    stack->lo = (char *)map + guard;
    stack->size = size;
#if defined(BUFPOOL_FIBER_VALGRIND)
    stack->vg_id = VALGRIND_STACK_REGISTER(stack->lo, stack->lo + size);
#endif
    return 0;
}

void bufpool_fiber_stack_unmap(bufpool_fiber_stack_t *stack)
{
    if (NULL == stack->map) {
        return;
    }
#if defined(BUFPOOL_FIBER_VALGRIND)
    VALGRIND_STACK_DEREGISTER(stack->vg_id);
#endif
    (void)munmap(stack->map, stack->map_bytes);
    memset(stack, 0, sizeof(*stack));
}

size_t bufpool_fiber_stack_used(const bufpool_fiber_stack_t *stack)
{
    const size_t page = page_bytes(), pages = stack->size / page;
    unsigned char vec[256];
    /* Lowest resident page, scanning upwards a chunk at a time. */
    for (size_t first = 0; first < pages; first += sizeof(vec)) {
        size_t n = pages - first < sizeof(vec) ? pages - first : sizeof(vec);
        if (0 != mincore(stack->lo + first * page, n * page, vec)) {
            return 0;
        }
        for (size_t i = 0; i < n; i++) {
            if (vec[i] & 1) {
                return (pages - first - i) * page;
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* AddressSanitizer: it must know which stack runs (for its fake stacks and
 * to tell stack from heap). */

static inline void asan_start(void **fake_save, const void *bottom, size_t size)
{
#if defined(BUFPOOL_FIBER_ASAN)
    __sanitizer_start_switch_fiber(fake_save, bottom, size);
#else
    (void)fake_save, (void)bottom, (void)size;
#endif
}

static inline void asan_finish(void *fake_save, const void **bottom_old, size_t *size_old)
{
#if defined(BUFPOOL_FIBER_ASAN)
    __sanitizer_finish_switch_fiber(fake_save, bottom_old, size_old);
#else
    (void)fake_save, (void)bottom_old, (void)size_old;
#endif
}

/* ThreadSanitizer: each fiber is a context of its own, entered and left
 * with __tsan_switch_to_fiber just before the switch (which also orders
 * what one side did before the other side runs).  Without it TSan takes
 * a fiber's frames for the resuming thread's, loses its stack, and a
 * fiber resumed by another thread looks like a race with itself. */
static inline void tsan_enter(bufpool_fiber_t *fiber)
{
#if defined(BUFPOOL_FIBER_TSAN)
    if (NULL == fiber->tsan_fiber) {
        fiber->tsan_fiber = __tsan_create_fiber(0);
    }
    fiber->tsan_caller = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(fiber->tsan_fiber, 0);
#else
    (void)fiber;
#endif
}

static inline void tsan_leave(bufpool_fiber_t *fiber)
{
#if defined(BUFPOOL_FIBER_TSAN)
    __tsan_switch_to_fiber(fiber->tsan_caller, 0);
#else
    (void)fiber;
#endif
}

/* Back in the resumer: a fiber whose function returned has no context any
 * more (it cannot drop its own while it runs). */
static inline void tsan_returned(bufpool_fiber_t *fiber)
{
#if defined(BUFPOOL_FIBER_TSAN)
    if (fiber->done && NULL != fiber->tsan_fiber) {
        __tsan_destroy_fiber(fiber->tsan_fiber);
        fiber->tsan_fiber = NULL;
    }
#else
    (void)fiber;
#endif
}

/* ---------------------------------------------------------------------- */
/* The switch. */

#if !defined(BUFPOOL_FIBER_UCONTEXT)

/* Save the callee-saved state on the current stack, store the stack
 * pointer in *save_sp, continue on load_sp. */
void bufpool_fiber_raw_switch(void **save_sp, void *load_sp) __attribute__((visibility("hidden")));
/* Where a new fiber starts: calls its entry with its argument. */
void bufpool_fiber_raw_start(void) __attribute__((visibility("hidden")));

#if defined(__x86_64__)
/* Frame (8-byte slots from the saved sp): MXCSR and x87 control word,
 * r15, r14, r13, r12, rbx, rbp, return address. */
#define FRAME_SLOTS 8
__asm__(".text\n"
        ".p2align 4\n"
        ".globl bufpool_fiber_raw_switch\n"
        ".hidden bufpool_fiber_raw_switch\n"
        ".type bufpool_fiber_raw_switch,@function\n"
        "bufpool_fiber_raw_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size bufpool_fiber_raw_switch, .-bufpool_fiber_raw_switch\n"
        ".p2align 4\n"
        ".globl bufpool_fiber_raw_start\n"
        ".hidden bufpool_fiber_raw_start\n"
        ".type bufpool_fiber_raw_start,@function\n"
        "bufpool_fiber_raw_start:\n"
        "    movq %r12, %rdi\n"
        "    callq *%r13\n"
        "    ud2\n"
        ".size bufpool_fiber_raw_start, .-bufpool_fiber_raw_start\n");

static void frame_init(uint64_t *frame, void (*entry)(void *), void *arg)
{
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    memset(frame, 0, FRAME_SLOTS * sizeof(*frame));
    memcpy(&frame[0], &mxcsr, sizeof(mxcsr));
    memcpy((char *)&frame[0] + 4, &fpucw, sizeof(fpucw));
    frame[4] = (uint64_t)(uintptr_t)arg;   /* r12 */
    frame[3] = (uint64_t)(uintptr_t)entry; /* r13 */
    frame[7] = (uint64_t)(uintptr_t)bufpool_fiber_raw_start;
}
const char *bufpool_fiber_kind(void)
{
    return "x86_64";
}
#elif defined(__aarch64__)
/* Frame (8-byte slots from the saved sp): x19..x28, x29, x30 (lr),
 * d8..d15, FPCR, padding: 22 slots, 176 bytes. */
#define FRAME_SLOTS 22
__asm__(".text\n"
        ".p2align 4\n"
        ".globl bufpool_fiber_raw_switch\n"
        ".hidden bufpool_fiber_raw_switch\n"
        ".type bufpool_fiber_raw_switch,%function\n"
        "bufpool_fiber_raw_switch:\n"
        "    sub sp, sp, #176\n"
        "    stp x19, x20, [sp, #0]\n"
        "    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n"
        "    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n"
        "    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n"
        "    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n"
        "    stp d14, d15, [sp, #144]\n"
        "    mrs x9, fpcr\n"
        "    str x9, [sp, #160]\n"
        "    mov x9, sp\n"
        "    str x9, [x0]\n"
        "    mov sp, x1\n"
        "    ldr x9, [sp, #160]\n"
        "    msr fpcr, x9\n"
        "    ldp x19, x20, [sp, #0]\n"
        "    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n"
        "    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n"
        "    ldp x29, x30, [sp, #80]\n"
        "    ldp d8, d9, [sp, #96]\n"
        "    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n"
        "    ldp d14, d15, [sp, #144]\n"
        "    add sp, sp, #176\n"
        "    ret\n"
        ".size bufpool_fiber_raw_switch, .-bufpool_fiber_raw_switch\n"
        ".p2align 4\n"
        ".globl bufpool_fiber_raw_start\n"
        ".hidden bufpool_fiber_raw_start\n"
        ".type bufpool_fiber_raw_start,%function\n"
        "bufpool_fiber_raw_start:\n"
        "    mov x0, x19\n"
        "    blr x20\n"
        "    brk #0\n"
        ".size bufpool_fiber_raw_start, .-bufpool_fiber_raw_start\n");

static void frame_init(uint64_t *frame, void (*entry)(void *), void *arg)
{
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    memset(frame, 0, FRAME_SLOTS * sizeof(*frame));
    frame[0] = (uint64_t)(uintptr_t)arg;                      /* x19 */
    frame[1] = (uint64_t)(uintptr_t)entry;                    /* x20 */
    frame[11] = (uint64_t)(uintptr_t)bufpool_fiber_raw_start; /* x30 */
    frame[20] = fpcr;
}
const char *bufpool_fiber_kind(void)
{
    return "aarch64";
}
#endif

#else /* BUFPOOL_FIBER_UCONTEXT */

const char *bufpool_fiber_kind(void)
{
    return "ucontext";
}

#endif

/* ---------------------------------------------------------------------- */

/* The first code a fiber runs, on its own stack; never returns. */
static void fiber_main(void *arg)
{
    bufpool_fiber_t *fiber = arg;
    asan_finish(NULL, &fiber->asan_caller_lo, &fiber->asan_caller_size);
    fiber->fn(fiber->arg);
    fiber->done = true;
    /* Last switch out: ASan may drop the fiber's fake stack (NULL). */
    asan_start(NULL, fiber->asan_caller_lo, fiber->asan_caller_size);
    tsan_leave(fiber);
#if defined(BUFPOOL_FIBER_UCONTEXT)
    setcontext(&fiber->caller_uc);
#else
    void *ignored;
    bufpool_fiber_raw_switch(&ignored, fiber->caller_sp);
#endif
    abort(); /* not reached */
}

#if defined(BUFPOOL_FIBER_UCONTEXT)
/* makecontext passes ints: the fiber's address in two halves. */
static void fiber_main_uc(unsigned hi, unsigned lo)
{
    fiber_main((void *)(((uintptr_t)hi << 16 << 16) | (uintptr_t)lo));
}
#endif

void bufpool_fiber_init(bufpool_fiber_t *fiber, const bufpool_fiber_stack_t *stack,
                        bufpool_fiber_fn fn, void *arg)
{
    memset(fiber, 0, sizeof(*fiber));
    fiber->fn = fn;
    fiber->arg = arg;
    fiber->stack_lo = stack->lo;
    fiber->stack_size = stack->size;
#if defined(BUFPOOL_FIBER_UCONTEXT)
    (void)getcontext(&fiber->uc);
    fiber->uc.uc_stack.ss_sp = stack->lo;
    fiber->uc.uc_stack.ss_size = stack->size;
    fiber->uc.uc_link = NULL;
    const uintptr_t self = (uintptr_t)fiber;
    makecontext(&fiber->uc, (void (*)(void))fiber_main_uc, 2, (unsigned)(self >> 16 >> 16),
                (unsigned)(self & 0xffffffffu));
#else
    /* The frame at the top of the stack, 16-byte aligned so that the
     * trampoline calls fiber_main with the alignment the ABI wants. */
    uintptr_t top = ((uintptr_t)stack->lo + stack->size) & ~(uintptr_t)15;
    uint64_t *frame = (uint64_t *)(top - 64 - FRAME_SLOTS * sizeof(uint64_t));
    frame_init(frame, fiber_main, fiber);
    fiber->sp = frame;
#endif
}

void bufpool_fiber_resume(bufpool_fiber_t *fiber)
{
    if (fiber->done) {
        return;
    }
    asan_start(&fiber->asan_fake_caller, fiber->stack_lo, fiber->stack_size);
    tsan_enter(fiber);
#if defined(BUFPOOL_FIBER_UCONTEXT)
    (void)swapcontext(&fiber->caller_uc, &fiber->uc);
#else
    bufpool_fiber_raw_switch(&fiber->caller_sp, fiber->sp);
#endif
    asan_finish(fiber->asan_fake_caller, NULL, NULL);
    tsan_returned(fiber);
}

void bufpool_fiber_yield(bufpool_fiber_t *fiber)
{
    asan_start(&fiber->asan_fake_fiber, fiber->asan_caller_lo, fiber->asan_caller_size);
    tsan_leave(fiber);
#if defined(BUFPOOL_FIBER_UCONTEXT)
    (void)swapcontext(&fiber->uc, &fiber->caller_uc);
#else
    bufpool_fiber_raw_switch(&fiber->sp, fiber->caller_sp);
#endif
    /* Resumed, perhaps by another thread: its stack is the caller now. */
    asan_finish(fiber->asan_fake_fiber, &fiber->asan_caller_lo, &fiber->asan_caller_size);
}
