#!/bin/sh
# mpirun across the emulated cluster (cluster.sh), a drop-in for mpirun: the
# test scripts (test/mpi/run-mpi-test.sh via MPIRUN=) and the benchmark call
# it with ordinary mpirun arguments; it adds the hosts and the transports.
#
# Environment:
#   BUFPOOL_MH_PLACEMENT  ranks per host as a comma list, e.g. "3,1" or
#                         "2,2,1" (default "1,1": one rank on each of 2 hosts).
#                         With -np N the pattern repeats until N ranks are
#                         placed: "3,1" at -np 8 is 6 ranks on host 1 and 2 on
#                         host 2.  At -np 1 one rank runs on host 1.
#   BUFPOOL_MH_MAP        slot (default: consecutive ranks fill a host) or
#                         node (ranks alternate over hosts, so that split
#                         communicators interleave hosts)
#   BUFPOOL_MH_MPIRUN     the real mpirun (default: mpirun on PATH)
#   BUFPOOL_MH_SERIES     its Open MPI major version (default: from
#                         `mpirun --version`): 4 launches through ORTE
#                         (--mca plm_rsh_agent, btl vader), 5 and later
#                         through PRRTE (--prtemca plm_ssh_agent and
#                         oob_tcp_if_include, btl sm)
#   BUFPOOL_CLUSTER_PREFIX, BUFPOOL_CLUSTER_NET as for cluster.sh
# The cluster must be up with at least as many hosts as the placement names.
set -u
here=$(cd "$(dirname "$0")" && pwd)
prefix=${BUFPOOL_CLUSTER_PREFIX:-bp14}
net=${BUFPOOL_CLUSTER_NET:-10.214.14.0/24}
placement=${BUFPOOL_MH_PLACEMENT:-1,1}
map=${BUFPOOL_MH_MAP:-slot}

np=
prev=
yield=1
# The first -np/-n/--np with a number: the program's own arguments come
# later and may have a -n of their own (coll_latency -n NAME).
for a in "$@"; do
    if [ -z "$np" ] && { [ "$prev" = -np ] || [ "$prev" = -n ] || [ "$prev" = --np ]; }; then
        case $a in '' | *[!0-9]*) ;; *) np=$a ;; esac
    fi
    case $a in *mpi_yield_when_idle*) yield=0 ;; esac
    prev=$a
done
[ -n "$np" ] || {
    echo "mh-mpirun: -np N is required" >&2
    exit 2
}

# Ranks per host for np ranks: the placement pattern repeated.
counts=$(echo "$placement" | awk -v np="$np" -F, '{
    n = NF; placed = 0
    while (placed < np) {
        for (i = 1; i <= n && placed < np; i++) {
            k = $i; if (k > np - placed) k = np - placed
            c[i] += k; placed += k
        }
    }
    for (i = 1; i <= n; i++) if (c[i] > 0) printf "%d ", c[i]
}')
hostlist=
i=1
for c in $counts; do
    ns=$prefix-h$i
    if ! ip netns list 2>/dev/null | grep -q "^$ns\( \|$\)"; then
        echo "mh-mpirun: host $i ($ns) is not up: test/multihost/cluster.sh up N" >&2
        exit 2
    fi
    hostlist="$hostlist${hostlist:+,}${prefix}h$i:$c"
    i=$((i + 1))
done

extra=
[ $yield = 0 ] || extra="--mca mpi_yield_when_idle 1"
real=${BUFPOOL_MH_MPIRUN:-mpirun}
series=${BUFPOOL_MH_SERIES:-$("$real" --version 2>/dev/null |
    sed -n 's/.*(Open MPI) \([0-9][0-9]*\)\..*/\1/p' | head -n 1)}
# The launcher's own settings go to ORTE as MCA parameters (4.x) or to
# PRRTE as --prtemca (5.x: PRRTE's launcher is plm/ssh, and mpirun's --mca
# reaches only the MPI processes); the shared-memory BTL is vader in 4.x and
# sm from 5.0.
# shellcheck disable=SC2086 # $extra is zero or more words
case $series in
    '' | [0-4])
        set -- --mca plm_rsh_agent "$here/rsh-agent.sh" \
            --mca btl self,vader,tcp --mca btl_tcp_if_include "$net" --mca oob_tcp_if_include "$net" \
            $extra "$@"
        ;;
    *)
        set -- --prtemca plm_ssh_agent "$here/rsh-agent.sh" --prtemca oob_tcp_if_include "$net" \
            --mca btl self,sm,tcp --mca btl_tcp_if_include "$net" $extra "$@"
        ;;
esac
echo "mh-mpirun: hosts $hostlist map-by $map (Open MPI ${series:-4})" >&2
# mpirun runs on host 1 with host 1's hostname; the others get their
# daemons through the agent.  Busy-polling ranks starve the kernel's network
# processing on few cores: mpi_yield_when_idle 1 (see docs/multihost.md).
exec ip netns exec "$prefix-h1" unshare --uts sh -c 'hostname "$0" && exec "$@"' "${prefix}h1" \
    "$real" --host "$hostlist" --map-by "$map" "$@"
