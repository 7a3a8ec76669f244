#!/bin/sh
# What Open MPI's shared-memory transport leaves in /dev/shm when its job is
# stopped by a signal (Open MPI 4.1's mpirun does not always remove its
# ranks' vader_segment.* files; 5.0's prterun removes its sm_segment.*),
# found and removed safely.  Used by bufpool-tune after a failed job and by
# bench/run-side-by-side.sh after a job it had to kill.
#
#   bufpool-shm-leftovers list     the files there now, one per line
#   bufpool-shm-leftovers remove [NAME=VALUE]
#                                  reads such a list (taken before the job)
#                                  on stdin; removes the files not in it
#                                  that are the user's, whose creator has
#                                  exited and that no process maps; prints
#                                  the names removed, one per line.
#                                  NAME=VALUE: an environment entry every
#                                  process of the stopped job carries (the
#                                  caller exported it for the job): first
#                                  waits up to 20 s for those processes
#                                  (ranks still going down), then stops
#                                  what is left of them with SIGKILL.
#                                  Without it, waits up to 3 s for live
#                                  creators, which may be another job's.
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

# Whether process PID runs: a zombie does not (its parent gone, a rank of
# a stopped job can stay one for as long as nobody reaps it).
alive() { # PID
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# The pids of the live processes whose environment holds ENTRY (never
# this one or its caller, which the caller should not have given it).
carrying() { # ENTRY
    for environ in /proc/[0-9]*/environ; do
        pid=${environ#/proc/}
        pid=${pid%/environ}
        if [ "$pid" != $$ ] && [ "$pid" != "$PPID" ] &&
            tr '\0' '\n' <"$environ" 2>/dev/null | grep -qxF -- "$1"; then
            echo "$pid"
        fi
    done
}

# The stopped job's processes that still run: waited for, then killed.
wait_for_job() { # ENTRY
    for _ in $(seq 20); do
        [ -n "$(carrying "$1")" ] || return 0
        sleep 1
    done
    # shellcheck disable=SC2046 # one word per pid
    kill -KILL $(carrying "$1") 2>/dev/null
    sleep 1
}

remove_new() { # [ENTRY]
    before=$(cat)
    tries=3
    if [ -n "${1:-}" ]; then
        wait_for_job "$1"
        tries=1 # the job is gone: a live creator is another job's
    fi
    for _ in $(seq "$tries"); do
        busy=
        candidates=
        for f in $(btl_files); do
            if printf '%s\n' "$before" | grep -qxF -- "$f" || [ ! -O "$f" ]; then
                continue
            fi
            creator=$(creator_of "$f")
            # Not written yet, or its creator lives (a rank still going
            # down, or another job's): not to be removed now.
            if [ -z "$creator" ] || [ "$creator" = 0 ] || alive "$creator"; then
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
    remove) remove_new "${2:-}" ;;
    *)
        echo "usage: ${0##*/} list | remove [NAME=VALUE] (the list from before on stdin)" >&2
        exit 2
        ;;
esac
