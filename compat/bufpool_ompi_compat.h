/*
 * The one place where the Open MPI series differ for ompi-bufpool.
 *
 * Supported: 4.1 (coll 2.0.0 / module 2.3.0, mpool 3.0.0), 5.0 (coll 2.4.0,
 * mpool 3.1.0, no ft_event) and 6.0 (coll 3.0.0: size_t counts,
 * ompi_count_array_t, and modules that install and remove their own
 * functions).  Everything else in the tree uses the names below instead of
 * testing versions.  Include it after opal_config.h.
 */
#ifndef BUFPOOL_OMPI_COMPAT_H
#define BUFPOOL_OMPI_COMPAT_H

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>

#if !defined(OPAL_MAJOR_VERSION)
#error "include opal_config.h (or ompi_config.h) before bufpool_ompi_compat.h"
#endif

#if OPAL_MAJOR_VERSION == 4 && OPAL_MINOR_VERSION >= 1
#define BUFPOOL_OMPI_SERIES 41
#elif OPAL_MAJOR_VERSION == 5
#define BUFPOOL_OMPI_SERIES 50
#elif OPAL_MAJOR_VERSION == 6
#define BUFPOOL_OMPI_SERIES 60
#else
#error "ompi-bufpool supports Open MPI 4.1, 5.0 and 6.0"
#endif

/* The mutex header moved to the threads framework in 5.0. */
#if BUFPOOL_OMPI_SERIES == 41
#define BUFPOOL_OPAL_MUTEX_H "opal/threads/mutex.h"
#else
#define BUFPOOL_OPAL_MUTEX_H "opal/mca/threads/mutex.h"
#endif

/* Who owns the string opal_get_proc_hostname returns: up to 4.1 the proc
 * (it must not be freed); from 5.0 the caller (a copy, or a PMIx lookup
 * unloaded for it, which Open MPI's own callers free). */
#if BUFPOOL_OMPI_SERIES == 41
#define BUFPOOL_PROC_HOSTNAME_FREE(name) ((void)(name))
#else
#define BUFPOOL_PROC_HOSTNAME_FREE(name) free(name)
#endif

/* Asking the runtime to remove a file should this process die first
 * (PMIx job control, the process's epilog), as btl/sm does for its own
 * segment: up to 4.1 through the pmix framework's module (no such function
 * for a singleton), from 5.0 through a base function.  The path is not
 * modified. */
#if BUFPOOL_OMPI_SERIES == 41
#define BUFPOOL_OPAL_PMIX_H "opal/mca/pmix/pmix.h"
#define BUFPOOL_REGISTER_CLEANUP(path)                                                             \
    (NULL != opal_pmix.register_cleanup                                                            \
         ? opal_pmix.register_cleanup((char *)(path), false, false, false)                         \
         : OPAL_ERR_NOT_SUPPORTED)
#else
#define BUFPOOL_OPAL_PMIX_H "opal/mca/pmix/pmix-internal.h"
#define BUFPOOL_REGISTER_CLEANUP(path)                                                             \
    opal_pmix_register_cleanup((char *)(path), false, false, false)
#endif

/* Framework versions the components declare. */
#if BUFPOOL_OMPI_SERIES == 41
#define BUFPOOL_MPOOL_BASE_VERSION MCA_MPOOL_BASE_VERSION_3_0_0
#define BUFPOOL_COLL_BASE_VERSION  MCA_COLL_BASE_VERSION_2_0_0
#elif BUFPOOL_OMPI_SERIES == 50
#define BUFPOOL_MPOOL_BASE_VERSION MCA_MPOOL_BASE_VERSION_3_1_0
#define BUFPOOL_COLL_BASE_VERSION  MCA_COLL_BASE_VERSION_2_4_0
#else
#define BUFPOOL_MPOOL_BASE_VERSION MCA_MPOOL_BASE_VERSION_3_1_0
#define BUFPOOL_COLL_BASE_VERSION  MCA_COLL_BASE_VERSION_3_0_0
#endif

/*
 * coll_bufpool_priority's default: 40 on every series, above tuned (30)
 * and, on 5.0 and 6.0, above han (35).  Measured on 5.0.10 (2 emulated
 * hosts x 2 ranks, docs/benchmarks.md, "Open MPI 5: bufpool and han"):
 * above han bufpool was faster than below it at 11 of 12 points, and below
 * han it ends up serving only han's inter-node blocking bcast (the
 * sub-communicators prefer tuned/sm/libnbc/adapt), which made bcast 2-4x
 * slower than stock.  4.1's han defaults to priority 0.  On 6.0 (6.0.x
 * sources) han stays 35, and acoll, xhc and adapt default to 0: tuned (30)
 * covers them for every function it has, so they serve nothing unless a
 * user raises them; at 40 bufpool is in front of all of them
 * (test/mpi/coll_order.sh runs it above and below each).
 */
#define BUFPOOL_COLL_DEFAULT_PRIORITY "40"

/*
 * Open MPI up to 4.1.4 computes an alltoall wrongly in its modified Bruck
 * algorithm when the send and receive datatypes have different type maps
 * (a wrong result, and writes past the receive buffer: open-mpi/ompi#10488,
 * fixed in 4.1.5 and 5.0), and tuned's fixed decision takes that algorithm
 * for small blocks from 16 ranks on.  Built against such a version,
 * bufpool serves every blocking alltoall in that range itself, whatever
 * the datatypes, rather than handing it back (coll_bufpool_resolve.c): the
 * ranks cannot know each other's datatypes, so only a rule that looks at
 * what they agree on keeps their choices the same.
 */
#if BUFPOOL_OMPI_SERIES == 41 && OPAL_RELEASE_VERSION <= 4
#define BUFPOOL_PREVIOUS_BRUCK_ALLTOALL_UNSAFE 1
#else
#define BUFPOOL_PREVIOUS_BRUCK_ALLTOALL_UNSAFE 0
#endif

/* Exported component symbol: 5.0 dropped OMPI_MODULE_DECLSPEC. */
#if defined(OMPI_MODULE_DECLSPEC)
#define BUFPOOL_MODULE_DECLSPEC OMPI_MODULE_DECLSPEC
#else
#define BUFPOOL_MODULE_DECLSPEC __attribute__((visibility("default")))
#endif

/* Checkpoint/restart hooks exist in 4.1 modules only. */
#if BUFPOOL_OMPI_SERIES == 41
#define BUFPOOL_CLEAR_FT_EVENT(field) ((field) = NULL)
#else
#define BUFPOOL_CLEAR_FT_EVENT(field) ((void)0)
#endif

/*
 * Element counts at the collective entry points: int up to 5.0, size_t from
 * 6.0 (the MPI 4 large-count bindings reach the modules).  The counts of
 * the v-collectives are an array of int, or an ompi_count_array_t that
 * holds either int or size_t.  BUFPOOL_COUNT_FITS tells whether a count
 * can be handled by bufpool's int-based engines; calls that do not fit go
 * to the previous module.
 */
#if BUFPOOL_OMPI_SERIES >= 60
#include "opal/util/count_disp_array.h"
typedef size_t bufpool_count_t;
typedef opal_count_array_t bufpool_counts_t; /* = ompi_count_array_t */
/* The counts as an int array, or NULL when they are size_t. */
#define BUFPOOL_COUNTS_INT_PTR(counts)                                                             \
    (opal_count_array_is_64bit(counts) ? NULL : (const int *)opal_count_array_ptr(counts))
#define BUFPOOL_COUNT_FITS(c) ((c) <= (size_t)INT_MAX)
/* A data movement whose ranks may describe one block with different counts
 * (1 x contiguous(n) against n x int) decides on the bytes of its type
 * signature, which they agree on: within INT_MAX bytes every significant
 * count fits an int (a type of no bytes moves nothing). */
#define BUFPOOL_BYTES_FIT(b) ((b) <= (size_t)INT_MAX)
/* Count i of an array of either width. */
#define BUFPOOL_COUNTS_GET(counts, i) opal_count_array_get(counts, i)
#else
typedef int bufpool_count_t;
typedef const int *bufpool_counts_t;
#define BUFPOOL_COUNTS_INT_PTR(counts) (counts)
#define BUFPOOL_COUNT_FITS(c)          ((void)(c), 1)
#define BUFPOOL_BYTES_FIT(b)           ((void)(b), 1)
#define BUFPOOL_COUNTS_GET(counts, i)  ((size_t)(counts)[i])
#endif

/*
 * Open MPI 6.0 no longer copies a module's functions into the communicator
 * after enable: the module saves the current ones (the layer below) and
 * installs its own in enable, and puts the saved ones back in
 * coll_module_disable.  Up to 5.0 the framework does the copy and the
 * module only reads what is below it.
 */
#if BUFPOOL_OMPI_SERIES >= 60
#define BUFPOOL_MODULE_INSTALLS_ITSELF 1
#else
#define BUFPOOL_MODULE_INSTALLS_ITSELF 0
#endif

/*
 * The value of an info key as text: 4.1 copies it into a buffer, 5.0 and
 * 6.0 hand out a reference-counted string.  True when the key is set
 * (value then holds it, truncated to len - 1 characters).
 */
#include "opal/util/info.h"
#include <stdbool.h>
#include <stdio.h>
static inline bool bufpool_info_get(opal_info_t *info, const char *key, char *value, size_t len)
{
    int flag = 0;
#if BUFPOOL_OMPI_SERIES == 41
    if (OPAL_SUCCESS != opal_info_get(info, key, (int)len - 1, value, &flag)) {
        return false;
    }
    value[len - 1] = '\0';
#else
    opal_cstring_t *text = NULL;
    if (OPAL_SUCCESS != opal_info_get(info, key, &text, &flag)) {
        return false;
    }
    if (flag) {
        snprintf(value, len, "%s", text->string);
        OBJ_RELEASE(text);
    }
#endif
    return 0 != flag;
}

#endif /* BUFPOOL_OMPI_COMPAT_H */
