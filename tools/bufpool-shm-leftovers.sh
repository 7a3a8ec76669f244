#!/bin/sh
# What Open MPI's shared-memory transport leaves in /dev/shm when its job is
# stopped by a signal (Open MPI 4.1's mpirun does not always remove its
# ranks' vader_segment.* files; 5.0's prterun removes its sm_segment.*),
# found and removed safely.  Used by bufpool-tune after a failed job and by
# bench/run-side-by-side.sh after a job it had to kill.
#
#   bufpool-shm-leftovers list     the files there now, one per line
#   bufpool-shm-leftovers remove   reads such a list (taken before the job)
#                                  on stdin; removes the files not in it
#                                  that are the user's, whose creator has
#                                  exited and that no process maps, waiting
#                                  up to 3 s for ranks still going down;
#                                  prints the names removed, one per line
#
# The creator's check keeps a concurrent job safe: a file another job's
# rank has just made is not mapped yet by its peers, and a peer that then
# cannot open it hangs that whole job without a word (Open MPI 4.1.4; it
# happened in CI's make distcheck, docs/reliability.md).
set -u

btl_files() {
    ls -d /dev/shm/vader_segment.* /dev/shm/sm_segment.* 2>/dev/null
}

# The pid of the process that made FILE: opal_shmem's header is a 4-byte
# lock, then the creator's pid, written just after the file is made
# (nothing or 0 until then).
creator_of() { # FILE
    od -An -t u4 -j 4 -N 4 -- "$1" 2>/dev/null | tr -d ' '
}

remove_new() {
    before=$(cat)
    for _ in 1 2 3; do
        busy=
        candidates=
        for f in $(btl_files); do
            if printf '%s\n' "$before" | grep -qxF -- "$f" || [ ! -O "$f" ]; then
                continue
            fi
            creator=$(creator_of "$f")
            # Not written yet, or its creator lives (a rank still going
            # down, or another job's): not to be removed now.
            if [ -z "$creator" ] || [ "$creator" = 0 ] || [ -d "/proc/$creator" ]; then
                busy=1
            else
                candidates="$candidates $f"
            fi
        done
        # Read after the files were listed: a file listed is in it if mapped.
        mapped=$(sed -n 's|^[^/]* \(/dev/shm/[^ ]*\)$|\1|p' /proc/[0-9]*/maps 2>/dev/null | sort -u)
        for f in $candidates; do
            if printf '%s\n' "$mapped" | grep -qxF -- "$f"; then
                busy=1
            else
                rm -f -- "$f" && echo "${f##*/}"
            fi
        done
        [ -n "$busy" ] || break
        sleep 1
    done
}

case ${1:-} in
    list) btl_files ;;
    remove) remove_new ;;
    *)
        echo "usage: ${0##*/} list | remove (the list from before on stdin)" >&2
        exit 2
        ;;
esac
