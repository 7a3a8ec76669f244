/*
 * Choosing, attaching and detaching the transport registrar of the regpar
 * pool (see mpool_regpar_registrar.h for the life cycle).
 */
#include "opal_config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "bufpool_ompi_compat.h"
#include BUFPOOL_OPAL_MUTEX_H
#include "opal/util/output.h"

#include "mpool_regpar.h"
#include "mpool_regpar_registrar.h"

bool mca_mpool_regpar_registrar_pending = false;

static void set_pending(bool pending)
{
    __atomic_store_n(&mca_mpool_regpar_registrar_pending, pending, __ATOMIC_RELEASE);
}

static mca_mpool_regpar_want_t registrar_want = REGPAR_WANT_NONE;
static opal_mutex_t registrar_lock = OPAL_MUTEX_STATIC_INIT;
static const regpar_registrar_t *attached_ops;
static void *attached_arg;

static const struct {
    const char *name;
    mca_mpool_regpar_want_t want;
} want_names[] = {{"auto", REGPAR_WANT_AUTO},
                  {"btl", REGPAR_WANT_BTL},
                  {"ucx", REGPAR_WANT_UCX},
                  {"mtl", REGPAR_WANT_MTL}};

int mca_mpool_regpar_registrar_parse(const char *value, mca_mpool_regpar_want_t *want)
{
    for (size_t i = 0; NULL != value && i < sizeof(want_names) / sizeof(want_names[0]); i++) {
        if (0 == strcasecmp(value, want_names[i].name)) {
            *want = want_names[i].want;
            return 0;
        }
    }
    return -1;
}

void mca_mpool_regpar_registrar_set_want(mca_mpool_regpar_want_t want)
{
    registrar_want = want;
}

/* ---------------------------------------------------------------------- */

static void say(const mca_mpool_regpar_module_t *module, int level, const char *fmt, const char *a,
                const char *b)
{
    if (*module->pp->verbose >= level) {
        char msg[768];
        snprintf(msg, sizeof(msg), fmt, a, b);
        opal_output(0, "mpool_regpar: %s (pid %d)", msg, (int)getpid());
    }
}

void mca_mpool_regpar_registrar_init(mca_mpool_regpar_module_t *module)
{
    (void)module;
    attached_ops = NULL;
    attached_arg = NULL;
    /* A core backend (pin, none, ofi, verbs) was chosen by name: no
     * transport registrar, nothing to resolve. */
    set_pending(REGPAR_WANT_NONE != registrar_want);
}

static void at_finalize(void *arg)
{
    mca_mpool_regpar_registrar_fini((mca_mpool_regpar_module_t *)arg);
}

/* Pick the registrar for what is selected.  Returns what the open function
 * returned (0 attachable, 1 nothing to do, -1 failed), *label naming it. */
static int choose(const regpar_registrar_t **ops, void **arg, const char **label, char *why,
                  size_t whylen)
{
    const char *pml = mca_mpool_regpar_ompi_pml_name();
    mca_mpool_regpar_want_t want = registrar_want;
    *label = "none";
    if (REGPAR_WANT_AUTO == want) {
        if (0 == strcmp(pml, "ob1")) {
            want = REGPAR_WANT_BTL;
        } else if (0 == strcmp(pml, "ucx")) {
            want = REGPAR_WANT_UCX;
        } else if (0 == strcmp(pml, "cm")) {
            want = REGPAR_WANT_MTL;
        } else {
            snprintf(why, whylen,
                     "the selected PML \"%s\" is none of ob1, ucx, cm: no registrar knows "
                     "where it looks for registrations",
                     pml);
            return 1;
        }
    }
    switch (want) {
        case REGPAR_WANT_BTL:
            *label = "btl";
            if (0 != strcmp(pml, "ob1")) {
                snprintf(why, whylen, "reg_backend btl needs pml ob1, but \"%s\" is selected", pml);
                return 1;
            }
            return mca_mpool_regpar_ompi_btl_open(ops, arg, why, whylen);
        case REGPAR_WANT_UCX:
            *label = "ucx";
            if (0 != strcmp(pml, "ucx")) {
                snprintf(why, whylen, "reg_backend ucx needs pml ucx, but \"%s\" is selected", pml);
                return 1;
            }
            return mca_mpool_regpar_ompi_ucx_open(ops, arg, why, whylen);
        case REGPAR_WANT_MTL:
            *label = "mtl";
            if (0 != strcmp(pml, "cm")) {
                snprintf(why, whylen, "reg_backend mtl needs pml cm, but \"%s\" is selected", pml);
                return 1;
            }
            return mca_mpool_regpar_ompi_mtl_open(REGPAR_WANT_MTL == registrar_want, ops, arg, why,
                                                  whylen);
        default:
            snprintf(why, whylen, "no transport registrar asked for");
            return 1;
    }
}

void mca_mpool_regpar_registrar_resolve(mca_mpool_regpar_module_t *module)
{
    OPAL_THREAD_LOCK(&registrar_lock);
    if (!mca_mpool_regpar_registrar_is_pending()) {
        OPAL_THREAD_UNLOCK(&registrar_lock);
        return;
    }
    const char *pml = mca_mpool_regpar_ompi_pml_name();
    if (NULL == pml) {
        /* Not an MPI process (an OPAL-only user of the pool): no transport. */
        set_pending(false);
        OPAL_THREAD_UNLOCK(&registrar_lock);
        say(module, 1, "no transport registrar: %s%s", "this process has no MPI layer", "");
        return;
    }
    if (!mca_mpool_regpar_ompi_mpi_ready()) {
        /* During MPI_Init: the slabs made now stay unregistered until the
         * first allocation after it, which registers them. */
        OPAL_THREAD_UNLOCK(&registrar_lock);
        return;
    }
    set_pending(false);

    char why[512] = "";
    const char *label;
    const regpar_registrar_t *ops = NULL;
    void *arg = NULL;
    int rc = choose(&ops, &arg, &label, why, sizeof(why));
    if (0 == rc && 0 != mca_mpool_regpar_ompi_at_finalize(at_finalize, module)) {
        /* Without a hook before the transports close, a held registration
         * would outlive its BTL or context: better none. */
        mca_mpool_regpar_ompi_close(ops, arg);
        snprintf(why, sizeof(why),
                 "could not arrange deregistration at MPI_Finalize (MPI_COMM_SELF attribute)");
        rc = -1;
    }
    if (0 == rc && 0 != regpar_reg_engine_attach(module->engine, ops, arg)) {
        mca_mpool_regpar_ompi_close(ops, arg);
        snprintf(why, sizeof(why),
                 "the engine already registers with backend %s (reg_backend names a core "
                 "backend)",
                 regpar_reg_backend_name(regpar_reg_engine_backend(module->engine)));
        rc = -1;
    }
    if (0 == rc) {
        attached_ops = ops;
        attached_arg = arg;
    }
    OPAL_THREAD_UNLOCK(&registrar_lock);

    if (0 == rc) {
        say(module, 1, "registrar %s chosen: %s", label, why);
        size_t late = regpar_pool_register_live(module->pool);
        if (late && *module->pp->verbose >= 2) {
            opal_output(0,
                        "mpool_regpar: registered %zu slab(s) made before the transport was "
                        "up (pid %d)",
                        late, (int)getpid());
        }
    } else if (rc > 0) {
        say(module, 1, "no transport registrar (%s): %s; slabs are pre-faulted, not registered",
            label, why);
    } else if (bufpool_params_speaks(module->pp)) {
        /* Asked for or matched, and failed: one message naming the cause
         * and the parameter. */
        bufpool_params_show(module->pp, "registrar-unavailable",
                            "mpool_regpar: the %s registrar is unavailable: %s; slabs are served "
                            "unregistered (set mpool_regpar_reg_backend=none to silence this) "
                            "(pid %d)",
                            label, why, (int)getpid());
    }
}

void mca_mpool_regpar_registrar_fini(mca_mpool_regpar_module_t *module)
{
    OPAL_THREAD_LOCK(&registrar_lock);
    set_pending(false);
    if (NULL != attached_ops) {
        size_t n = regpar_pool_deregister_live(module->pool);
        regpar_reg_engine_detach(module->engine);
        mca_mpool_regpar_ompi_close(attached_ops, attached_arg);
        if (*module->pp->verbose >= 2) {
            opal_output(0, "mpool_regpar: deregistered %zu slab(s) from the %s registrar (pid %d)",
                        n, attached_ops->name, (int)getpid());
        }
        attached_ops = NULL;
        attached_arg = NULL;
    }
    OPAL_THREAD_UNLOCK(&registrar_lock);
}
