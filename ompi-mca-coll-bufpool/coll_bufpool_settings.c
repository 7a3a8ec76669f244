/*
 * coll/bufpool's settings (coll_bufpool_settings.h): every parameter
 * checked at MPI_Init, one message per bad value.
 */
#include "coll_bufpool_settings.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

#include "bufpool_params.h"
#include "regpar_size.h"

/* The priority is read by comm_query without the component at hand. */
#define COMPONENT (&mca_coll_bufpool_component)

/* The priority text parsed last and its value (see below); freed at close. */
static char *priority_parsed_text;
static int priority_parsed_value;

int mca_coll_bufpool_priority(void)
{
    /* MPI_T may change the text at run time (the only SETTABLE parameter):
     * it is parsed again only when it differs from the text parsed last,
     * so a bad text is reported once. */
    char why[128];
    long value;
    /* An empty value reaches us as NULL: compare it as "". */
    const char *text = NULL == COMPONENT->priority_text ? "" : COMPONENT->priority_text;

    OPAL_THREAD_LOCK(&COMPONENT->lock); /* communicators may be created concurrently */
    if (NULL == priority_parsed_text || 0 != strcmp(priority_parsed_text, text)) {
        free(priority_parsed_text);
        priority_parsed_text = strdup(text);
        if (0 == regpar_parse_int(text, -1000000, 1000000, &value, why, sizeof(why))) {
            priority_parsed_value = (int)value;
        } else {
            bufpool_params_bad(COMPONENT->params, "priority", text, why,
                               "an integer such as 40 (negative disables)", DEFAULT_PRIORITY);
            priority_parsed_value = atoi(DEFAULT_PRIORITY);
        }
    }
    int priority = priority_parsed_value;
    OPAL_THREAD_UNLOCK(&COMPONENT->lock);
    return priority;
}

/* The cost model's table: defaults, then the file, then the text.  A bad
 * file or entry is reported and the table stays as it was before it (every
 * rank reads the same parameters, so every rank keeps the same table). */
static void check_model_links(mca_coll_bufpool_component_t *component)
{
    char err[160];
    bufpool_model_links_default(&component->model_links);
    const char *path = component->model_links_file;
    if (NULL != path && '\0' != path[0]) {
        char text[8192];
        FILE *f = fopen(path, "r");
        size_t n = 0;
        if (NULL == f) {
            bufpool_params_bad(component->params, "model_links_file", path, strerror(errno),
                               "a readable file", "the default link table");
        } else {
            n = fread(text, 1, sizeof(text) - 1, f);
            int too_long = !feof(f);
            fclose(f);
            text[n] = '\0';
            if (too_long) {
                bufpool_params_bad(component->params, "model_links_file", path, "longer than 8 KiB",
                                   "a short file", "the default link table");
            } else if (0 !=
                       bufpool_model_links_parse(&component->model_links, text, err, sizeof(err))) {
                bufpool_params_bad(component->params, "model_links_file", path, err,
                                   "lines class:latency_us,bandwidth_GBps,reduce_GBps",
                                   "the default link table");
            } else {
                /* The table it gave: the ranks that read another file (or
                 * none) decide otherwise across hosts. */
                bufpool_alike_add_bytes(&component->alike, "model_links_file text", text, n);
            }
        }
    }
    if (NULL != component->model_links_text &&
        0 != bufpool_model_links_parse(&component->model_links, component->model_links_text, err,
                                       sizeof(err))) {
        bufpool_params_bad(component->params, "model_links", component->model_links_text, err,
                           "class:latency_us,bandwidth_GBps,reduce_GBps;... or inter=tcp|ib|efa",
                           "the table without this parameter");
    }
    component->tuning.links = &component->model_links;
}

/* The whole of a rules file, NUL-terminated, or NULL with the reason in
 * why.  Bounded: a rules file is a few KiB. */
static char *read_rules_file(const char *path, size_t *len, char *why, size_t whylen)
{
    FILE *f = fopen(path, "r");
    if (NULL == f) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    char *text = malloc(BUFPOOL_RULES_MAX_TEXT + 1);
    size_t n = NULL != text ? fread(text, 1, BUFPOOL_RULES_MAX_TEXT + 1, f) : 0;
    const int read_error = ferror(f);
    fclose(f);
    if (NULL == text || read_error || n > BUFPOOL_RULES_MAX_TEXT) {
        snprintf(why, whylen, "%s",
                 NULL == text ? "out of memory"
                 : read_error ? "a read error"
                              : "longer than 1 MiB");
        free(text);
        return NULL;
    }
    text[n] = '\0';
    *len = n;
    return text;
}

/* The rows of every communicator: coll_bufpool_rules_file's, then the
 * default rules (unless coll_bufpool_rules_default is off).  A file that
 * cannot be read or has an error is reported once, naming the line, and
 * left out whole: the job runs on the default rules. */
static void load_rules(mca_coll_bufpool_component_t *component)
{
    char err[256] = "out of memory"; /* what bufpool_rules_append's failure means */
    bufpool_rules_t defaults;
    bufpool_rules_init(&component->rules);
    bufpool_rules_init(&defaults);
    const bool with_defaults = bufpool_params_bool(component->params, "rules_default",
                                                   component->rules_default_text, true);
    const char *path = component->rules_file;
    bool file_failed = false;
    if (NULL != path && '\0' != path[0]) {
        size_t len = 0;
        char *text = read_rules_file(path, &len, err, sizeof(err));
        if (NULL == text) {
            bufpool_params_bad(component->params, "rules_file", path, err, "a readable rules file",
                               "the default rules");
            file_failed = true;
        } else if (0 != bufpool_rules_parse(&component->rules, text, len, path, err, sizeof(err))) {
            bufpool_params_bad(component->params, "rules_file", path, err,
                               "a rules file (docs/rules.md)", "the default rules");
            file_failed = true;
        } else {
            /* The rows it gave (a node whose copy differs, or that cannot
             * read it, decides otherwise: coll_bufpool_alike.h). */
            bufpool_alike_add_bytes(&component->alike, "rules_file text", text, len);
        }
        free(text);
    }
    if (file_failed) {
        /* Left out whole, as the message said: the default rules. */
        bufpool_rules_free(&component->rules);
        bufpool_rules_init(&component->rules);
    }
    /* rules_default off leaves the file's rows alone (none without a file:
     * each collective's own default decides every size). */
    if (with_defaults || file_failed) {
        /* The default text is part of the build: a failure here is a bug
         * that the unit tests catch; it leaves each collective's default. */
        if (0 != bufpool_rules_parse(&defaults, bufpool_default_rules_text,
                                     bufpool_default_rules_len, BUFPOOL_DEFAULT_RULES_NAME, err,
                                     sizeof(err)) ||
            0 != bufpool_rules_append(&component->rules, &defaults)) {
            /* Only out of memory, in practice: the other ranks have these
             * rows, and the digest says this process has not. */
            opal_output(0, "coll_bufpool: the default rules did not load (%s)", err);
            bufpool_alike_add(&component->alike, "default rules", "not loaded");
        } else {
            bufpool_alike_add_bytes(&component->alike, "default rules", bufpool_default_rules_text,
                                    bufpool_default_rules_len);
        }
    }
    bufpool_rules_free(&defaults);
    component->tuning.rules = &component->rules;
}

/* A testing parameter's list "v0,v1,...": numbers from lo to hi, in *list
 * (malloc'd; *n entries), or nothing after reporting it (why, expected and
 * fallback: the message's words). */
static void parse_test_list(mca_coll_bufpool_component_t *component, const char *param,
                            const char *text, long lo, long hi, const char *why,
                            const char *expected, const char *fallback, int **list, int *count)
{
    *list = NULL;
    *count = 0;
    if (NULL == text || '\0' == text[0]) {
        return;
    }
    size_t n = 1;
    for (const char *c = text; *c; c++) {
        n += ',' == *c;
    }
    int *map = malloc(n * sizeof(*map));
    const char *s = text;
    for (size_t i = 0; NULL != map && i < n; i++) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || 0 != errno || v < lo || v > hi || (',' != *end && '\0' != *end)) {
            bufpool_params_bad(component->params, param, text, why, expected, fallback);
            free(map);
            return;
        }
        map[i] = (int)v;
        s = end + 1;
    }
    *list = map;
    *count = NULL != map ? (int)n : 0;
}

/* coll_bufpool_test_host_map: "h0,h1,..." host numbers from 0 to 65535;
 * coll_bufpool_test_node_l3: "c0,c1,..." L3 caches from -1 (none) to 65535. */
static void check_test_lists(mca_coll_bufpool_component_t *component)
{
    parse_test_list(component, "test_host_map", component->test_host_map_text, 0, 65535,
                    "not a list of host numbers",
                    "comma-separated integers from 0 to 65535, e.g. 0,0,0,1", "the real host names",
                    &component->test_host_map, &component->test_host_map_n);
    parse_test_list(component, "test_node_l3", component->test_node_l3_text, -1, 65535,
                    "not a list of L3 cache numbers",
                    "comma-separated integers from -1 (none) to 65535, e.g. 0,0,1,1",
                    "the L3 caches the processes are bound within (sysfs)",
                    &component->test_node_l3, &component->test_node_l3_n);
}

void bufpool_settings_check(mca_coll_bufpool_component_t *component)
{
    bufpool_tuning_t *t = &component->tuning;

    component->verbose =
        (int)bufpool_params_int(component->params, "verbose", component->verbose_text, 0, 9, "0");
    t->pipeline_depth =
        (int)bufpool_params_int(component->params, "pipeline_depth", component->pipeline_depth_text,
                                1, BUFPOOL_MAX_DEPTH, DEFAULT_PIPELINE_DEPTH);
    t->max_requests =
        (int)bufpool_params_int(component->params, "max_requests", component->max_requests_text, 0,
                                BUFPOOL_MAX_REQUESTS_LIMIT, DEFAULT_MAX_REQUESTS);
    if (1 == t->max_requests) {
        /* An exchange step needs its send and its receive in flight at once. */
        bufpool_params_bad(component->params, "max_requests", component->max_requests_text,
                           "below 2 (an exchange needs a send and a receive in flight at once)",
                           "0 or an integer from 2 to 65536", DEFAULT_MAX_REQUESTS);
        t->max_requests = BUFPOOL_MAX_REQUESTS_DEFAULT;
    }
    (void)mca_coll_bufpool_priority(); /* report a bad value at MPI_Init already */
    t->segment_size = (size_t)bufpool_params_size(
        component->params, "segment_size", component->segment_size_text, DEFAULT_SEGMENT_SIZE,
        BUFPOOL_SEGMENT_MIN, BUFPOOL_SEGMENT_MAX, "a size from 4K to 64M");
    t->min_size =
        (size_t)bufpool_params_size(component->params, "min_size", component->min_size_text,
                                    DEFAULT_MIN_SIZE, 0, UINT64_MAX, "a size such as 0, 64K or 1M");
    /* The default small_size may exceed a small segment_size the user
     * chose: that is not the user's mistake, so clamp it silently. */
    t->small_size = (size_t)bufpool_params_size(component->params, "small_size",
                                                component->small_size_text, DEFAULT_SMALL_SIZE, 0,
                                                UINT64_MAX, "a size from 0 to segment_size");
    if (t->small_size > t->segment_size) {
        if (NULL != component->small_size_text &&
            0 != strcmp(component->small_size_text, DEFAULT_SMALL_SIZE)) {
            bufpool_params_bad(component->params, "small_size", component->small_size_text,
                               "above segment_size", "a size from 0 to segment_size",
                               "segment_size");
        }
        t->small_size = t->segment_size;
    }
    check_model_links(component);
    check_test_lists(component);
    load_rules(component);
    component->nonblocking =
        bufpool_params_bool(component->params, "nonblocking", component->nonblocking_text, true);
    component->persistent =
        bufpool_params_bool(component->params, "persistent", component->persistent_text, true);
    component->test_nbc_tag_range =
        (int)bufpool_params_int(component->params, "test_nbc_tag_range",
                                component->test_nbc_tag_range_text, 0, 1 << 24, "0");
    component->node_max_bytes = (size_t)bufpool_params_size(
        component->params, "node_max_bytes", component->node_max_bytes_text, DEFAULT_NODE_MAX_BYTES,
        0, UINT64_MAX, "a size such as 0, 64M or 1G");
    component->node_cold_calls = (uint64_t)bufpool_params_int(component->params, "node_cold_calls",
                                                              component->node_cold_calls_text, 0,
                                                              INT_MAX, DEFAULT_NODE_COLD_CALLS);
    component->node_flat_max =
        (int)bufpool_params_int(component->params, "node_flat_max", component->node_flat_max_text,
                                2, 1 << 20, DEFAULT_NODE_FLAT_MAX);
    component->node_warmup_calls = (uint64_t)bufpool_params_int(
        component->params, "node_warmup_calls", component->node_warmup_calls_text, 0, INT_MAX,
        DEFAULT_NODE_WARMUP_CALLS);
    component->node_cma =
        bufpool_params_bool(component->params, "node_cma", component->node_cma_text, true);
    component->node_proc_link = bufpool_params_bool(component->params, "node_proc_link",
                                                    component->node_proc_link_text, true);
    component->test_node_refuse_link =
        (int)bufpool_params_int(component->params, "test_node_refuse_link",
                                component->test_node_refuse_link_text, -1, INT_MAX, "-1");
    component->test_node_no_cma = (int)bufpool_params_int(
        component->params, "test_node_no_cma", component->test_node_no_cma_text, -1, INT_MAX, "-1");
    component->test_node_fail = (int)bufpool_params_int(
        component->params, "test_node_fail", component->test_node_fail_text, -1, INT_MAX, "-1");
    component->test_node_fail_chunk =
        (int)bufpool_params_int(component->params, "test_node_fail_chunk",
                                component->test_node_fail_chunk_text, -1, INT_MAX, "-1");
    component->nb_stack_size = (size_t)bufpool_params_size(
        component->params, "nb_stack_size", component->nb_stack_size_text, DEFAULT_NB_STACK_SIZE,
        (uint64_t)64 << 10, (uint64_t)64 << 20, "a size from 64K to 64M");

    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        char param[64];
        snprintf(param, sizeof(param), "%s_enable", mca_coll_bufpool_coll_names[id]);
        component->coll[id].enabled =
            bufpool_params_bool(component->params, param, component->coll[id].enable_text, true);
        snprintf(param, sizeof(param), "%s_algorithm", mca_coll_bufpool_coll_names[id]);
        int alg = bufpool_params_name(component->params, param, component->coll[id].algorithm_text,
                                      mca_coll_bufpool_algorithm_names[id], "auto");
        component->coll[id].algorithm = alg < 0 ? BUFPOOL_ALG_AUTO : alg;
    }
}

void bufpool_settings_free(mca_coll_bufpool_component_t *component)
{
    component->tuning.rules = NULL;
    bufpool_rules_free(&component->rules);
    free(priority_parsed_text);
    priority_parsed_text = NULL;
    free(component->test_host_map);
    component->test_host_map = NULL;
    component->test_host_map_n = 0;
    free(component->test_node_l3);
    component->test_node_l3 = NULL;
    component->test_node_l3_n = 0;
}
