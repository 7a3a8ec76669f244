/*
 * Collection: slabs wholly free for longer than gc_age go back to the
 * system, and wholly free slabs above max_capacity are released coldest
 * first.  Amortised on the alloc/free paths, driven from outside by
 * regpar_pool_collect (the mpool component's progress callback).
 */
#include "bufpool_config.h"

#include "regpar_pool_types.h"

/* Lock a bucket, or only try to when blocking is false. */
static bool bucket_lock(regpar_bucket_t *b, bool blocking)
{
    if (blocking) {
        spin_lock(&b->lock);
        return true;
    }
    return spin_trylock(&b->lock);
}

/* Detach the wholly free slab that has been free the longest, or return
 * NULL if there is none (or, when !blocking, none reachable right now). */
static regpar_slab_t *pool_detach_coldest(regpar_pool_t *pool, bool blocking)
{
    /* A failed attempt means another thread used or released the chosen
     * slab meanwhile; only the non-blocking mode gives up. */
    for (int attempt = 0; blocking || attempt < 4; attempt++) {
        regpar_bucket_t *best_b = NULL;
        regpar_slab_t *best = NULL;
        size_t best_slot = 0;
        uint64_t best_since = UINT64_MAX;
        for (unsigned i = 0; i < pool->nbuckets; i++) {
            regpar_bucket_t *b = &pool->buckets[i];
            if (0 == counter_get(&b->nempty) || !bucket_lock(b, blocking)) {
                continue;
            }
            for (size_t w = 0; w < b->nslots / 64; w++) {
                for (uint64_t bits = b->empty_bits[w]; bits; bits &= bits - 1) {
                    size_t slot = w * 64 + (size_t)__builtin_ctzll(bits);
                    if (b->slots[slot]->free_since < best_since) {
                        best_since = b->slots[slot]->free_since;
                        best = b->slots[slot];
                        best_slot = slot;
                        best_b = b;
                    }
                }
            }
            spin_unlock(&b->lock);
        }
        if (!best) {
            return NULL;
        }
        if (!bucket_lock(best_b, blocking)) {
            continue;
        }
        /* It may have been used or released (and its descriptor reused)
         * while no lock was held: only trust it once it is found in place. */
        bool still = best_b->slots[best_slot] == best && best->nfree == best->nbufs;
        if (still) {
            slab_detach(pool, best_b, best);
        }
        spin_unlock(&best_b->lock);
        if (still) {
            return best;
        }
    }
    return NULL;
}

/* Release wholly free slabs, coldest first, until bytes_held + incoming
 * (and what is counted outside the pool) fits under max_capacity.  Returns
 * the bytes released. */
size_t pool_fit_capacity(regpar_pool_t *pool, size_t incoming, bool blocking)
{
    size_t released = 0;
    uint64_t cap = pool->cfg.max_capacity;
    while (atomic_load_explicit(&pool->bytes_held, memory_order_relaxed) +
               atomic_load_explicit(&pool->bytes_outside, memory_order_relaxed) + incoming >
           cap) {
        regpar_slab_t *victim = pool_detach_coldest(pool, blocking);
        if (!victim) {
            break;
        }
        released += victim->len;
        slab_release(pool, victim, true);
    }
    if (released) {
        pool_log(pool, 2, "released %zu bytes of free slabs to stay under max_capacity (%zu)",
                 released, pool->cfg.max_capacity);
    }
    return released;
}

void regpar_pool_count_outside(regpar_pool_t *pool, int64_t delta)
{
    if (delta < 0) {
        atomic_fetch_sub_explicit(&pool->bytes_outside, (uint64_t)-delta, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&pool->bytes_outside, (uint64_t)delta, memory_order_relaxed);
    (void)pool_fit_capacity(pool, 0, true);
}

size_t regpar_pool_collect(regpar_pool_t *pool, bool force)
{
    uint64_t age = pool->cfg.gc_age_ns;
    uint64_t now = pool_now(pool);
    bool by_age = force;
    if (!force && age) {
        uint64_t last = atomic_load_explicit(&pool->last_collect, memory_order_relaxed);
        /* One collector at a time; the others return at once. */
        by_age = now >= last && now - last >= age / 4 &&
                 atomic_compare_exchange_strong_explicit(
                     &pool->last_collect, &last, now, memory_order_relaxed, memory_order_relaxed);
    }
    size_t released = 0;
    for (unsigned i = 0; by_age && i < pool->nbuckets; i++) {
        regpar_bucket_t *b = &pool->buckets[i];
        if (0 == counter_get(&b->nempty) || !bucket_lock(b, force)) {
            continue;
        }
        regpar_slab_t *batch = NULL;
        for (size_t w = 0; w < b->nslots / 64; w++) {
            for (uint64_t bits = b->empty_bits[w]; bits; bits &= bits - 1) {
                regpar_slab_t *s = b->slots[w * 64 + (size_t)__builtin_ctzll(bits)];
                /* A slab emptied after now was read is young by definition. */
                if (force || (now > s->free_since && now - s->free_since > age)) {
                    slab_detach(pool, b, s);
                    s->release_next = batch;
                    batch = s;
                    released += s->len;
                }
            }
        }
        spin_unlock(&b->lock);
        slab_release_batch(pool, batch, true);
    }
    if (by_age) {
        atomic_store_explicit(&pool->last_collect, now, memory_order_relaxed);
    }
    if (released) {
        pool_log(pool, 2, "collected %zu bytes of slabs %s", released,
                 force ? "(forced)" : "idle for longer than gc_age");
    }
    return released + pool_fit_capacity(pool, 0, force);
}
