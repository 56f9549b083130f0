#!/bin/bash
# points.sh [CONVOY] [SCENARIO] [--set KEY=VALUE ...]: the model's churn
# (frees a second, 1 s windows: median, mean, p10 and p90 of the run's
# windows) at the development VM's five points, beside what the kernel
# did there (docs/findings/2026-12-05-where-the-churn-cycle-goes.md,
# quiet, 1 s windows of ./pidlist_repro /tmp/cgt 50 20 R C SECONDS 1).
# A prediction check, not a calibration: nothing in model.toml is fitted
# to these numbers. The scenario defaults to model.toml; extra arguments
# go to every `convoy run`.
set -e
here=$(dirname "$0")
convoy=${1:-convoy}; shift || true
scenario=${1:-$here/model.toml}; shift || true
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf "%5s %3s  %-28s %s\n" C R "kernel (frees/s)" "model: median mean p10 p90"
while read -r C R D kernel; do
    "$convoy" run "$scenario" --set tasks.churner.count="$C" --set tasks.reader.count="$R" \
        --duration "${D}s" --set scenario.window=1s --progress off --out "$out" "$@" > /dev/null
    model=$(awk -F, '$4=="css_free_work/css_free"{print $6}' "$out/windows.csv" | sort -n |
        awk '{a[NR]=$1; s+=$1} END{printf "%d %.0f %d %d", a[int(NR/2)+1], s/NR, a[int(NR*0.1)+1], a[int(NR*0.9)]}')
    printf "%5s %3s  %-28s %s\n" "$C" "$R" "${kernel//_/ }" "$model"
done <<'POINTS'
1 0 30 24,400-28,900,_about_27,000
1 4 30 1,745-3,160,_about_2,300
1 25 30 20-311,_median_55
1000 4 60 971-3,117,_about_2,100
1000 25 90 36-280_after_40_s,_about_50
POINTS
