# Prints the side-by-side policy table of docs/lock-policies.md from the
# summary.csv of `convoy run lock-policies` (20 s runs).
BEGIN { FS = "," }
NR == 1 { next }
{ v = $2; if (!(v in seen)) { seen[v] = 1; order[++n] = v } }
$3 == "wait" && $4 == "kernfs_rwsem/read/walkers"     { w99[v] = $9; w999[v] = $10 }
$3 == "wait" && $4 == "kernfs_rwsem/read/listers"     { l999[v] = $10 }
$3 == "wait" && $4 == "kernfs_rwsem/write/writers"    { x99[v] = $9; xmax[v] = $11 }
$3 == "wait" && $4 == "kernfs_rwsem/write/rt_writer"  { rt999[v] = $10 }
$3 == "counter" && $4 == "kernfs_rwsem/spin_successes" { barged[v] = $5 }
$3 == "counter" && $4 == "kernfs_rwsem/read_acquisitions" { reads[v] = $5 }
$3 == "counter" && $4 == "kernfs_rwsem/write_acquisitions" { writes[v] = $5 }
END {
  printf "| policy | walker p99 | walker p99.9 | lister p99.9 | writer p99 | writer max | RT writer p99.9 | writes won by spinning | reads/s | writes/s |\n"
  printf "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
  for (i = 1; i <= n; i++) {
    v = order[i]
    printf "| %s | %.0f us | %.0f us | %.0f us | %.0f us | %.2f ms | %.0f us | %d | %d | %d |\n", v, w99[v] / 1e3, w999[v] / 1e3, l999[v] / 1e3, x99[v] / 1e3, xmax[v] / 1e6, rt999[v] / 1e3, barged[v], reads[v] / 20, writes[v] / 20
  }
}
