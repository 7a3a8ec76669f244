#include "pvar_util.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* coll_latency reads every form's calls and fallbacks of every collective
 * (3 x 2 x 11) besides the pool's counters: a table that filled up made the
 * last collective's counters read as missing (exscan's, in bufpool-tune). */
enum { PVAR_MAX_OPEN = 256 };

typedef struct {
    char *name;
    MPI_T_pvar_handle handle;
    MPI_Datatype datatype;
} open_pvar;

static bool pvar_session_open;
static MPI_T_pvar_session pvar_session;
static open_pvar pvar_open_list[PVAR_MAX_OPEN];
static int pvar_nopen;

enum pvar_status pvar_util_init(void)
{
    if (pvar_session_open) {
        return PVAR_OK;
    }
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return PVAR_MPI_ERROR;
    }
    if (MPI_T_pvar_session_create(&pvar_session) != MPI_SUCCESS) {
        MPI_T_finalize();
        return PVAR_MPI_ERROR;
    }
    pvar_session_open = true;
    return PVAR_OK;
}

/* MPI_T_pvar_get_index needs the variable's class, which the contract leaves
 * to the component; scanning by name does not. */
static enum pvar_status pvar_find(const char *name, int *index_out, MPI_Datatype *type_out,
                                  int *bind_out, int *continuous_out)
{
    int num;
    if (MPI_T_pvar_get_num(&num) != MPI_SUCCESS) {
        return PVAR_MPI_ERROR;
    }
    for (int i = 0; i < num; i++) {
        char vname[256], desc[16];
        int name_len = sizeof(vname), desc_len = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (MPI_T_pvar_get_info(i, vname, &name_len, &verbosity, &var_class, &datatype, &enumtype,
                                desc, &desc_len, &bind, &readonly, &continuous,
                                &atomic) != MPI_SUCCESS) {
            continue; /* variables of unloaded components report errors */
        }
        if (strcmp(vname, name) == 0) {
            *index_out = i;
            *type_out = datatype;
            *bind_out = bind;
            *continuous_out = continuous;
            return PVAR_OK;
        }
    }
    return PVAR_NOT_FOUND;
}

static enum pvar_status pvar_open(const char *name, open_pvar **out)
{
    for (int i = 0; i < pvar_nopen; i++) {
        if (strcmp(pvar_open_list[i].name, name) == 0) {
            *out = &pvar_open_list[i];
            return PVAR_OK;
        }
    }
    if (pvar_nopen == PVAR_MAX_OPEN) {
        static bool said;
        if (!said) {
            fprintf(stderr,
                    "pvar_util: more than %d performance variables opened; %s and later "
                    "ones read as missing\n",
                    PVAR_MAX_OPEN, name);
            said = true;
        }
        return PVAR_UNSUPPORTED;
    }
    int index, bind, continuous, count;
    MPI_Datatype datatype;
    enum pvar_status st = pvar_find(name, &index, &datatype, &bind, &continuous);
    if (st != PVAR_OK) {
        return st;
    }
    if (bind != MPI_T_BIND_NO_OBJECT ||
        (datatype != MPI_UNSIGNED_LONG_LONG && datatype != MPI_UNSIGNED_LONG &&
         datatype != MPI_UNSIGNED)) {
        return PVAR_UNSUPPORTED;
    }
    open_pvar *p = &pvar_open_list[pvar_nopen];
    if (MPI_T_pvar_handle_alloc(pvar_session, index, NULL, &p->handle, &count) != MPI_SUCCESS) {
        return PVAR_MPI_ERROR;
    }
    if (count != 1) {
        MPI_T_pvar_handle_free(pvar_session, &p->handle);
        return PVAR_UNSUPPORTED;
    }
    if (!continuous && MPI_T_pvar_start(pvar_session, p->handle) != MPI_SUCCESS) {
        MPI_T_pvar_handle_free(pvar_session, &p->handle);
        return PVAR_MPI_ERROR;
    }
    p->name = strdup(name);
    if (p->name == NULL) {
        MPI_T_pvar_handle_free(pvar_session, &p->handle);
        return PVAR_MPI_ERROR;
    }
    p->datatype = datatype;
    pvar_nopen++;
    *out = p;
    return PVAR_OK;
}

enum pvar_status pvar_util_read(const char *name, unsigned long long *value)
{
    enum pvar_status st = pvar_util_init();
    open_pvar *p = NULL;
    if (st == PVAR_OK) {
        st = pvar_open(name, &p);
    }
    if (st != PVAR_OK) {
        return st;
    }
    int rc;
    if (p->datatype == MPI_UNSIGNED_LONG_LONG) {
        rc = MPI_T_pvar_read(pvar_session, p->handle, value);
    } else if (p->datatype == MPI_UNSIGNED_LONG) {
        unsigned long v = 0;
        rc = MPI_T_pvar_read(pvar_session, p->handle, &v);
        *value = v;
    } else {
        unsigned v = 0;
        rc = MPI_T_pvar_read(pvar_session, p->handle, &v);
        *value = v;
    }
    return rc == MPI_SUCCESS ? PVAR_OK : PVAR_MPI_ERROR;
}

const char *pvar_util_status_string(enum pvar_status status)
{
    switch (status) {
        case PVAR_OK:
            return "ok";
        case PVAR_NOT_FOUND:
            return "pvar not found (is the component built and on mca_base_component_path?)";
        case PVAR_UNSUPPORTED:
            return "pvar is not a single unsigned integer bound to no object";
        case PVAR_MPI_ERROR:
            return "an MPI_T call failed";
    }
    return "unknown status";
}

void pvar_util_finalize(void)
{
    if (!pvar_session_open) {
        return;
    }
    for (int i = 0; i < pvar_nopen; i++) {
        MPI_T_pvar_handle_free(pvar_session, &pvar_open_list[i].handle);
        free(pvar_open_list[i].name);
    }
    pvar_nopen = 0;
    MPI_T_pvar_session_free(&pvar_session);
    MPI_T_finalize();
    pvar_session_open = false;
}

unsigned long long pvar_util_value_or_abort(const char *prog, const char *name)
{
    unsigned long long v = 0;
    const enum pvar_status st = pvar_util_read(name, &v);
    if (PVAR_OK != st) {
        fprintf(stderr, "%s: %s: %s\n", prog, name, pvar_util_status_string(st));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return v;
}
