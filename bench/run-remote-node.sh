#!/bin/sh
# The node algorithms on a machine of many cores, from the bundle of
# scripts/bundle-remote.sh (Debian's Open MPI 4.1.4 and this build): first
# correctness at NP ranks (both families with node forced, node_rsag too,
# three forms, --expect-node; the fuzzer's node configuration), then
# bench/coll_latency -C default,bufpool at NP, NP/2 and NP/4 ranks, 4 B to
# 4 KiB, in the three forms: node forced, allreduce node_rsag forced, and
# the package's defaults behind the rows of .dev/candidate.rules when it is
# there; CSVs and the log into OUT.  Ratios are within one job.
#   usage: bench/run-remote-node.sh OUT [NP]   (from the repository root)
# ONLY=node_rsag in the environment: the node_rsag runs alone; ONLY=big:
# allreduce node_rsag above 4 KiB (its chunk rounds) against tuned, libnbc
# and the copy floor, 8 KiB to 16 MiB, after the same correctness runs;
# ONLY=defaults: the package's defaults against tuned and libnbc, allreduce
# and reduce 4 B to 16 MiB, bcast and allgather 4 B to 64 KiB.  ONLY=more: the
# node algorithms built after the first runs (reduce_scatter(_block),
# gather, scatter, scan, exscan, barrier), correctness then against tuned
# (4.1's scan and exscan: basic's linear chain) and libnbc at NP, NP/2 and
# NP/4 ranks, 4 B to 4 KiB (barrier: one point), three forms; and scan and
# exscan node above 4 KiB (bufpool+node) beside the package's defaults and
# Open MPI's with CMA on, 8 KiB to 8 MiB (more-scan-rounds.csv).
# ONLY=ring: allreduce node_rsag's chunk geometry (rounds x ring slots per
# rank: 64K x 2 as the rows of 3-16 ranks, 64K x 16, 256K x 4 as the row of
# 2 ranks) against tuned and the copy floor, 8 KiB to 16 MiB, blocking and
# nonblocking, at NP, NP/2 and NP/4 ranks, after the same correctness runs.
# ONLY=moves: bcast and allgather node above 4 KiB (rounds through the
# chunk segment; 64K x 16 and 256K x 4) against tuned with vader's single
# copy on (CMA, as installed) and libnbc, 8 KiB to 16 MiB, blocking and
# nonblocking, at NP, NP/2 and NP/4 ranks, after the same correctness runs;
# and the 256K x 4 runs again as node_cma, single-copy reads (CMA) above
# 4 KiB (tags 64K:16:node, 256K:4:node, 256K:4:node_cma).
# ONLY=groups: allreduce, reduce, bcast and barrier node at NP ranks read flat
# (coll_bufpool_node_flat_max NP: every rank reads every rank's slot) and in
# groups (flat_max NP/2: two levels, groups of at most ceil(sqrt(NP)) ranks,
# whatever flat_max below NP), each against tuned in its own job, 4 B to
# 4 KiB, three forms (groups.csv, tags "flat_max=F FORM"), after correctness
# in groups (flat_max 4) and without the common runs above; bound to cores,
# so that the groups follow the L3 caches where there are several.
# FORMS (default "blocking nonblocking persistent"): the forms of every loop
# that runs all three (the correctness runs, the timings of the default run,
# ONLY=more, groups and big; the others time blocking and nonblocking);
# NPS (default "NP NP/2 NP/4"): the rank counts of the timings (but
# ONLY=groups', at NP; correctness runs at NP).  A lease
# of a few minutes measures what matters first (ONLY=more FORMS=blocking
# NPS=16 ... 16): the CSVs of the jobs that ended come back even when the
# lease ends the script.
set -u
out=$1
np=${2:-16}
mkdir -p "$out"
log=$out/run.log
exec >"$log" 2>&1
set -x
tar -C / --skip-old-files -xzf .dev/ompi-root.tar.gz && ldconfig
mkdir -p /tmp/b && tar -C /tmp/b -xzf .dev/build.tar.gz
for v in $(env | sed -n 's/^\(OMPI_MCA_[^=]*\|PMIX_MCA_[^=]*\)=.*/\1/p'); do unset "$v"; done
export OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/tmp/b/components
nproc
uname -a
head -30 /proc/cpuinfo | grep -E "model name|cache size"
# Single copy is for messages above vader's eager limit (4 KiB), beyond
# what these points measure; off, the run does not depend on CMA.
mpirun="timeout 300 /usr/bin/orterun --allow-run-as-root --oversubscribe --bind-to core \
--mca plm isolated --mca op ^avx --mca btl_vader_single_copy_mechanism none"
others="--mca coll_bufpool_min_size 0 --mca coll_bufpool_reduce_algorithm node \
--mca coll_bufpool_bcast_algorithm node --mca coll_bufpool_allgather_algorithm node"
# bcast and allgather node_cma (single-copy reads above 4 KiB), ONLY=moves.
others_cma="--mca coll_bufpool_min_size 0 --mca coll_bufpool_reduce_algorithm node \
--mca coll_bufpool_bcast_algorithm node_cma --mca coll_bufpool_allgather_algorithm node_cma"
node="$others --mca coll_bufpool_allreduce_algorithm node"
rsag="$others --mca coll_bufpool_allreduce_algorithm node_rsag"
$mpirun -np 2 /tmp/b/coll_latency -c allreduce -m 8:8 -C default,bufpool -i 10 -x 2 || \
    mpirun="timeout 300 /usr/bin/orterun --allow-run-as-root --oversubscribe --bind-to none \
--mca plm isolated --mca op ^avx --mca btl_vader_single_copy_mechanism none"
only=${ONLY:-}
forms=${FORMS:-blocking nonblocking persistent}
nps=${NPS:-$np $((np / 2)) $((np / 4))}
skip() { [ -n "$only" ] && [ "$only" != "$1" ]; }
# ONLY=groups runs its own correctness runs, in groups.
if [ "$only" != groups ]; then
    for form in $forms; do
        skip node || $mpirun -np "$np" $node /tmp/b/test_coll_reduce_family --colls=allreduce,reduce \
            --form=$form --smoke --expect-bufpool --expect-node
        $mpirun -np "$np" $rsag \
            /tmp/b/test_coll_reduce_family --colls=allreduce --form=$form --expect-bufpool \
            --expect-node
        skip node || $mpirun -np "$np" $node /tmp/b/test_coll_move_family --colls=bcast,allgather \
            --form=$form --smoke --expect-bufpool --expect-node
    done
    $mpirun -np "$np" $rsag \
        --mca coll_bufpool_priority 90 --mca coll_bufpool_rules_default off \
        /tmp/b/coll_fuzz --seed 11 --seeds 10
fi
# Open MPI as installed, vader's single copy (CMA) on: what messages above
# 4 KiB meet by default.
cma=$(printf '%s\n' "$mpirun" | sed 's/--mca btl_vader_single_copy_mechanism none//')
if [ "$only" = more ]; then
    more="--mca coll_bufpool_min_size 0 --mca coll_bufpool_reduce_scatter_algorithm node \
--mca coll_bufpool_reduce_scatter_block_algorithm node --mca coll_bufpool_gather_algorithm node \
--mca coll_bufpool_scatter_algorithm node --mca coll_bufpool_barrier_algorithm node \
--mca coll_bufpool_scan_algorithm node --mca coll_bufpool_exscan_algorithm node \
--mca coll_bufpool_allreduce_algorithm node --mca coll_bufpool_bcast_algorithm node"
    for form in $forms; do
        $mpirun -np "$np" $more /tmp/b/test_coll_reduce_family \
            --colls=reduce_scatter,reduce_scatter_block,scan,exscan --form=$form --smoke \
            --expect-bufpool --expect-node
        $mpirun -np "$np" $more /tmp/b/test_coll_move_family --colls=gather,scatter \
            --form=$form --smoke --expect-bufpool --expect-node
    done
    $mpirun -np "$np" $more /tmp/b/test_coll_barrier --form=all --expect-node --expect-bufpool
    for n in $nps; do
        for form in $forms; do
            $mpirun -np "$n" $more /tmp/b/coll_latency -C default,bufpool -m 4:4K -r 5 \
                -c reduce_scatter,reduce_scatter_block,gather,scatter,scan,exscan --size-factor 4 \
                -F $form \
                -o "$out/more.csv" -t "more np=$n $form"
            $mpirun -np "$n" $more /tmp/b/coll_latency -C default,bufpool -m 8:8 -r 7 \
                -c barrier -F $form -o "$out/more.csv" -t "more np=$n $form"
            # scan and exscan node above 4 KiB (a chain of chunk rounds)
            # beside the package's defaults (bufpool's chain) and Open MPI's,
            # with CMA as installed.
            $cma -np "$n" /tmp/b/coll_latency -C default,bufpool,bufpool+node -c scan,exscan \
                -m 8K:8M --size-factor 4 -r 3 -F $form -o "$out/more-scan-rounds.csv" \
                -t "more np=$n $form"
        done
    done
    ls /dev/shm
    exit 0
fi
if [ "$only" = groups ]; then
    grouped="--mca coll_bufpool_min_size 0 --mca coll_bufpool_allreduce_algorithm node \
--mca coll_bufpool_reduce_algorithm node --mca coll_bufpool_barrier_algorithm node \
--mca coll_bufpool_bcast_algorithm node"
    for form in $forms; do
        $mpirun -np "$np" $grouped --mca coll_bufpool_node_flat_max 4 \
            /tmp/b/test_coll_reduce_family --colls=allreduce,reduce --form=$form --smoke \
            --expect-bufpool --expect-node --expect-node-tree
        $mpirun -np "$np" $grouped --mca coll_bufpool_node_flat_max 4 \
            /tmp/b/test_coll_move_family --colls=bcast --form=$form --smoke \
            --expect-bufpool --expect-node --expect-node-tree
    done
    $mpirun -np "$np" $grouped --mca coll_bufpool_node_flat_max 4 /tmp/b/test_coll_barrier \
        --form=all --expect-node --expect-bufpool --expect-node-tree
    for fm in "$np" $((np / 2)); do
        for form in $forms; do
            $mpirun -np "$np" $grouped --mca coll_bufpool_node_flat_max $fm \
                /tmp/b/coll_latency -C default,bufpool -c allreduce,reduce,bcast -m 4:4K \
                --size-factor 4 -r 5 -F $form -o "$out/groups.csv" -t "flat_max=$fm $form"
            $mpirun -np "$np" $grouped --mca coll_bufpool_node_flat_max $fm \
                /tmp/b/coll_latency -C default,bufpool -c barrier -m 8:8 -r 7 -F $form \
                -o "$out/groups.csv" -t "flat_max=$fm $form"
        done
    done
    ls /dev/shm
    exit 0
fi
if [ "$only" = defaults ]; then
    # The package's defaults (the rows as committed) against tuned and
    # libnbc: every size the node rows touch, and past them.
    for n in $nps; do
        for form in blocking nonblocking; do
            $mpirun -np "$n" /tmp/b/coll_latency -C default,bufpool -c allreduce -m 4:16M \
                --size-factor 4 -r 3 -b 256M -F $form -o "$out/defaults.csv" \
                -t "defaults np=$n $form"
            $mpirun -np "$n" /tmp/b/coll_latency -C default,bufpool -c bcast,allgather \
                -m 4:64K --size-factor 4 -r 3 -F $form -o "$out/defaults.csv" \
                -t "defaults np=$n $form"
            # reduce to 16 MiB: rsg's row from 512 KiB at 3-7 ranks comes
            # from 4 ranks on 2 cores (read 0.56-1.50 x tuned's linear there
            # on 2026-11-29), not from a core per rank.
            $mpirun -np "$n" /tmp/b/coll_latency -C default,bufpool -c reduce -m 4:16M \
                --size-factor 4 -r 3 -b 256M -F $form -o "$out/defaults.csv" \
                -t "defaults np=$n $form"
        done
    done
    ls /dev/shm
    exit 0
fi
if [ "$only" = ring ]; then
    for n in $nps; do
        for form in blocking nonblocking; do
            for g in 64K:2 64K:16 256K:4; do
                cfgs=default,bufpool
                [ $form != blocking ] || cfgs=default,bufpool,floor
                $mpirun -np "$n" $rsag --mca coll_bufpool_segment_size "${g%:*}" \
                    --mca coll_bufpool_pipeline_depth "${g#*:}" /tmp/b/coll_latency -C $cfgs \
                    -c allreduce -m 8K:16M --size-factor 4 -r 3 -b 512M -F $form \
                    -o "$out/ring.csv" -t "ring $g np=$n $form"
            done
        done
    done
    ls /dev/shm
    exit 0
fi
if [ "$only" = moves ]; then
    for form in $forms; do
        $cma -np "$np" $others --mca coll_bufpool_segment_size 4K \
            --mca coll_bufpool_pipeline_depth 2 /tmp/b/test_coll_move_family \
            --colls=bcast,allgather --form=$form --expect-bufpool --expect-node
        $cma -np "$np" $others_cma /tmp/b/test_coll_move_family --colls=bcast,allgather \
            --form=$form --expect-bufpool --expect-node --expect-single-copy
    done
    for n in $nps; do
        for form in blocking nonblocking; do
            # 256K:4:node_cma: the same rounds' geometry, single-copy reads
            # (CMA) above 4 KiB.
            for g in 64K:16:node 256K:4:node 256K:4:node_cma; do
                cfgs=default,bufpool
                [ $form != blocking ] || cfgs=default,bufpool,floor
                seg=${g%%:*} rest=${g#*:}
                alg=${rest#*:}
                opts=$others
                [ "$alg" = node ] || opts=$others_cma
                $cma -np "$n" $opts --mca coll_bufpool_segment_size "$seg" \
                    --mca coll_bufpool_pipeline_depth "${rest%:*}" \
                    /tmp/b/coll_latency -C $cfgs \
                    -c bcast,allgather -m 8K:16M --size-factor 4 -r 3 -b 512M -F $form \
                    -o "$out/moves.csv" -t "moves $g np=$n $form"
            done
        done
    done
    ls /dev/shm
    exit 0
fi
if [ "$only" = big ]; then
    for n in $nps; do
        for form in $forms; do
            cfgs=default,bufpool
            [ $form != blocking ] || cfgs=default,bufpool,floor
            $mpirun -np "$n" $rsag /tmp/b/coll_latency -C $cfgs -c allreduce -m 8K:16M \
                --size-factor 4 -r 3 -b 512M -F $form -o "$out/big.csv" -t "big np=$n $form"
        done
    done
    ls /dev/shm
    exit 0
fi
lat="/tmp/b/coll_latency -C default,bufpool -m 4:4K -r 5"
for n in $nps; do
    for form in $forms; do
        skip node || $mpirun -np "$n" $node $lat -c allreduce,reduce,bcast,allgather --size-factor 4 -F $form \
            -o "$out/node.csv" -t "node np=$n $form"
        $mpirun -np "$n" $rsag $lat \
            -c allreduce --size-factor 2 -F $form -o "$out/node_rsag.csv" -t "node_rsag np=$n $form"
        # The package's defaults, with the candidate rows before them
        # (what the rows should give), where the bundle carries them.
        skip candidate || [ ! -f .dev/candidate.rules ] ||
            $mpirun -np "$n" --mca coll_bufpool_rules_file .dev/candidate.rules $lat \
                -c allreduce,reduce,bcast,allgather --size-factor 2 -F $form \
                -o "$out/candidate.csv" -t "candidate np=$n $form"
    done
done
ls /dev/shm
