/*
 * coll/bufpool's settings: the defaults of its parameters, and their
 * checking at MPI_Init into the component's tuning, rules and cost-model
 * links (coll_bufpool_settings.c), each bad value reported once with its
 * parameter's name and what is used instead.
 */
#ifndef MCA_COLL_BUFPOOL_SETTINGS_H
#define MCA_COLL_BUFPOOL_SETTINGS_H

#include "coll_bufpool.h"

BEGIN_C_DECLS

#define BUFPOOL_STR(x)  BUFPOOL_STR_(x)
#define BUFPOOL_STR_(x) #x

/* Per series (compat/bufpool_ompi_compat.h): above tuned (30) so that
 * loading the component is enough to use it, below han (35) from 5.0. */
#define DEFAULT_PRIORITY BUFPOOL_COLL_DEFAULT_PRIORITY
/* A segment near the bandwidth-delay product of a 100-200 Gb/s network
 * (a few us x 25 GB/s) and large enough that per-message costs stay small
 * on shared memory. */
#define DEFAULT_SEGMENT_SIZE   "128K"
#define DEFAULT_PIPELINE_DEPTH "4"
#define DEFAULT_MIN_SIZE       "0"
#define DEFAULT_SMALL_SIZE     "16K"
#define DEFAULT_MAX_REQUESTS   BUFPOOL_STR(BUFPOOL_MAX_REQUESTS_DEFAULT)
/* Node segments one process maps: a communicator of 16 ranks takes 324 KiB,
 * 2.3 MiB once it ran a large allreduce (coll_bufpool_node.c); 128 MiB is
 * some 50 such communicators per process. */
#define DEFAULT_NODE_MAX_BYTES "128M"
/* The chunk segment of a communicator whose last large allreduce is this
 * many node calls back goes (a few ms of small calls). */
#define DEFAULT_NODE_COLD_CALLS "4096"
/* Flat up to 16 ranks: measured there (docs/results/2026-11-26-16core);
 * the groups above are not measured yet. */
#define DEFAULT_NODE_FLAT_MAX "16"
/* A segment costs 60 us to set up at 2 ranks (bench/comm_toll, 2026-11-27)
 * and the node algorithms save 0.1-2 us per call: the communicators that
 * make a few calls only keep the previous module's.  Below the 200 calls
 * that OSU's benchmarks (and coll_latency) make before they time the
 * smallest messages, so that the set-up falls in their warm-up. */
#define DEFAULT_NODE_WARMUP_CALLS "128"
/* A task's stack: the deepest use measured over the collcheck families in
 * the nonblocking form at 3 processes, auto and forced algorithms (hier
 * on pretended hosts included), was 24 KiB (coll_bufpool_nb_stack_bytes_peak,
 * to a page), so 256K leaves a tenfold margin for other transports' PML
 * calls, which also run on it (user-defined operations do not: they run on
 * the calling thread's stack). */
#define DEFAULT_NB_STACK_SIZE "256K"

/* Check every parameter of component (at open); free what checking made
 * (at close). */
void bufpool_settings_check(mca_coll_bufpool_component_t *component);
void bufpool_settings_free(mca_coll_bufpool_component_t *component);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_SETTINGS_H */
