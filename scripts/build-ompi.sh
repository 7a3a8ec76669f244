#!/bin/sh
# Build (once) an Open MPI series from the shared source tarballs, for CI and
# for developers who want to test against Open MPI 5 or 6.
#
#   scripts/build-ompi.sh 5.0 [PREFIX]   configure + make install (default /opt/ompi5)
#   scripts/build-ompi.sh 6.0 [PREFIX]   configure + make install (default /opt/ompi6)
#
# Both install with --with-devel-headers (components build against them) and
# complete the installed headers (opal/mca/threads/pthreads, which
# opal_config.h includes but make install leaves out).
#
# 6.0: the shared 6.0.x tarball has empty 3rd-party/prrte and
# 3rd-party/pympistandard.  PRRTE 3.0.13 (5.0.10's) needs PMIx >= 4.2.4 and
# < 6 (Debian 12's 4.2.2 is too old, 6.0.x's bundled 6.1.1 too new), so 6.0
# runs on the PMIx and PRRTE that the 5.0 build installed with its internal
# copies (PMIx 5.0.10, PRRTE 3.0.13): `build-ompi.sh 6.0` builds 5.0 first
# when $BUFPOOL_OMPI5_PREFIX (default /opt/ompi5) lacks them, and the 6.0
# libraries find libpmix there through their run path.  It is configured
# --disable-standard-abi (the ABI library needs pympistandard) and leaner
# than 5.0: no Fortran, no oshmem, no MPI-IO, no one-sided rdma/ucx, no
# btl/uct, no vprotocol or monitoring.  It keeps UCX and libfabric (pml/ucx,
# btl/ofi, mtl/ofi: the transport registrars run there) and every coll
# component bufpool competes with (han, acoll, xhc, adapt, tuned, ...).
#
# A stamp file (PREFIX/.bufpool-build-stamp) records the tarball, its checksum
# and the configure flags (for 6.0 also the PMIx and PRRTE versions it runs
# on); a later run with the same stamp reuses the installation instead of
# rebuilding.  The installation goes through a staging folder swapped in at
# the end, then a 2-process hello job must run before the stamp is written.
# Environment: BUFPOOL_VENDOR_DIR (default ../shared/vendor beside the repo),
# BUFPOOL_OMPI_JOBS (default 2), BUFPOOL_OMPI_EXTRA_FLAGS (appended to
# configure), BUFPOOL_OMPI5_PREFIX (6.0: where the 5.0 build with PMIx and
# PRRTE is, default /opt/ompi5).
set -eu
series=${1:?usage: build-ompi.sh 5.0|6.0 [prefix-or-dir]}
repo=$(cd "$(dirname "$0")/.." && pwd)
vendor=${BUFPOOL_VENDOR_DIR:-$repo/../shared/vendor}
jobs=${BUFPOOL_OMPI_JOBS:-2}

# The flags verified to build here (issue 13); internal PMIx because Debian
# 12's PMIx is too old for PRRTE; the ompio/monitoring families are left out
# to keep the build inside CI's time budget, they do not touch bufpool.
# 5.0 is built with UCX (Debian's libucx-dev 1.13) and libfabric
# (libfabric-dev 1.17) so that the pml/ucx, btl/ofi and mtl/ofi registrars
# can be exercised; asking for them explicitly makes configure fail loudly
# instead of silently building without them when the -dev package is missing.
# (The 5.0 flag string must not change: its stamp would stop matching and
# every existing installation would be rebuilt.)
base="--with-devel-headers --disable-mpi-fortran --disable-oshmem --disable-io-romio \
--with-libevent=external --with-hwloc=external --with-pmix=internal"
nobuild="--disable-dependency-tracking \
--enable-mca-no-build=io-ompio,common-ompio,fcoll,fbtl,fs,sharedfp,topo-treematch,vprotocol,pml-monitoring,coll-monitoring,osc-monitoring,common-monitoring,btl-usnic"
# 6.0 leaves out, beyond 5.0's list: pml/v (vprotocol's host), one-sided
# rdma and ucx (osc/sm stays), btl/uct, hook/comm_method, and the
# accelerator wrappers of coll and smsc (no GPU here).  6.0.x has no ROMIO.
nobuild6="--disable-dependency-tracking \
--enable-mca-no-build=io-ompio,common-ompio,fcoll,fbtl,fs,sharedfp,topo-treematch,vprotocol,pml-v,\
pml-monitoring,coll-monitoring,osc-monitoring,common-monitoring,btl-usnic,btl-uct,osc-rdma,osc-ucx,\
hook-comm_method,coll-accelerator,smsc-accelerator"

case $series in
5.0)
    tarball=$vendor/openmpi-5.0.10-src.tar.xz
    dest=${2:-/opt/ompi5}
    flags="--prefix=$dest $base $nobuild --with-prrte=internal --with-ucx --with-ofi ${BUFPOOL_OMPI_EXTRA_FLAGS:-}"
    ;;
6.0)
    tarball=$vendor/openmpi-6.0.x-src.tar.xz
    dest=${2:-/opt/ompi6}
    # PMIx and PRRTE: the ones the 5.0 build installed (see the top).
    runtime=${BUFPOOL_OMPI5_PREFIX:-/opt/ompi5}
    have_runtime() {
        [ -f "$runtime/include/pmix_version.h" ] && [ -f "$runtime/include/prte_version.h" ] &&
            [ -f "$runtime/lib/pkgconfig/pmix.pc" ] &&
            [ -x "$runtime/bin/prterun" ] && ls "$runtime"/lib/libpmix.so.* >/dev/null 2>&1
    }
    if ! have_runtime; then
        echo "build-ompi.sh: Open MPI 6.0 runs on the PMIx and PRRTE of Open MPI 5.0.10 in $runtime: building that first"
        BUFPOOL_OMPI_EXTRA_FLAGS='' "$repo/scripts/build-ompi.sh" 5.0 "$runtime"
        have_runtime || {
            echo "build-ompi.sh: $runtime has no PMIx (include/pmix_version.h, lib/libpmix.so.*) or PRRTE (bin/prterun)" >&2
            exit 1
        }
    fi
    version_of() { # HEADER PREFIX: MAJOR.MINOR.RELEASE from PREFIX_VERSION_* in HEADER
        for part in MAJOR MINOR RELEASE; do
            sed -n "s/^#define $2_VERSION_$part \\([0-9]*\\).*/\\1/p" "$1" | head -n 1
        done | paste -sd.
    }
    runtime_id="pmix=$(version_of "$runtime/include/pmix_version.h" PMIX) \
prrte=$(version_of "$runtime/include/prte_version.h" PRTE) in $runtime"
    # 6.0 sees them through PREFIX/pmix-prrte, links to PMIx's and PRRTE's
    # files only: the 5.0 prefix itself also holds 5.0's mpi.h and
    # libopen-pal.so, which a -L to it would link instead of 6.0's own
    # (make install's relink of libopen_mpi does exactly that).
    view=$dest/pmix-prrte
    make_view() { # DIR: the links
        mkdir -p "$1/include" "$1/lib" "$1/bin"
        for f in "$runtime"/include/pmix* "$runtime"/include/prte*; do
            ln -sfn "$f" "$1/include/"
        done
        for f in "$runtime"/lib/libpmix.so* "$runtime"/lib/libprrte.so*; do
            ln -sfn "$f" "$1/lib/"
        done
        for f in "$runtime"/bin/prte* "$runtime"/bin/prun "$runtime"/bin/pterm; do
            if [ -e "$f" ]; then ln -sfn "$f" "$1/bin/"; fi
        done
        # PMIx's pkg-config file, on the links (6.0 also needs its
        # include/pmix directory, which only that file names).
        mkdir -p "$1/lib/pkgconfig"
        sed "s|^prefix=.*|prefix=$view|" "$runtime/lib/pkgconfig/pmix.pc" >"$1/lib/pkgconfig/pmix.pc"
    }
    flags="--prefix=$dest --with-devel-headers --disable-mpi-fortran --disable-oshmem \
--disable-standard-abi --with-libevent=external --with-hwloc=external \
--with-pmix=$view --with-prrte=$view --with-ucx --with-ofi $nobuild6 \
LDFLAGS=-Wl,-rpath,$view/lib ${BUFPOOL_OMPI_EXTRA_FLAGS:-}"
    ;;
*)
    echo "build-ompi.sh: unknown series '$series' (use 5.0 or 6.0)" >&2
    exit 2
    ;;
esac
if [ ! -r "$tarball" ]; then
    echo "build-ompi.sh: $tarball not found; set BUFPOOL_VENDOR_DIR to the folder holding it" >&2
    exit 1
fi

sum=$(sha256sum "$tarball" | cut -d' ' -f1)
want="series=$series tarball=$(basename "$tarball") sha256=$sum flags=$flags"
if [ "$series" = 6.0 ]; then
    want="$want runtime=$runtime_id"
fi
stamp=$dest/.bufpool-build-stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "build-ompi.sh: Open MPI $series already in $dest (stamp matches), reusing it"
    exit 0
fi

start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/ompi${series%.0}-build.XXXXXX")
logs=${TMPDIR:-/tmp}/build-ompi-$series.logs
# On failure the logs are kept (the build tree is not: it is large).
# shellcheck disable=SC2154 # st is set inside the trap
trap 'st=$?; if [ $st -ne 0 ]; then rm -rf "$logs"; mkdir -p "$logs";
      cp "$work"/*.log "$logs/" 2>/dev/null; echo "build-ompi.sh: logs in $logs" >&2; fi
      rm -rf "$work"' EXIT
echo "build-ompi.sh: extracting $(basename "$tarball") into $work"
tar -xJf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'openmpi*' | head -1)
cd "$src"
if [ "$series" = 6.0 ]; then
    make_view "$view"
fi
echo "build-ompi.sh: configure $flags"
# shellcheck disable=SC2086
./configure $flags >"$work/configure.log" 2>&1 || {
    tail -40 "$work/configure.log" >&2
    exit 1
}
echo "build-ompi.sh: configured in $(($(date +%s) - start)) s"
if [ "$series" = 6.0 ] && [ ! -d 3rd-party/pympistandard/src/pympistandard ]; then
    # 6.0.x generates ompi/mpi/c/abi.h and abi_converters.h (the standard
    # ABI's headers) with pympistandard, a git submodule the tarball lacks,
    # and --with-devel-headers lists them among the headers to build and
    # install even with --disable-standard-abi, where nothing includes them:
    # take them off that list.
    mk=ompi/mpi/c/Makefile
    sed -i -e 's/^headers = bindings\.h \\$/headers = bindings.h/' \
        -e '/^ *abi\.h \\$/d' -e '/^ *abi_converters\.h$/d' "$mk"
    if ! grep -q '^headers = bindings\.h$' "$mk" || grep -q '^ *abi\.h \\$' "$mk"; then
        echo "build-ompi.sh: could not take abi.h off the headers of $mk:" >&2
        grep -n -A3 '^headers =' "$mk" >&2
        exit 1
    fi
fi
tmake=$(date +%s)
make -j"$jobs" >"$work/make.log" 2>&1 || {
    tail -60 "$work/make.log" >&2
    exit 1
}
echo "build-ompi.sh: built in $(($(date +%s) - tmake)) s"
# Install into a staging folder beside PREFIX and swap it in at the end:
# a rebuild with new flags must not leave an earlier installation's files
# behind, and jobs that use PREFIX meanwhile keep a complete installation.
stage=$dest.stage
rm -rf "$stage"
make install DESTDIR="$stage" >"$work/install.log" 2>&1 || {
    tail -40 "$work/install.log" >&2
    exit 1
}
# Open MPI 5 and 6 install opal_config.h, which includes
# opal/mca/threads/pthreads/*.h, but not those headers: copy them so the
# installed devel headers are complete (configure also accepts
# --with-ompi-source=DIR for installations that lack them).
inc=$stage$dest/include/openmpi
mkdir -p "$inc/opal/mca/threads/pthreads"
cp opal/mca/threads/pthreads/*.h "$inc/opal/mca/threads/pthreads/"
if [ "$series" = 6.0 ]; then
    make_view "$stage$view"
fi
rm -rf "$dest.old"
if [ -e "$dest" ]; then mv "$dest" "$dest.old"; fi
mkdir -p "$(dirname "$dest")"
mv "$stage$dest" "$dest"
rm -rf "$dest.old" "$stage"
# The installation must run a job before it is stamped as good.
cd "$work"
"$dest/bin/mpicc" -o hello "$src/examples/hello_c.c"
if ! OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout 120 "$dest/bin/mpirun" --oversubscribe -np 2 ./hello >"$work/hello.log" 2>&1 ||
    [ "$(grep -c '^Hello, world' "$work/hello.log")" != 2 ]; then
    cat "$work/hello.log" >&2
    echo "build-ompi.sh: Open MPI $series in $dest does not run a 2-process job" >&2
    exit 1
fi
echo "$want" >"$dest/.bufpool-build-stamp"
echo "build-ompi.sh: Open MPI $series ready in $dest after $(($(date +%s) - start)) s"
