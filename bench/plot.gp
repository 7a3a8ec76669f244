# Latency against message size, log-log, for one collective: one panel per
# process count, one line per configuration (the memcpy floor dashed).
# coll_report.py calls it as
#   gnuplot -e "datafile='D'; outfile='O.png'; collective='allreduce'; \
#               nps='2 4'; configs='floor default bufpool'" plot.gp
# The data file holds one block per (process count, configuration), in that
# nesting order, each as "size_bytes median_avg_us" lines; blocks are two
# blank lines apart so that gnuplot's "index" picks them.
npanels = words(nps)
nconfigs = words(configs)
set terminal pngcairo size 560 * npanels, 440 font ",10" noenhanced
set output outfile
set logscale xy 2
set logscale y 10
set format x "%.0b%B"
set format y "%g"
set xlabel "message size (bytes)"
set ylabel "latency (us)"
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key left top box opaque
set mxtics 2
set multiplot layout 1, npanels title sprintf("MPI_%s latency", collective)
do for [i = 1:npanels] {
    set title sprintf("%s processes", word(nps, i))
    plot for [j = 1:nconfigs] datafile index ((i - 1) * nconfigs + j - 1) using 1:2 \
        with linespoints dt 1 + (word(configs, j) eq "floor") pt 7 ps 0.5 lw 1.5 \
        title word(configs, j)
}
unset multiplot
