/*
 * A spin-wait's pause (the pool's spinlock, the node algorithms' sequence
 * words): tells the core that this is a spin loop, so that a sibling
 * hyperthread gets the pipeline and leaving the loop costs no
 * memory-order flush.  No Open MPI.
 */
#ifndef BUFPOOL_CPU_RELAX_H
#define BUFPOOL_CPU_RELAX_H

static inline void bufpool_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif /* BUFPOOL_CPU_RELAX_H */
