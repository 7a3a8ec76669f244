#!/bin/sh
# Open MPI's rsh launcher calls this instead of ssh (--mca plm_rsh_agent):
#   rsh-agent.sh [ssh-style options] HOST COMMAND...
# HOST is a hostname of the emulated cluster (PREFIXhI, see cluster.sh); the
# command (an orted and its arguments, quoted for a remote shell as ssh would
# pass them) runs in that host's network namespace, in a UTS namespace of its
# own whose hostname is HOST, so that Open MPI sees one node per namespace.
set -u
prefix=${BUFPOOL_CLUSTER_PREFIX:-bp14}
while [ $# -gt 0 ]; do
    case $1 in
        -x | -T | -t | -n | -q) shift ;; # ssh flags Open MPI may add
        -l | -p | -o) shift 2 ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || {
    echo "rsh-agent.sh: usage: $0 HOST COMMAND..." >&2
    exit 255
}
host=$1
shift
case $host in
    "${prefix}h"[0-9]*) ns=$prefix-h${host#"${prefix}h"} ;;
    *)
        echo "rsh-agent.sh: $host is not a host of the emulated cluster (${prefix}hN); refusing" >&2
        exit 255
        ;;
esac
if ! ip netns list 2>/dev/null | grep -q "^$ns\( \|$\)"; then
    echo "rsh-agent.sh: namespace $ns does not exist: run test/multihost/cluster.sh up N first" >&2
    exit 255
fi
# Like ssh: the words are joined and run by a shell on the "remote" host
# (with an absolute mpirun, Open MPI sends "PATH=... ; export PATH ; orted").
exec ip netns exec "$ns" unshare --uts sh -c "hostname '$host' && $*"
