# awk -f failed-runs.awk LOG...: each failed run of run-mpi-test.sh in the
# logs of a test (a sweep runs dozens, and the one that failed may be
# anywhere in its log): the command and the run's last lines, without the
# component path lines.  At most 3 runs of a log, 30 lines of each, so that
# check-all.sh can print them last, where a CI log's tail shows them.
function show(    i, from) {
    if (shown++ >= 3) {
        return
    }
    print "==> " FILENAME ": a failed run <=="
    print cmd
    from = n > 30 ? n - 30 : 0
    if (from > 0) {
        print "[... " from " lines ...]"
    }
    for (i = from; i < n; i++) {
        print lines[i % 30]
    }
}
FNR == 1 { shown = 0; inrun = 0 }
/^run-mpi-test: \// { inrun = 1; cmd = $0; n = 0; next }
!inrun || /^run-mpi-test: (component path|our components)/ { next }
{ lines[n++ % 30] = $0 }
/^run-mpi-test: TIMEOUT/ || (/^run-mpi-test: exit status / && !/^run-mpi-test: exit status 0 /) {
    show()
    inrun = 0
}
/^run-mpi-test: exit status 0 / { inrun = 0 }
