/*
 * What a communicator's calls need, resolved once when its module is
 * enabled: the algorithms forced on it (coll_bufpool_<coll>_algorithm, or
 * the info key of the same name on the communicator) and, per collective
 * and call class, the size map of the rules for its size, hosts and ranks
 * per host.  The entry of a call then looks up one range
 * (coll_bufpool.h, bufpool_range) instead of scanning rules.
 */
#include "coll_bufpool_entry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ompi/mca/coll/base/base.h"
#include "opal/util/output.h"

#include "bufpool_params.h"

/* Collectives whose calls differ by operation (the others are data
 * movement: every call is in the commutative classes), and those whose
 * decision sees MPI_IN_PLACE: only where MPI requires every rank or none to
 * pass it (allreduce, reduce_scatter(_block), alltoall; allgather's decides
 * the same either way).  reduce's is the root's alone, scan's and exscan's
 * each rank's own choice, gather's and scatter's the root's: there the
 * ranks would not agree.  The classes a collective does not use share the
 * map of those it does. */
static const bool takes_op[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] = true,      [BUFPOOL_COLL_reduce] = true,
    [BUFPOOL_COLL_reduce_scatter] = true, [BUFPOOL_COLL_reduce_scatter_block] = true,
    [BUFPOOL_COLL_scan] = true,           [BUFPOOL_COLL_exscan] = true,
};
static const bool takes_in_place[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] = true,
    [BUFPOOL_COLL_alltoall] = true,
    [BUFPOOL_COLL_reduce_scatter] = true,
    [BUFPOOL_COLL_reduce_scatter_block] = true,
};
/* allreduce's and reduce's decisions see whether the operation is
 * user-defined (BUFPOOL_CLASS_USER_OP): the rules do not (those maps are
 * the built-in operations' class's), only the guards of tuned's ring
 * allreduce and libnbc's nonblocking reduce (guard_map). */
static const bool takes_user_op[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] = true,
    [BUFPOOL_COLL_reduce] = true,
};

/* The class whose map a collective's call of class cls reads. */
static int class_used(int id, int cls)
{
    const bool commutative = !takes_op[id] || 0 != (cls & BUFPOOL_CLASS(true, false));
    const bool in_place = takes_in_place[id] && 0 != (cls & BUFPOOL_CLASS(false, true));
    const bool user_op = takes_user_op[id] && 0 != (cls & BUFPOOL_CLASS_USER_OP);
    return BUFPOOL_CLASS(commutative, in_place) | (user_op ? BUFPOOL_CLASS_USER_OP : 0);
}

/* The communicator's info keys coll_bufpool_<coll>_algorithm, then
 * coll_bufpool_algorithm ("COLL:ALG,..."; the only one that fits
 * MPI_MAX_INFO_KEY for reduce_scatter and reduce_scatter_block), for
 * running one algorithm on one communicator (bufpool-tune and the
 * benchmarks compare them in one job): auto, an algorithm of coll, or
 * previous. */
/* Report an info key coll_bufpool_<coll>_algorithm with a bad value (help
 * topic bad-info-key). */
static void bad_info_key(const mca_coll_bufpool_component_t *component, const char *comm_name,
                         const char *key, const char *value, bufpool_coll_id_t id)
{
    char names[256] = "";
    size_t used = 0;
    for (const char *const *n = bufpool_algorithm_names[id] + 1; NULL != *n && used < sizeof(names);
         n++) {
        used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
                                 n == bufpool_algorithm_names[id] + 1 ? "" : ", ", *n);
    }
    bufpool_params_show(component->params, "bad-info-key",
                        "coll_bufpool: communicator %s: info key %s has the invalid value \"%s\"; "
                        "expected auto, previous or one of %s. The setting of "
                        "coll_bufpool_%s_algorithm applies there (pid %d).",
                        comm_name, key, value, names, bufpool_coll_names[id], (int)getpid());
}

/* The info keys, spelled out once: every communicator reads them all. */
#define BUFPOOL_INFO_KEY(name) [BUFPOOL_COLL_##name] = "coll_bufpool_" #name "_algorithm",
static const char *const algorithm_info_keys[BUFPOOL_NCOLLS] = {
    BUFPOOL_FOREACH_COLL(BUFPOOL_INFO_KEY)};
#undef BUFPOOL_INFO_KEY

static void read_info_keys(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm,
                           const mca_coll_bufpool_component_t *component)
{
    /* A communicator of one process hands every call back whatever is
     * forced (single_process_range). */
    if (NULL == comm->super.s_info || 1 == ompi_comm_size(comm)) {
        return;
    }
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        const char *key = algorithm_info_keys[id];
        char value[64];
        if (!bufpool_info_get(comm->super.s_info, key, value, sizeof(value))) {
            continue;
        }
        int alg = 0 == strcmp(value, "auto")
                      ? BUFPOOL_ALG_AUTO
                      : bufpool_algorithm_index((bufpool_coll_id_t)id, value);
        if (alg < BUFPOOL_ALG_PREVIOUS) {
            /* Once per communicator (every rank when verbose). */
            if (0 == ompi_comm_rank(comm) || component->verbose >= 1) {
                bad_info_key(component, comm->c_name, key, value, (bufpool_coll_id_t)id);
            }
            continue;
        }
        module->forced[id] = alg;
    }
    char list[256], err[256];
    if (bufpool_info_get(comm->super.s_info, BUFPOOL_ALGORITHM_INFO_KEY, list, sizeof(list)) &&
        0 != bufpool_algorithm_list_parse(list, module->forced, err, sizeof(err))) {
        opal_output(0, "coll_bufpool: communicator %s: info key %s=%s: %s; the key is ignored",
                    comm->c_name, BUFPOOL_ALGORITHM_INFO_KEY, list, err);
    }
}

static bufpool_shape_t shape_of(const mca_coll_bufpool_module_t *module, int form, int id, int cls)
{
    return (bufpool_shape_t){.ranks = module->ranks,
                             .hosts = module->hosts,
                             .ppn = module->max_ppn,
                             .commutative = 0 != (cls & BUFPOOL_CLASS(true, false)),
                             .in_place =
                                 takes_in_place[id] && 0 != (cls & BUFPOOL_CLASS(false, true)),
                             .form = form};
}

/* "algorithm (why)" of a range, for the dump. */
static void describe(bufpool_coll_id_t id, const bufpool_choice_t *c, char *out, size_t len)
{
    if (BUFPOOL_SOURCE_DEFAULT == c->source) {
        snprintf(out, len, "the collective's own default (coll_bufpool_decide.c)");
        return;
    }
    snprintf(out, len, "%s (%s)",
             BUFPOOL_ALG_PREVIOUS == c->alg ? "previous module"
                                            : bufpool_algorithm_names[id][c->alg],
             bufpool_choice_why(id, c));
}

/* coll_bufpool_verbose >= 3: what the rules resolved to, once per
 * communicator, from its rank 0. */
static void print_maps(const mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm)
{
    opal_output(0, "coll_bufpool: %s: %d ranks on %d host(s), at most %d per host:", comm->c_name,
                ompi_comm_size(comm), module->hosts > 1 ? module->hosts : 1, module->max_ppn);
    static const char *const names[BUFPOOL_NCLASSES] = {"non-commutative",
                                                        "non-commutative in place",
                                                        "",
                                                        "in place",
                                                        "non-commutative user operation",
                                                        "non-commutative in place user operation",
                                                        "user operation",
                                                        "in place user operation"};
    static const char *const prefix[BUFPOOL_NFORMS] = {"", "i", ""};
    static const char *const suffix[BUFPOOL_NFORMS] = {"", "", "_init"};
    /* Commutative classes first: data movement has only those (its others
     * point at them); a form whose map is the blocking form's is not
     * printed again. */
    static const int order[BUFPOOL_NCLASSES] = {2, 3, 6, 7, 0, 1, 4, 5};
    for (int form = 0; form < BUFPOOL_NFORMS; form++) {
        for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
            if (bufpool_module_hands_back_all(module, form, (bufpool_coll_id_t)id)) {
                /* said for every form: each form is installed or not; the
                 * map follows, with the row that says so */
                opal_output(0,
                            "  %s%s%s: every call to the previous module: not installed (below "
                            "coll_bufpool_verbose 2, where no call is explained)",
                            prefix[form], bufpool_coll_names[id], suffix[form]);
            }
            for (int k = 0; k < BUFPOOL_NCLASSES; k++) {
                const int cls = order[k];
                const bufpool_range_t *map = module->map[form][id][cls];
                bool printed = form > 0 && map == module->map[BUFPOOL_FORM_BLOCKING][id][cls];
                for (int earlier = 0; earlier < k && !printed; earlier++) {
                    printed = module->map[form][id][order[earlier]] == map;
                    if (printed && class_used(id, cls) == cls) {
                        /* A class of its own that resolved alike
                         * (user-defined operations outside the guards). */
                        opal_output(0, "  %s%s%s, %s: as %s", prefix[form], bufpool_coll_names[id],
                                    suffix[form], names[cls],
                                    '\0' != names[order[earlier]][0] ? names[order[earlier]]
                                                                     : "commutative");
                    }
                }
                size_t lo = 0;
                for (const bufpool_range_t *r = map; !printed; r++) {
                    char what[640], upto[32] = "";
                    describe((bufpool_coll_id_t)id, &r->choice, what, sizeof(what));
                    if (SIZE_MAX != r->bytes_max) {
                        snprintf(upto, sizeof(upto), "%zu", r->bytes_max);
                    }
                    const char *cls_name = names[cls];
                    /* A row's range the guard marked: never handed back,
                     * not even as a node row's warm-up. */
                    const bool marked =
                        r->choice.guarded && BUFPOOL_SOURCE_GUARD != r->choice.source;
                    opal_output(0, "  %s%s%s%s%s %zu..%s: %s%s", prefix[form],
                                bufpool_coll_names[id], suffix[form],
                                '\0' != cls_name[0] ? ", " : "", cls_name, lo, upto, what,
                                marked ? " (guarded: never handed back)" : "");
                    printed = SIZE_MAX == r->bytes_max;
                    lo = r->bytes_max + 1;
                }
            }
        }
    }
}

/* Where the module below may compute a call wrongly that stock Open MPI
 * would also give it, bufpool serves the call instead: correct before
 * fast, decided on what every rank agrees on (docs/collectives.md, "Every
 * rank makes the same choice").
 *   - Up to Open MPI 4.1.4, the blocking alltoall, not in place, in the
 *     range where tuned takes its modified Bruck algorithm
 *     (BUFPOOL_PREVIOUS_BRUCK_ALLTOALL_UNSAFE): whatever the datatypes,
 *     since each rank sees only its own.
 *   - In every series to 6.0.x, libnbc's MPI_Ireduce and MPI_Reduce_init
 *     with a commutative operation receive into temporary buffers without
 *     the datatype's true lower bound: on 3 or more ranks Rabenseifner's
 *     algorithm (red_sched_redscat_gather), on 2 its chain
 *     (red_sched_chain) when the root's input is in place (which the other
 *     rank cannot see).  With a datatype whose
 *     data does not start at its origin they write that many bytes past
 *     the buffer (or before it) and can return wrong elements
 *     (docs/reliability.md).  Such a datatype takes a user-defined
 *     operation (Open MPI refuses the built-in ones on derived types), so
 *     every such call of a user-defined commutative operation is served:
 *     the operation is the same on every rank, the datatype need not be;
 *     on 2 ranks from nbc_chain_from bytes (nbc_reduce_chain_from).
 *     The pipelined binary tree below 512 KiB, rsg from there (the generic
 *     rows' algorithms).
 *   - In every series to 6.0.x, tuned's ring and segmented ring allreduce
 *     (ompi_coll_base_allreduce_intra_ring, _ring_segmented) receive into
 *     temporary buffers without the datatype's true lower bound, so with
 *     one whose data starts after its origin they write past the buffer
 *     (`double free or corruption`, docs/reliability.md).  Such a datatype
 *     takes a user-defined operation, so every blocking allreduce of a
 *     user-defined commutative operation in the bands where tuned's fixed
 *     decision takes a ring (bufpool_ring_allreduce_spans) is served:
 *     rsag from 4 KiB at 2 and 3 ranks (at 4 KiB on 2, past vader's eager
 *     limit, rsag measured 1.08 x tuned and recursive doubling 1.45 x:
 *     rules/default.rules), recursive doubling elsewhere (log p rounds for
 *     the bands' small messages on many ranks; rsag past its scratch).
 *     Where tuned may take a ring at any size (settings.tuned_ring_anywhere:
 *     the user forced it, or gave tuned a rules file), every size is
 *     guarded: recursive doubling below 4 KiB, rsag from there.
 *   - Where the previous allreduce is coll/han's (communicators across
 *     hosts; 5.0 and 6.0 select it there by default), its reduction
 *     between hosts is libnbc's MPI_Ireduce on the leaders, in place at
 *     the root: the libnbc mistake above (on 2 hosts its chain, on more
 *     Rabenseifner), at whatever sizes han's segments take.  Every size
 *     is guarded, as for a forced ring.  The same for blocking reduce
 *     where the previous reduce is han's (it reduces between hosts the
 *     same way): every size, as libnbc's own reduce is guarded.
 * Returns the map's new number of ranges (at most n + 2 per span guarded:
 * BUFPOOL_GUARD_RANGES). */
#define BUFPOOL_GUARD_RANGES (2 * BUFPOOL_RING_ALLREDUCE_SPANS_MAX)

/* A guard's choice: alg serves, and no row's warm-up hands it back. */
#define GUARD_CHOICE(algorithm, why)                                                               \
    {                                                                                              \
        .alg = (algorithm), .source = BUFPOOL_SOURCE_GUARD, .note = (why), .guarded = true         \
    }

/* What the guards know of the modules below: this process's settings for
 * Open MPI's own components, read at every communicator's enable
 * (guard_settings_read), and which of the communicator's collectives go to
 * han (a bit each).  All part of the shape whose maps a communicator
 * shares: tuned reads its forced algorithms again for each new
 * communicator, so a setting written through MPI_T after MPI_Init reaches
 * the communicators made after it, in tuned and in the guards alike. */
typedef struct guard_settings {
    size_t nbc_chain_from;    /* nbc_reduce_chain_from */
    bool tuned_ring_anywhere; /* tuned_ring_allreduce_anywhere */
    unsigned prev_han;        /* mca_coll_bufpool_module_t.prev_han */
} guard_settings_t;

static size_t guard_map(bufpool_coll_id_t id, int form, int cls, int ranks,
                        const guard_settings_t *settings, bufpool_range_t *map, size_t n)
{
    static const bufpool_choice_t bruck_guard = GUARD_CHOICE(
        BUFPOOL_ALLTOALL_LINEAR,
        "served: the previous module's Bruck alltoall of Open MPI <= 4.1.4 may corrupt "
        "blocks of different send and receive datatypes (open-mpi/ompi#10488)");
    static const char nbc_reduce_note[] =
        "served: libnbc's nonblocking reduce of a user-defined commutative operation writes "
        "past its temporary buffer when the datatype's data does not start at its origin "
        "(docs/reliability.md)";
    static const bufpool_choice_t nbc_reduce_tree =
        GUARD_CHOICE(BUFPOOL_REDUCE_BINARY, nbc_reduce_note);
    static const bufpool_choice_t nbc_reduce_rsg =
        GUARD_CHOICE(BUFPOOL_REDUCE_RSG, nbc_reduce_note);
    static const char ring_note[] =
        "served: tuned's ring allreduce of a user-defined commutative operation writes past its "
        "temporary buffer when the datatype's data does not start at its origin "
        "(docs/reliability.md)";
    static const bufpool_choice_t ring_rd =
        GUARD_CHOICE(BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING, ring_note);
    static const bufpool_choice_t ring_rsag = GUARD_CHOICE(BUFPOOL_ALLREDUCE_RSAG, ring_note);
    /* han's allreduce and reduce both reduce between hosts that way. */
    static const char han_note[] =
        "served: han reduces between hosts with libnbc's nonblocking reduce, which writes past "
        "its temporary buffer for a user-defined commutative operation when the datatype's data "
        "does not start at its origin (docs/reliability.md)";
    static const bufpool_choice_t han_rd =
        GUARD_CHOICE(BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING, han_note);
    static const bufpool_choice_t han_rsag = GUARD_CHOICE(BUFPOOL_ALLREDUCE_RSAG, han_note);
    static const bufpool_choice_t han_reduce_tree = GUARD_CHOICE(BUFPOOL_REDUCE_BINARY, han_note);
    static const bufpool_choice_t han_reduce_rsg = GUARD_CHOICE(BUFPOOL_REDUCE_RSG, han_note);
    /* The ranges it guards are marked first, those a row gives to bufpool
     * included, so that nothing hands their calls back later (a node
     * row's warm-up calls, bufpool_enter); then it serves those the rules
     * hand back. */
    const size_t bruck = bufpool_bruck_alltoall_max_bytes(ranks);
    if (BUFPOOL_PREVIOUS_BRUCK_ALLTOALL_UNSAFE && BUFPOOL_COLL_alltoall == id &&
        BUFPOOL_FORM_BLOCKING == form && 0 == (cls & BUFPOOL_CLASS(false, true)) && bruck > 0) {
        n = bufpool_sizemap_guard(map, n, 0, bruck);
        return bufpool_sizemap_serve_upto(map, n, bruck, &bruck_guard);
    }
    if (BUFPOOL_COLL_allreduce == id && BUFPOOL_FORM_BLOCKING == form &&
        BUFPOOL_CLASS(true, false) == (cls & BUFPOOL_CLASS(true, false)) &&
        BUFPOOL_CLASS_USER_OP == (cls & BUFPOOL_CLASS_USER_OP)) {
        static const bufpool_bytes_span_t everywhere[] = {{0, 4095}, {4096, SIZE_MAX}};
        bufpool_bytes_span_t spans[BUFPOOL_RING_ALLREDUCE_SPANS_MAX];
        const bool han = 0 != (settings->prev_han & (1u << BUFPOOL_COLL_allreduce));
        const bool anywhere = han || settings->tuned_ring_anywhere;
        const size_t k = anywhere ? sizeof(everywhere) / sizeof(*everywhere)
                                  : bufpool_ring_allreduce_spans(ranks, spans);
        for (size_t i = 0; i < k; i++) {
            const bufpool_bytes_span_t span = anywhere ? everywhere[i] : spans[i];
            const bool rsag = (anywhere || ranks < 4) && span.min >= 4096;
            n = bufpool_sizemap_guard(map, n, span.min, span.max);
            n = bufpool_sizemap_serve_range(map, n, span.min, span.max,
                                            han    ? (rsag ? &han_rsag : &han_rd)
                                            : rsag ? &ring_rsag
                                                   : &ring_rd);
        }
        return n;
    }
    const bool han_reduce =
        BUFPOOL_FORM_BLOCKING == form && 0 != (settings->prev_han & (1u << BUFPOOL_COLL_reduce));
    if (BUFPOOL_COLL_reduce == id && (BUFPOOL_FORM_BLOCKING != form || han_reduce) && ranks >= 2 &&
        BUFPOOL_CLASS(true, false) == (cls & BUFPOOL_CLASS(true, false)) &&
        BUFPOOL_CLASS_USER_OP == (cls & BUFPOOL_CLASS_USER_OP)) {
        const size_t rsg_from = 512 * 1024;
        const size_t from = 2 == ranks && !han_reduce ? settings->nbc_chain_from : 0;
        if (SIZE_MAX != from) {
            n = bufpool_sizemap_guard(map, n, from, SIZE_MAX);
        }
        if (from < rsg_from) {
            n = bufpool_sizemap_serve_range(map, n, from, rsg_from - 1,
                                            han_reduce ? &han_reduce_tree : &nbc_reduce_tree);
        }
        if (SIZE_MAX != from) {
            n = bufpool_sizemap_serve_range(map, n, from > rsg_from ? from : rsg_from, SIZE_MAX,
                                            han_reduce ? &han_reduce_rsg : &nbc_reduce_rsg);
        }
    }
    return n;
}

/* From how many bytes of data libnbc's MPI_Ireduce and MPI_Reduce_init on
 * 2 ranks take their chain, the algorithm that overflows there: libnbc's
 * own choice is its binomial tree below 64 KiB (size * count < 65536 in
 * nbc_ireduce.c, 4.1 to 6.0) and the chain from there;
 * coll_libnbc_ireduce_algorithm chain (1) and rabenseifner (3: the chain on
 * 2 ranks) take it at every size, binomial (2) never (SIZE_MAX).  A
 * process's own setting, but the ranks' bounds differ only at sizes where
 * their libnbc's choices differ too (chain on one rank, binomial on the
 * other), which stock Open MPI does not survive either: wherever libnbc's
 * choices agree, so do bufpool's.  Without the variable (libnbc not
 * loaded, another release): every size.  Read at every communicator's
 * enable (libnbc reads it at every call: a communicator made before an
 * MPI_T write keeps the guard of the setting before it). */
static size_t nbc_reduce_chain_from(void)
{
    const int idx = mca_base_var_find("ompi", "coll", "libnbc", "ireduce_algorithm");
    const int *alg = NULL;
    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get_value(idx, &alg, NULL, NULL) || NULL == alg) {
        return 0;
    }
    switch (*alg) {
        case 0:
            return 64 * 1024;
        case 2:
            return SIZE_MAX;
        default:
            return 0;
    }
}

/* Whether tuned may run its ring or segmented ring allreduce at any size:
 * with coll_tuned_use_dynamic_rules on, coll_tuned_allreduce_algorithm
 * forces ring (4) or segmented ring (5), or a rules file
 * (coll_tuned_dynamic_rules_filename) may name either in any band.  A
 * process's own settings, as nbc_reduce_chain_from's: where the ranks'
 * differ, so do their tuned's choices, which stock Open MPI does not
 * survive either.  Without the variables (tuned not loaded): false, the
 * fixed decision's bands. */
static bool tuned_ring_allreduce_anywhere(void)
{
    const int dynamic_idx = mca_base_var_find("ompi", "coll", "tuned", "use_dynamic_rules");
    const bool *dynamic = NULL;
    if (dynamic_idx < 0 ||
        OPAL_SUCCESS != mca_base_var_get_value(dynamic_idx, &dynamic, NULL, NULL) ||
        NULL == dynamic || !*dynamic) {
        return false;
    }
    const int alg_idx = mca_base_var_find("ompi", "coll", "tuned", "allreduce_algorithm");
    const int *alg = NULL;
    if (alg_idx >= 0 && OPAL_SUCCESS == mca_base_var_get_value(alg_idx, &alg, NULL, NULL) &&
        NULL != alg && (4 == *alg || 5 == *alg)) {
        return true;
    }
    const int file_idx = mca_base_var_find("ompi", "coll", "tuned", "dynamic_rules_filename");
    char *const *file = NULL;
    return file_idx >= 0 && OPAL_SUCCESS == mca_base_var_get_value(file_idx, &file, NULL, NULL) &&
           NULL != file && NULL != *file && '\0' != **file;
}

static guard_settings_t guard_settings_read(const mca_coll_bufpool_module_t *module)
{
    return (guard_settings_t){.nbc_chain_from = nbc_reduce_chain_from(),
                              .tuned_ring_anywhere = tuned_ring_allreduce_anywhere(),
                              .prev_han = module->prev_han};
}

/* Whether two size maps give every byte count the same choice. */
static bool same_map(const bufpool_range_t *a, const bufpool_range_t *b)
{
    for (;; a++, b++) {
        if (a->bytes_max != b->bytes_max || !bufpool_choice_equal(&a->choice, &b->choice)) {
            return false;
        }
        if (SIZE_MAX == a->bytes_max) {
            return true;
        }
    }
}

bool bufpool_module_hands_back_all(const mca_coll_bufpool_module_t *module, int form,
                                   bufpool_coll_id_t id)
{
    /* A collective whose hand-back may have to mend a rank's own block
     * stays (bufpool_own_block_at_risk, algorithms/coll_bufpool_own_block.h:
     * a compare in the common case). */
    if (bufpool_hand_back_mends[id]) {
        return false;
    }
    /* A forced "previous" (the info key) keeps the entry, whose hand-back
     * it exists to show (bench/coll_toll). */
    for (int cls = 0; cls < BUFPOOL_NCLASSES; cls++) {
        const bufpool_range_t *map = module->map[form][id][cls];
        if (SIZE_MAX != map->bytes_max || BUFPOOL_ALG_PREVIOUS != map->choice.alg ||
            BUFPOOL_SOURCE_FORCED == map->choice.source) {
            return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------------------- */
/* Size maps shared by shape.
 *
 * A communicator's maps follow from the rules and settings (fixed once the
 * component is open: only the priority changes at run time, and it plays
 * no part here) and from its shape: its size, hosts, most ranks per host
 * and forced algorithms.  Resolving them costs some 12 us (2 ranks, the
 * default rules); a program that makes communicators by the thousand, most
 * of them of a shape it made before, takes them from here instead.
 * Every mapset in the list holds one reference for the list and one per
 * module using it; the list keeps up to BUFPOOL_MAPSETS_IDLE that no module
 * uses (the most recently made first), so a shape made and freed over and
 * over keeps its maps, and the memory kept stays a few tens of KiB. */
#define BUFPOOL_MAPSETS_IDLE 8

typedef struct bufpool_mapset {
    struct bufpool_mapset *next;
    int32_t refs;
    /* The shape. */
    int ranks, hosts, max_ppn;
    guard_settings_t guards;
    int forced[BUFPOOL_NCOLLS];
    /* The maps: mem + offset[form][coll][class] (of the class it uses). */
    bufpool_range_t *mem;
    size_t offset[BUFPOOL_NFORMS][BUFPOOL_NCOLLS][BUFPOOL_NCLASSES];
} bufpool_mapset_t;

static bool mapset_fits(const bufpool_mapset_t *set, const mca_coll_bufpool_module_t *module,
                        const guard_settings_t *guards)
{
    return set->ranks == module->ranks && set->hosts == module->hosts &&
           set->max_ppn == module->max_ppn && set->guards.prev_han == guards->prev_han &&
           set->guards.nbc_chain_from == guards->nbc_chain_from &&
           set->guards.tuned_ring_anywhere == guards->tuned_ring_anywhere &&
           0 == memcmp(set->forced, module->forced, sizeof(set->forced));
}

static void mapset_free(bufpool_mapset_t *set)
{
    free(set->mem);
    free(set);
}

void bufpool_mapset_release(bufpool_mapset_t *set)
{
    /* The list's own reference keeps a listed one alive: a module's
     * release never frees it under a lookup.  One trimmed from the list
     * goes with its last module. */
    if (NULL != set && 1 == __atomic_fetch_sub(&set->refs, 1, __ATOMIC_ACQ_REL)) {
        mapset_free(set);
    }
}

/* Under the lock: drop the list's reference of the idle mapsets past the
 * first BUFPOOL_MAPSETS_IDLE. */
static void mapsets_trim(mca_coll_bufpool_component_t *component)
{
    int idle = 0;
    for (bufpool_mapset_t **at = &component->mapsets; NULL != *at;) {
        bufpool_mapset_t *set = *at;
        if (1 == __atomic_load_n(&set->refs, __ATOMIC_ACQUIRE) && ++idle > BUFPOOL_MAPSETS_IDLE) {
            *at = set->next;
            bufpool_mapset_release(set);
            continue;
        }
        at = &set->next;
    }
}

void bufpool_mapsets_close(mca_coll_bufpool_component_t *component)
{
    OPAL_THREAD_LOCK(&component->mapsets_lock);
    while (NULL != component->mapsets) {
        bufpool_mapset_t *set = component->mapsets;
        component->mapsets = set->next;
        bufpool_mapset_release(set);
    }
    OPAL_THREAD_UNLOCK(&component->mapsets_lock);
}

/* Where a map equal to map is already kept in all for collective id: the
 * blocking form's of the same class (the other forms mostly share it), or
 * this form's of an earlier class (reduce's built-in and user-defined
 * operations differ only where guard_map serves); SIZE_MAX: nowhere. */
static size_t mapset_kept(const bufpool_mapset_t *set, const bufpool_range_t *all, int form, int id,
                          int cls, const bufpool_range_t *map)
{
    const size_t blocking = set->offset[BUFPOOL_FORM_BLOCKING][id][cls];
    if (form > 0 && same_map(all + blocking, map)) {
        return blocking;
    }
    for (int earlier = 0; earlier < cls; earlier++) {
        const size_t at = set->offset[form][id][earlier];
        if (SIZE_MAX != at && same_map(all + at, map)) {
            return at;
        }
    }
    return SIZE_MAX;
}

/* A communicator of one process (mca_coll_bufpool_comm_query): every call
 * goes to the module below, whatever the rules and settings say; bufpool
 * is there for the hand-backs that mend a rank's own block. */
static const bufpool_range_t single_process_range = {
    .bytes_max = SIZE_MAX,
    .choice = {.alg = BUFPOOL_ALG_PREVIOUS,
               .source = BUFPOOL_SOURCE_DEFAULT,
               .note = "a single process: the previous module (coll/self), a rank's own block "
                       "mended"}};

/* The maps of the module's shape, made from the rules: NULL when memory is
 * short. */
static bufpool_mapset_t *mapset_make(const mca_coll_bufpool_module_t *module,
                                     const mca_coll_bufpool_component_t *component,
                                     const guard_settings_t *guards)
{
    const bufpool_rules_t *rules = &component->rules;
    const bufpool_tuning_t *tuning = &component->tuning;
    bufpool_mapset_t *set = calloc(1, sizeof(*set));
    /* Each collective's rows, picked out once for all its maps (the rows
     * of one collective are a tenth of the table or less). */
    const bufpool_rule_t **rows = malloc((rules->n ? rules->n : 1) * sizeof(*rows));
    const bufpool_rule_t **rows_of[BUFPOOL_NCOLLS];
    size_t nrows_of[BUFPOOL_NCOLLS], most = 0;
    if (NULL == set || NULL == rows) {
        free(set);
        free(rows);
        return NULL;
    }
    set->ranks = module->ranks;
    set->hosts = module->hosts;
    set->max_ppn = module->max_ppn;
    set->guards = *guards;
    memcpy(set->forced, module->forced, sizeof(set->forced));
    for (int id = 0, picked = 0; id < BUFPOOL_NCOLLS; id++) {
        rows_of[id] = rows + picked;
        nrows_of[id] = bufpool_rules_of_coll(rules, (bufpool_coll_id_t)id, rows_of[id]);
        picked += (int)nrows_of[id];
        most = nrows_of[id] > most ? nrows_of[id] : most;
    }
    /* A map is built in map (BUFPOOL_GUARD_RANGES more ranges than its
     * rows can make: a guard splits a range in three at each span) and
     * kept, unless it is the blocking form's again, at
     * the end of all, which grows: the maps of a communicator are a few
     * KiB, which a first guess of every map's largest size would make
     * megabytes to map and unmap at every communicator. */
    size_t used = 0, room = 256;
    bufpool_range_t *map = malloc((BUFPOOL_MAP_RANGES(most) + BUFPOOL_GUARD_RANGES) * sizeof(*map));
    bufpool_range_t *all = malloc(room * sizeof(*all));
    int rc = NULL == map || NULL == all ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
    for (int form = 0; form < BUFPOOL_NFORMS && OMPI_SUCCESS == rc; form++) {
        for (int id = 0; id < BUFPOOL_NCOLLS && OMPI_SUCCESS == rc; id++) {
            const char *note;
            const int forced = bufpool_forced_for((bufpool_coll_id_t)id, module->forced[id],
                                                  module->hosts, tuning, &note);
            for (int cls = 0; cls < BUFPOOL_NCLASSES && OMPI_SUCCESS == rc; cls++) {
                if (class_used(id, cls) != cls) {
                    set->offset[form][id][cls] = SIZE_MAX; /* the map of the class it uses */
                    continue;
                }
                size_t n = 1;
                if (1 == module->ranks) {
                    map[0] = single_process_range;
                } else {
                    const bufpool_shape_t shape = shape_of(module, form, id, cls);
                    n = bufpool_sizemap_build_rows(rows_of[id], nrows_of[id], (bufpool_coll_id_t)id,
                                                   &shape, tuning->min_size, forced, note, map);
                    n = guard_map((bufpool_coll_id_t)id, form, cls, module->ranks, guards, map, n);
                }
                /* Rows rarely name a form or a class that only a guard
                 * tells apart: a map equal to one already kept is shared. */
                const size_t kept = mapset_kept(set, all, form, id, cls, map);
                if (SIZE_MAX != kept) {
                    set->offset[form][id][cls] = kept;
                    continue;
                }
                if (used + n > room) {
                    room = 2 * (used + n);
                    bufpool_range_t *more = realloc(all, room * sizeof(*all));
                    if (NULL == more) {
                        rc = OMPI_ERR_OUT_OF_RESOURCE;
                        break;
                    }
                    all = more;
                }
                memcpy(all + used, map, n * sizeof(*map));
                set->offset[form][id][cls] = used;
                used += n;
            }
        }
    }
    free(rows);
    free(map);
    if (OMPI_SUCCESS != rc) {
        free(all);
        free(set);
        return NULL;
    }
    set->mem = all;
    return set;
}

/* The module's maps, from the list or made and listed; a reference for
 * the module.  NULL when memory is short. */
static bufpool_mapset_t *mapset_get(const mca_coll_bufpool_module_t *module,
                                    mca_coll_bufpool_component_t *component)
{
    OPAL_THREAD_LOCK(&component->mapsets_lock);
    /* A few lookups by name per communicator, none per call; under the
     * lock, as they were when only a new shape read them. */
    const guard_settings_t guards = guard_settings_read(module);
    bufpool_mapset_t *set = component->mapsets;
    while (NULL != set && !mapset_fits(set, module, &guards)) {
        set = set->next;
    }
    if (NULL == set) {
        set = mapset_make(module, component, &guards);
        if (NULL != set) {
            set->refs = 1; /* the list's */
            set->next = component->mapsets;
            component->mapsets = set;
        }
    }
    if (NULL != set) {
        __atomic_fetch_add(&set->refs, 1, __ATOMIC_ACQ_REL);
        mapsets_trim(component);
    }
    OPAL_THREAD_UNLOCK(&component->mapsets_lock);
    return set;
}

int bufpool_module_resolve(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm,
                           mca_coll_bufpool_component_t *component)
{
    module->ranks = ompi_comm_size(comm);
    read_info_keys(module, comm, component);
    bufpool_mapset_t *set = mapset_get(module, component);
    if (NULL == set) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    module->mapset = set;
    for (int form = 0; form < BUFPOOL_NFORMS; form++) {
        for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
            for (int cls = 0; cls < BUFPOOL_NCLASSES; cls++) {
                module->map[form][id][cls] = set->mem + set->offset[form][id][class_used(id, cls)];
            }
        }
    }
    module->explain = component->verbose >= 2 ||
                      opal_output_get_verbosity(ompi_coll_base_framework.framework_output) >= 20;
    if (component->verbose >= 3 && 0 == ompi_comm_rank(comm)) {
        print_maps(module, comm);
    }
    return OMPI_SUCCESS;
}
