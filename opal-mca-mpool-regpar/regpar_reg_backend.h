/*
 * Internal interface between the registration engine (regpar_reg.c and
 * regpar_reg_{config,plan,region}.c) and its backends (regpar_reg_pin.c,
 * regpar_reg_ofi.c, regpar_reg_verbs.c).  The engine owns chunking,
 * threads, rollback, statistics and messages; a backend only registers and
 * deregisters one chunk at a time and explains its own failures.
 */
#ifndef REGPAR_REG_BACKEND_H
#define REGPAR_REG_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "regpar_reg.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Why something failed, in the words of the user-facing message
 * "regpar: <backend> registration failed: <cause>; <remedy>; continuing with
 * unregistered memory".  key identifies the cause (not the chunk), so that
 * a cause is logged once per engine however many slabs hit it.
 */
typedef struct regpar_reg_why {
    char key[64];
    char cause[384];
    char remedy[384];
} regpar_reg_why_t;

/* What the engine's policy needs to know about a backend once it is open. */
typedef struct regpar_reg_backend_props {
    /* Registering disjoint chunks from several threads is faster than from
     * one (measured for pin, reported by UCX for verbs). */
    bool parallel_reg;
    bool parallel_dereg;
    /* Pages must be present when registering (FI_MR_ALLOCATED): pre-fault
     * even when the prefault parameter is off. */
    bool needs_prefault;
    /* Registration only arms the pinning and the pre-fault that follows it
     * faults the pages in (backend pin with MLOCK_ONFAULT): the engine
     * registers first, then pre-faults, and a pre-fault failure undoes the
     * registration. */
    bool lock_before_prefault;
} regpar_reg_backend_props_t;

typedef struct regpar_reg_backend_ops {
    regpar_reg_backend_t id;
    const char *name;
    /*
     * Open the backend for cfg.  probing is set when reg_backend is auto:
     * the backend then accepts only if it is the right choice here (a verbs
     * device exists; a libfabric provider needs local registration) and its
     * refusal is not an error.  sys is the engine's system-call context
     * (fault injection), valid until close.  Returns 0, or -1 with why
     * filled in.
     */
    int (*open)(const regpar_reg_config_t *cfg, const regpar_sys_t *sys, bool probing, void **ctx,
                regpar_reg_backend_props_t *props, regpar_reg_why_t *why);
    /* Register chunk->addr/len and fill handle, desc and key.  Safe to call
     * from several threads on disjoint chunks.  Returns 0 or a positive
     * error code for explain. */
    int (*reg)(void *ctx, regpar_reg_chunk_t *chunk);
    /* Undo reg.  Returns 0 or a positive error code. */
    int (*dereg)(void *ctx, regpar_reg_chunk_t *chunk);
    /* Describe the failure code reg or dereg returned for chunk. */
    void (*explain)(void *ctx, int code, const regpar_reg_chunk_t *chunk, bool dereg,
                    regpar_reg_why_t *why);
    /* Release everything open() acquired.  Returns 0, or -1 with why filled
     * in (a provider that still holds registrations refuses to close). */
    int (*close)(void *ctx, regpar_reg_why_t *why);
} regpar_reg_backend_ops_t;

/* The ops of backend be (regpar_reg_backend_<be>, named "<be>") from its
 * functions <be>_open, _reg, _dereg, _explain and _close. */
#define REGPAR_REG_BACKEND_OPS(be, backend_id)                                                     \
    const regpar_reg_backend_ops_t regpar_reg_backend_##be = {                                     \
        .id = (backend_id),                                                                        \
        .name = #be,                                                                               \
        .open = be##_open,                                                                         \
        .reg = be##_reg,                                                                           \
        .dereg = be##_dereg,                                                                       \
        .explain = be##_explain,                                                                   \
        .close = be##_close,                                                                       \
    }

extern const regpar_reg_backend_ops_t regpar_reg_backend_pin;
extern const regpar_reg_backend_ops_t regpar_reg_backend_ofi;
extern const regpar_reg_backend_ops_t regpar_reg_backend_verbs;

/* Helpers shared by the backends (defined in regpar_reg.c). */

/* Fill why; cause is printf-formatted. */
void regpar_reg_why_set(regpar_reg_why_t *why, const char *key, const char *remedy,
                        const char *cause_fmt, ...) __attribute__((format(printf, 4, 5)));

/* Explain a failure to pin len bytes (what = "mlock", "ibv_reg_mr") that
 * the locked-memory limit explains (ENOMEM, EPERM, EAGAIN), else the plain
 * error; remedy_other is used for the latter. */
void regpar_reg_explain_pinning(const char *backend, const char *what, int code, size_t len,
                                const char *remedy_other, regpar_reg_why_t *why);

/* The entry points of a backend this build lacks (its open refuses, so the
 * engine never calls them), and a close for a backend with nothing to
 * release. */
int regpar_reg_unbuilt_reg(void *ctx, regpar_reg_chunk_t *chunk);
int regpar_reg_unbuilt_dereg(void *ctx, regpar_reg_chunk_t *chunk);
void regpar_reg_unbuilt_explain(void *ctx, int code, const regpar_reg_chunk_t *chunk, bool dereg,
                                regpar_reg_why_t *why);
int regpar_reg_close_nothing(void *ctx, regpar_reg_why_t *why);

/* Refuse to open a backend this build lacks, saying how to get it. */
int regpar_reg_unbuilt_open(const char *backend, const char *remedy, const char *library,
                            regpar_reg_why_t *why);

/* The ops of a backend this build lacks: its open refuses with why's
 * key "<be>:notbuilt", the remedy and the missing library named. */
#define REGPAR_REG_BACKEND_UNBUILT(be, backend_id, remedy, library)                                \
    static int be##_open(const regpar_reg_config_t *cfg, const regpar_sys_t *sys, bool probing,    \
                         void **ctx, regpar_reg_backend_props_t *props, regpar_reg_why_t *why)     \
    {                                                                                              \
        (void)cfg;                                                                                 \
        (void)sys;                                                                                 \
        (void)probing;                                                                             \
        (void)ctx;                                                                                 \
        (void)props;                                                                               \
        return regpar_reg_unbuilt_open(#be, (remedy), (library), why);                             \
    }                                                                                              \
    const regpar_reg_backend_ops_t regpar_reg_backend_##be = {                                     \
        .id = (backend_id),                                                                        \
        .name = #be,                                                                               \
        .open = be##_open,                                                                         \
        .reg = regpar_reg_unbuilt_reg,                                                             \
        .dereg = regpar_reg_unbuilt_dereg,                                                         \
        .explain = regpar_reg_unbuilt_explain,                                                     \
        .close = regpar_reg_close_nothing,                                                         \
    }

#ifdef __cplusplus
}
#endif

#endif /* REGPAR_REG_BACKEND_H */
