//! Reading measurements: `perf lock contention` output and `/proc/lock_stat`
//! text, as lock figures a fleet report can take as its observation (and
//! that `--format perf-lock|lock_stat` writes back, so a prediction and a
//! measurement read the same way).
//!
//! Only what both sides have is read: per lock (class or caller) and mode,
//! the contended waits' count, total, max (and min, average); `lock_stat`
//! also gives acquisitions and hold times. Other lines (headers, rules,
//! `lock_stat`'s call-site lines) are skipped.

/// One lock's line of a measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct LockLine {
    /// The lock as the file names it, without `&`, a `-R`/`-W` suffix and
    /// the `:` (`kernfs_rwsem`), or perf's caller column.
    pub lock: String,
    /// `read`, `write`, or `lock` (a mutex or a lock of one mode).
    pub mode: String,
    pub contentions: u64,
    pub wait_total_ns: f64,
    pub wait_max_ns: f64,
    pub wait_avg_ns: f64,
    /// lock_stat only.
    pub wait_min_ns: Option<f64>,
    pub acquisitions: Option<u64>,
    pub hold_max_ns: Option<f64>,
    pub hold_avg_ns: Option<f64>,
}

/// `1.23 ms` (two tokens, as perf prints durations) in nanoseconds.
fn perf_duration(num: &str, unit: &str) -> Option<f64> {
    let x: f64 = num.parse().ok()?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    Some(x * scale)
}

/// Lines of `perf lock contention` output (default columns: contended,
/// total wait, max wait, avg wait, type, caller or lock name).
pub fn read_perf_lock(text: &str) -> Result<Vec<LockLine>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = t.first() else {
            continue;
        };
        let Ok(contended) = first.parse::<u64>() else {
            continue; // the header and anything that is not a row
        };
        if t.len() < 9 {
            return Err(format!(
                "line {}: `{}`: expected contended, total/max/avg wait with units, type and caller",
                i + 1,
                line.trim()
            ));
        }
        let d = |k: usize| {
            perf_duration(t[k], t[k + 1])
                .ok_or_else(|| format!("line {}: `{} {}` is not a duration", i + 1, t[k], t[k + 1]))
        };
        let mode = match t[7] {
            "rwsem:R" => "read",
            "rwsem:W" => "write",
            _ => "lock",
        };
        out.push(LockLine {
            lock: t[8..].join(" "),
            mode: mode.into(),
            contentions: contended,
            wait_total_ns: d(1)?,
            wait_max_ns: d(3)?,
            wait_avg_ns: d(5)?,
            wait_min_ns: None,
            acquisitions: None,
            hold_max_ns: None,
            hold_avg_ns: None,
        });
    }
    if out.is_empty() {
        return Err("no `perf lock contention` rows (contended, total wait, ...)".into());
    }
    Ok(out)
}

/// Class lines of `/proc/lock_stat` (version 0.4): a class name ending in
/// `:` and twelve numbers, times in microseconds.
pub fn read_lock_stat(text: &str) -> Result<Vec<LockLine>, String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 13 {
            continue;
        }
        let (name, nums) = t.split_at(t.len() - 12);
        let name = name.join(" ");
        let Some(name) = name.strip_suffix(':') else {
            continue;
        };
        let Ok(v) = nums
            .iter()
            .map(|x| x.parse::<f64>())
            .collect::<Result<Vec<f64>, _>>()
        else {
            continue;
        };
        let name = name.trim_start_matches('&');
        let (lock, mode) = match (name.strip_suffix("-R"), name.strip_suffix("-W")) {
            (Some(l), _) => (l, "read"),
            (_, Some(l)) => (l, "write"),
            _ => (name, "lock"),
        };
        let us = |x: f64| x * 1e3;
        out.push(LockLine {
            lock: lock.into(),
            mode: mode.into(),
            contentions: v[1] as u64,
            wait_min_ns: Some(us(v[2])),
            wait_max_ns: us(v[3]),
            wait_total_ns: us(v[4]),
            wait_avg_ns: us(v[5]),
            acquisitions: Some(v[7] as u64),
            hold_max_ns: Some(us(v[9])),
            hold_avg_ns: Some(us(v[11])),
        });
    }
    if out.is_empty() {
        return Err("no /proc/lock_stat class lines (`name: con-bounces contentions ...`)".into());
    }
    Ok(out)
}

/// Reads `text` in `format` (`perf-lock` or `lock_stat`).
pub fn read(format: &str, text: &str) -> Result<Vec<LockLine>, String> {
    match format {
        "perf-lock" => read_perf_lock(text),
        "lock_stat" => read_lock_stat(text),
        f => Err(format!(
            "unknown format `{f}`; expected `perf-lock` or `lock_stat`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_lock_rows_with_units() {
        let text = "\
 contended   total wait     max wait     avg wait         type   caller

        12      1.23 ms    456.78 us    102.50 us     rwsem:W   kernfs_rwsem
         3       2.00 s       1.50 s    666.67 ms        mutex   cgroup_mutex
";
        let v = read_perf_lock(text).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].lock.as_str(), v[0].mode.as_str(), v[0].contentions),
            ("kernfs_rwsem", "write", 12)
        );
        assert!((v[0].wait_max_ns - 456_780.0).abs() < 1e-6);
        assert_eq!((v[1].mode.as_str(), v[1].wait_total_ns), ("lock", 2e9));
        assert!(read_perf_lock("contended total wait\n").is_err());
        let bad = read_perf_lock("  3  1.0 xs 1 ms 1 ms mutex m\n").unwrap_err();
        assert!(bad.contains("line 1: `1.0 xs` is not a duration"), "{bad}");
    }

    #[test]
    fn lock_stat_class_lines_skip_call_sites() {
        let text = "\
lock_stat version 0.4
-----------------------------------------------------------------------------------
                              class name    con-bounces    contentions   waittime-min   waittime-max waittime-total   waittime-avg    acq-bounces   acquisitions   holdtime-min   holdtime-max holdtime-total   holdtime-avg
-----------------------------------------------------------------------------------

                          &kernfs_rwsem-R:            10             40           0.50      625000.00      700000.00       17500.00             20           9000           0.10         900.00        5000.00           0.56
                          -----------
                          &kernfs_rwsem             40          [<ffffffff8144f2d5>] kernfs_iop_lookup+0x35/0xd0
                            cgroup_mutex:              0              2           3.00           5.00           8.00           4.00              0             50           1.00           2.00          10.00           0.20
";
        let v = read_lock_stat(text).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].lock.as_str(), v[0].mode.as_str()),
            ("kernfs_rwsem", "read")
        );
        assert_eq!(v[0].contentions, 40);
        assert_eq!(v[0].wait_max_ns, 625_000_000.0);
        assert_eq!(v[0].acquisitions, Some(9000));
        assert_eq!(v[0].hold_max_ns, Some(900_000.0));
        assert_eq!(
            (v[1].lock.as_str(), v[1].mode.as_str()),
            ("cgroup_mutex", "lock")
        );
        assert!(read_lock_stat("nothing here\n").is_err());
    }
}
