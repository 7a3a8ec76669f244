#!/bin/sh
# Bad MCA values: each case must print one clear message naming the
# parameter (and the valid range or choices), without Open MPI's "couldn't
# find that help topic", and the job must still run to a correct result
# with a safe fallback.  The program checks MPI_Alloc_mem
# round trips (pool memory through MPI) and a small and a pipelined
# MPI_Allreduce against their exact results.
#
# Each line: parameter value regex-expected-in-stderr
set -u
run="$top_srcdir/test/mpi/run-mpi-test.sh"
alloc="$top_builddir/test/mpi/test_mpool_alloc_mem"
cases='
mpool_regpar_bucket_min   0        bucket_min 0 is invalid.*multiple of the page size
mpool_regpar_bucket_min   5000     bucket_min 5000 is invalid
mpool_regpar_bucket_min   -4K      mpool_regpar_bucket_min: invalid value "-4K".*negative
mpool_regpar_bucket_min   4KB      mpool_regpar_bucket_min: invalid value "4KB".*suffix
mpool_regpar_bucket_max   1K       bucket_max 1K is invalid
mpool_regpar_bucket_max   99999999999T  mpool_regpar_bucket_max: invalid value.*too large
mpool_regpar_bucket_factor 1       bucket_factor 1 is invalid.*above 1
mpool_regpar_bucket_factor abc     mpool_regpar_bucket_factor: invalid value "abc"
mpool_regpar_slab_size    3M       slab_size 3M is invalid.*multiple of 2M
mpool_regpar_slab_size    x        mpool_regpar_slab_size: invalid value "x"
mpool_regpar_max_capacity 1K       max_capacity 1K is below one slab
mpool_regpar_max_capacity -1       mpool_regpar_max_capacity: invalid value "-1".*negative
mpool_regpar_gc_age       soon     mpool_regpar_gc_age: invalid value "soon"
mpool_regpar_gc_age       -5s      mpool_regpar_gc_age: invalid value "-5s"
mpool_regpar_hugepages    maybe    mpool_regpar_hugepages: invalid value "maybe".*on or off
mpool_regpar_numa         99999    mpool_regpar_numa: invalid value "99999"
mpool_regpar_reg_backend  rdma     mpool_regpar_reg_backend: invalid value "rdma".*auto, btl, ucx, mtl, pin, none, verbs or ofi
mpool_regpar_reg_parallel sometimes mpool_regpar_reg_parallel: invalid value "sometimes"
mpool_regpar_reg_threads  abc      mpool_regpar_reg_threads: invalid value "abc"
mpool_regpar_reg_threads  1000     mpool_regpar_reg_threads: invalid value "1000".*0 to 64
mpool_regpar_reg_chunk_size 1000   mpool_regpar_reg_chunk_size: invalid value "1000"
mpool_regpar_reg_threshold -1      mpool_regpar_reg_threshold: invalid value "-1"
mpool_regpar_prefault     perhaps  mpool_regpar_prefault: invalid value "perhaps"
mpool_regpar_priority     x1       mpool_regpar_priority: invalid value "x1"
mpool_regpar_verbose      -1       mpool_regpar_verbose: invalid value "-1"
coll_bufpool_priority     abc      coll_bufpool_priority: invalid value "abc"
coll_bufpool_segment_size 1K       coll_bufpool_segment_size: invalid value "1K".*4K to 64M
coll_bufpool_segment_size 2Q       coll_bufpool_segment_size: invalid value "2Q".*suffix
coll_bufpool_nb_stack_size 4K      coll_bufpool_nb_stack_size: invalid value "4K".*64K to 64M
coll_bufpool_nonblocking  maybe    coll_bufpool_nonblocking: invalid value "maybe".*on or off
coll_bufpool_persistent   2        coll_bufpool_persistent: invalid value "2".*on or off
coll_bufpool_pipeline_depth 0      coll_bufpool_pipeline_depth: invalid value "0".*1 to 64
coll_bufpool_pipeline_depth many   coll_bufpool_pipeline_depth: invalid value "many"
coll_bufpool_max_requests 1        coll_bufpool_max_requests: invalid value "1".*0 or an integer from 2 to 65536
coll_bufpool_max_requests 70000    coll_bufpool_max_requests: invalid value "70000".*0 to 65536
coll_bufpool_max_requests some     coll_bufpool_max_requests: invalid value "some"
coll_bufpool_min_size     -1       coll_bufpool_min_size: invalid value "-1"
coll_bufpool_small_size   1G       coll_bufpool_small_size: invalid value "1G"
coll_bufpool_verbose      lots     coll_bufpool_verbose: invalid value "lots"
coll_bufpool_allreduce_enable maybe coll_bufpool_allreduce_enable: invalid value "maybe".*on or off
coll_bufpool_allreduce_algorithm fastest coll_bufpool_allreduce_algorithm: invalid value "fastest".*one of auto
coll_bufpool_bcast_algorithm ring  coll_bufpool_bcast_algorithm: invalid value "ring"
coll_bufpool_test_host_map 0,x,1   coll_bufpool_test_host_map: invalid value "0,x,1".*comma-separated
coll_bufpool_node_flat_max 1       coll_bufpool_node_flat_max: invalid value "1".*2 to 1048576
coll_bufpool_test_node_l3 0,-2     coll_bufpool_test_node_l3: invalid value "0,-2".*-1 \(none\) to 65535
coll_bufpool_node_flat_max all     coll_bufpool_node_flat_max: invalid value "all"
coll_bufpool_node_max_bytes 12Q    coll_bufpool_node_max_bytes: invalid value "12Q"
coll_bufpool_node_cold_calls -3    coll_bufpool_node_cold_calls: invalid value "-3"
coll_bufpool_node_warmup_calls x   coll_bufpool_node_warmup_calls: invalid value "x"
coll_bufpool_node_cma     sometimes coll_bufpool_node_cma: invalid value "sometimes".*on or off
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%s\n' "$cases" | while read -r param value expected; do
    [ -n "$param" ] || continue
    BUFPOOL_TEST_MCA="--mca $param $value" "$run" 2 "$alloc" >"$out" 2>&1 </dev/null
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: --mca $param $value: the job failed (exit $rc)"
        tail -n 15 "$out"
        echo x >>"$out.failed"
    elif ! grep -E -q -- "$expected" "$out"; then
        echo "FAIL: --mca $param $value: no message matching /$expected/"
        grep -E "$param|regpar|bufpool" "$out" | head -n 5
        echo x >>"$out.failed"
    elif grep -q "couldn't find that help topic" "$out"; then
        # Open MPI 6.0 no longer reads help files (common/bufpool_params.c).
        echo "FAIL: --mca $param $value: Open MPI could not find our help topic:"
        grep -B 4 "couldn't find that help topic" "$out" | head -n 8
        echo x >>"$out.failed"
    elif [ "$(grep -c -E -- "$expected" "$out")" -ne 1 ]; then
        echo "FAIL: --mca $param $value: the message should appear once per job"
        echo x >>"$out.failed"
    else
        echo "ok: --mca $param $value -> $(grep -E -o -- "$expected" "$out" | head -n 1)"
    fi
done
if [ -e "$out.failed" ]; then
    echo "bad_params: $(wc -l <"$out.failed") case(s) failed"
    rm -f "$out.failed"
    exit 1
fi
echo "bad_params: every bad value reported once with the job still correct"
exit 0
