# bench/overhead/steal.sh — sourced by the overhead scripts: the VM's steal
# time, the CPU time the hypervisor gave to other guests (/proc/stat), as a
# share of all CPU time between two snapshots. A loaded host shows here (on
# the H200 VM the plain eager step ran 5.4 ms on one machine and 8–13 ms on
# another of the same kind, with the guest's own load average near 1).
#   s=$(stat_snapshot); ...run...; steal_pct "$s"   -> e.g. "3.2"
stat_snapshot() { awk '/^cpu /{t=0; for (i = 2; i <= NF; i++) t += $i; print t, $9; exit}' /proc/stat; }
steal_pct() {
  awk -v a="$1" -v b="$(stat_snapshot)" 'BEGIN { split(a, x, " "); split(b, y, " "); d = y[1] - x[1];
    printf "%.1f", (d > 0 ? 100 * (y[2] - x[2]) / d : 0) }'
}
