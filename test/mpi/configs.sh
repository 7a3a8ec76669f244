# Sourced (POSIX sh) by the scripts that run whole MPI programs under
# bufpool's named configurations, by make check or by hand
# (test/fuzz/coll_fuzz.sh, test/external/mpich_coll.sh): one definition of
# each configuration and of how a script run by hand finds its build tree.
# Needs top_srcdir set.

# bufpool_find_build DIR: sets and exports top_builddir (the environment's,
# else DIR, else $top_srcdir/_build when configured there, else the current
# directory), OMPI_SYSTEM_COMPONENT_DIR and MPIRUN (the environment's, else
# what configure found, from the build tree's test/Makefile).
bufpool_find_build() {
    if [ -z "${top_builddir:-}" ]; then
        if [ -n "$1" ]; then
            top_builddir=$(cd "$1" && pwd) || return 2
        elif [ -f "$top_srcdir/_build/test/Makefile" ]; then
            top_builddir=$top_srcdir/_build
        else
            top_builddir=$(pwd)
        fi
    fi
    if [ -z "${OMPI_SYSTEM_COMPONENT_DIR:-}" ] && [ -f "$top_builddir/test/Makefile" ]; then
        OMPI_SYSTEM_COMPONENT_DIR=$(sed -n 's/^OMPI_SYSTEM_COMPONENT_DIR = //p' "$top_builddir/test/Makefile")
        MPIRUN=${MPIRUN:-$(sed -n 's/^MPIRUN = //p' "$top_builddir/test/Makefile")}
    fi
    export top_srcdir top_builddir OMPI_SYSTEM_COMPONENT_DIR
    [ -z "${MPIRUN:-}" ] || export MPIRUN
}

# The node configuration's bcast: node_cma where this machine allows
# single-copy reads (CMA, found by the build's cma_probe), so that they mix
# with allgather's and the reductions' rounds; node where it does not.
bufpool_node_bcast() {
    if "$top_builddir/test/mpi/cma_probe" 2>/dev/null; then
        echo node_cma
    else
        echo node
    fi
}

# bufpool_node_algorithms BCAST [ALLREDUCE]: the mpirun arguments that name
# every collective's node algorithm (allreduce ALLREDUCE, default
# node_rsag; bcast BCAST).
bufpool_node_algorithms() {
    echo "--mca coll_bufpool_allreduce_algorithm ${2:-node_rsag}" \
        "--mca coll_bufpool_bcast_algorithm $1" \
        "--mca coll_bufpool_reduce_algorithm node --mca coll_bufpool_allgather_algorithm node" \
        "--mca coll_bufpool_reduce_scatter_algorithm node" \
        "--mca coll_bufpool_reduce_scatter_block_algorithm node" \
        "--mca coll_bufpool_gather_algorithm node --mca coll_bufpool_scatter_algorithm node" \
        "--mca coll_bufpool_scan_algorithm node --mca coll_bufpool_exscan_algorithm node" \
        "--mca coll_bufpool_barrier_algorithm node"
}

# bufpool_config_mca CONFIG [NODE_BCAST]: the mpirun arguments of CONFIG.
#   default  bufpool as installed (its rules decide what it serves), the
#            node rows' warm-up included (coll_bufpool_node_warmup_calls at
#            the package's default, which run-mpi-test.sh otherwise sets to 0)
#   forced   above every other component, no measured row handing a call
#            back, no size too small: every call goes to each collective's
#            own default algorithm
#   hostmap  ranks on two pretended hosts (even and odd): the multi-host
#            paths run on one machine
#   node     forced, with every collective's node algorithm named
#            (allreduce node_rsag; bcast NODE_BCAST, default node)
#   nodetree node with allreduce node and coll_bufpool_node_flat_max 2:
#            allreduce, reduce, bcast and barrier up to 4 KiB run in groups (two
#            levels) from 3 ranks on, as they do by default above 16
#   stock    Open MPI alone
# Unknown: a message, and status 2.
bufpool_config_mca() {
    case $1 in
        default)
            echo "--mca coll_bufpool_node_warmup_calls" \
                "$(sed -n 's/^#define DEFAULT_NODE_WARMUP_CALLS "\([0-9]*\)"$/\1/p' \
                    "$top_srcdir/ompi-mca-coll-bufpool/coll_bufpool_settings.h")"
            ;;
        forced)
            echo "--mca coll_bufpool_priority 90 --mca coll_bufpool_rules_default off" \
                "--mca coll_bufpool_min_size 0"
            ;;
        hostmap) echo "--mca coll_bufpool_test_host_map 0,1" ;;
        node) echo "$(bufpool_config_mca forced) $(bufpool_node_algorithms "${2:-node}")" ;;
        nodetree)
            echo "$(bufpool_config_mca forced) $(bufpool_node_algorithms "${2:-node}" node)" \
                "--mca coll_bufpool_node_flat_max 2"
            ;;
        stock) echo "--mca coll ^bufpool" ;;
        *)
            echo "unknown configuration '$1' (default, forced, hostmap, node, nodetree or stock)" >&2
            return 2
            ;;
    esac
}
