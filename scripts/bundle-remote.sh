#!/bin/sh
# Pack what a bare x86-64 Linux machine without Open MPI needs to run this
# project's build against Debian 12's Open MPI 4.1.4, the stack it is
# developed on: the files of Debian's Open MPI packages and of the libraries
# they load (not glibc, libstdc++, zlib and the like, which any distribution
# has), as .dev/ompi-root.tar.gz, and the build's components, help files,
# benchmarks and test programs, as .dev/build.tar.gz.
#
# On the other machine, as root:
#   tar -C / --skip-old-files -xzf .dev/ompi-root.tar.gz   (adds, never replaces)
#   mkdir -p /tmp/b && tar -C /tmp/b -xzf .dev/build.tar.gz
#   OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/tmp/b/components \
#     /usr/bin/orterun --allow-run-as-root -np 16 /tmp/b/coll_latency ...
# bench/run-remote-node.sh is such a run.
#
# Each further BUILD-DIR configured --with-ompi=PREFIX (Open MPI 5.0 or 6.0
# built by scripts/build-ompi.sh) adds PREFIX itself, at its own path, as
# .dev/prefix-NAME.tar.gz (NAME: PREFIX's last component; with the trees
# its links point into, at their own paths; it needs the
# libraries of the first archive: hwloc, libevent, UCX, libfabric) and that
# build as .dev/build-NAME.tar.gz; bench/run-remote-peers.sh runs them.
#   usage: scripts/bundle-remote.sh [BUILD-DIR [PREFIX-BUILD-DIR ...]]
#          (default _build/main)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build/main}
[ $# -eq 0 ] || shift
out=$top/.dev
mkdir -p "$out"
grep -qx '/.dev/' "$top/.git/info/exclude" 2>/dev/null || echo '/.dev/' >>"$top/.git/info/exclude"
pkgs="openmpi-bin libopenmpi3 openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7
libevent-pthreads-2.1-7 libevent-2.1-7 libfabric1 libucx0 libibverbs1 ibverbs-providers
libnl-3-200 libnl-route-3-200 libnuma1 libpsm-infinipath1 libpsm2-2 librdmacm1 libmunge2
libatomic1 libgfortran5 libquadmath0 libltdl7"
list=$(mktemp)
for p in $pkgs; do dpkg -L "$p" 2>/dev/null || true; done | sort -u | while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then
        case $f in /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/*) ;; *) echo "${f#/}" ;; esac
    fi
done >"$list"
tar -C / -czf "$out/ompi-root.tar.gz" -T "$list"
rm -f "$list"
# pack_build BUILD-DIR ARCHIVE: the components, help files, benchmarks and
# test programs of one build tree.
pack_build() {
    stage=$(mktemp -d)
    mkdir -p "$stage/components"
    cp -L "$1"/components/*.so "$stage/components/"
    cp "$top"/common/help-*.txt "$stage/components/"
    for f in bench/coll_latency bench/coll_toll test/mpi/test_coll_reduce_family \
        test/mpi/test_coll_move_family test/mpi/test_coll_barrier test/fuzz/coll_fuzz; do
        cp -L "$1/$f" "$stage/"
    done
    tar -C "$stage" -czf "$2" .
    rm -rf "$stage"
}
pack_build "$build" "$out/build.tar.gz"
for b in "$@"; do
    # The Open MPI this tree was configured against: its mpirun's prefix.
    prefix=$(sed -n 's|^MPIRUN = \(/.*\)/bin/mpirun$|\1|p' "$b/Makefile")
    case $prefix in
    /usr | "") echo "bundle-remote: $b is not configured --with-ompi=PREFIX" >&2 && exit 2 ;;
    esac
    name=$(basename "$prefix")
    # With the trees its links point into: 6.0 built by build-ompi.sh runs
    # on 5.0's PMIx and PRRTE, linked from PREFIX/pmix-prrte.
    trees=$(find "$prefix" -type l -lname '/*' -exec readlink {} + | cut -d/ -f1-3 |
        grep -v "^$prefix\$" | sort -u | sed 's|^/||' | tr '\n' ' ')
    tar -C / -czf "$out/prefix-$name.tar.gz" --exclude='*.la' --exclude='*/include' \
        "${prefix#/}" $trees
    pack_build "$b" "$out/build-$name.tar.gz"
done
ls -la "$out"
