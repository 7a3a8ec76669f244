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
#   usage: scripts/bundle-remote.sh [BUILD-DIR]   (default _build/main)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build/main}
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
stage=$(mktemp -d)
mkdir -p "$stage/components"
cp -L "$build"/components/*.so "$stage/components/"
cp "$top"/common/help-*.txt "$stage/components/"
for f in bench/coll_latency bench/coll_toll test/mpi/test_coll_reduce_family \
    test/mpi/test_coll_move_family test/mpi/test_coll_barrier test/fuzz/coll_fuzz; do
    cp -L "$build/$f" "$stage/"
done
tar -C "$stage" -czf "$out/build.tar.gz" .
rm -rf "$stage"
ls -la "$out"
