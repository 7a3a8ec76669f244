/* coll_latency and coll_footprint: an MPI_T control variable as a number (cvar_value.h). */
#include "bufpool_config.h"

#include "cvar_value.h"
#include "regpar_size.h"

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

double cvar_value(const char *name)
{
    int index, count, verbosity, bind, scope, nlen = 0, dlen = 0;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle handle;
    if (MPI_SUCCESS != MPI_T_cvar_get_index(name, &index) ||
        MPI_SUCCESS != MPI_T_cvar_get_info(index, NULL, &nlen, &verbosity, &type, &enumtype, NULL,
                                           &dlen, &bind, &scope) ||
        MPI_SUCCESS != MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        return -1.0;
    }
    double value = -1.0;
    if (MPI_CHAR == type) {
        char *text = calloc((size_t)count + 1, 1);
        uint64_t bytes;
        if (NULL != text && MPI_SUCCESS == MPI_T_cvar_read(handle, text) &&
            0 == regpar_parse_size(text, &bytes, NULL, 0)) {
            value = (double)bytes;
        }
        free(text);
    } else {
        union {
            int i;
            unsigned u;
            unsigned long ul;
            unsigned long long ull;
            char pad[64];
        } v;
        memset(&v, 0, sizeof(v));
        if (MPI_SUCCESS == MPI_T_cvar_read(handle, &v)) {
            if (MPI_INT == type) {
                value = v.i;
            } else if (MPI_UNSIGNED == type) {
                value = v.u;
            } else if (MPI_UNSIGNED_LONG == type) {
                value = (double)v.ul;
            } else if (MPI_UNSIGNED_LONG_LONG == type) {
                value = (double)v.ull;
            }
        }
    }
    MPI_T_cvar_handle_free(&handle);
    return value;
}
