# Prints the side-by-side policy table of docs/lock-policies.md from the
# summary.csv of `convoy run lock-policies`.
BEGIN { FS = "," }
NR == 1 { next }
{ v = $2; if (!(v in seen)) { seen[v] = 1; order[++n] = v } }
$3 == "wait" && $4 == "kernfs_rwsem/read/walkers"  { rmax[v] = $11; r999[v] = $10; r99[v] = $9 }
$3 == "wait" && $4 == "kernfs_rwsem/write/writer"  { wmean[v] = $6; wmax[v] = $11 }
$3 == "counter" && $4 == "kernfs_rwsem/read_contentions" { parked[v] = $5 }
$3 == "counter" && $4 == "kernfs_rwsem/read_acquisitions" { reads[v] = $5 }
END {
  printf "| policy | reader max | reader p99 | reader p99.9 | readers parked | writer mean | writer max | reads/s |\n"
  printf "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
  for (i = 1; i <= n; i++) {
    v = order[i]
    printf "| %s | %.2f ms | %.1f us | %.1f us | %d | %.2f ms | %.2f ms | %d |\n", v, rmax[v] / 1e6, r99[v] / 1e3, r999[v] / 1e3, parked[v], wmean[v] / 1e6, wmax[v] / 1e6, reads[v] / 20
  }
}
