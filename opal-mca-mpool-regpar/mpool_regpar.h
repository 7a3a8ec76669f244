/*
 * mpool/regpar: the MCA adapter over the regpar pool core.
 *
 * The component registers the parameters and MPI_T variables, answers
 * mca_mpool_base_module_lookup() for hints naming it, and creates the one
 * pool of the process on first use (so that jobs which never ask for it
 * map nothing).
 */
#ifndef MCA_MPOOL_REGPAR_H
#define MCA_MPOOL_REGPAR_H

#include "opal_config.h"

#include "opal/mca/mpool/mpool.h"
#include "bufpool_ompi_compat.h"
#include BUFPOOL_OPAL_MUTEX_H

#include "bufpool_params.h"
#include "mpool_regpar_ext.h"
#include "regpar_pool.h"
#include "regpar_reg.h"

BEGIN_C_DECLS

typedef struct mca_mpool_regpar_module {
    /* Must stay first: coll/bufpool reads these through the ext header. */
    mca_mpool_regpar_module_head_t head;
    regpar_pool_t *pool;
    regpar_reg_engine_t *engine;
    /* How the module and its registrar speak: the component's view of the
     * parameter library (help file, verbosity), from the setup. */
    const bufpool_params_t *pp;
} mca_mpool_regpar_module_t;

/* Raw MCA parameter values as the user typed them; parsed and checked in
 * parse_settings() (mpool_regpar_component.c). */
typedef struct mca_mpool_regpar_params {
    char *priority_text;
    char *verbose_text;
    int priority; /* parsed from the texts at open */
    int verbose;
    char *bucket_min;
    char *bucket_max;
    char *bucket_factor;
    char *slab_size;
    char *max_capacity;
    char *gc_age;
    char *hugepages;
    char *numa;
    char *reg_backend;
    char *reg_parallel;
    char *reg_threads;
    char *reg_chunk_size;
    char *reg_threshold;
    char *prefault;
    char *bind_threads;
    char *ofi_provider;
    char *verbs_device;
} mca_mpool_regpar_params_t;

typedef struct mca_mpool_regpar_component {
    mca_mpool_base_component_t super;
    mca_mpool_regpar_params_t params;
    int output;         /* opal_output stream for messages   */
    opal_mutex_t lock;  /* guards creation of the module     */
    bool module_ready;  /* module holds a working pool       */
    bool module_failed; /* creation failed: do not retry     */
    bool progress_registered;
    mca_mpool_regpar_module_t module; /* the one pool of the process       */
} mca_mpool_regpar_component_t;

OPAL_DECLSPEC extern mca_mpool_regpar_component_t mca_mpool_regpar_component;

/* What the component hands the module when it creates it: the pool and
 * engine configuration parsed at open, and how to speak. */
typedef struct mca_mpool_regpar_setup {
    mca_mpool_base_component_t *component;
    const bufpool_params_t *pp;
    regpar_pool_config_t pool;
    regpar_reg_config_t reg;
} mca_mpool_regpar_setup_t;

/* Create the pool and engine into module; returns OPAL_SUCCESS or an error
 * after printing why. */
int mca_mpool_regpar_module_init(mca_mpool_regpar_module_t *module,
                                 const mca_mpool_regpar_setup_t *setup);
void mca_mpool_regpar_module_fini(mca_mpool_regpar_module_t *module);

/* Print the one-screen report of counters (verbose >= 1, at finalize). */
void mca_mpool_regpar_report(mca_mpool_regpar_module_t *module);

END_C_DECLS

#endif /* MCA_MPOOL_REGPAR_H */
