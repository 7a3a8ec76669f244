#!/bin/sh
# Regenerate the build system (needs autoconf, automake, libtool).
set -e
cd "$(dirname "$0")"
mkdir -p config/aux
autoreconf --force --install --warnings=all,no-portability
echo "Now run ./configure && make && make install"
