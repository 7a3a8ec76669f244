/*
 * The registration engine's configuration: defaults, the names of backends
 * and parallel modes, and the check regpar_reg_engine_create runs.
 */
#include "bufpool_config.h"

#include "regpar_reg_engine.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------------ */
/* Names and configuration */

static const struct {
    const char *name;
    regpar_reg_backend_t value;
} backend_names[] = {{"auto", REGPAR_REG_AUTO},   {"none", REGPAR_REG_NONE},
                     {"pin", REGPAR_REG_PIN},     {"ofi", REGPAR_REG_OFI},
                     {"verbs", REGPAR_REG_VERBS}, {"registrar", REGPAR_REG_REGISTRAR}};

static const struct {
    const char *name;
    regpar_reg_parallel_t value;
} parallel_names[] = {{"auto", REGPAR_PAR_AUTO}, {"on", REGPAR_PAR_ON}, {"off", REGPAR_PAR_OFF}};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

void regpar_reg_config_defaults(regpar_reg_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->backend = REGPAR_REG_AUTO;
    cfg->parallel = REGPAR_PAR_AUTO;
    cfg->threads = 0;
    cfg->chunk_size = REGPAR_REG_DEFAULT_CHUNK_SIZE;
    cfg->threshold = REGPAR_REG_DEFAULT_THRESHOLD;
    cfg->prefault = true;
    cfg->bind_threads = false;
}

int regpar_reg_backend_parse(const char *name, regpar_reg_backend_t *out)
{
    for (size_t i = 0; name && i < COUNT_OF(backend_names); i++) {
        if (0 == strcasecmp(name, backend_names[i].name)) {
            *out = backend_names[i].value;
            return 0;
        }
    }
    return -1;
}

int regpar_reg_parallel_parse(const char *name, regpar_reg_parallel_t *out)
{
    for (size_t i = 0; name && i < COUNT_OF(parallel_names); i++) {
        if (0 == strcasecmp(name, parallel_names[i].name)) {
            *out = parallel_names[i].value;
            return 0;
        }
    }
    return -1;
}

const char *regpar_reg_backend_name(regpar_reg_backend_t backend)
{
    for (size_t i = 0; i < COUNT_OF(backend_names); i++) {
        if (backend_names[i].value == backend) {
            return backend_names[i].name;
        }
    }
    return "unknown";
}

const char *regpar_reg_parallel_name(regpar_reg_parallel_t parallel)
{
    for (size_t i = 0; i < COUNT_OF(parallel_names); i++) {
        if (parallel_names[i].value == parallel) {
            return parallel_names[i].name;
        }
    }
    return "unknown";
}

int regpar_reg_config_set_backend(regpar_reg_config_t *cfg, const char *name)
{
    if (0 == regpar_reg_backend_parse(name, &cfg->backend)) {
        return 0;
    }
    char msg[512];
    snprintf(msg, sizeof(msg),
             "regpar: %s registration failed: unknown registration backend '%s'; set "
             "mpool_regpar_reg_backend to auto, ofi, verbs, pin or none; continuing with "
             "unregistered memory",
             name ? name : "(null)", name ? name : "(null)");
    regpar_sys_emit(cfg->log, cfg->log_arg, NULL, 1, msg);
    cfg->backend = REGPAR_REG_NONE;
    return -1;
}

int regpar_reg_config_set_parallel(regpar_reg_config_t *cfg, const char *name)
{
    if (0 == regpar_reg_parallel_parse(name, &cfg->parallel)) {
        return 0;
    }
    char msg[512];
    snprintf(msg, sizeof(msg),
             "regpar: unknown parallel registration mode '%s'; set mpool_regpar_reg_parallel "
             "to auto, on or off; using auto",
             name ? name : "(null)");
    regpar_sys_emit(cfg->log, cfg->log_arg, NULL, 1, msg);
    cfg->parallel = REGPAR_PAR_AUTO;
    return -1;
}

int regpar_reg_i_check_config(const regpar_reg_config_t *cfg, size_t page, char *err, size_t errlen)
{
    if (0 == strcmp("unknown", regpar_reg_backend_name(cfg->backend))) {
        snprintf(err, errlen,
                 "regpar: invalid registration backend %d; set mpool_regpar_reg_backend to "
                 "auto, ofi, verbs, pin or none",
                 (int)cfg->backend);
        return -1;
    }
    if (0 == strcmp("unknown", regpar_reg_parallel_name(cfg->parallel))) {
        snprintf(err, errlen,
                 "regpar: invalid parallel registration mode %d; set mpool_regpar_reg_parallel "
                 "to auto, on or off",
                 (int)cfg->parallel);
        return -1;
    }
    if (0 == cfg->chunk_size || 0 != cfg->chunk_size % page) {
        snprintf(err, errlen,
                 "regpar: mpool_regpar_reg_chunk_size=%zu is not a positive multiple of the page "
                 "size (%zu); use for example 256M",
                 cfg->chunk_size, page);
        return -1;
    }
    return 0;
}
