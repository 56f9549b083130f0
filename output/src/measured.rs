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

/// The whitespace-separated words of a line, each with its column
/// (1-based, in characters) for errors.
fn words(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    for (col, (i, c)) in line.char_indices().enumerate() {
        match (c.is_whitespace(), start) {
            (true, Some((s, scol))) => {
                out.push((scol + 1, &line[s..i]));
                start = None;
            }
            (false, None) => start = Some((i, col)),
            _ => {}
        }
    }
    if let Some((s, scol)) = start {
        out.push((scol + 1, &line[s..]));
    }
    out
}

/// Where a number of a measurement is: `line 3, column 17`. The file's
/// text is not quoted (it may be any file the report names).
fn at(line: usize, col: usize) -> String {
    format!("line {line}, column {col}")
}

/// Nanoseconds a measurement may give: a time a `u64` of nanoseconds
/// holds (about 584 years).
const MAX_NS: f64 = u64::MAX as f64;

/// A time of a measurement: a finite number of zero or more, `scale`
/// nanoseconds each, within [`MAX_NS`].
fn time_ns(text: &str, scale: f64, (line, col): (usize, usize)) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 && x * scale <= MAX_NS => Ok(x * scale),
        Ok(x) if x.is_finite() && x >= 0.0 => Err(format!(
            "{}: a time over 2^64 ns (about 584 years); expected a measured time",
            at(line, col)
        )),
        Ok(_) => Err(format!(
            "{}: not a finite number of zero or more (NaN, an infinity or a negative \
             number); expected a measured time",
            at(line, col)
        )),
        Err(_) => Err(format!("{}: not a number; expected a time", at(line, col))),
    }
}

/// A count of a measurement: a whole number below 2^64.
fn count(text: &str, (line, col): (usize, usize)) -> Result<u64, String> {
    text.parse::<u64>().map_err(|_| {
        format!(
            "{}: not a whole number of zero or more below 2^64; expected a count",
            at(line, col)
        )
    })
}

/// `1.23 ms` (two words, as perf prints durations) in nanoseconds.
fn perf_duration(
    (num_col, num): (usize, &str),
    (unit_col, unit): (usize, &str),
    line: usize,
) -> Result<f64, String> {
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(format!(
                "{}: not a unit of time; expected ns, us, ms, s, m or h after the number",
                at(line, unit_col)
            ))
        }
    };
    time_ns(num, scale, (line, num_col))
}

/// Lines of `perf lock contention` output (default columns: contended,
/// total wait, max wait, avg wait, type, caller or lock name). A line
/// that starts with a number is a row, and each of its numbers must be
/// in range.
pub fn read_perf_lock(text: &str) -> Result<Vec<LockLine>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = words(line);
        let Some(&(col, first)) = t.first() else {
            continue;
        };
        if first.parse::<f64>().is_err() {
            continue; // the header and anything that is not a row
        }
        let contended = count(first, (n, col))?;
        if t.len() < 9 {
            return Err(format!(
                "line {n}: a row of {} words; expected contended, total/max/avg wait with \
                 units, type and caller",
                t.len()
            ));
        }
        let d = |k: usize| perf_duration(t[k], t[k + 1], n);
        let mode = match t[7].1 {
            "rwsem:R" => "read",
            "rwsem:W" => "write",
            _ => "lock",
        };
        out.push(LockLine {
            lock: (t[8..].iter().map(|w| w.1))
                .collect::<Vec<&str>>()
                .join(" "),
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

/// The columns of a `/proc/lock_stat` class line that are counts (the
/// others are times in microseconds): con-bounces, contentions,
/// acq-bounces, acquisitions.
const LOCK_STAT_COUNTS: [usize; 4] = [0, 1, 6, 7];

/// Class lines of `/proc/lock_stat` (version 0.4): a class name ending in
/// `:` and twelve numbers, times in microseconds. Such a line's numbers
/// must each be in range: counts whole, times finite and not negative.
pub fn read_lock_stat(text: &str) -> Result<Vec<LockLine>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = words(line);
        if t.len() < 13 {
            continue;
        }
        let (name, nums) = t.split_at(t.len() - 12);
        let name = (name.iter().map(|w| w.1)).collect::<Vec<&str>>().join(" ");
        let Some(name) = name.strip_suffix(':') else {
            continue;
        };
        let mut v = [0f64; 12];
        let mut counts = [0u64; 12];
        for (k, &(col, x)) in nums.iter().enumerate() {
            if LOCK_STAT_COUNTS.contains(&k) {
                counts[k] = count(x, (n, col))?;
            } else {
                v[k] = time_ns(x, 1e3, (n, col))?;
            }
        }
        let name = name.trim_start_matches('&');
        let (lock, mode) = match (name.strip_suffix("-R"), name.strip_suffix("-W")) {
            (Some(l), _) => (l, "read"),
            (_, Some(l)) => (l, "write"),
            _ => (name, "lock"),
        };
        out.push(LockLine {
            lock: lock.into(),
            mode: mode.into(),
            contentions: counts[1],
            wait_min_ns: Some(v[2]),
            wait_max_ns: v[3],
            wait_total_ns: v[4],
            wait_avg_ns: v[5],
            acquisitions: Some(counts[7]),
            hold_max_ns: Some(v[9]),
            hold_avg_ns: Some(v[11]),
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
        assert!(
            bad.contains("line 1, column 10: not a unit of time"),
            "{bad}"
        );
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
