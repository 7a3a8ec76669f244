# Plot of a soak run (soak.sh): rank 0's RSS and the pool's bytes_held every
# second, and every rank's private RSS outside the pool at the idle points.
# Variables: samples, idle (CSV files), out (PNG), cap (MiB).
set datafile separator ","
set terminal pngcairo size 1100,620 font ",11"
set output out
set title "Soak: RSS and pool bytes held (2 ranks, 1-8 threads, random checked collectives)"
set xlabel "time (s)"
set ylabel "MiB"
set key outside bottom center horizontal
set grid
mib = 1048576.0
set yrange [0:*]
plot samples using 1:($2/mib) every ::1 with lines lw 1.5 lc rgb "#1f77b4" title "rank 0 RSS (1 s samples)", \
     samples using 1:($4/mib) every ::1 with lines lw 1.5 lc rgb "#ff7f0e" title "rank 0 pool bytes held", \
     idle using 1:($4/mib) every ::1 with points pt 5 ps 0.5 lc rgb "#17becf" title "RSS at idle points (all ranks)", \
     idle using 1:($5/mib - $8/mib) every ::1 with points pt 7 ps 0.5 lc rgb "#2ca02c" title "private RSS outside the pool, idle points (all ranks)", \
     idle using 1:($8/mib) every ::1 with points pt 6 ps 0.6 lc rgb "#d62728" title "bytes held at idle points (all ranks)", \
     cap with lines dt 2 lw 1.5 lc rgb "#7f7f7f" title "max\\_capacity"
