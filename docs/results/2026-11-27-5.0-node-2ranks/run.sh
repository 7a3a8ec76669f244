#!/bin/sh
# The package's default rows at 2 ranks on Open MPI 5.0.10 (the node rows:
# allreduce node_rsag above 4 KiB, bcast node 1-4 KiB, reduce node above 4
# KiB in the nonblocking form, reduce_scatter(_block) up to 4 KiB, gather
# 1-4 KiB) beside 5.0's own components where they serve, three runs of the
# blocking and the nonblocking form.  From the repository root, with the
# build tree _build/ompi5 (configured --with-ompi=/opt/ompi5) built:
#   sh docs/results/2026-11-27-5.0-node-2ranks/run.sh OUT
set -eu
out=$1
top=$PWD
mkdir -p "$out"
for r in 1 2 3; do
    for form in blocking nonblocking; do
        bench/run-side-by-side.sh --no-build --rounds 3 --stat p50 --build-dir "$top/_build/ompi5" \
            --out "$out/$form-run$r" --np 2 --configs "bufpool default acoll xhc adapt" \
            --form $form --collectives "allreduce reduce bcast reduce_scatter reduce_scatter_block gather" \
            --min-size 4 --max-size 4M --size-factor 4 >/dev/null
    done
done
