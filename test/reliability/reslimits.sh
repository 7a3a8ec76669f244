#!/bin/sh
# Resource limits, each with rel_job's checked workloads:
#   memlock   a non-root job (setpriv to nobody when run as root) with
#             RLIMIT_MEMLOCK of 64K and reg_backend=pin: registration fails
#             with a message naming RLIMIT_MEMLOCK, the slabs are used
#             unregistered, the results are correct;
#   as        RLIMIT_AS on the ranks (prlimit): first the smallest limit (on
#             a 32M grid) at which the job passes without our components,
#             then our components at that limit and 16M..128M above it:
#             every run correct, or a clear MPI error (MPI_Alloc_mem) or the
#             test's own malloc failing -- never a crash, hang or wrong
#             result;
#   capacity  max_capacity 2M, below one segment (segment_size 4M):
#             requests are served over the cap and bytes_held is back under
#             2M at every idle point;
#   comms     thousands of communicators created, used and freed (5000;
#             20000 with RELIABILITY_FULL=1): no pool growth, heap growth
#             under 64 bytes per communicator (a leaked module would be
#             hundreds), figures printed beside a run without bufpool.
# Results: $RELIABILITY_RESULTS/reslimits.csv.
set -u
. "$top_srcdir/test/reliability/rel-common.sh"
rel_require_components

csv="$rel_results/reslimits.csv"
logdir="$rel_results/reslimits.logs"
rm -rf "$logdir"
mkdir -p "$logdir"
echo "test,setting,outcome,detail" >"$csv"
failed="$csv.failed"
rm -f "$failed"

# record TEST SETTING OUTCOME DETAIL LOG: pass unless the outcome says a crash,
# a hang, a wrong result or something unexplained.
record() {
    echo "$1,$2,$3,$4" >>"$csv"
    case $3 in
        correct | mpi_error | test_oom)
            echo "ok: $1 $2: $3${4:+ ($4)}"
            ;;
        *)
            echo "FAIL: $1 $2: $3${4:+ ($4)}; log: $5"
            grep -E 'FAIL|signal|Signal|TIMEOUT|error' "$5" | head -n 8
            echo x >>"$failed"
            ;;
    esac
}

# --- memlock ----------------------------------------------------------------
log="$logdir/memlock.log"
workdir=$(mktemp -d "${TMPDIR:-/tmp}/reslimits.XXXXXX")
chmod 777 "$workdir"
if [ "$(id -u)" -eq 0 ]; then
    # Root has CAP_IPC_LOCK, which ignores the limit: drop to nobody.
    as_user="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all"
else
    as_user=
fi
# shellcheck disable=SC2086 # as_user is a command prefix
env -i PATH="$PATH" HOME="$workdir" TMPDIR="$workdir" top_srcdir="$top_srcdir" \
    top_builddir="$top_builddir" OMPI_SYSTEM_COMPONENT_DIR="$OMPI_SYSTEM_COMPONENT_DIR" \
    MPIRUN="${MPIRUN:-mpirun}" BUFPOOL_TEST_TIMEOUT="$BUFPOOL_TEST_TIMEOUT" \
    BUFPOOL_TEST_MCA="--mca mpool_regpar_reg_backend pin --mca mpool_regpar_gc_age 50ms $rel_san_mca" \
    prlimit --memlock=65536 $as_user sh "$rel_run" 2 "$rel_job" --rel-workload=mix \
    --rel-expect-pool >"$log" 2>&1 </dev/null
rc=$?
outcome=$(rel_outcome $rc "$log")
msgs=$(grep -c 'RLIMIT_MEMLOCK is 64K' "$log")
detail="$msgs registration failure message(s) naming RLIMIT_MEMLOCK"
if [ "$outcome" = correct ] && { [ "$msgs" -lt 1 ] || [ "$msgs" -gt 2 ]; }; then
    outcome=other
    detail="$detail: expected one per process"
fi
record memlock "64K, pin, uid $(echo "${as_user:-self}" | sed 's/.*reuid=\([0-9]*\).*/\1/')" \
    "$outcome" "$detail" "$log"
rm -rf "$workdir"

# --- as -----------------------------------------------------------------------
MIB=1048576
as_run() { # limit_mib log [with_ours]
    if [ "${3:-}" = without ]; then
        OMPI_MCA_mca_base_component_path="$OMPI_SYSTEM_COMPONENT_DIR" \
            BUFPOOL_TEST_MCA="--mca mpool_regpar_gc_age 50ms" sh "$rel_run" 2 \
            "$(command -v prlimit)" --as=$(($1 * MIB)) -- "$rel_job" --rel-workload=mix \
            >"$2" 2>&1 </dev/null
    else
        BUFPOOL_TEST_MCA="--mca mpool_regpar_gc_age 50ms" sh "$rel_run" 2 \
            "$(command -v prlimit)" --as=$(($1 * MIB)) -- "$rel_job" --rel-workload=mix \
            >"$2" 2>&1 </dev/null
    fi
}
base=0
limit=128
if [ $rel_sanitized = 1 ]; then
    # ASan reserves terabytes of address space for its shadow memory.
    echo "as: skipped in a sanitized build"
    limit=100000
fi
while [ $limit -le 1024 ]; do
    as_run $limit "$logdir/as-baseline-$limit.log" without
    if [ "$(rel_outcome $? "$logdir/as-baseline-$limit.log")" = correct ]; then
        base=$limit
        break
    fi
    limit=$((limit + 32))
done
if [ $rel_sanitized = 1 ]; then
    :
elif [ $base -eq 0 ]; then
    record as "baseline" other "no limit up to 1024M lets the job pass without our components" \
        "$logdir/as-baseline-1024.log"
else
    echo "as: without our components the job needs RLIMIT_AS ${base}M"
    for extra in 0 16 32 64 128; do
        log="$logdir/as-$((base + extra)).log"
        as_run $((base + extra)) "$log"
        rc=$?
        outcome=$(rel_outcome $rc "$log")
        pool=$(grep -c 'mpool_regpar: mmap of [0-9]* bytes failed' "$log")
        errs=$(grep -c 'returned error' "$log")
        record as "${base}M+${extra}M" "$outcome" "$pool mmap failure message(s), $errs MPI error(s) returned" "$log"
    done
fi

# --- capacity -----------------------------------------------------------------
log="$logdir/capacity.log"
REL_MCA="--mca mpool_regpar_gc_age 50ms --mca coll_bufpool_segment_size 4M
    --mca mpool_regpar_max_capacity 2M" rel_mpi 2 "$log" --rel-workload=mix --rel-expect-pool \
    --rel-max-held=2M --segment-size=4M
record capacity "max_capacity 2M, segment_size 4M" "$(rel_outcome $? "$log")" \
    "bytes_held <= 2M at every idle point" "$log"

# --- comms --------------------------------------------------------------------
ncomms=5000
[ $rel_full = 1 ] && ncomms=20000
log="$logdir/comms.log"
REL_MCA="" rel_mpi 2 "$log" --rel-workload=comms --rel-comms=$ncomms --rel-heap-per-comm=64 \
    --rel-expect-pool
rc=$?
record comms "$ncomms communicators" "$(rel_outcome $rc "$log")" \
    "$(grep 'rel_job comms: rank 0' "$log" | sed 's/.*after warm-up/after warm-up/')" "$log"
grep 'rel_job comms:' "$log"
log="$logdir/comms-without-bufpool.log"
REL_MCA="--mca coll ^bufpool" rel_mpi 2 "$log" --rel-workload=comms --rel-comms=$ncomms \
    --rel-heap-per-comm=64
echo "for comparison, without coll/bufpool:"
grep 'rel_job comms:' "$log"

if [ -e "$failed" ]; then
    rm -f "$failed"
    echo "reslimits: FAILED (results: $csv)"
    exit 1
fi
echo "reslimits: every limit ended in correct results or a clear error (results: $csv)"
exit 0
