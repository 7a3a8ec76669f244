/*
 * The pool's statistics: counters summed over the buckets, peaks, and the
 * human-readable report (verbose 1 prints it at finalize).
 */
#include "bufpool_config.h"

#include "regpar_pool_types.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void regpar_pool_get_stats(const regpar_pool_t *pool, regpar_pool_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    for (unsigned i = 0; i < pool->nbuckets; i++) {
        const regpar_bucket_t *b = &pool->buckets[i];
        st->allocs += counter_get(&b->allocs);
        st->frees += counter_get(&b->frees);
        st->hits += counter_get(&b->hits);
        st->misses += counter_get(&b->misses);
    }
    st->direct_allocs = counter_get(&pool->direct->allocs);
    st->allocs += st->direct_allocs;
    st->frees += counter_get(&pool->direct->frees);
    st->over_capacity = counter_get(&pool->over_capacity);
    st->slabs_mapped = counter_get(&pool->slabs_mapped);
    st->slabs_released = counter_get(&pool->slabs_released);
    st->bytes_held = counter_get(&pool->bytes_held);
    st->bytes_in_use = counter_get(&pool->bytes_in_use);
    st->bytes_peak = counter_get(&pool->bytes_peak);
    st->bytes_in_use_peak = counter_get(&pool->bytes_in_use_peak);
    st->bytes_collected = counter_get(&pool->bytes_collected);
    st->alloc_failures = counter_get(&pool->alloc_failures);
    st->bytes_outside = counter_get(&pool->bytes_outside);
    st->outside_live = counter_get(&pool->outside_registered);
    st->outside_made = counter_get(&pool->outside_registrations);
    if (pool->cfg.reg) {
        regpar_reg_get_stats(pool->cfg.reg, &st->reg);
    }
}

void regpar_pool_reset_peaks(regpar_pool_t *pool)
{
    atomic_store(&pool->bytes_peak, atomic_load(&pool->bytes_held));
    atomic_store(&pool->bytes_in_use_peak, atomic_load(&pool->bytes_in_use));
}

/* snprintf into buf at *pos, tracking the length that would be needed. */
static void report_add(char *buf, size_t len, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void report_add(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*pos < len ? buf + *pos : NULL, *pos < len ? len - *pos : 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        *pos += (size_t)n;
    }
}

int regpar_pool_report(const regpar_pool_t *pool, char *buf, size_t len)
{
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    size_t pos = 0;
    char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], s7[32];
    if (buf && len) {
        buf[0] = '\0';
    } else {
        buf = NULL;
        len = 0;
    }
    report_add(buf, len, &pos,
               "allocs %" PRIu64 " (hits %" PRIu64 ", misses %" PRIu64 ", direct %" PRIu64
               "), frees %" PRIu64 ", failures %" PRIu64 ", over capacity %" PRIu64 "\n",
               st.allocs, st.hits, st.misses, st.direct_allocs, st.frees, st.alloc_failures,
               st.over_capacity);
    report_add(buf, len, &pos,
               "held %s (peak %s, cap %s less %s outside), in use %s (peak %s), collected %s, "
               "slabs mapped %" PRIu64 " released %" PRIu64 "\n",
               regpar_pool_fmt_size(st.bytes_held, s1, sizeof(s1)),
               regpar_pool_fmt_size(st.bytes_peak, s2, sizeof(s2)),
               regpar_pool_fmt_size(pool->cfg.max_capacity, s3, sizeof(s3)),
               regpar_pool_fmt_size(st.bytes_outside, s7, sizeof(s7)),
               regpar_pool_fmt_size(st.bytes_in_use, s4, sizeof(s4)),
               regpar_pool_fmt_size(st.bytes_in_use_peak, s5, sizeof(s5)),
               regpar_pool_fmt_size(st.bytes_collected, s6, sizeof(s6)), st.slabs_mapped,
               st.slabs_released);
    for (unsigned i = 0; i < pool->nbuckets; i++) {
        regpar_bucket_t *b = (regpar_bucket_t *)&pool->buckets[i];
        uint64_t bufs = 0, nfree = 0, held = 0;
        spin_lock(&b->lock);
        unsigned nslabs = b->nslabs;
        for (size_t s = 0; s < b->nslots; s++) {
            if (b->slots[s]) {
                bufs += b->slots[s]->nbufs;
                nfree += b->slots[s]->nfree;
                held += b->slots[s]->len;
            }
        }
        uint64_t nempty = counter_get(&b->nempty);
        spin_unlock(&b->lock);
        if (nslabs || counter_get(&b->allocs)) {
            report_add(buf, len, &pos,
                       "  bucket %6s: %u slab(s) (%" PRIu64 " wholly free), %" PRIu64
                       " buffer(s), %" PRIu64 " out, held %s, allocs %" PRIu64 "\n",
                       regpar_pool_fmt_size(b->buf_size, s1, sizeof(s1)), nslabs, nempty, bufs,
                       bufs - nfree, regpar_pool_fmt_size(held, s2, sizeof(s2)),
                       counter_get(&b->allocs));
        }
    }
    return pos > INT32_MAX ? INT32_MAX : (int)pos;
}
