#!/bin/sh
# Install what building, testing and benchmarking ompi-bufpool needs on
# Debian 12 (run as root).  Idempotent: quick when everything is present.
set -e
PACKAGES="
  build-essential autoconf automake libtool pkg-config
  libopenmpi-dev openmpi-bin
  libfabric-dev libibverbs-dev rdma-core libhwloc-dev libucx-dev
  clang clang-format libclang-rt-14-dev valgrind
  gnuplot-nox python3
  iproute2 util-linux
  libevent-dev flex
  debhelper dpkg-dev fakeroot
"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install-deps: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq $missing
else
  echo "install-deps: everything is installed"
fi
