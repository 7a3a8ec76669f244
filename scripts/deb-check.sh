#!/bin/sh
# Build the Debian package, install it, prove that an MPI job uses coll/bufpool
# with no component-path setting, and purge it again -- the package test of
# CI (test/check-all.sh).  Run as root on Debian 12.
#
#   scripts/deb-check.sh BUILDDIR
#
# BUILDDIR is a configured and built tree of this checkout (test/check-all.sh's
# _build/main): its collcheck program is the proof job.  The built package is
# left in BUILDDIR/deb/.  The package is installed only for the seconds the
# proof takes, and purged on every exit path: other MPI jobs on the machine
# would otherwise see a second copy of the components.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:?usage: deb-check.sh BUILDDIR}" && pwd)
prog=$builddir/test/mpi/test_coll_reduce_family
out=$builddir/deb
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if dpkg-query -W -f='${Status}' ompi-bufpool 2>/dev/null | grep -q "install ok installed"; then
    echo "deb-check: ompi-bufpool is already installed here; purge it first (apt-get purge ompi-bufpool)" >&2
    exit 1
fi
[ -x "$prog" ] || make -C "$builddir/test" mpi/test_coll_reduce_family >/dev/null

start=$(date +%s)
cd "$top"
rm -rf "$out" _build/deb
mkdir -p "$out"
# dpkg-buildpackage writes its products beside the source tree: move them.
dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1 || {
    tail -n 40 "$out/build.log" >&2
    echo "deb-check: dpkg-buildpackage failed (log: $out/build.log)" >&2
    exit 1
}
for f in ../ompi-bufpool_*.deb ../ompi-bufpool-dbgsym_*.deb ../ompi-bufpool_*.buildinfo \
    ../ompi-bufpool_*.changes; do
    if [ -f "$f" ]; then mv "$f" "$out/"; fi
done
debian/rules clean >/dev/null 2>&1 || true
deb=$(ls "$out"/ompi-bufpool_*.deb)
echo "deb-check: built $(basename "$deb") in $(($(date +%s) - start)) s; contents:"
dpkg-deb -c "$deb" | grep 'mca_' | awk '{print "  " $6}'

# component_counts FILE: "COLL MPOOL", the version lines of coll/bufpool and
# mpool/regpar in an `ompi_info --parsable` listing.
component_counts() {
    printf '%s %s' "$(grep -c '^mca:coll:bufpool:version:' "$1")" \
        "$(grep -c '^mca:mpool:regpar:version:' "$1")"
}

purge() { apt-get purge -y -qq ompi-bufpool >/dev/null 2>&1 || dpkg --purge ompi-bufpool >/dev/null 2>&1 || true; }
trap purge EXIT INT TERM

# Install, prove, purge: seconds.  No OMPI_MCA_* variable may help.
unset OMPI_MCA_mca_base_component_path OMPI_MCA_coll OMPI_MCA_mpool 2>/dev/null || true
window=$(date +%s)
apt-get install -y -qq "$deb" >"$out/install.log" 2>&1 || {
    cat "$out/install.log" >&2
    exit 1
}
status=0
mpirun -np 2 "$prog" --smoke --comms=world --colls=allreduce \
    --expect-bufpool >"$out/proof.log" 2>&1 || status=$?
# ompi_info, with no setting either, must list each component exactly once
# (three version lines each: mca, api, component); two copies would mean a
# stale installation beside the package, none that Open MPI does not see it.
ompi_info --parsable >"$out/ompi_info.txt" 2>&1 || true
installed_counts=$(component_counts "$out/ompi_info.txt")
purge
trap - EXIT INT TERM
echo "deb-check: package installed for $(($(date +%s) - window)) s"
if [ $status -ne 0 ]; then
    cat "$out/proof.log" >&2
    echo "deb-check: FAILED: with the package installed and no setting, the job did not prove bufpool served it" >&2
    exit 1
fi
grep -i 'bufpool' "$out/proof.log" | head -n 5
echo "deb-check: ompi_info with the package: coll/bufpool, mpool/regpar version lines: $installed_counts"
if [ "$installed_counts" != "3 3" ]; then
    grep -E '^mca:(coll:bufpool|mpool:regpar):version:' "$out/ompi_info.txt" >&2
    echo "deb-check: FAILED: with the package installed ompi_info should list coll/bufpool and mpool/regpar once each (3 version lines each), saw $installed_counts" >&2
    exit 1
fi
if dpkg-query -W ompi-bufpool >/dev/null 2>&1 && \
    dpkg-query -W -f='${Status}' ompi-bufpool | grep -q installed; then
    echo "deb-check: FAILED: the package is still installed after purge" >&2
    exit 1
fi
# Stock behaviour again: ompi_info no longer lists either component, and
# without the package the same proof must fail.
ompi_info --parsable >"$out/ompi_info-after-purge.txt" 2>&1 || true
purged_counts=$(component_counts "$out/ompi_info-after-purge.txt")
if [ "$purged_counts" != "0 0" ]; then
    echo "deb-check: FAILED: after purge ompi_info still lists the components ($purged_counts version lines)" >&2
    exit 1
fi
if mpirun -np 2 "$prog" --smoke --comms=world --colls=allreduce --expect-bufpool \
    >"$out/after-purge.log" 2>&1; then
    echo "deb-check: FAILED: after purge a job still used bufpool" >&2
    exit 1
fi
echo "deb-check: ok (bufpool served the job with no setting; stock after purge)"
