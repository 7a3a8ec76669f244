#!/bin/sh
# Every point-to-point call and wait of coll/bufpool's algorithms goes
# through coll_bufpool_wait.c, whose primitives post and yield inside a
# nonblocking or persistent collective's task (and map its tags); a direct
# MCA_PML_CALL or ompi_request_wait elsewhere would block a task's thread
# or use the blocking tags.  This test fails on any such call outside
# runtime/coll_bufpool_wait.c.
set -u
dir="$top_srcdir/ompi-mca-coll-bufpool"
# Calls, not mentions in comments (lines whose text starts with * or /*).
found=$(grep -nE '(MCA_PML_CALL|ompi_request_(wait|test)[a-z_]*)[[:space:]]*\(' "$dir"/*.c "$dir"/*.h \
    "$dir"/*/*.c "$dir"/*/*.h |
    grep -v "^$dir/runtime/coll_bufpool_wait\.c:" | grep -vE '^[^:]*:[0-9]+:[[:space:]]*(\*|/\*)')
if [ -n "$found" ]; then
    echo "direct PML calls or waits outside coll_bufpool_wait.c:"
    echo "$found"
    exit 1
fi
echo "coll_no_direct_pml: every PML call and wait of coll/bufpool is in coll_bufpool_wait.c"
exit 0
