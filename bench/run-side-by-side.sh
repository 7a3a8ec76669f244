#!/usr/bin/env bash
# Side-by-side collective benchmarks: coll/bufpool against Open MPI's default
# selection and the collective components of the running Open MPI (tuned,
# han with and without its persistent buffers, acoll, xhc, adapt, basic),
# plus a memcpy floor, or on the emulated cluster (--hosts).  Builds what it
# needs, runs, and writes a CSV, a Markdown table with ratios and targets,
# one log-log PNG per collective and a verdict at a glance; --footprint
# measures the memory each configuration keeps instead.  By default a short
# grid that answers "does bufpool help here?" in a minute or two (six
# collectives, 16 B to 4 MiB, at 2 processes and at the cores' count, 4 to
# 16); --full measures every collective, configuration and size to 64 MiB,
# --quick is CI's smoke run.  A progress line with the time left goes to
# stderr.  A configuration that crashes, hangs or computes wrongly is
# reported point by point and left out of the timings; the others go on.
# See docs/benchmarks.md for the method and the meaning of every column.
set -u -o pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(cd "$script_dir/.." && pwd)

all_collectives="allreduce reduce bcast allgather reduce_scatter reduce_scatter_block alltoall gather scatter scan exscan"
all_configs="bufpool default tuned han han_nopersist acoll xhc adapt basic"
# The default run's grid: the collectives that tell whether bufpool helps,
# and Open MPI's own choice with the peers that serve on one host (han where
# --hosts spans several); basic and han_nopersist are in --full.
first_collectives="allreduce bcast reduce allgather alltoall reduce_scatter"
first_configs="bufpool default tuned han acoll xhc adapt"
# Configurations whose failure fails the run; the others are Open MPI's own
# components (peers): their failures are reported, and the run goes on.
hard_configs="bufpool default floor"
osu_names="allreduce reduce bcast allgather reduce_scatter reduce_scatter_block alltoall gather scatter scan exscan"

usage() {
    cat <<EOF
Usage: $0 [options]

  What is measured (the options below override a part of it):
  (default)            a first look, 1-2 min on 2 cores: $first_collectives,
                       16 B to 4 MiB by factors of 4, 3 rounds, at 2 processes and at the
                       core count (4 to 16), bufpool against default, the floor and the
                       one-host peers ($first_configs)
  --full               every collective and configuration, 1 B to 64 MiB by factors of 2,
                       3 rounds, at 2 and 4 processes (the former default; ~30 min on 2 cores)
  --quick              CI's smoke run: every collective and configuration, 1 B to 4 MiB,
                       few iterations, 1 round, at 2 and 4 processes (under a minute)
  --osu-iterations     the --full grid with OSU's own iteration counts (1000/100, warm-up
                       200/10) and 5 rounds (hours)
  --np "LIST"          process counts (above the core count, runs oversubscribed: timings
                       there are mostly scheduling noise)
  --collectives "LIST" subset of: $all_collectives
  --configs "LIST"     subset of: $all_configs
                       (those this Open MPI or placement lacks are skipped with the
                       reason: han needs --hosts, acoll and xhc one host)
  --min-size SIZE      smallest message size (default 16, --full and --quick 1)
  --max-size SIZE      largest message size (default 4M, --full 64M; suffixes K M G)
  --size-factor N      each size N times the one before (default 4, --full and --quick 2)
  --rounds N           repetitions of every point; the median is kept (default 3)
  --mode injob|job     injob (default): configurations alternate size by size inside one
                       job per collective; job: one mpirun per configuration per round
                       (rounds interleaved), as for OSU binaries
  --osu DIR            also run the OSU micro-benchmarks found under DIR (osu_allreduce, ...)
                       with the same configurations, job mode
  --build-dir DIR      build tree to use or create (default: \$BUFPOOL_BUILD_DIR, or the current
                       directory if it is a configured build tree, or $srcdir/build); its
                       mpirun and Open MPI component directory are used, so a tree configured
                       --with-ompi=/opt/ompi5 runs against Open MPI 5
  --no-build           use the build tree as it is
  --out DIR            results directory (default: ./results/side-by-side-<date>)
  --form FORM          blocking (default), nonblocking, persistent or overlap: how
                       coll_latency calls each collective (its -F; see docs/benchmarks.md);
                       with nonblocking, persistent and overlap "default" is libnbc
  --test-calls N       overlap: MPI_Test calls spread over the computation (default 0)
  --persist-cycles N   persistent form: also N init/start/wait/free cycles of a 512 KiB
                       allreduce per process count, bufpool and default (libnbc) each in
                       a job of its own (test/mpi/test_coll_persist_mem), and the resident
                       and mapped memory each grew by per cycle after the first tenth
                       (at least 10) (default: 1000, --quick 300; 0: none; at least 20)
  --stat avg|p50       latency shown and compared: OSU's mean (avg, default) or each rank's
                       median call (p50; robust when other work shares the machine)
  --timeout SECONDS    per-job limit (default 1800); a hung job is killed and reported
  --mpirun-args "ARGS" extra arguments for every mpirun
  --hosts H            multi-host mode: run on H emulated hosts (test/multihost/cluster.sh,
                       network namespaces; needs root), built here and torn down at exit
  --ppn N              ranks per host in multi-host mode (default 1); --np becomes H x N
  --shape RATE         tc tbf rate on every host's link in multi-host mode (e.g. 1gbit)
  --point-timeout SEC  a point that takes longer is reported as hung (default 600)
  --footprint          measure memory instead of latency: bench/coll_footprint once per
                       configuration (one job each): burst of --footprint-size collectives,
                       then idle with an MPI call every 100 ms, memory at --idle checkpoints
  --footprint-size S   message size of the footprint's burst (default 64M)
  --idle "LIST"        the footprint's checkpoints, seconds after the burst (default "10 15")
  --inject SPEC        testing: passed to coll_latency --inject (crash|hang|wrong:CONFIG:COLL:SIZE)
  -h, --help           this message
EOF
}

die() {
    echo "run-side-by-side: $*" >&2
    exit 2
}

note() {
    echo "run-side-by-side: $*"
}

# ---------------------------------------------------------------------------
# Options
preset=default
nps=""
collectives=""
configs=""
min_size=""
max_size=""
rounds=""
mode=injob
osu_dir=""
build_dir=${BUFPOOL_BUILD_DIR:-}
do_build=1
out_dir=""
job_timeout=1800
extra_mpirun_args=""
stat=avg
form=blocking
test_calls=0
mh_hosts=""
mh_ppn=1
mh_shape=""
point_timeout=600
footprint=0
footprint_size=64M
idle_list="10 15"
inject=""
size_factor=""
persist_cycles=""

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) preset=quick ;;
        --full) preset=full ;;
        --osu-iterations) preset=osu ;;
        --np) nps=${2:?--np needs a list}; shift ;;
        --collectives) collectives=${2:?--collectives needs a list}; shift ;;
        --configs) configs=${2:?--configs needs a list}; shift ;;
        --min-size) min_size=${2:?--min-size needs a size}; shift ;;
        --max-size) max_size=${2:?--max-size needs a size}; shift ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift ;;
        --mode) mode=${2:?--mode needs injob or job}; shift ;;
        --osu) osu_dir=${2:?--osu needs a directory}; shift ;;
        --build-dir) build_dir=${2:?--build-dir needs a directory}; shift ;;
        --no-build) do_build=0 ;;
        --out) out_dir=${2:?--out needs a directory}; shift ;;
        --timeout) job_timeout=${2:?--timeout needs seconds}; shift ;;
        --stat) stat=${2:?--stat needs avg or p50}; shift ;;
        --form) form=${2:?--form needs a form}; shift ;;
        --test-calls) test_calls=${2:?--test-calls needs a number}; shift ;;
        --mpirun-args) extra_mpirun_args=${2?--mpirun-args needs a string}; shift ;;
        --hosts) mh_hosts=${2:?--hosts needs a number}; shift ;;
        --ppn) mh_ppn=${2:?--ppn needs a number}; shift ;;
        --shape) mh_shape=${2:?--shape needs a rate}; shift ;;
        --point-timeout) point_timeout=${2:?--point-timeout needs seconds}; shift ;;
        --footprint) footprint=1 ;;
        --footprint-size) footprint_size=${2:?--footprint-size needs a size}; shift ;;
        --idle) idle_list=${2:?--idle needs a list of seconds}; shift ;;
        --inject) inject=${2:?--inject needs KIND:CONFIG:COLL:SIZE}; shift ;;
        --size-factor) size_factor=${2:?--size-factor needs a number}; shift ;;
        --persist-cycles) persist_cycles=${2:?--persist-cycles needs a number}; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
    shift
done

# What each preset measures, and its iteration counts: OSU's structure
# (small/large split at 8 KiB), with the large counts capped by a byte
# budget so large points stay short; up to 8 KiB every preset warms up with
# OSU's 200 calls (cheap there), so that what a communicator sets up once
# (bufpool's node segment after its rows' first 128 calls) falls in the
# warm-up, as in OSU, and not in a point's timed calls.  The default is a
# first look at the collectives and sizes that tell whether bufpool helps;
# --full is the whole grid.
ncores=$(nproc 2>/dev/null || echo 1)
case $preset in
    default)
        colls_default=$first_collectives configs_default=$first_configs
        min_default=16 max_default=4M factor_default=4 rounds_default=3
        bench_iters="-i 100 -x 200 --iterations-large 50 --warmup-large 5 -b 64M"
        # 2 processes, and as many as the cores hold (at least 4, at most 16)
        np_cores=$ncores
        [ "$np_cores" -lt 4 ] && np_cores=4
        [ "$np_cores" -gt 16 ] && np_cores=16
        nps_default="2 $np_cores"
        [ "$ncores" -lt 2 ] && nps_default=2
        ;;
    quick)
        colls_default=$all_collectives configs_default=$all_configs
        min_default=1 max_default=4M factor_default=2 rounds_default=1 nps_default="2 4"
        bench_iters="-i 20 -x 200 --iterations-large 10 --warmup-large 2 -b 16M"
        ;;
    full)
        colls_default=$all_collectives configs_default=$all_configs
        min_default=1 max_default=64M factor_default=2 rounds_default=3 nps_default="2 4"
        bench_iters="-i 100 -x 200 --iterations-large 50 --warmup-large 5 -b 64M"
        ;;
    osu)
        colls_default=$all_collectives configs_default=$all_configs
        min_default=1 max_default=64M factor_default=2 rounds_default=5 nps_default="2 4"
        bench_iters="-i 1000 -x 200 --iterations-large 100 --warmup-large 10"
        ;;
esac
# The memory footprint compares every configuration, as before.
[ "$footprint" = 1 ] && configs_default=$all_configs nps_default="2 4"
collectives=${collectives:-$colls_default}
configs=${configs:-$configs_default}
nps=${nps:-$nps_default}
min_size=${min_size:-$min_default}
max_size=${max_size:-$max_default}
size_factor=${size_factor:-$factor_default}
if [ -z "$persist_cycles" ]; then
    persist_cycles=1000
    [ "$preset" = quick ] && persist_cycles=300
fi
[[ $persist_cycles =~ ^(0|[1-9][0-9]+)$ ]] && { [ "$persist_cycles" = 0 ] || [ "$persist_cycles" -ge 20 ]; } ||
    die "--persist-cycles must be 0 or a number >= 20"
[ "$form" = persistent ] || persist_cycles=0
rounds=${rounds:-$rounds_default}

case $mode in injob | job) ;; *) die "--mode must be injob or job, not '$mode'" ;; esac
case $stat in avg | p50) ;; *) die "--stat must be avg or p50, not '$stat'" ;; esac
case $form in blocking | nonblocking | persistent | overlap) ;; *) die "--form must be blocking, nonblocking, persistent or overlap, not '$form'" ;; esac
[[ $test_calls =~ ^[0-9]+$ ]] || die "--test-calls must be a number >= 0"
[ "$form" = blocking ] || [ -z "$osu_dir" ] || die "--osu runs the blocking OSU binaries only"
bench_iters="$bench_iters -F $form --test-calls $test_calls --size-factor $size_factor"
[[ $rounds =~ ^[1-9][0-9]?$ ]] || die "--rounds must be 1..99, not '$rounds'"
[[ $job_timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds"
[[ $max_size =~ ^[1-9][0-9]*[KMGkmg]?$ ]] || die "--max-size must look like 65536, 64K or 64M, not '$max_size'"
[[ $min_size =~ ^[1-9][0-9]*[KMGkmg]?$ ]] || die "--min-size must look like 16, 1K or 1M, not '$min_size'"
# OSU's -m wants plain bytes.
case $max_size in
    *[kK]) max_bytes=$((${max_size%?} << 10)) ;;
    *[mM]) max_bytes=$((${max_size%?} << 20)) ;;
    *[gG]) max_bytes=$((${max_size%?} << 30)) ;;
    *) max_bytes=$max_size ;;
esac
for np in $nps; do
    [[ $np =~ ^[1-9][0-9]*$ ]] && [ "$np" -ge 2 ] || die "--np: '$np' is not a process count >= 2"
done
for c in $collectives; do
    case " $all_collectives " in *" $c "*) ;; *) die "--collectives: unknown '$c' (known: $all_collectives)" ;; esac
done
for c in $configs; do
    case " $all_configs " in *" $c "*) ;; *) die "--configs: unknown '$c' (known: $all_configs)" ;; esac
done
[[ $size_factor =~ ^([2-9]|1[0-6])$ ]] || die "--size-factor must be 2..16"
[[ $point_timeout =~ ^[0-9]+$ ]] || die "--point-timeout must be a number of seconds (0: no limit)"
[[ $footprint_size =~ ^[1-9][0-9]*[KMGkmg]?$ ]] || die "--footprint-size must look like 64M"
for t in $idle_list; do
    [[ $t =~ ^[0-9]+$ ]] || die "--idle: '$t' is not a number of seconds"
done
if [ -n "$osu_dir" ] && [ ! -d "$osu_dir" ]; then
    die "--osu: '$osu_dir' is not a directory (give the OSU installation or build directory)"
fi
command -v python3 >/dev/null || die "python3 is needed for the report (apt-get install python3)"

out_dir=${out_dir:-$PWD/results/side-by-side-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out_dir/logs" || die "cannot create $out_dir"
out_dir=$(cd "$out_dir" && pwd)
raw_csv=$out_dir/raw.csv
rm -f "$raw_csv"
start_time=$(date +%s)

# ---------------------------------------------------------------------------
# Build
if [ -z "$build_dir" ]; then
    if [ -f ./config.status ] && grep -q ompi-bufpool ./config.status 2>/dev/null; then
        build_dir=$PWD
    else
        build_dir=$srcdir/build
    fi
fi
mkdir -p "$build_dir" || die "cannot create build directory $build_dir"
build_dir=$(cd "$build_dir" && pwd)
build_log=$out_dir/logs/build.log
: >"$build_log"

if [ "$do_build" = 1 ]; then
    if [ ! -f "$build_dir/config.status" ]; then
        if [ ! -x "$srcdir/configure" ]; then
            note "running autogen.sh in $srcdir"
            (cd "$srcdir" && ./autogen.sh) >>"$build_log" 2>&1 || die "autogen.sh failed; see $build_log"
        fi
        note "configuring in $build_dir"
        (cd "$build_dir" && "$srcdir/configure") >>"$build_log" 2>&1 || die "configure failed; see $build_log"
    fi
    # In the tree's own order (Makefile.am's SUBDIRS): common/ first (the
    # libraries the components and coll_latency link), then the components,
    # then the benchmark; a fresh tree has none of them yet.
    note "building common/ in $build_dir"
    make -C "$build_dir/common" >>"$build_log" 2>&1 || die "building common/ failed; see $build_log"
    # The components may not build yet (work in progress); the stock
    # configurations run regardless.
    if make -C "$build_dir/opal-mca-mpool-regpar" >>"$build_log" 2>&1 &&
        make -C "$build_dir/ompi-mca-coll-bufpool" >>"$build_log" 2>&1; then
        note "components built"
    else
        note "the components did not build (see $build_log); bufpool will be skipped"
    fi
    note "building coll_latency, coll_toll and coll_footprint in $build_dir"
    make -C "$build_dir/bench" coll_latency coll_toll coll_footprint >>"$build_log" 2>&1 || die "building coll_latency failed; see $build_log"
    if [ "$persist_cycles" != 0 ]; then
        note "building test_coll_persist_mem in $build_dir/test"
        make -C "$build_dir/test" mpi/test_coll_persist_mem >>"$build_log" 2>&1 ||
            die "building test_coll_persist_mem failed; see $build_log"
    fi
fi
build_seconds=$(($(date +%s) - start_time))
[ "$do_build" = 1 ] && note "build ready in $build_dir ($build_seconds s)"
bench_bin=$build_dir/bench/coll_latency
[ -x "$bench_bin" ] || die "$bench_bin is missing; run without --no-build or build it (make -C $build_dir/bench coll_latency)"

# ---------------------------------------------------------------------------
# Configurations
ompi_component_dir=$(sed -n 's/^OMPI_SYSTEM_COMPONENT_DIR = //p' "$build_dir/bench/Makefile" 2>/dev/null)
mpirun_bin=$(sed -n 's/^MPIRUN = //p' "$build_dir/bench/Makefile" 2>/dev/null)
mpirun_bin=${mpirun_bin:-mpirun}
[ -n "$ompi_component_dir" ] || ompi_component_dir=$(dirname "$(ls -d /usr/lib/*/openmpi/lib/openmpi3/mca_coll_basic.so 2>/dev/null | head -n 1)" 2>/dev/null)
bufpool_so=$build_dir/ompi-mca-coll-bufpool/.libs/mca_coll_bufpool.so
regpar_so=$build_dir/opal-mca-mpool-regpar/.libs/mca_mpool_regpar.so
have_bufpool=0
component_path_env=()
if [ -f "$bufpool_so" ] && [ -f "$regpar_so" ]; then
    have_bufpool=1
    # Open MPI tries to open every file of a component directory, and .libs
    # also holds the objects: point it at a directory of the two libraries.
    component_dir=$out_dir/components
    mkdir -p "$component_dir"
    ln -sf "$bufpool_so" "$regpar_so" "$component_dir/"
    component_path_env=(env "OMPI_MCA_mca_base_component_path=$ompi_component_dir:$component_dir")
fi
run_configs=""
for c in $configs; do
    if [ "$c" = bufpool ] && [ "$have_bufpool" = 0 ]; then
        note "bufpool skipped: $bufpool_so and $regpar_so are not both built"
        continue
    fi
    run_configs="$run_configs $c"
done
run_configs=${run_configs# }
[ -n "$run_configs" ] || die "no configuration left to run"

# mpirun arguments of one configuration in job mode (and for the footprint):
# the component first by its priority, bufpool not loaded.
job_config_args() {
    case $1 in
        bufpool) ;;
        default) echo "--mca coll ^bufpool" ;;
        tuned) echo "--mca coll ^bufpool --mca coll_tuned_priority 100" ;;
        han) echo "--mca coll ^bufpool --mca coll_han_priority 100" ;;
        han_nopersist) echo "--mca coll ^bufpool --mca coll_han_priority 100 --mca coll_han_use_persist_buffers 0" ;;
        acoll) echo "--mca coll ^bufpool --mca coll_acoll_priority 100 --mca coll_acoll_comm_size_thresh 2" ;;
        xhc) echo "--mca coll ^bufpool --mca coll_xhc_priority 100" ;;
        adapt) echo "--mca coll ^bufpool --mca coll_adapt_priority 100" ;;
        basic) echo "--mca coll basic,self,libnbc" ;;
    esac
}

# acoll takes only communicators of at least coll_acoll_comm_size_thresh (16)
# ranks, a read-only variable: in-job runs lower it for the whole job.  At
# acoll's priority (0) that changes no other configuration's selection:
# tuned (30) has every function acoll has.
if [[ " $configs " == *" acoll "* ]] && [ -z "${OMPI_MCA_coll_acoll_comm_size_thresh:-}" ]; then
    export OMPI_MCA_coll_acoll_comm_size_thresh=2
fi

# Multi-host mode: the emulated cluster, always torn down (see
# docs/multihost.md); mpirun becomes the cluster's wrapper, which adds the
# hosts, the TCP transport on the cluster's subnet and mpi_yield_when_idle.
if [ -n "$mh_hosts" ]; then
    mh_cluster=$srcdir/test/multihost/cluster.sh
    BUFPOOL_CLUSTER_PREFIX=${BUFPOOL_CLUSTER_PREFIX:-bpb$$}
    export BUFPOOL_CLUSTER_PREFIX
    trap 'sh "$mh_cluster" down >/dev/null 2>&1' EXIT
    trap 'exit 1' INT TERM HUP
    sh "$mh_cluster" up "$mh_hosts" || die "cannot build the emulated cluster (root and network namespaces needed)"
    if [ -n "$mh_shape" ]; then
        sh "$mh_cluster" shape "$mh_shape" || die "tc tbf shaping $mh_shape failed"
    fi
    BUFPOOL_MH_MPIRUN=$mpirun_bin
    BUFPOOL_MH_PLACEMENT=$(yes "$mh_ppn" | head -n "$mh_hosts" | paste -sd, -)
    export BUFPOOL_MH_MPIRUN BUFPOOL_MH_PLACEMENT
    mpirun_bin=$srcdir/test/multihost/mpirun.sh
    nps=$((mh_hosts * mh_ppn))
    note "multi-host: $mh_hosts hosts x $mh_ppn ranks, link shaping ${mh_shape:-none}"
fi

mpirun_base() {
    local np=$1
    local args="-np $np"
    [ "$(id -u)" = 0 ] && args="$args --allow-run-as-root"
    if [ "$np" -gt "$ncores" ]; then
        # Spinning ranks on a shared core would time the spinning, not the algorithm.
        args="$args --oversubscribe --mca mpi_yield_when_idle 1"
    fi
    echo "$args $extra_mpirun_args"
}

# Runs one job under the time limit; its output goes to a log.
failures=""
hard_failure=0
run_job() {
    local log=$1
    shift
    echo "+ $*" >"$log"
    local before shm_job=BUFPOOL_SHM_JOB=run-side-by-side.$$.$RANDOM$RANDOM
    before=$(sh "$srcdir/tools/bufpool-shm-leftovers.sh" list)
    timeout --signal=TERM --kill-after=30 "$job_timeout" env "$shm_job" "$@" >>"$log" 2>&1
    local rc=$?
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        echo "# run-side-by-side: job killed after ${job_timeout}s" >>"$log"
        # Open MPI 4.1's mpirun, stopped, may leave its ranks' files (and
        # ranks, which carry shm_job: waited for, then stopped).
        local removed
        removed=$(printf '%s\n' "$before" |
            sh "$srcdir/tools/bufpool-shm-leftovers.sh" remove "$shm_job" | tr '\n' ' ')
        [ -z "$removed" ] ||
            echo "# run-side-by-side: removed what Open MPI left of it in /dev/shm: ${removed% }" >>"$log"
    fi
    return $rc
}

# A failure of the run itself (a job that died before its first point, a
# build step, a report): always fails the run.
record_failure() {
    failures="$failures
- FAILED: $1 (log: $2)"
    hard_failure=1
    note "FAILED: $1; see $2"
}

# A point that crashed or hung: one line of failures.txt for people and
# one row of failures.csv for the report, which leaves the point out of the
# timings.  Only bufpool's, default's and the floor's fail the run.
failures_csv=$out_dir/failures.csv
rm -f "$failures_csv"
record_point_failure() {
    local np=$1 coll=$2 cfg=$3 size=$4 kind=$5 log=$6
    [ -s "$failures_csv" ] || echo "np,collective,config,size,kind,log" >"$failures_csv"
    echo "$np,$coll,$cfg,$size,$kind,${log#"$out_dir"/}" >>"$failures_csv"
    failures="$failures
- FAILED: np=$np $cfg $coll $size B: $kind (log: ${log#"$out_dir"/})"
    case " $hard_configs " in *" $cfg "*) hard_failure=1 ;; esac
    note "FAILED: np=$np $cfg $coll at $size bytes: $kind; see $log"
}

load_before=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
if awk -v l="$load_before" -v n="$ncores" 'BEGIN { exit !(l > n / 2) }'; then
    note "warning: load average $load_before on $ncores cores; other work will add noise (ratios within this run stay comparable, absolute times less so)"
fi
# More ranks than cores on one host: they share cores (mpi_yield_when_idle),
# and the timings measure the scheduler as much as the collective.
oversubscribed=""
if [ -z "$mh_hosts" ]; then
    for np in $nps; do
        [ "$np" -gt "$ncores" ] && oversubscribed="$oversubscribed $np"
    done
    oversubscribed=${oversubscribed# }
    [ -n "$oversubscribed" ] &&
        note "warning: np=${oversubscribed// /, np=} runs oversubscribed on $ncores cores: its timings are mostly scheduling noise (the ratios between configurations, measured side by side in one job, say more)"
fi
echo "# run-side-by-side meta mode=$mode preset=$preset rounds=$rounds min_size=$min_size max_size=$max_size size_factor=$size_factor oversubscribed=${oversubscribed// /,} hosts=${mh_hosts:-1} ppn=$mh_ppn form=$form nps=$nps configs=$run_configs" >"$out_dir/meta.txt"
notes_txt=$out_dir/notes.txt
: >"$notes_txt"

# One collective's points in one job, resumed after a crash or a hang:
# coll_latency's progress file names the point it was in; that point is
# recorded as FAILED and skipped, and the job runs again from its size (the
# rows already written stay: more repetitions for those points).  A
# configuration that fails at 3 sizes of one collective is left out of its
# larger sizes.  Arguments: np, collective, configuration list, CSV tag, log
# name without .log; rp_mpirun_args and rp_prog_args (arrays) go before and
# after the program.
rp_mpirun_args=()
rp_prog_args=()
run_points() {
    local np=$1 coll=$2 cfgs=$3 tag=$4 logbase=$5
    local min=$min_size skip="" attempt=0 rc log
    local progress=$logbase.progress live
    local -A fails=()
    while :; do
        log=$logbase.log
        [ "$attempt" -gt 0 ] && log=$logbase-resume$attempt.log
        rm -f "$progress"
        # coll_latency rewrites the point in progress before every point:
        # on tmpfs where there is one, copied to the logs after the job.  On
        # ext4 the rewrite woke the kernel's journal and writeback threads
        # inside the next point's timing, which on 2 cores fell on bufpool's
        # (measured right after the copy floor's at each new size): +0.1 to
        # 0.2 us on the mean of 0.25 us calls, the median unmoved.
        live=$(mktemp /dev/shm/bufpool-progress.XXXXXX 2>/dev/null) || live=$progress
        progress_monitor_start "$np" "$live"
        # shellcheck disable=SC2046,SC2086
        run_job "$log" "${component_path_env[@]}" "$mpirun_bin" $(mpirun_base "$np") \
            "${rp_mpirun_args[@]}" "$bench_bin" "${rp_prog_args[@]}" \
            -c "$coll" -C "$cfgs" -m "$min:$max_size" $bench_iters -r "$rounds" \
            -o "$raw_csv" -t "$tag" --progress "$live" --point-timeout "$point_timeout" \
            ${skip:+--skip "$skip"} ${inject:+--inject "$inject"}
        rc=$?
        progress_monitor_stop
        if [ "$live" != "$progress" ]; then
            if [ -s "$live" ]; then cp "$live" "$progress"; fi
            rm -f "$live"
        fi
        grep -h '^# configuration .* skipped' "$log" | sed "s/^# /np=$np: /" >>"$notes_txt"
        if grep -q '^# coll_latency: done' "$log"; then
            # wrong results are in the CSV's check column: the report lists them.
            # A crash after the last point (freeing the communicators,
            # MPI_Finalize) is a failure of the job all the same; exit
            # status 1 with the data-check line is coll_latency's own
            # verdict on wrong points, which the report handles.
            if [ "$rc" != 0 ] && ! { [ "$rc" = 1 ] && grep -q '^# DATA CHECK FAILED' "$log"; }; then
                record_failure "np=$np $coll ($cfgs): the job exited with status $rc after its last point (freeing its communicators or MPI_Finalize)" "$log"
                return 1
            fi
            return 0
        fi
        if [ ! -s "$progress" ]; then
            record_failure "np=$np $coll ($cfgs): the job died before its first point" "$log"
            return 1
        fi
        local pcoll pcfg psize prep kind
        read -r pcoll pcfg psize prep <"$progress"
        kind="crashed (exit status $rc; repetition $((prep + 1)))"
        if grep -q '^# coll_latency: point timed out' "$log"; then
            kind="hung: no result in ${point_timeout} s (repetition $((prep + 1)))"
        elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            kind="hung: job killed after ${job_timeout} s"
        fi
        record_point_failure "$np" "$pcoll" "$pcfg" "$psize" "$kind" "$log"
        fails[$pcfg]=$((${fails[$pcfg]:-0} + 1))
        if [ "${fails[$pcfg]}" -ge 3 ]; then
            skip="$skip${skip:+,}$pcfg:$pcoll:$psize+"
            echo "np=$np: configuration $pcfg left out of $pcoll from $psize bytes: it failed at 3 sizes" >>"$notes_txt"
        else
            skip="$skip${skip:+,}$pcfg:$pcoll:$psize"
        fi
        min=$psize
        attempt=$((attempt + 1))
        if [ "$attempt" -ge 12 ]; then
            record_failure "np=$np $coll: 12 failed jobs, giving up on this collective" "$log"
            return 1
        fi
    done
}

# In-job mode: one job per collective; configurations alternate inside it,
# size by size, repetition by repetition.
run_injob() {
    local np=$1 coll=$2
    local cfgs="floor,${run_configs// /,}"
    note "np=$np $coll: $cfgs ($rounds rounds, in one job)"
    run_points "$np" "$coll" "$cfgs" injob "$out_dir/logs/np$np-$coll"
    local rc=$?
    progress_job_done
    return $rc
}

# Job mode: round-robin of whole jobs, the configuration order rotating each
# round; the floor is measured in the default job.
run_jobmode() {
    local np=$1 coll=$2
    local -a order=($run_configs)
    local n=${#order[@]}
    for ((round = 0; round < rounds; round++)); do
        for ((k = 0; k < n; k++)); do
            local c=${order[$(((k + round) % n))]}
            local cfg="world"
            [ "$c" = default ] && cfg="world,floor"
            note "np=$np $coll: $c, round $((round + 1))/$rounds"
            read -r -a rp_mpirun_args <<<"$(job_config_args "$c")"
            rp_prog_args=(-n "$c")
            rounds=1 run_points "$np" "$coll" "$cfg" "job-r$round" \
                "$out_dir/logs/np$np-$coll-$c-r$round"
            progress_job_done
            rp_mpirun_args=()
            rp_prog_args=()
        done
    done
}

# OSU binaries: job mode only; their rows join the CSV as osu_<coll>.
run_osu() {
    local np=$1 coll=$2 bin=$3
    local -a order=($run_configs)
    local n=${#order[@]}
    local osu_iters
    case $preset in
        quick) osu_iters="-i 20 -x 5" ;;
        default | full) osu_iters="-i 100 -x 10" ;;
        osu) osu_iters="" ;;
    esac
    for ((round = 0; round < rounds; round++)); do
        for ((k = 0; k < n; k++)); do
            local c=${order[$(((k + round) % n))]}
            local log=$out_dir/logs/osu-np$np-$coll-$c-r$round.log
            case $c in han | han_nopersist | acoll | xhc)
                # OSU cannot tell where these serve (placement, exclusions)
                [ "$round" = 0 ] && echo "np=$np: osu_$coll not run with $c: OSU's binaries run bufpool, default, tuned, adapt and basic only" >>"$notes_txt"
                continue
                ;;
            esac
            note "np=$np osu_$coll: $c, round $((round + 1))/$rounds"
            # shellcheck disable=SC2046
            if run_job "$log" "${component_path_env[@]}" "$mpirun_bin" $(mpirun_base "$np") \
                $(job_config_args "$c") "$bin" -f -m "1:$max_bytes" $osu_iters; then
                python3 "$script_dir/coll_report.py" --parse-osu "$log" --np "$np" \
                    --collective "osu_$coll" --config "$c" --tag "osu-r$round" >>"$raw_csv"
            else
                record_failure "np=$np osu_$coll $c round $round" "$log"
            fi
        done
    done
}

# ---------------------------------------------------------------------------
# Footprint mode: bench/coll_footprint once per configuration, one job each
# (memory is counted per process); then the table, and nothing else.
run_footprints() {
    local fp_bin=$build_dir/bench/coll_footprint
    [ -x "$fp_bin" ] || die "$fp_bin is missing; run without --no-build or build it (make -C $build_dir/bench coll_footprint)"
    local fp_csv=$out_dir/footprint.csv idle_arg np c log avail colls fnote
    idle_arg=$(echo $idle_list | tr ' ' ',')
    echo "np,hosts,config,at,rss_mib,anon_mib,pool_held_mib,pool_peak_mib,pool_cap_mib,scratch_peak_mib,check,note" >"$fp_csv"
    for np in $nps; do
        # Which configurations this Open MPI and placement can run.
        log=$out_dir/logs/footprint-np$np-configs.log
        # shellcheck disable=SC2046
        run_job "$log" "${component_path_env[@]}" "$mpirun_bin" $(mpirun_base "$np") \
            "$bench_bin" -C "${run_configs// /,}" --list-configs ||
            record_failure "np=$np: coll_latency --list-configs" "$log"
        grep -h '^# configuration .* skipped' "$log" | sed "s/^# /np=$np: /" >>"$notes_txt"
        avail=$(sed -n 's/^# configuration \([a-z_]*\) available$/\1/p' "$log")
        for c in $avail; do
            colls=allreduce,allgather,bcast,reduce_scatter_block,alltoall,gather,scatter
            fnote=""
            if [ "$c" = xhc ]; then
                # Its reductions need XPMEM (the latency runs leave them out
                # too), and above it tuned's reduce_scatter_block calls
                # MPI_Reduce, which xhc then serves (it crashed there).
                colls=allgather,bcast,alltoall,gather,scatter
                fnote="burst without allreduce and reduce_scatter_block: xhc's reductions need XPMEM"
            fi
            log=$out_dir/logs/footprint-np$np-$c.log
            note "np=$np footprint: $c ($footprint_size burst, idle checkpoints $idle_arg s)"
            local -a args=()
            read -r -a args <<<"$(job_config_args "$c")"
            # shellcheck disable=SC2046
            if ! run_job "$log" "${component_path_env[@]}" "$mpirun_bin" $(mpirun_base "$np") \
                "${args[@]}" "$fp_bin" -s "$footprint_size" -i "$idle_arg" -l "$c" -c "$colls" -v 1; then
                if grep -q "^footprint $c check=FAILED" "$log"; then
                    record_point_failure "$np" footprint "$c" "$footprint_size" "computed wrongly (coll_footprint's check)" "$log"
                else
                    record_point_failure "$np" footprint "$c" "$footprint_size" "crashed or hung" "$log"
                fi
            fi
            awk -v np="$np" -v hosts="${mh_hosts:-1}" -v c="$c" -v note="$fnote" '
                $1 == "footprint" && $2 == c && $3 ~ /^check=/ { check = substr($3, 7) }
                $1 == "footprint" && $2 == c && $3 ~ /^at=/ {
                    delete v
                    for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                    rows[++n] = np "," hosts "," c "," v["at"] "," v["rss"] "," v["anon"] "," \
                        (("pool_held" in v) ? v["pool_held"] : "") "," (("pool_peak" in v) ? v["pool_peak"] : "") "," \
                        (("pool_cap" in v) ? v["pool_cap"] : "") "," (("scratch_peak" in v) ? v["scratch_peak"] : "")
                }
                END { for (i = 1; i <= n; i++) print rows[i] "," check "," note }' "$log" >>"$fp_csv"
        done
    done
}

if [ "$footprint" = 1 ]; then
    run_footprints
    end_time=$(date +%s)
    wall=$((end_time - start_time))
    echo "# run-side-by-side footprint_size=$footprint_size idle=${idle_list// /,} wall_seconds=$wall load_before=$load_before load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0) host=$(uname -n) cores=$ncores hosts=${mh_hosts:-1} ppn=${mh_ppn}" >>"$out_dir/meta.txt"
    [ -n "$failures" ] && printf '%s\n' "$failures" >"$out_dir/failures.txt"
    python3 "$script_dir/coll_report.py" --footprint "$out_dir/footprint.csv" --meta "$out_dir/meta.txt" \
        --out "$out_dir" || die "the footprint report failed; the data is in $out_dir/footprint.csv"
    echo
    echo "Footprint ($((wall / 60)) min $((wall % 60)) s):"
    echo "  data             $out_dir/footprint.csv"
    echo "  table            $out_dir/footprint.md"
    echo "  logs             $out_dir/logs/"
    [ -n "$failures" ] && echo "Failures:$failures"
    [ "$hard_failure" = 1 ] && exit 1
    exit 0
fi

# ---------------------------------------------------------------------------
# Progress: the points the jobs will measure (coll_latency --list-points, one
# short job per process count), each weighed by a rough model of its cost in
# seconds on 2 cores; a line on stderr says how many points are done,
# the time spent and the time left (the weight still to measure at the rate
# measured so far), rewritten every second on a terminal, one line per job
# otherwise.
plan_txt=$out_dir/plan.txt
: >"$plan_txt"
progress_tty=0
[ -t 2 ] && progress_tty=1
monitor_pid=""
jobs_done=0
jobs_total=0
# The model (fitted to runs on this project's 2-core machine, small and
# large sizes alike, under some load): per call, 1 us plus the bytes a rank
# moves at 2 GB/s (per-rank blocks: np/2 times the size); per point, its
# buffers' fill and data check and bookkeeping, 150 us plus 4 ns a byte;
# ranks beyond 2 add a log factor; more ranks than cores multiply it (they
# share the cores); a job's start 0.4 s.
weight_awk='
function over(np) { return (1 + log(np / 2) / log(2)) * (np > ncores ? np / ncores : 1) }
function traffic(coll, np) {
    return (coll ~ /gather|alltoall|scatter/ && coll !~ /reduce_scatter/) ? np / 2 : 1
}
function point_w(np, coll, size, it, wu) {
    return over(np) * ((it + wu) * (1 + size * traffic(coll, np) / 2000) + size * 4 / 1000 + 150) / 1e6
}
function job_w(np) { return 0.4 * (np > ncores ? np / ncores : 1) }'

# plan.txt: np collective config size iterations warmup repetitions weight
for np in $nps; do
    log=$out_dir/logs/np$np-plan.log
    # shellcheck disable=SC2046,SC2086
    if run_job "$log" "${component_path_env[@]}" "$mpirun_bin" $(mpirun_base "$np") \
        "$bench_bin" -c "$(echo $collectives | tr ' ' ',')" -C "floor,${run_configs// /,}" \
        -m "$min_size:$max_size" $bench_iters -r "$rounds" --list-points; then
        awk -v np="$np" -v ncores="$ncores" "$weight_awk"'
            $1 == "#" && $2 == "point" {
                print np, $3, $4, $5, $6, $7, $8, point_w(np, $3, $5, $6, $7)
            }' "$log" >>"$plan_txt"
    else
        note "np=$np: coll_latency --list-points failed (see $log); no estimate of the time left"
    fi
done
n_colls=$(echo $collectives | wc -w)
n_nps=$(echo $nps | wc -w)
if [ "$mode" = injob ]; then
    jobs_total=$((n_nps * n_colls))
else
    jobs_total=$((n_nps * n_colls * $(echo $run_configs | wc -w) * rounds))
fi
# Total points and weight (jobs included), for the line and the estimate.
read -r plan_points plan_weight <<<"$(awk -v ncores="$ncores" -v nps="$nps" -v colls="$n_colls" \
    -v jobs="$jobs_total" "$weight_awk"'
    { n += $7; w += $7 * $8 }
    END {
        k = split(nps, P, " ")
        for (i = 1; i <= k; i++) w += job_w(P[i]) * jobs / k
        printf "%d %.1f\n", n, w
    }' "$plan_txt")"

fmt_mmss() {
    printf '%d:%02d' $(($1 / 60)) $(($1 % 60))
}

# One progress line: points done (rows of raw.csv), time spent, time left;
# optionally the point running now (coll_latency's progress file).
progress_line() {
    local np=${1:-} progress_file=${2:-} now_point=""
    if [ -n "$progress_file" ] && [ -s "$progress_file" ]; then
        now_point=$(head -n 1 "$progress_file" 2>/dev/null)
    fi
    awk -F, -v plan="$plan_txt" -v total="$plan_weight" -v points="$plan_points" \
        -v spent="$(($(date +%s) - measure_start))" -v jobs="$jobs_done" -v ncores="$ncores" \
        -v nps="$nps" -v jobs_total="$jobs_total" -v np="$np" -v now_point="$now_point" \
        "$weight_awk"'
        function mmss(t) { t = int(t + 0.5); return sprintf("%d:%02d", int(t / 60), t % 60) }
        function human(s) {
            if (s >= 1048576 && s % 1048576 == 0) return (s / 1048576) " MiB"
            if (s >= 1024 && s % 1024 == 0) return (s / 1024) " KiB"
            return s " B"
        }
        BEGIN {
            while ((getline line < plan) > 0) {
                split(line, f, " ")
                w[f[1] " " f[2] " " f[4]] = f[8]
            }
        }
        NR > 1 { done_w += w[$2 " " $3 " " $5]; n++ }
        END {
            k = split(nps, P, " ")
            for (i = 1; i <= k; i++) done_w += job_w(P[i]) * jobs / k
            if (done_w > total) done_w = total
            # the prior (the model: 1 s per unit) weighs like 5 s of measuring
            rate = (spent + 5) / (done_w + 5)
            left = (total - done_w) * rate
            pct = total > 0 ? int(100 * done_w / total + 0.5) : 0
            if (pct > 99 && n < points) pct = 99
            line = sprintf("[%3d%%] %d of %d points, %s spent, about %s left", pct, n, points,
                           mmss(spent), mmss(left))
            if (now_point != "") {
                split(now_point, q, " ")
                line = line sprintf("; np=%s %s %s %s", np, q[1], human(q[3]), q[2])
            }
            print line
        }' "$raw_csv" 2>/dev/null || true
}

# On a terminal: the line rewritten every second while a job runs (the
# loop ends with the runner if it is killed).
progress_monitor_start() {
    [ "$progress_tty" = 1 ] && [ -s "$plan_txt" ] || return 0
    local np=$1 progress_file=$2 parent=$$
    (
        while kill -0 "$parent" 2>/dev/null; do
            printf '\r%s\033[K' "$(progress_line "$np" "$progress_file")" >&2
            sleep 1
        done
    ) &
    monitor_pid=$!
}

progress_monitor_stop() {
    [ -n "$monitor_pid" ] || return 0
    kill "$monitor_pid" 2>/dev/null
    wait "$monitor_pid" 2>/dev/null
    monitor_pid=""
    printf '\r\033[K' >&2
}

# After each job: one line (kept on a terminal too, as the job's record).
progress_job_done() {
    jobs_done=$((jobs_done + 1))
    [ -s "$plan_txt" ] || return 0
    progress_line >&2
}

measure_start=$(date +%s)
if [ -s "$plan_txt" ]; then
    estimate=$(awk -v w="$plan_weight" 'BEGIN { printf "%d", w + 0.5 }')
    note "measuring $plan_points points (${collectives// /, } at np=${nps// /, np=}; sizes $min_size to $max_size by x$size_factor; $rounds round(s); ${run_configs// /, }, floor): about $(fmt_mmss "$estimate") on 2 cores (first estimate; the progress line on stderr follows the measured rate)"
fi

for np in $nps; do
    for coll in $collectives; do
        if [ "$mode" = injob ]; then
            run_injob "$np" "$coll"
        else
            run_jobmode "$np" "$coll"
        fi
    done
done

if [ -n "$osu_dir" ]; then
    for np in $nps; do
        for coll in $osu_names; do
            bin=$(find "$osu_dir" -type f -perm -u+x -name "osu_$coll" 2>/dev/null | head -n 1)
            if [ -z "$bin" ]; then
                note "osu_$coll not found under $osu_dir; skipped"
                continue
            fi
            run_osu "$np" "$coll" "$bin"
        done
    done
fi

measure_seconds=$(($(date +%s) - measure_start))

# The toll of bufpool's hand-back (bench/coll_toll): 8-byte allreduce and
# bcast handed back by bufpool against Open MPI calling the previous module
# itself, in one job, at every process count of the run the cores hold
# without oversubscription (at 2 processes in any case).
toll_bin=$build_dir/bench/coll_toll
toll_txt=$out_dir/toll.txt
if [ "$have_bufpool" = 1 ] && [ -x "$toll_bin" ] && [ -z "$mh_hosts" ]; then
    case $preset in
        quick | default) toll_calls=200000 ;;
        *) toll_calls=1000000 ;;
    esac
    : >"$toll_txt"
    for np in $nps; do
        if [ "$np" -gt "$ncores" ] && [ "$np" != 2 ]; then
            continue
        fi
        log=$out_dir/logs/toll-np$np.log
        note "np=$np: the toll of the hand-back ($toll_calls calls per collective and configuration)"
        # shellcheck disable=SC2046
        if run_job "$log" "${component_path_env[@]}" "$mpirun_bin" $(mpirun_base "$np") \
            "$toll_bin" -n "$toll_calls" -c allreduce,bcast; then
            grep -v '^+ ' "$log" >>"$toll_txt"
        else
            record_failure "np=$np coll_toll" "$log"
        fi
    done
fi

# Persistent collectives' memory over many init/start/wait/free cycles
# (issue 20: libnbc keeps each request's schedule and scratch at
# MPI_Request_free): test_coll_persist_mem, bufpool and default in jobs of
# their own, its limit lifted so that it reports rather than fails.
persist_txt=$out_dir/persist_mem.txt
persist_bin=$build_dir/test/mpi/test_coll_persist_mem
if [ "$persist_cycles" != 0 ]; then
    if [ ! -x "$persist_bin" ]; then
        note "persistent memory cycles skipped: $persist_bin is not built (make -C $build_dir/test mpi/test_coll_persist_mem)"
    else
        echo "np,config,cycles,what,bytes,bytes_per_cycle" >"$out_dir/persist_mem.csv"
        : >"$persist_txt"
        for np in $nps; do
            for c in bufpool default; do
                case " $run_configs " in *" $c "*) ;; *) continue ;; esac
                log=$out_dir/logs/persist-mem-np$np-$c.log
                note "np=$np: $persist_cycles persistent allreduce init/free cycles, $c"
                cfg_args=()
                read -r -a cfg_args <<<"$(job_config_args "$c")"
                # The first cycles' one-time allocations (Open MPI's free
                # lists, a first extension of the heap by 128 KiB) are not
                # growth per cycle: a tenth of the cycles and at least ten
                # go before the measurement starts.
                warm=$((persist_cycles / 10 + 1))
                [ "$warm" -ge 10 ] || warm=10
                # shellcheck disable=SC2046
                if run_job "$log" "${component_path_env[@]}" "$mpirun_bin" $(mpirun_base "$np") \
                    "${cfg_args[@]}" "$persist_bin" --cycles="$persist_cycles" \
                    --warmup="$warm" --slack=1000000000000; then
                    awk -v np="$np" -v c="$c" '
                        / bytes over [0-9]+ cycles/ {
                            what = $0; sub(/ *[+-][0-9]+ bytes over.*/, "", what)
                            for (i = 1; i <= NF; i++) if ($i == "bytes" && $(i + 1) == "over") { b = $(i - 1); n = $(i + 2) }
                            per = $0; sub(/.*\(/, "", per); sub(/ bytes per cycle.*/, "", per)
                            print np "," c "," n "," what "," b + 0 "," per + 0
                        }' "$log" >>"$out_dir/persist_mem.csv"
                    grep ' bytes over ' "$log" | sed "s/^/np=$np $c: /" >>"$persist_txt"
                else
                    record_failure "np=$np $c test_coll_persist_mem" "$log"
                fi
            done
        done
    fi
fi

# ---------------------------------------------------------------------------
# Report
end_time=$(date +%s)
wall=$((end_time - start_time))
grep -h '^# bufpool scratch bound' "$out_dir"/logs/*.log 2>/dev/null | head -n 1 >>"$out_dir/meta.txt"
load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
echo "# run-side-by-side wall_seconds=$wall build_seconds=$build_seconds measure_seconds=$measure_seconds load_before=$load_before load_after=$load_after host=$(uname -n) cores=$ncores" >>"$out_dir/meta.txt"
[ -n "$failures" ] && printf '%s\n' "$failures" >"$out_dir/failures.txt"
sort -u "$notes_txt" -o "$notes_txt"

python3 "$script_dir/coll_report.py" --report "$raw_csv" --meta "$out_dir/meta.txt" \
    --out "$out_dir" --plot-script "$script_dir/plot.gp" --configs "$run_configs" --stat "$stat" ||
    die "the report failed; the raw data is in $raw_csv"
if [ -s "$toll_txt" ]; then
    {
        printf '\n## The toll of the hand-back\n\n'
        printf 'bench/coll_toll: ns per call of 8-byte collectives on a communicator where bufpool hands every call back (handback) and where its rules decide (auto), against Open MPI calling the previous module itself (direct); batches interleaved in one job, median and quartiles over batches, toll = median - direct median (docs/benchmarks.md).\n\n'
        printf '```\n'
        cat "$toll_txt"
        printf '```\n'
    } >>"$out_dir/results.md"
fi
if [ -s "$persist_txt" ]; then
    {
        printf '\n## Persistent collectives: memory over init/free cycles\n\n'
        printf 'test/mpi/test_coll_persist_mem: %s cycles of MPI_Allreduce_init (MPIX_ on 4.1), MPI_Start, MPI_Wait, MPI_Request_free of a 512 KiB allreduce, each result checked; growth of the resident and mapped size after the first tenth, rank 0 (persist_mem.csv).  bufpool returns a request'"'"'s scratch at MPI_Request_free; default is libnbc.\n\n' "$persist_cycles"
        printf '```\n'
        cat "$persist_txt"
        printf '```\n'
    } >>"$out_dir/results.md"
fi

echo
build_text="build $build_seconds s"
[ "$do_build" = 1 ] || build_text="no build"
echo "Results ($((wall / 60)) min $((wall % 60)) s in all: $build_text, measuring $(fmt_mmss "$measure_seconds"); load average $load_before before, $load_after after, $ncores cores):"
echo "  raw points       $raw_csv"
echo "  medians          $out_dir/summary.csv"
echo "  table            $out_dir/results.md"
echo "  plots            $out_dir/*.png"
[ -s "$toll_txt" ] && echo "  hand-back toll   $toll_txt (and in the table)"
[ -s "$persist_txt" ] && echo "  persistent mem   $out_dir/persist_mem.csv (and in the table)"
echo "  logs             $out_dir/logs/"
if [ -s "$out_dir/glance.txt" ]; then
    echo
    cat "$out_dir/glance.txt"
fi
if [ -n "$failures" ]; then
    echo "Failures:$failures"
fi
if grep -q '^- WRONG: ' "$out_dir/results.md" 2>/dev/null; then
    echo "Wrong results (left out of the timings):"
    grep '^- WRONG: ' "$out_dir/results.md"
fi
# A peer (an Open MPI component) that crashed, hung or computed wrongly is
# a finding, reported in results.md; bufpool's, default's or the floor's,
# or a broken job, fail the run.
wrong_hard=$(awk -F, -v hard=" $hard_configs " '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["check"] ~ /^FAIL/ && index(hard, " " $col["config"] " ") { n++ }
    END { print n + 0 }' "$raw_csv" 2>/dev/null)
if [ "$hard_failure" = 1 ] || [ "${wrong_hard:-0}" != 0 ]; then
    exit 1
fi
exit 0
