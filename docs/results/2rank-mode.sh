# Sourced by the 2-rank results' run scripts (from a build directory), with
# out and run set: makes $out, points Open MPI 4.1 (Debian's) at this
# build's components and records the 2-vCPU machine's mode (the cache-line
# round trip of 2026-11-27-2rank-chunk-ring/pingpong.c) in $out/$modes
# (default modes.txt) before the run; mode_after records it after; $mpirun
# is the mpirun to use.
modes=${modes:-modes.txt}
mkdir -p "$out"
export OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$PWD/components
gcc -O2 -pthread -o "$out/pingpong" "$(dirname "$0")/../2026-11-27-2rank-chunk-ring/pingpong.c"
echo "run$run before: $("$out/pingpong")" >>"$out/$modes"
mode_after() { echo "run$run after: $("$out/pingpong")" >>"$out/$modes"; }
# OMPI=PREFIX in the environment: that Open MPI's mpirun and components
# (with this build's, which must be built against it) instead of Debian's.
mpirun=mpirun
if [ -n "${OMPI:-}" ]; then
    mpirun=$OMPI/bin/mpirun
    export OMPI_MCA_mca_base_component_path=$OMPI/lib/openmpi:$PWD/components
    export PRTE_MCA_prte_allow_run_as_root=1
fi
