#!/bin/sh
# Bad MCA input, generated: every parameter of both components (as
# `ompi_info --parsable` lists them) gets an empty, a negative, a zero, a
# huge, a non-numeric, two wrong-suffix and a wrong-enum value.  A value
# the documented rules reject must be reported by exactly one message in
# the whole job naming the parameter; a value they accept must be taken
# without a word about that parameter; either way the job must compute
# correct results (rel_job's smoke workload: every collective checked, pool
# memory through MPI_Alloc_mem, nothing left out).
#
# The expectations come from the rules table below (written from the
# parameter table, now in docs/parameters.md, not from the code): a
# parameter ompi_info lists that has no rule fails the test, so a new
# parameter cannot escape the sweep.  The hand-picked cases of
# test/mpi/bad_params.sh are not repeated.
#
# quick (make check): 48 jobs; the parameters are dealt into 6 groups (no two
#   of the pool's sizes, which are also checked together, in one group) and
#   each job sets one group to one value class, so every parameter meets
#   every value, six at a time.
# full (RELIABILITY_FULL=1): one job per parameter and value.
# Results: $RELIABILITY_RESULTS/bad_mca_sweep.csv.
set -u
. "$top_srcdir/test/reliability/rel-common.sh"
rel_require_components

OMPI_MCA_mca_base_component_path="$OMPI_SYSTEM_COMPONENT_DIR:$top_builddir/components"
export OMPI_MCA_mca_base_component_path
info=${OMPI_INFO:-ompi_info}
params=$({
    "$info" --parsable --param mpool regpar --level 9
    "$info" --parsable --param coll bufpool --level 9
} | sed -n 's/^mca:[a-z]*:[a-z]*:param:\([a-z0-9_]*\):value:.*/\1/p')
unset OMPI_MCA_mca_base_component_path # run-mpi-test.sh sets its own
if [ "$(printf '%s\n' "$params" | wc -l)" -lt 40 ]; then
    echo "bad_mca_sweep: ompi_info listed only: $params" >&2
    exit 1
fi

# The value classes, in order.
classes="empty negative zero huge nonnumeric suffix suffix2 enum"
value_of() {
    case $1 in
        empty) printf '' ;;
        negative) printf '%s' -1 ;;
        zero) printf '%s' 0 ;;
        huge) printf '%s' 99999999999999999999 ;;
        nonnumeric) printf '%s' abc ;;
        suffix) printf '%s' 12Q ;;
        suffix2) printf '%s' 64KB ;;
        enum) printf '%s' no_such_choice ;;
    esac
}

# kind PARAM: what docs/parameters.md says the parameter takes.
kind_of() {
    case $1 in
        mpool_regpar_bucket_min | mpool_regpar_bucket_max | mpool_regpar_slab_size | \
            mpool_regpar_max_capacity | mpool_regpar_reg_chunk_size | coll_bufpool_segment_size | \
            coll_bufpool_nb_stack_size)
            echo size_positive ;;
        mpool_regpar_reg_threshold | coll_bufpool_min_size | coll_bufpool_small_size | \
            coll_bufpool_node_max_bytes)
            echo size_or_zero ;;
        mpool_regpar_priority | coll_bufpool_priority | coll_bufpool_test_node_fail | \
            coll_bufpool_test_node_fail_chunk | coll_bufpool_test_node_no_cma | \
            coll_bufpool_test_node_refuse_link) echo any_integer ;;
        mpool_regpar_verbose | coll_bufpool_verbose | mpool_regpar_reg_threads | \
            coll_bufpool_max_requests | coll_bufpool_test_nbc_tag_range | \
            coll_bufpool_node_cold_calls | coll_bufpool_node_warmup_calls)
            echo integer_from_zero ;;
        # (node_flat_max takes 2 and up: no value class here is 1 either.)
        coll_bufpool_pipeline_depth | coll_bufpool_node_flat_max) echo integer_from_one ;;
        mpool_regpar_bucket_factor) echo factor ;;
        mpool_regpar_gc_age) echo duration ;;
        mpool_regpar_hugepages | mpool_regpar_prefault | mpool_regpar_bind_threads | \
            coll_bufpool_*_enable | coll_bufpool_rules_default | coll_bufpool_nonblocking | \
            coll_bufpool_persistent | coll_bufpool_node_cma | coll_bufpool_node_proc_link) echo switch ;;
        mpool_regpar_numa) echo numa ;;
        mpool_regpar_reg_backend | mpool_regpar_reg_parallel | coll_bufpool_*_algorithm)
            echo choice ;;
        mpool_regpar_ofi_provider | mpool_regpar_verbs_device) echo name ;;
        # Empty (the default) is the built-in link table; every value of the
        # other classes is neither an entry nor a readable file.
        coll_bufpool_model_links | coll_bufpool_model_links_file) echo name ;;
        # Empty (the default) is no file; every other value is no readable
        # rules file.
        coll_bufpool_rules_file) echo name ;;
        # Empty (the default) is the real host names; 0 is one host.
        coll_bufpool_test_host_map) echo host_map ;;
        # Empty (the default) is sysfs's L3s; 0 is one L3, -1 none.
        coll_bufpool_test_node_l3) echo l3_map ;;
        *) echo none ;;
    esac
}

# accepted KIND CLASS: 0 if the documented rules accept the value.
accepted() {
    case "$1:$2" in
        size_or_zero:zero | any_integer:negative | any_integer:zero | \
            integer_from_zero:zero | duration:zero | switch:zero | numa:zero | name:empty | \
            host_map:empty | host_map:zero | l3_map:empty | l3_map:zero | l3_map:negative)
            return 0 ;;
    esac
    return 1
}

# A name parameter is only looked at by its backend: pick it for the job.
# (A name that does not exist there is a bad value like any other.)
extra_for() {
    case $1 in
        mpool_regpar_ofi_provider) echo "--mca mpool_regpar_reg_backend ofi" ;;
        mpool_regpar_verbs_device)
            echo "--mca mpool_regpar_reg_backend verbs -x LD_PRELOAD=$rel_preload -x FAULT_FAKE_VERBS=1" ;;
    esac
}

# Lines of the job's output that speak about PARAM: its full name, or the
# pool's configuration check, which names the field without the prefix.
mentions() { # log param
    short=${2#mpool_regpar_}
    grep -E -c -- "(^|[^a-z_])$2([^a-z_]|\$)|mpool_regpar: $short [^ ]* is (invalid|below)" "$1"
}

# Cases already in test/mpi/bad_params.sh: "param value" per line.
handpicked=$(sed -n 's/^\(mpool_regpar_[a-z_]*\|coll_bufpool_[a-z_]*\) \{1,\}\([^ ]*\) .*/\1 \2/p' \
    "$top_srcdir/test/mpi/bad_params.sh")

csv="$rel_results/bad_mca_sweep.csv"
logdir="$rel_results/bad_mca_sweep.logs"
rm -rf "$logdir"
mkdir -p "$logdir"
echo "params,class,value,outcome,detail" >"$csv"
failed="$csv.failed"
rm -f "$failed"

for p in $params; do
    if [ "$(kind_of "$p")" = none ]; then
        echo "FAIL: ompi_info lists $p, which has no rule in bad_mca_sweep.sh: add one"
        echo x >>"$failed"
    fi
done

# run_case CLASS PARAM...: one job with every PARAM set to CLASS's value.
run_case() {
    class=$1
    shift
    value=$(value_of "$class")
    tag="$class-$(echo "$*" | tr ' ' '+' | cut -c 1-80)"
    log="$logdir/$tag.log"
    extra=
    envs=
    for p in "$@"; do
        envs="$envs OMPI_MCA_$p=$value"
        extra="$extra $(extra_for "$p")"
    done
    # shellcheck disable=SC2086 # one assignment per word; values hold no blanks
    env $envs BUFPOOL_TEST_MCA="$extra $rel_san_mca" sh "$rel_run" 2 "$rel_job" --rel-workload=smoke \
        --rel-expect-pool >"$log" 2>&1 </dev/null
    rc=$?
    outcome=$(rel_outcome $rc "$log")
    detail=
    if [ "$outcome" = correct ]; then
        for p in "$@"; do
            n=$(mentions "$log" "$p")
            if accepted "$(kind_of "$p")" "$class"; then
                [ "$n" -eq 0 ] || detail="$detail $p:accepted-value-but-$n-messages"
            else
                [ "$n" -eq 1 ] || detail="$detail $p:$n-messages"
            fi
        done
    else
        detail=" job:$outcome"
    fi
    echo "$*,$class,'$value',$outcome,${detail# }" >>"$csv"
    if [ -n "$detail" ]; then
        echo "FAIL: '$value' ($class) for $*:$detail (log: $log)"
        grep -E 'mpool_regpar|coll_bufpool|FAIL' "$log" | head -n 6
        echo x >>"$failed"
    else
        echo "ok: '$value' ($class): $# parameter(s), every rejected value reported once, job correct"
        rm -f "$log"
    fi
}

if [ $rel_full = 1 ]; then
    for p in $params; do
        for class in $classes; do
            if printf '%s\n' "$handpicked" | grep -q -x "$p $(value_of "$class")"; then
                continue
            fi
            run_case "$class" "$p"
        done
    done
else
    for class in $classes; do
        for group in 0 1 2 3 4 5; do
            set --
            i=0
            for p in $params; do
                [ $((i % 6)) -eq $group ] && set -- "$@" "$p"
                i=$((i + 1))
            done
            run_case "$class" "$@"
        done
    done
fi

njobs=$(($(wc -l <"$csv") - 1))
nvalues=$(awk -F, 'NR > 1 { n += split($1, a, " ") } END { print n + 0 }' "$csv")
echo "bad_mca_sweep: $(echo "$params" | wc -w) parameters, $nvalues values tried in $njobs jobs (mode: $([ $rel_full = 1 ] && echo full || echo quick)); results: $csv"
if [ -e "$failed" ]; then
    rm -f "$failed"
    echo "bad_mca_sweep: FAILED"
    exit 1
fi
echo "bad_mca_sweep: every value rejected by the rules was reported once, every job correct"
exit 0
