#!/bin/sh
# An emulated cluster on one Linux machine: every "host" is a network
# namespace with its own hostname (set by the rsh agent with unshare --uts),
# joined to the others by a veth pair to a Linux bridge that lives in a
# namespace of its own, so that no interface, address or route of the
# machine's own namespace is touched and all traffic stays inside namespaces
# this script creates.
#
#   cluster.sh up N [--rate RATE]   create hosts 1..N (idempotent; an existing
#                                   cluster of another size is rebuilt)
#   cluster.sh down                 remove everything this script created
#   cluster.sh status               print hosts, addresses and link shaping
#   cluster.sh shape RATE|off       tc tbf on every host's link, e.g. 1gbit
#
# Needs root (ip netns).  Names, all from BUFPOOL_CLUSTER_PREFIX (default
# bp14): namespaces PREFIX-sw (the bridge) and PREFIX-hI (host I, hostname
# PREFIXhI), subnet BUFPOOL_CLUSTER_NET (default 10.214.14.0/24; host I has
# .(10+I)).  The addresses exist only inside those namespaces.
set -u

prefix=${BUFPOOL_CLUSTER_PREFIX:-bp14}
net=${BUFPOOL_CLUSTER_NET:-10.214.14.0/24}
net_base=${net%.*/*}
net_len=${net#*/}
sw=$prefix-sw
max_hosts=64

die() {
    echo "cluster.sh: $*" >&2
    exit 2
}

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces); run as root or skip multi-host tests"
    command -v ip >/dev/null 2>&1 || die "ip (iproute2) not found: apt-get install iproute2"
    command -v unshare >/dev/null 2>&1 || die "unshare (util-linux) not found"
}

# Host I's namespace, hostname and address.
host_ns() { echo "$prefix-h$1"; }
host_name() { echo "${prefix}h$1"; }
host_addr() { echo "$net_base.$((10 + $1))"; }

existing_hosts() { # the host numbers whose namespace exists, ascending
    ip netns list 2>/dev/null | sed -n "s/^$prefix-h\([0-9][0-9]*\)\( .*\)\{0,1\}$/\1/p" | sort -n
}

ns_exists() { ip netns list 2>/dev/null | grep -q "^$1\( \|$\)"; }

down() {
    for d_i in $(existing_hosts); do
        ip netns del "$(host_ns "$d_i")" 2>/dev/null # deletes its veth pair too
        rm -rf "/etc/netns/$(host_ns "$d_i")"
    done
    if ns_exists "$sw"; then
        ip netns del "$sw"
    fi
    # Nothing of ours may survive: say so if something did.
    left=$(ip netns list 2>/dev/null | grep -c "^$prefix-" || true)
    if [ "$left" != 0 ]; then
        echo "cluster.sh: $left namespaces named $prefix-* are still there" >&2
        return 1
    fi
    return 0
}

hosts_file() { # N: an /etc/hosts for every host, so names resolve everywhere
    echo "127.0.0.1 localhost"
    hf_i=1 # sh has no locals: the callers' loop variable is i
    while [ "$hf_i" -le "$1" ]; do
        echo "$(host_addr "$hf_i") $(host_name "$hf_i")"
        hf_i=$((hf_i + 1))
    done
}

up() {
    n=$1
    case $n in '' | *[!0-9]*) die "up needs a number of hosts" ;; esac
    [ "$n" -ge 1 ] && [ "$n" -le $max_hosts ] || die "number of hosts must be 1..$max_hosts, not $n"
    have=$(existing_hosts | wc -l)
    if [ "$have" = "$n" ] && ns_exists "$sw" && [ "$(existing_hosts | tail -n 1)" = "$n" ]; then
        echo "cluster.sh: $n hosts already up"
        return 0
    fi
    down || return 1
    # A half-built cluster is torn down again.
    trap 'echo "cluster.sh: up failed, cleaning up" >&2; down; exit 1' INT TERM HUP
    ip netns add "$sw" &&
        ip -n "$sw" link set lo up &&
        ip -n "$sw" link add br0 type bridge &&
        ip -n "$sw" link set br0 up || { down; die "could not create the bridge namespace $sw"; }
    i=1
    while [ "$i" -le "$n" ]; do
        ns=$(host_ns "$i")
        mkdir -p "/etc/netns/$ns"
        hosts_file "$n" >"/etc/netns/$ns/hosts"
        echo "$(host_name "$i")" >"/etc/netns/$ns/hostname"
        # The veth pair is created inside the bridge namespace and one end
        # moved to the host: never an interface in the machine's namespace.
        if ! { ip netns add "$ns" &&
            ip -n "$ns" link set lo up &&
            ip -n "$sw" link add "h$i" type veth peer name eth0 &&
            ip -n "$sw" link set eth0 netns "$ns" &&
            ip -n "$sw" link set "h$i" master br0 &&
            ip -n "$sw" link set "h$i" up &&
            ip -n "$ns" addr add "$(host_addr "$i")/$net_len" dev eth0 &&
            ip -n "$ns" link set eth0 up; }; then
            down
            die "could not create host $i ($ns)"
        fi
        i=$((i + 1))
    done
    trap - INT TERM HUP
    # Bridge ports forward at once with STP off; wait (bounded) until every
    # port says so rather than trusting it.
    tries=0
    while ip -n "$sw" -d link show master br0 | grep -q 'state \(listening\|learning\|blocking\|disabled\)'; do
        tries=$((tries + 1))
        if [ $tries -ge 10 ]; then
            down
            die "bridge ports not forwarding after 10 s"
        fi
        sleep 1
    done
    echo "cluster.sh: $n hosts up on $net"
}

shape() { # RATE|off on every host's eth0 (egress of each host)
    rate=$1
    for i in $(existing_hosts); do
        ns=$(host_ns "$i")
        ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null
        if [ "$rate" != off ]; then
            ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 50ms ||
                die "tc tbf rate $rate failed on $ns"
        fi
    done
    echo "cluster.sh: link shaping $rate"
}

status() {
    hosts=$(existing_hosts)
    if [ -z "$hosts" ]; then
        echo "cluster.sh: no cluster ($prefix)"
        return 1
    fi
    for i in $hosts; do
        ns=$(host_ns "$i")
        addr=$(ip -n "$ns" -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}')
        qd=$(ip netns exec "$ns" tc qdisc show dev eth0 2>/dev/null | head -n 1)
        echo "host $i: namespace $ns hostname $(host_name "$i") address ${addr:-none} qdisc ${qd:-none}"
    done
}

[ $# -ge 1 ] || die "usage: $0 up N [--rate RATE] | down | status | shape RATE|off"
cmd=$1
shift
case $cmd in
    up)
        need_root
        up "${1:-}" || exit 1
        if [ "${2:-}" = --rate ]; then shape "${3:?--rate needs a rate}"; fi
        ;;
    down) need_root; down ;;
    status) need_root; status ;;
    shape) need_root; shape "${1:?shape needs a rate or off}" ;;
    *) die "unknown command $cmd" ;;
esac
