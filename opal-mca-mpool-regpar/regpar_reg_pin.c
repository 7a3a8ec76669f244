/*
 * Backend pin: mlock/munlock.  Real page pinning that needs no network
 * hardware, so it stands in for a NIC registration wherever the cost of
 * pinning is to be measured.  It is not reference counted: two regions
 * sharing a page share its lock.
 *
 * mlock and munlock take the mm lock for writing and, in the same critical
 * section, walk every present page of the range: several threads locking
 * disjoint chunks are no faster than one (measured slightly slower, see
 * docs/registration.md).  So when the engine pre-faults, a chunk is only
 * armed with mlock2(MLOCK_ONFAULT) -- cheap on untouched memory, and it
 * charges RLIMIT_MEMLOCK at once like mlock -- and the engine's parallel
 * pre-fault then faults and locks each page on the thread that faults it.
 * The end state is that of mlock: every page present and locked.  Pages
 * already present are locked by the arming call itself, as mlock would.
 */
#include "bufpool_config.h"

#include "regpar_reg_backend.h"

#include <stdlib.h>

typedef struct pin_ctx {
    const regpar_sys_t *sys;
    bool onfault; /* arm with MLOCK_ONFAULT: the engine populates afterwards */
} pin_ctx_t;

static int pin_open(const regpar_reg_config_t *cfg, const regpar_sys_t *sys, bool probing,
                    void **ctx, regpar_reg_backend_props_t *props, regpar_reg_why_t *why)
{
    (void)probing;
    pin_ctx_t *pin = calloc(1, sizeof(*pin));
    if (!pin) {
        regpar_reg_why_set(why, "pin:nomem", "free some memory", "out of memory");
        return -1;
    }
    pin->sys = sys;
    pin->onfault = cfg->prefault && regpar_sys_mlock_onfault_supported();
    props->parallel_reg = false;
    props->parallel_dereg = false;
    props->needs_prefault = false;
    props->lock_before_prefault = pin->onfault;
    *ctx = pin;
    return 0;
}

static int pin_reg(void *ctx, regpar_reg_chunk_t *chunk)
{
    pin_ctx_t *pin = ctx;
    int rc = regpar_sys_mlock(pin->sys, chunk->addr, chunk->len, pin->onfault);
    if (0 == rc) {
        chunk->handle = NULL;
        chunk->desc = NULL;
        chunk->key = 0;
        chunk->rkey = 0;
    }
    return rc;
}

static int pin_dereg(void *ctx, regpar_reg_chunk_t *chunk)
{
    pin_ctx_t *pin = ctx;
    return regpar_sys_munlock(pin->sys, chunk->addr, chunk->len);
}

static void pin_explain(void *ctx, int code, const regpar_reg_chunk_t *chunk, bool dereg,
                        regpar_reg_why_t *why)
{
    (void)ctx;
    regpar_reg_explain_pinning("pin", dereg ? "munlock" : "mlock", code, chunk->len,
                               "set mpool_regpar_reg_backend=none", why);
}

static int pin_close(void *ctx, regpar_reg_why_t *why)
{
    (void)why;
    free(ctx);
    return 0;
}

REGPAR_REG_BACKEND_OPS(pin, REGPAR_REG_PIN);
