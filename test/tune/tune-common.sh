# Sourced by the bufpool-tune tests (test/tune/tune.inc): where the build
# tree's bufpool-tune is, a scratch folder removed at exit, and helpers.
# Environment as for test/mpi (make check exports top_srcdir, top_builddir,
# MPIRUN, OMPI_SYSTEM_COMPONENT_DIR).
: "${top_srcdir:?top_srcdir must name the source tree (make check sets it)}"
: "${top_builddir:?top_builddir must name the build tree (make check sets it)}"
tune=$top_builddir/tools/bufpool-tune
measure=$top_builddir/tools/bufpool-tune-measure
[ -x "$tune" ] && [ -x "$measure" ] || {
    echo "FAIL: $tune and $measure must be built (make -C $top_builddir/tools)"
    exit 1
}
# The tests run as root in containers and CI.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
work=$(mktemp -d "${TMPDIR:-/tmp}/bufpool-tune-test.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
status=0

fail() {
    echo "FAIL: $*"
    status=1
}

pass() {
    echo "ok: $*"
}

# expect_grep FILE PATTERN WHAT: FILE has a line matching PATTERN (grep -E).
expect_grep() {
    if grep -Eq -- "$2" "$1"; then
        pass "$3"
    else
        fail "$3: no line matching '$2' in $1:"
        sed 's/^/    /' "$1" | tail -n 20
    fi
}

# The component's size maps of MPI_COMM_WORLD under rules file $1, from a
# job of ${3:-2} ranks at coll_bufpool_verbose 3 (written to $2; the job's
# whole output to $2.job).  Extra mpirun arguments: $MAPS_MPIRUN (default: the
# build tree's mpirun through test/mpi/run-mpi-test.sh).  Each rank writes
# its output to a file of its own ($2.job.rankN, appended to $2.job): through
# mpirun, rank 0's long dump came in chunks that other ranks' lines (their
# explained calls, verbose 2 and up) could cut in the middle of a line.
component_maps() {
    maps_np=${3:-2}
    rm -f "$2".job.rank*
    # shellcheck disable=SC2016 # expanded by the rank's shell
    per_rank='exec "$0" "$@" >"$BUFPOOL_MAPS_OUT.rank${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-x}}" 2>&1'
    BUFPOOL_MAPS_OUT=$2.job
    export BUFPOOL_MAPS_OUT
    if [ -n "${MAPS_MPIRUN:-}" ]; then
        # shellcheck disable=SC2086 # the wrapper's words
        OMPI_MCA_mca_base_component_path=${OMPI_SYSTEM_COMPONENT_DIR:-}:$top_builddir/components \
            $MAPS_MPIRUN -np "$maps_np" -x BUFPOOL_MAPS_OUT --mca coll_bufpool_rules_file "$1" \
            --mca coll_bufpool_verbose 3 /bin/sh -c "$per_rank" "$measure" --collectives bcast --sizes 4 \
            --reps 1 --quiet >"$2.job" 2>&1
    else
        BUFPOOL_TEST_MCA="--mca coll_bufpool_rules_file $1 --mca coll_bufpool_verbose 3" \
            sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$maps_np" /bin/sh -c "$per_rank" "$measure" \
            --collectives bcast --sizes 4 --reps 1 --quiet >"$2.job" 2>&1
    fi
    rc=$?
    for f in "$2".job.rank*; do
        [ -f "$f" ] && { echo "== ${f##*.}"; cat "$f"; } >>"$2.job"
    done
    awk '/coll_bufpool: MPI_COMM_WORLD: / { inw = 1; print; next }
         inw && /coll_bufpool: [^ ]+: [0-9]+ ranks on/ { inw = 0 }
         inw { sub(/^\[[^]]*\] */, ""); print }' "$2.job.rank0" >"$2" 2>/dev/null
    return $rc
}

# check_rows RULES RAW MAPS [NP]: every point measured at NP (default 2)
# ranks in RAW (its "bpt M" lines) is decided, in the component's size maps
# MAPS of an NP-rank communicator, by a row of RULES, and the choice
# printed is that row's.
check_rows() {
    awk -v rules="$1" -v raw="$2" -v np="${4:-2}" '
        FILENAME == rules { row[FNR] = $0; next }
        FILENAME == raw {
            if ($1 == "bpt" && $2 == "M" && $4 == np) point[$3 " " $8] = 1
            next
        }
        # the maps: "coll[, class] LO..HI: choice (auto, rules FILE:LINE (...))"
        /\.\.[0-9]*: / {
            head = $0; sub(/:.*/, "", head)
            n = split(head, w, " ")
            range = w[n]; label = head; sub(/ [^ ]*$/, "", label)
            coll = label; sub(/,.*/, "", coll)
            cls = label; sub(/^[^,]*,? ?/, "", cls)
            lo = range; sub(/\.\..*/, "", lo)
            hi = range; sub(/.*\.\./, "", hi)
            if (hi == "") hi = "inf"
            rest = $0; sub(/^[^:]*: /, "", rest)
            choice = rest; sub(/ \(.*/, "", choice)
            line = ""
            k = index(rest, rules ":")
            if (k > 0) { line = substr(rest, k + length(rules) + 1); sub(/[^0-9].*/, "", line) }
            nmap++
            mcoll[nmap] = coll; mcls[nmap] = cls; mlo[nmap] = lo + 0; mhi[nmap] = hi
            mchoice[nmap] = choice; mline[nmap] = line
        }
        END {
            red["allreduce"] = red["reduce"] = red["reduce_scatter"] = 1
            red["reduce_scatter_block"] = red["scan"] = red["exscan"] = 1
            bad = 0; checked = 0
            for (pt in point) {
                split(pt, f, " "); coll = f[1]; bytes = f[2] + 0
                found = 0
                for (i = 1; i <= nmap; i++) {
                    if (mcoll[i] != coll) continue
                    # reductions: the commutative, out-of-place map; data
                    # movement: the first map printed (all classes share it)
                    if (coll in red) { if (mcls[i] != "") continue }
                    else if (mcls[i] != "" && mcls[i] != "non-commutative") continue
                    if (bytes < mlo[i] || (mhi[i] != "inf" && bytes > mhi[i] + 0)) continue
                    found = 1
                    if (mline[i] == "") {
                        printf "%s at %d bytes: decided by \"%s\", not by a row of %s\n", coll, bytes, mchoice[i], rules
                        bad = 1
                    } else {
                        r = row[mline[i]]
                        want = r; sub(/.* alg=/, "", want); sub(/ .*/, "", want)
                        got = mchoice[i] == "previous module" ? "previous" : mchoice[i]
                        if (index(r, coll " ") != 1 || want != got) {
                            printf "%s at %d bytes: the map says %s from line %s, which reads: %s\n", coll, bytes, got, mline[i], r
                            bad = 1
                        }
                    }
                    break
                }
                if (!found) { printf "%s at %d bytes: no range of the map holds it\n", coll, bytes; bad = 1 }
                checked++
            }
            if (checked == 0) { print "no measured point"; bad = 1 }
            printf "%d measured points at %d ranks checked against the component'"'"'s maps\n", checked, np
            exit bad
        }' "$1" "$2" "$3"
}
