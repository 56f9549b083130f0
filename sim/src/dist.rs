//! Duration distributions for scenario files.
//!
//! A [`Dist`] yields durations ([`Dur`], whole nanoseconds). It is written
//! inline in step strings (`cpu 1.3us`, `sleep exp(200us)`, see
//! [`parse_inline`]) or built from measured data: an [`Empirical`]
//! distribution from a bpftrace `hist()`/`lhist()` dump
//! ([`Empirical::from_bpftrace_hist`]) or from a column of samples in
//! CSV/TSV text ([`Empirical::from_samples_text`]).
//!
//! Randomness comes only from the [`Stream`] passed to [`Dist::sample`].
//! [`Dist::Const`] draws nothing, so a constant step never shifts the draws
//! of the steps after it (common random numbers). The other kinds draw a
//! fixed number of values per sample, except where rand_distr's ziggurat
//! samplers (exponential, normal) occasionally need a second try.
//!
//! Bad input never panics: constructors and parsers return a [`DistError`]
//! that says what was expected, and dump parsers name the 1-based line.

use std::fmt;

use rand::distr::{Distribution, StandardUniform};
use rand::{Rng, RngCore};
use rand_distr::{Exp1, StandardNormal};

use crate::rng::Stream;
use crate::time::{parse_duration, Dur, DurationError};

/// The largest value [`Dist::sample`] returns (2^62 ns, about 146 years).
pub const MAX_SAMPLE: Dur = Dur(1 << 62);

/// A distribution of durations.
#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    /// Always this long; draws no random numbers.
    Const(Dur),
    /// Uniform on the whole nanoseconds `lo..=hi`.
    Uniform { lo: Dur, hi: Dur },
    /// Exponential with this mean (nanoseconds).
    Exp { mean: f64 },
    /// `exp(mu + sigma * N(0, 1))` nanoseconds; the median is `exp(mu)`.
    LogNormal { mu: f64, sigma: f64 },
    /// Pareto (type I): `scale * U^(-1/shape)` nanoseconds, at least
    /// `scale`, optionally capped at `cap`.
    Pareto {
        scale: f64,
        shape: f64,
        cap: Option<Dur>,
    },
    /// A weighted choice among distributions.
    Mixture(Mixture),
    /// Measured data.
    Empirical(Empirical),
}

/// Why a distribution was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistError {
    #[error("{what}: {source}")]
    Duration {
        /// Which argument, e.g. "exp mean" or "duration".
        what: String,
        source: DurationError,
    },
    #[error("`{0}` is not a distribution; expected a duration like `1.3us`, or one of `const(1.3us)`, `exp(200us)`, `uniform(1us, 2us)`, `lognormal(20ms, 1.5)`, `pareto(100us, 1.5)`, `pareto(100us, 1.5, 1s)`")]
    UnknownKind(String),
    #[error("`{text}` is malformed: {problem}")]
    Syntax { text: String, problem: String },
    #[error("`{text}` has {got} argument(s); expected {expected}")]
    ArgCount {
        text: String,
        got: usize,
        expected: String,
    },
    #[error("`{text}` is not a number; expected {what}")]
    BadNumber { what: String, text: String },
    #[error("exp mean must be more than 0 (e.g. `exp(200us)`)")]
    NonPositiveMean,
    #[error("uniform lower bound {lo} is above upper bound {hi}; expected lo <= hi")]
    LoAboveHi { lo: Dur, hi: Dur },
    #[error("{what} {value} is too large; expected at most {max} ns", max = MAX_SAMPLE.ns())]
    TooLarge { what: String, value: Dur },
    #[error("lognormal median must be more than 0 (e.g. `lognormal(20ms, 1.5)`)")]
    ZeroMedian,
    #[error("lognormal sigma {0} is invalid; expected a finite number >= 0")]
    BadSigma(f64),
    #[error("pareto scale must be more than 0 (e.g. `pareto(100us, 1.5)`)")]
    ZeroScale,
    #[error("pareto shape {0} is invalid; expected a finite number > 0")]
    BadShape(f64),
    #[error("pareto cap {cap} is below its scale {scale}; expected cap >= scale")]
    CapBelowScale { scale: Dur, cap: Dur },
    #[error("a mixture needs at least one part")]
    EmptyMixture,
    #[error("mixture part {index} has weight {weight}; expected a finite number > 0")]
    BadWeight { index: usize, weight: f64 },
    #[error("unit {0} ns is invalid; expected a finite number of nanoseconds > 0 (e.g. 1000 for microseconds)")]
    BadUnit(f64),
    #[error("line {line}: {problem}")]
    Line { line: usize, problem: String },
    /// A data file's line and column (1-based, in characters): its text
    /// is not quoted.
    #[error("line {line}, column {column}: {problem}")]
    At {
        line: usize,
        column: usize,
        problem: String,
    },
    #[error("the dump holds several histogram maps ({}); expected `map` to name one", .0.join(", "))]
    AmbiguousMap(Vec<String>),
    #[error("the dump has no histogram map named `{name}`; it holds: {}", if .available.is_empty() { "no named maps".to_string() } else { .available.join(", ") })]
    MapNotFound {
        name: String,
        available: Vec<String>,
    },
    #[error(
        "{0}; expected bucket lines like `[4, 8)   131 |@@@@|` with at least one non-zero count"
    )]
    EmptyHist(String),
    #[error("no column named `{name}`; the header has: {}", if .header.is_empty() { "no header line".to_string() } else { .header.join(", ") })]
    ColumnNotFound { name: String, header: Vec<String> },
    #[error("no samples found; expected at least one numeric value")]
    NoSamples,
}

/// A weighted choice among distributions (weights normalised to sum 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Mixture {
    parts: Vec<(f64, Dist)>,
    /// Cumulative normalised weights; the last is 1.
    cum: Vec<f64>,
}

impl Mixture {
    /// The parts with their normalised weights.
    pub fn parts(&self) -> &[(f64, Dist)] {
        &self.parts
    }

    pub fn len(&self) -> usize {
        self.parts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    #[inline]
    fn sample(&self, rng: &mut Stream) -> Dur {
        let u: f64 = StandardUniform.sample(rng);
        let i = self
            .cum
            .partition_point(|&c| c <= u)
            .min(self.parts.len().saturating_sub(1));
        match self.parts.get(i) {
            Some((_, d)) => d.sample(rng),
            None => Dur::ZERO,
        }
    }
}

/// One bucket of an empirical histogram: the whole nanoseconds `lo..hi`
/// (half open, `hi > lo`) holding `count` samples. A single-value bucket
/// has `hi == lo + 1 ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub lo: Dur,
    pub hi: Dur,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq)]
enum EmpiricalData {
    /// Sampled bucket by count, then uniformly inside the bucket.
    Buckets {
        buckets: Vec<Bucket>,
        /// `cum[i]` = total count of buckets `0..=i`.
        cum: Vec<u64>,
    },
    /// Sampled uniformly (bootstrap).
    Samples(Vec<Dur>),
}

/// A distribution built from measured data: either weighted buckets or a
/// list of samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Empirical {
    data: EmpiricalData,
}

/// Uniform integer in `0..n` from one 64-bit draw (multiply-shift; bias at
/// most n / 2^64, far below anything a simulation can see). `n == 0` gives 0.
#[inline]
fn below(rng: &mut Stream, n: u128) -> u128 {
    (u128::from(rng.next_u64()) * n) >> 64
}

/// One draw of an exponential distribution with mean `mean` ns: what
/// `Dist::Exp` draws, for callers that specialise on it.
#[inline]
pub fn sample_exp(mean: f64, rng: &mut Stream) -> Dur {
    let e: f64 = rng.sample(Exp1);
    to_ns(mean * e)
}

/// A float number of nanoseconds as a duration: rounded to the nearest
/// nanosecond, clamped to `[0, MAX_SAMPLE]`; NaN gives 0.
#[inline]
pub fn to_ns(x: f64) -> Dur {
    // Branch-free: adding one half before truncating rounds to nearest
    // without a libm call on the hot path; `max` and `min` (not `clamp`,
    // which keeps a NaN) bring every input, NaN too, into range, so the
    // cast is one x86 instruction with no saturation fix-ups (which cost
    // 0.7% of the benchmark's instructions).
    let v = (x + 0.5).max(0.0).min(MAX_SAMPLE.as_nanos_f64());
    // SAFETY: `max` maps NaN to 0, so `v` is finite and within
    // [0, 2^62]: it fits an i64.
    Dur(unsafe { v.to_int_unchecked::<i64>() } as u64)
}

impl Empirical {
    /// Weighted buckets. Each needs `hi > lo`; the total count must be
    /// more than 0 and fit in a u64.
    pub fn from_buckets(buckets: Vec<Bucket>) -> Result<Empirical, DistError> {
        let mut cum = Vec::with_capacity(buckets.len());
        let mut total: u64 = 0;
        for b in &buckets {
            if b.hi <= b.lo {
                return Err(DistError::EmptyHist(format!(
                    "bucket [{}ns, {}ns) is empty or reversed",
                    b.lo.ns(),
                    b.hi.ns()
                )));
            }
            total = total.checked_add(b.count).ok_or_else(|| {
                DistError::EmptyHist("the bucket counts add up to more than 2^64".to_string())
            })?;
            cum.push(total);
        }
        if total == 0 {
            return Err(DistError::EmptyHist("all bucket counts are zero".into()));
        }
        Ok(Empirical {
            data: EmpiricalData::Buckets { buckets, cum },
        })
    }

    /// A list of samples, drawn uniformly (bootstrap).
    pub fn from_samples(samples: Vec<Dur>) -> Result<Empirical, DistError> {
        if samples.is_empty() {
            return Err(DistError::NoSamples);
        }
        Ok(Empirical {
            data: EmpiricalData::Samples(samples),
        })
    }

    /// Number of buckets, or of samples.
    pub fn len(&self) -> usize {
        match &self.data {
            EmpiricalData::Buckets { buckets, .. } => buckets.len(),
            EmpiricalData::Samples(s) => s.len(),
        }
    }

    /// Never true for a value built by the constructors.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buckets, if this is a histogram.
    pub fn buckets(&self) -> Option<&[Bucket]> {
        match &self.data {
            EmpiricalData::Buckets { buckets, .. } => Some(buckets),
            EmpiricalData::Samples(_) => None,
        }
    }

    /// The samples, if this is a list of samples.
    pub fn samples(&self) -> Option<&[Dur]> {
        match &self.data {
            EmpiricalData::Buckets { .. } => None,
            EmpiricalData::Samples(s) => Some(s),
        }
    }

    /// Total observation count: the sum of bucket counts, or the number of
    /// samples.
    pub fn total_count(&self) -> u64 {
        match &self.data {
            EmpiricalData::Buckets { cum, .. } => cum.last().copied().unwrap_or(0),
            EmpiricalData::Samples(s) => s.len() as u64,
        }
    }

    /// Draws one value: two 64-bit draws for buckets (bucket, position),
    /// one for samples.
    #[inline]
    pub fn sample(&self, rng: &mut Stream) -> Dur {
        let v = match &self.data {
            EmpiricalData::Buckets { buckets, cum } => {
                let total = cum.last().copied().unwrap_or(0);
                let r = below(rng, u128::from(total)) as u64;
                let i = cum.partition_point(|&c| c <= r).min(buckets.len() - 1);
                let b = buckets[i];
                let off = below(rng, u128::from((b.hi - b.lo).ns())) as u64;
                b.lo + Dur(off)
            }
            EmpiricalData::Samples(s) => {
                let i = below(rng, s.len() as u128) as usize;
                s.get(i).copied().unwrap_or(Dur::ZERO)
            }
        };
        v.min(MAX_SAMPLE)
    }

    /// The chance that [`Empirical::sample`] yields at least `t`.
    pub fn survival(&self, t: Dur) -> f64 {
        match &self.data {
            EmpiricalData::Buckets { buckets, cum } => {
                let total = cum.last().copied().unwrap_or(0);
                let above: f64 = (buckets.iter())
                    .map(|b| {
                        let width = (b.hi - b.lo).ns() as f64;
                        let kept = b.hi.ns().saturating_sub(t.ns().max(b.lo.ns())) as f64;
                        b.count as f64 * (kept / width).clamp(0.0, 1.0)
                    })
                    .sum();
                above / (total.max(1)) as f64
            }
            EmpiricalData::Samples(s) => {
                s.iter().filter(|&&d| d >= t).count() as f64 / s.len().max(1) as f64
            }
        }
    }

    /// The exact mean of what [`Empirical::sample`] yields (each bucket
    /// contributes its integer midpoint `(lo + hi - 1) / 2`).
    pub fn mean_ns(&self) -> f64 {
        match &self.data {
            EmpiricalData::Buckets { buckets, cum } => {
                let total = cum.last().copied().unwrap_or(0);
                if total == 0 {
                    return 0.0;
                }
                let sum: f64 = buckets
                    .iter()
                    .map(|b| {
                        let lo = b.lo.min(MAX_SAMPLE).as_nanos_f64();
                        let hi = (b.hi - Dur(1)).min(MAX_SAMPLE).as_nanos_f64();
                        b.count as f64 * (lo + hi) / 2.0
                    })
                    .sum();
                sum / total as f64
            }
            EmpiricalData::Samples(s) => {
                if s.is_empty() {
                    return 0.0;
                }
                let sum: u128 = s.iter().map(|&v| u128::from(v.min(MAX_SAMPLE).ns())).sum();
                sum as f64 / s.len() as f64
            }
        }
    }

    /// The smallest value it can produce.
    pub fn min(&self) -> Dur {
        let m = match &self.data {
            EmpiricalData::Buckets { buckets, .. } => buckets
                .iter()
                .filter(|b| b.count > 0)
                .map(|b| b.lo)
                .min()
                .unwrap_or(Dur::ZERO),
            EmpiricalData::Samples(s) => s.iter().copied().min().unwrap_or(Dur::ZERO),
        };
        m.min(MAX_SAMPLE)
    }

    /// All mass at 0.
    pub fn is_always_zero(&self) -> bool {
        match &self.data {
            EmpiricalData::Buckets { buckets, .. } => buckets
                .iter()
                .filter(|b| b.count > 0)
                .all(|b| b.lo == Dur::ZERO && b.hi == Dur(1)),
            EmpiricalData::Samples(s) => s.iter().all(|&v| v == Dur::ZERO),
        }
    }

    /// Parses a bpftrace `hist()` (log2) or `lhist()` text dump.
    ///
    /// Accepted lines (surrounding whitespace ignored):
    /// - bucket lines `[0]   16 |@@@   |`, `[2, 4)  80 |@@@|`, `[1K, 2K)  2 |`,
    ///   with label suffixes K, M, G, T, P, E = powers of 1024 (as bpftrace
    ///   prints them); the `|...|` bar is optional. `[N]` is the single
    ///   value N. An lhist underflow bucket `(..., N)` is taken as `[0, N)`;
    ///   an overflow bucket `[N, ...)` as the single value N (a lower bound:
    ///   raise the lhist max if its count matters);
    /// - map headers `@usecs:` or `@name[key]:`, which start a histogram;
    /// - scalar map lines such as `@count: 42` (ignored, they hold no buckets);
    /// - blank lines and bpftrace's `Attaching N probes...` banner.
    ///
    /// `map` picks a histogram by name, with or without the `@`
    /// (`usecs`, `@lat[tid]`); `None` takes the only histogram and is an
    /// error if there are several. `unit_ns` is the nanoseconds per unit of
    /// the dump (1000 for a usecs histogram). Samples are drawn bucket by
    /// count, then uniformly among the integer nanoseconds of `[lo, hi)`.
    pub fn from_bpftrace_hist(
        text: &str,
        map: Option<&str>,
        unit_ns: f64,
    ) -> Result<Empirical, DistError> {
        if !(unit_ns.is_finite() && unit_ns > 0.0) {
            return Err(DistError::BadUnit(unit_ns));
        }
        // (name, buckets); name None for buckets before any header.
        let mut maps: Vec<(Option<String>, Vec<Bucket>)> = Vec::new();
        let mut in_hist = false;
        for (idx, raw) in text.lines().enumerate() {
            let line_no = idx + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with("Attaching ") {
                continue;
            }
            if let Some(rest) = line.strip_prefix('@') {
                if let Some(name) = rest.strip_suffix(':') {
                    let name = name.trim().to_string();
                    if maps
                        .iter()
                        .any(|(n, _)| n.as_deref() == Some(name.as_str()))
                    {
                        return Err(DistError::Line {
                            line: line_no,
                            problem: format!(
                                "map {} appears twice; expected each map once",
                                map_name(&name)
                            ),
                        });
                    }
                    maps.push((Some(name), Vec::new()));
                    in_hist = true;
                } else {
                    // A scalar map line like `@count: 42` ends any histogram;
                    // it is kept, bucketless, so naming it gives a clear error.
                    let name = rest.rfind(": ").map_or(rest, |i| &rest[..i]).trim();
                    if !maps.iter().any(|(n, _)| n.as_deref() == Some(name)) {
                        maps.push((Some(name.to_string()), Vec::new()));
                    }
                    in_hist = false;
                }
                continue;
            }
            if line.starts_with('[') || line.starts_with('(') {
                let indent = raw[..raw.len() - raw.trim_start().len()].chars().count();
                let bucket = parse_hist_line(line, line_no, indent, unit_ns)?;
                if !in_hist {
                    if maps.is_empty() {
                        maps.push((None, Vec::new()));
                        in_hist = true;
                    } else {
                        return Err(DistError::Line {
                            line: line_no,
                            problem: "a bucket after a scalar map line; expected a map header \
                                      like `@usecs:` before it"
                                .into(),
                        });
                    }
                }
                if let Some((_, b)) = maps.last_mut() {
                    b.push(bucket);
                }
                continue;
            }
            return Err(DistError::Line {
                line: line_no,
                problem: "not part of a bpftrace histogram; expected a map header like `@usecs:` \
                          or a bucket like `[4, 8)   131 |@@@@|`"
                    .into(),
            });
        }
        let display = |n: &Option<String>| match n {
            Some(n) => map_name(n),
            None => "(unnamed)".to_string(),
        };
        let hists: Vec<&(Option<String>, Vec<Bucket>)> =
            maps.iter().filter(|(_, b)| !b.is_empty()).collect();
        let chosen = match map {
            Some(want) => {
                let want = want.trim();
                let want = want.strip_prefix('@').unwrap_or(want);
                match maps.iter().find(|(n, _)| n.as_deref() == Some(want)) {
                    Some(m) => m,
                    None => {
                        return Err(DistError::MapNotFound {
                            name: want.to_string(),
                            available: hists
                                .iter()
                                .filter(|(n, _)| n.is_some())
                                .map(|(n, _)| display(n))
                                .collect(),
                        })
                    }
                }
            }
            None => match hists.as_slice() {
                [] => {
                    return Err(DistError::EmptyHist(
                        "the dump holds no histogram buckets".into(),
                    ))
                }
                [one] => *one,
                many => {
                    return Err(DistError::AmbiguousMap(
                        many.iter().map(|(n, _)| display(n)).collect(),
                    ))
                }
            },
        };
        if chosen.1.is_empty() {
            return Err(DistError::EmptyHist(format!(
                "map {} holds no histogram buckets",
                display(&chosen.0)
            )));
        }
        Empirical::from_buckets(chosen.1.clone()).map_err(|e| match e {
            DistError::EmptyHist(p) => {
                DistError::EmptyHist(format!("map {}: {p}", display(&chosen.0)))
            }
            other => other,
        })
    }

    /// Parses a column of samples from CSV or TSV text.
    ///
    /// The delimiter is a tab if the first non-empty line has one, else a
    /// comma. A first line with a non-numeric cell is a header. `column`
    /// names a header column; `None` takes the first column. Values are
    /// numbers (e.g. `12`, `3.5`, `1e3`) in units of `unit_ns` nanoseconds,
    /// zero or more; cells may be wrapped in double quotes. Empty lines are
    /// skipped. Samples are drawn uniformly (bootstrap).
    pub fn from_samples_text(
        text: &str,
        column: Option<&str>,
        unit_ns: f64,
    ) -> Result<Empirical, DistError> {
        if !(unit_ns.is_finite() && unit_ns > 0.0) {
            return Err(DistError::BadUnit(unit_ns));
        }
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
            .filter(|(_, l)| !l.trim().is_empty())
            .peekable();
        let Some(&(_, first)) = lines.peek() else {
            return Err(DistError::NoSamples);
        };
        let delim = if first.contains('\t') { '\t' } else { ',' };
        let cells = |l: &str| -> Vec<String> {
            l.split(delim)
                .map(|c| {
                    let c = c.trim();
                    c.strip_prefix('"')
                        .and_then(|c| c.strip_suffix('"'))
                        .unwrap_or(c)
                        .trim()
                        .to_string()
                })
                .collect()
        };
        let first_cells = cells(first);
        let is_header = first_cells.iter().any(|c| c.parse::<f64>().is_err());
        let header: Vec<String> = if is_header {
            lines.next();
            first_cells
        } else {
            Vec::new()
        };
        let (col, col_name) = match column {
            None => (0, header.first().cloned()),
            Some(name) => {
                let name = name.trim();
                match header.iter().position(|h| h == name) {
                    Some(i) => (i, Some(name.to_string())),
                    None => {
                        return Err(DistError::ColumnNotFound {
                            name: name.to_string(),
                            header: (header.iter().enumerate())
                                .map(|(i, h)| header_name(h, i))
                                .collect(),
                        })
                    }
                }
            }
        };
        let col_desc = match &col_name {
            Some(n) if plain(n) => format!("column `{n}`"),
            Some(_) => format!("column {}", col + 1),
            None => "column 1".to_string(),
        };
        let mut samples = Vec::new();
        for (line_no, l) in lines {
            let row = cells(l);
            let Some(cell) = row.get(col) else {
                return Err(DistError::Line {
                    line: line_no,
                    problem: format!(
                        "has {} field(s); expected at least {} to reach {col_desc}",
                        row.len(),
                        col + 1
                    ),
                });
            };
            let v: f64 = match cell.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => v,
                _ => {
                    return Err(DistError::Line {
                        line: line_no,
                        problem: format!("{col_desc}: not a number of zero or more"),
                    })
                }
            };
            samples.push(to_ns(v * unit_ns));
        }
        Empirical::from_samples(samples)
    }
}

/// Parses a bucket label: `16`, `1K`, `8M` (powers of 1024).
fn parse_label(s: &str) -> Option<u128> {
    let s = s.trim();
    let (digits, mult): (&str, u128) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let p = match c.to_ascii_uppercase() {
                'K' => 1,
                'M' => 2,
                'G' => 3,
                'T' => 4,
                'P' => 5,
                'E' => 6,
                _ => return None,
            };
            (&s[..i], 1u128 << (10 * p))
        }
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok().map(|n| u128::from(n) * mult)
}

/// Whether a name read from a data file (a map's, a column header) is
/// shown in an error: a plain name of letters, digits and `_-.@[], `, at
/// most 64 characters. Other text of a data file is never quoted (the
/// file may be any file; its place is given by line and column).
fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.@[], ".contains(c))
}

/// A histogram map's name as errors show it: `@usecs`, or a stand-in.
fn map_name(n: &str) -> String {
    if plain(n) {
        format!("@{n}")
    } else {
        "(a map whose name is not plain text)".into()
    }
}

/// A column header as errors list it: the name, or its position.
fn header_name(h: &str, i: usize) -> String {
    if plain(h) {
        h.to_string()
    } else {
        format!("(column {})", i + 1)
    }
}

/// One bucket line of a bpftrace histogram, `line` without the `indent`
/// characters it had. Errors give the line and the column of the part at
/// fault, not the text.
fn parse_hist_line(
    line: &str,
    line_no: usize,
    indent: usize,
    unit_ns: f64,
) -> Result<Bucket, DistError> {
    let col = |byte: usize| indent + line[..byte].chars().count() + 1;
    let err = |byte: usize, problem: &str| DistError::At {
        line: line_no,
        column: col(byte),
        problem: problem.to_string(),
    };
    let Some(close) = line.find([']', ')']) else {
        return Err(err(
            0,
            "a bucket without its closing `]` or `)`; expected e.g. `[4, 8)   131 |@@@@|`",
        ));
    };
    let label = &line[..=close];
    let open = label.as_bytes()[0];
    let shut = label.as_bytes()[close];
    let inside = &label[1..close];
    let bad_label = || {
        err(
            0,
            "a bucket label bpftrace does not write; expected `[N]`, `[lo, hi)` with whole \
             numbers (optionally K, M, G suffixes), `(..., N)` or `[N, ...)`",
        )
    };
    // Bounds in dump units; `hi` exclusive, `None` for a single value.
    let (lo, hi): (u128, Option<u128>) = match (open, shut) {
        (b'[', b']') => {
            let n = parse_label(inside).ok_or_else(bad_label)?;
            (n, None)
        }
        (b'[', b')') => {
            let (a, b) = inside.split_once(',').ok_or_else(bad_label)?;
            let lo = parse_label(a).ok_or_else(bad_label)?;
            if b.trim() == "..." {
                (lo, None)
            } else {
                let hi = parse_label(b).ok_or_else(bad_label)?;
                if hi <= lo {
                    return Err(err(
                        0,
                        "a bucket whose upper bound is not above its lower bound; expected \
                         lo < hi",
                    ));
                }
                (lo, Some(hi))
            }
        }
        (b'(', b')') => {
            let (a, b) = inside.split_once(',').ok_or_else(bad_label)?;
            if a.trim() != "..." {
                return Err(bad_label());
            }
            let hi = parse_label(b).ok_or_else(bad_label)?;
            if hi == 0 {
                (0, None)
            } else {
                (0, Some(hi))
            }
        }
        _ => return Err(bad_label()),
    };
    let after = &line[close + 1..];
    let rest = after.trim_start();
    let count_at = close + 1 + (after.len() - rest.len());
    let (count_text, bar, bar_at) = match rest.find(|c: char| c.is_whitespace() || c == '|') {
        Some(i) => {
            let tail = &rest[i..];
            let bar = tail.trim_start();
            (&rest[..i], bar, count_at + i + (tail.len() - bar.len()))
        }
        None => (rest, "", line.len()),
    };
    if count_text.is_empty() {
        return Err(err(
            count_at,
            "a bucket with no count; expected a whole number after it",
        ));
    }
    if !count_text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(
            count_at,
            "a bucket count that is not a whole number of zero or more",
        ));
    }
    let count: u64 = count_text.parse().map_err(|_| {
        err(
            count_at,
            "a bucket count of 2^64 or more; expected a whole number below 2^64",
        )
    })?;
    if !(bar.is_empty() || bar.starts_with('|')) {
        return Err(err(
            bar_at,
            "more after a bucket's count; expected only a count and an optional `|@@@|` bar",
        ));
    }
    let lo = to_ns(lo as f64 * unit_ns);
    let hi = match hi {
        Some(hi) => to_ns(hi as f64 * unit_ns).max(lo + Dur(1)),
        None => lo + Dur(1),
    };
    Ok(Bucket { lo, hi, count })
}

impl Dist {
    /// The same distribution with every value multiplied by `f` (finite,
    /// more than 0): what a CPU `f` times slower makes of a CPU cost
    /// (`scenario.cpu_speed`). It draws the same random numbers, in the
    /// same order, as `self`, so common random numbers hold across
    /// variants. A value that was not 0 stays at least 1 ns.
    pub fn scaled(&self, f: f64) -> Dist {
        let times_f = |v: Dur| {
            if v == Dur::ZERO {
                Dur::ZERO
            } else {
                to_ns(v.as_nanos_f64() * f).max(Dur(1))
            }
        };
        match self {
            Dist::Const(v) => Dist::Const(times_f(*v)),
            Dist::Uniform { lo, hi } => Dist::Uniform {
                lo: times_f(*lo),
                hi: times_f(*hi),
            },
            Dist::Exp { mean } => Dist::Exp { mean: mean * f },
            Dist::LogNormal { mu, sigma } => Dist::LogNormal {
                mu: mu + f.ln(),
                sigma: *sigma,
            },
            Dist::Pareto { scale, shape, cap } => Dist::Pareto {
                scale: scale * f,
                shape: *shape,
                cap: cap.map(times_f),
            },
            Dist::Mixture(m) => Dist::Mixture(Mixture {
                parts: m.parts.iter().map(|(w, d)| (*w, d.scaled(f))).collect(),
                cum: m.cum.clone(),
            }),
            Dist::Empirical(e) => Dist::Empirical(Empirical {
                data: match &e.data {
                    EmpiricalData::Buckets { buckets, cum } => EmpiricalData::Buckets {
                        buckets: buckets
                            .iter()
                            .map(|b| {
                                let lo = times_f(b.lo);
                                Bucket {
                                    lo,
                                    hi: times_f(b.hi).max(lo + Dur(1)),
                                    count: b.count,
                                }
                            })
                            .collect(),
                        cum: cum.clone(),
                    },
                    EmpiricalData::Samples(s) => {
                        EmpiricalData::Samples(s.iter().map(|&v| times_f(v)).collect())
                    }
                },
            }),
        }
    }

    /// Always `d` (clamped to [`MAX_SAMPLE`]).
    pub fn constant(d: Dur) -> Dist {
        Dist::Const(d.min(MAX_SAMPLE))
    }

    /// Always `d`, refused above [`MAX_SAMPLE`] (about 146 years): what
    /// scenario text gives, where [`Dist::constant`]'s clamp would silently
    /// turn `sleep 5000000h` into a sleep of 146 years.
    pub fn exact(d: Dur, what: &str) -> Result<Dist, DistError> {
        if d > MAX_SAMPLE {
            return Err(DistError::TooLarge {
                what: what.into(),
                value: d,
            });
        }
        Ok(Dist::Const(d))
    }

    /// Exponential with mean `mean` (more than 0).
    pub fn exp(mean: Dur) -> Result<Dist, DistError> {
        if mean == Dur::ZERO {
            return Err(DistError::NonPositiveMean);
        }
        Ok(Dist::Exp {
            mean: mean.as_nanos_f64(),
        })
    }

    /// Uniform on `lo..=hi` (both inclusive; `lo <= hi <= MAX_SAMPLE`).
    pub fn uniform(lo: Dur, hi: Dur) -> Result<Dist, DistError> {
        if lo > hi {
            return Err(DistError::LoAboveHi { lo, hi });
        }
        if hi > MAX_SAMPLE {
            return Err(DistError::TooLarge {
                what: "uniform upper bound".into(),
                value: hi,
            });
        }
        Ok(Dist::Uniform { lo, hi })
    }

    /// Log-normal with this median (more than 0) and `sigma` (the standard
    /// deviation of the log; finite, 0 or more): `mu = ln(median_ns)`.
    pub fn lognormal(median: Dur, sigma: f64) -> Result<Dist, DistError> {
        if median == Dur::ZERO {
            return Err(DistError::ZeroMedian);
        }
        if !(sigma.is_finite() && sigma >= 0.0) {
            return Err(DistError::BadSigma(sigma));
        }
        Ok(Dist::LogNormal {
            mu: median.as_nanos_f64().ln(),
            sigma,
        })
    }

    /// Pareto with minimum `scale` (more than 0) and tail index `shape`
    /// (finite, more than 0); values above `cap` (at least `scale`) are
    /// returned as `cap`.
    pub fn pareto(scale: Dur, shape: f64, cap: Option<Dur>) -> Result<Dist, DistError> {
        if scale == Dur::ZERO {
            return Err(DistError::ZeroScale);
        }
        if !(shape.is_finite() && shape > 0.0) {
            return Err(DistError::BadShape(shape));
        }
        if let Some(c) = cap {
            if c < scale {
                return Err(DistError::CapBelowScale { scale, cap: c });
            }
        }
        Ok(Dist::Pareto {
            scale: scale.as_nanos_f64(),
            shape,
            cap,
        })
    }

    /// A weighted choice: weights finite and more than 0, normalised to sum
    /// 1; at least one part.
    pub fn mixture(parts: Vec<(f64, Dist)>) -> Result<Dist, DistError> {
        if parts.is_empty() {
            return Err(DistError::EmptyMixture);
        }
        for (index, (w, _)) in parts.iter().enumerate() {
            if !(w.is_finite() && *w > 0.0) {
                return Err(DistError::BadWeight { index, weight: *w });
            }
        }
        let total: f64 = parts.iter().map(|(w, _)| w).sum();
        if !total.is_finite() {
            return Err(DistError::BadWeight {
                index: parts.len() - 1,
                weight: parts[parts.len() - 1].0,
            });
        }
        let parts: Vec<(f64, Dist)> = parts.into_iter().map(|(w, d)| (w / total, d)).collect();
        let mut cum = Vec::with_capacity(parts.len());
        let mut acc = 0.0;
        for (w, _) in &parts {
            acc += w;
            cum.push(acc);
        }
        if let Some(last) = cum.last_mut() {
            *last = 1.0;
        }
        Ok(Dist::Mixture(Mixture { parts, cum }))
    }

    /// Measured data.
    pub fn empirical(e: Empirical) -> Dist {
        Dist::Empirical(e)
    }

    /// Draws one value, rounded to the nearest nanosecond and clamped to
    /// `[0, MAX_SAMPLE]`.
    ///
    /// Draws per sample: `Const` none; `Uniform` one u64; `Exp` one
    /// (ziggurat, rarely more); `LogNormal` one normal (ziggurat, rarely
    /// more), also when sigma is 0; `Pareto` one f64; `Mixture` one f64 plus
    /// the chosen part's; `Empirical` two u64 for buckets, one for samples.
    #[inline]
    pub fn sample(&self, rng: &mut Stream) -> Dur {
        match self {
            Dist::Const(v) => (*v).min(MAX_SAMPLE),
            Dist::Uniform { lo, hi } => {
                let (lo, hi) = ((*lo).min(MAX_SAMPLE), (*hi).min(MAX_SAMPLE));
                let span = u128::from((hi - lo).ns()) + 1;
                // At most `hi`: no overflow, so no saturating add.
                Dur(lo.ns() + below(rng, span) as u64)
            }
            Dist::Exp { mean } => sample_exp(*mean, rng),
            Dist::LogNormal { mu, sigma } => {
                let z: f64 = rng.sample(StandardNormal);
                to_ns((mu + sigma * z).exp())
            }
            Dist::Pareto { scale, shape, cap } => {
                // Inverse transform, U in (0, 1]: x = scale * U^(-1/shape),
                // as rand_distr's Pareto does, without rebuilding it per draw.
                let u: f64 = rng.sample(rand::distr::OpenClosed01);
                let x = to_ns(scale * u.powf(-1.0 / shape));
                match cap {
                    Some(c) => x.min(*c).min(MAX_SAMPLE),
                    None => x,
                }
            }
            Dist::Mixture(m) => m.sample(rng),
            Dist::Empirical(e) => e.sample(rng),
        }
    }

    /// The chance that a draw is at least `t` (the survival function at
    /// `t`, of the value before rounding; an empirical distribution's is
    /// counted over its buckets or samples).
    pub fn survival(&self, t: Dur) -> f64 {
        let x = t.as_nanos_f64();
        match self {
            Dist::Const(v) => f64::from(u8::from(*v >= t)),
            Dist::Uniform { lo, hi } => {
                if t <= *lo {
                    1.0
                } else if t > *hi {
                    0.0
                } else {
                    (hi.ns() - t.ns() + 1) as f64 / (hi.ns() - lo.ns() + 1) as f64
                }
            }
            Dist::Exp { mean } => (-x / mean).exp(),
            Dist::LogNormal { mu, sigma } => {
                if t == Dur::ZERO {
                    1.0
                } else if *sigma == 0.0 {
                    f64::from(u8::from(mu.exp() >= x))
                } else {
                    1.0 - distrs::Normal::cdf((x.ln() - mu) / sigma, 0.0, 1.0)
                }
            }
            Dist::Pareto { scale, shape, cap } => {
                if cap.is_some_and(|c| t > c) {
                    0.0
                } else if x <= *scale {
                    1.0
                } else {
                    (scale / x).powf(*shape)
                }
            }
            Dist::Mixture(m) => m.parts.iter().map(|(w, d)| w * d.survival(t)).sum(),
            Dist::Empirical(e) => e.survival(t),
        }
    }

    /// A draw conditioned on being at least `elapsed`: what is left of a
    /// wait of this distribution that has lasted `elapsed` is the draw
    /// minus `elapsed`. Rare-event splitting redraws the sleeps a copy of
    /// a world is in this way, so that copies of one snapshot part at
    /// once. `None` where there is nothing to redraw (a constant, a
    /// draw that cannot last `elapsed`) or no exact way (an empirical
    /// distribution that 64 tries left short).
    pub fn sample_beyond(&self, elapsed: Dur, rng: &mut Stream) -> Option<Dur> {
        let e = elapsed.as_nanos_f64();
        let d = match self {
            Dist::Const(_) => return None,
            Dist::Uniform { lo, hi } => {
                let lo = (*lo).max(elapsed);
                if lo > *hi {
                    return None;
                }
                Dur(lo.ns() + below(rng, u128::from(hi.ns() - lo.ns()) + 1) as u64)
            }
            Dist::Exp { mean } => Dur(elapsed.ns().saturating_add(sample_exp(*mean, rng).ns())),
            Dist::LogNormal { mu, sigma } => {
                if *sigma == 0.0 {
                    return None;
                }
                let p0 = if elapsed == Dur::ZERO {
                    0.0
                } else {
                    distrs::Normal::cdf((e.ln() - mu) / sigma, 0.0, 1.0)
                };
                if p0 >= 1.0 - 1e-12 {
                    return None;
                }
                let u: f64 = rng.sample(rand::distr::Open01);
                let z = distrs::Normal::ppf(p0 + (1.0 - p0) * u, 0.0, 1.0);
                to_ns((mu + sigma * z).exp())
            }
            Dist::Pareto { scale, shape, cap } => {
                if cap.is_some_and(|c| elapsed > c) {
                    return None;
                }
                let u: f64 = rng.sample(rand::distr::OpenClosed01);
                let x = to_ns(scale.max(e) * u.powf(-1.0 / shape));
                match cap {
                    Some(c) => x.min(*c),
                    None => x,
                }
            }
            Dist::Mixture(m) => {
                // The parts weighted by how likely each is to last this long.
                let w: Vec<f64> = (m.parts.iter())
                    .map(|(w, d)| w * d.survival(elapsed))
                    .collect();
                let total: f64 = w.iter().sum();
                if total <= 0.0 || !total.is_finite() {
                    return None;
                }
                let mut u = rng.sample::<f64, _>(StandardUniform) * total;
                let i = (w.iter().position(|&wi| {
                    u -= wi;
                    u < 0.0
                }))
                .unwrap_or(w.len() - 1);
                return m.parts[i].1.sample_beyond(elapsed, rng);
            }
            Dist::Empirical(e) => {
                return (0..64).map(|_| e.sample(rng)).find(|&d| d >= elapsed);
            }
        };
        Some(d.max(elapsed).min(MAX_SAMPLE.max(elapsed)))
    }

    /// The analytical mean in nanoseconds (before rounding to whole
    /// nanoseconds). An uncapped Pareto with shape <= 1 has an infinite mean.
    pub fn mean_ns(&self) -> f64 {
        match self {
            Dist::Const(v) => (*v).min(MAX_SAMPLE).as_nanos_f64(),
            Dist::Uniform { lo, hi } => (lo.as_nanos_f64() + hi.as_nanos_f64()) / 2.0,
            Dist::Exp { mean } => *mean,
            Dist::LogNormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            Dist::Pareto { scale, shape, cap } => pareto_mean(*scale, *shape, *cap),
            Dist::Mixture(m) => m.parts.iter().map(|(w, d)| w * d.mean_ns()).sum(),
            Dist::Empirical(e) => e.mean_ns(),
        }
    }

    /// True if every sample is 0: `Const(0)`, a mixture of such parts, or an
    /// empirical distribution with all its mass at 0.
    pub fn is_always_zero(&self) -> bool {
        match self {
            Dist::Const(v) => *v == Dur::ZERO,
            Dist::Mixture(m) => m.parts.iter().all(|(_, d)| d.is_always_zero()),
            Dist::Empirical(e) => e.is_always_zero(),
            _ => false,
        }
    }

    /// The smallest value it can produce.
    pub fn min(&self) -> Dur {
        match self {
            Dist::Const(v) => (*v).min(MAX_SAMPLE),
            Dist::Uniform { lo, .. } => (*lo).min(MAX_SAMPLE),
            Dist::Exp { .. } => Dur::ZERO,
            Dist::LogNormal { mu, sigma } => {
                if *sigma == 0.0 {
                    to_ns(mu.exp())
                } else {
                    Dur::ZERO
                }
            }
            Dist::Pareto { scale, cap, .. } => {
                let m = to_ns(*scale);
                match cap {
                    Some(c) => m.min(*c).min(MAX_SAMPLE),
                    None => m,
                }
            }
            Dist::Mixture(m) => m
                .parts
                .iter()
                .map(|(_, d)| d.min())
                .min()
                .unwrap_or(Dur::ZERO),
            Dist::Empirical(e) => e.min(),
        }
    }
}

impl From<Empirical> for Dist {
    fn from(e: Empirical) -> Dist {
        Dist::Empirical(e)
    }
}

/// Mean of `min(X, cap)` for X ~ Pareto(scale, shape):
/// `E = scale + integral_scale^cap (scale/x)^shape dx`.
fn pareto_mean(scale: f64, shape: f64, cap: Option<Dur>) -> f64 {
    let Some(cap) = cap else {
        return if shape > 1.0 {
            shape * scale / (shape - 1.0)
        } else {
            f64::INFINITY
        };
    };
    let c = cap.as_nanos_f64();
    if c <= scale {
        return c;
    }
    let tail = if (shape - 1.0).abs() < 1e-12 {
        scale * (c / scale).ln()
    } else {
        // scale^a * (c^(1-a) - scale^(1-a)) / (1-a), written with ratios to
        // keep the powers in range.
        scale * ((c / scale).powf(1.0 - shape) - 1.0) / (1.0 - shape)
    };
    scale + tail
}

/// A float nanosecond count as a duration string: exact when whole.
fn fmt_ns(x: f64) -> String {
    if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64 {
        Dur(x as u64).to_string()
    } else {
        format!("{x}ns")
    }
}

impl fmt::Display for Dist {
    /// The inline form [`parse_inline`] reads back (for values built by the
    /// constructors); mixtures and empirical data get a short description.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Const(v) => write!(f, "{v}"),
            Dist::Uniform { lo, hi } => write!(f, "uniform({lo}, {hi})"),
            Dist::Exp { mean } => write!(f, "exp({})", fmt_ns(*mean)),
            Dist::LogNormal { mu, sigma } => {
                write!(f, "lognormal({}, {sigma})", fmt_ns(mu.exp().round()))
            }
            Dist::Pareto { scale, shape, cap } => {
                write!(f, "pareto({}, {shape}", fmt_ns(*scale))?;
                if let Some(c) = cap {
                    write!(f, ", {c}")?;
                }
                write!(f, ")")
            }
            Dist::Mixture(m) => write!(f, "mixture({} parts)", m.parts.len()),
            Dist::Empirical(e) => match &e.data {
                EmpiricalData::Buckets { buckets, .. } => write!(
                    f,
                    "empirical({} samples in {} buckets)",
                    e.total_count(),
                    buckets.len()
                ),
                EmpiricalData::Samples(s) => write!(f, "empirical({} samples)", s.len()),
            },
        }
    }
}

/// Parses the inline form used in step strings: `1.3us` (constant),
/// `const(1.3us)`, `exp(200us)` (mean), `uniform(1us, 2us)` (inclusive),
/// `lognormal(20ms, 1.5)` (median, sigma), `pareto(100us, 1.5)` or
/// `pareto(100us, 1.5, 1s)` (scale, shape, cap). Whitespace is ignored
/// around names and arguments; names are case-insensitive.
pub fn parse_inline(text: &str) -> Result<Dist, DistError> {
    let s = text.trim();
    let Some(open) = s.find('(') else {
        if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-') {
            return Dist::exact(dur_arg(s, "duration")?, "duration");
        }
        return Err(DistError::UnknownKind(s.to_string()));
    };
    let name = s[..open].trim().to_ascii_lowercase();
    let Some(inner) = s[open + 1..].strip_suffix(')') else {
        return Err(DistError::Syntax {
            text: s.to_string(),
            problem: "expected it to end with `)`".into(),
        });
    };
    if inner.contains(['(', ')']) {
        return Err(DistError::Syntax {
            text: s.to_string(),
            problem: "expected plain arguments without nested parentheses".into(),
        });
    }
    let args: Vec<&str> = if inner.trim().is_empty() {
        Vec::new()
    } else {
        inner.split(',').map(str::trim).collect()
    };
    let want = |expected: &str| {
        Err(DistError::ArgCount {
            text: s.to_string(),
            got: args.len(),
            expected: expected.to_string(),
        })
    };
    match (name.as_str(), args.as_slice()) {
        ("const", [d]) => Dist::exact(dur_arg(d, "const duration")?, "const duration"),
        ("const", _) => want("1: const(duration)"),
        ("exp", [m]) => Dist::exp(dur_arg(m, "exp mean")?),
        ("exp", _) => want("1: exp(mean)"),
        ("uniform", [lo, hi]) => Dist::uniform(
            dur_arg(lo, "uniform lower bound")?,
            dur_arg(hi, "uniform upper bound")?,
        ),
        ("uniform", _) => want("2: uniform(lo, hi)"),
        ("lognormal", [m, sg]) => Dist::lognormal(
            dur_arg(m, "lognormal median")?,
            num_arg(sg, "lognormal sigma, a number >= 0 such as `1.5`")?,
        ),
        ("lognormal", _) => want("2: lognormal(median, sigma)"),
        ("pareto", [sc, sh]) => Dist::pareto(
            dur_arg(sc, "pareto scale")?,
            num_arg(sh, "pareto shape, a number > 0 such as `1.5`")?,
            None,
        ),
        ("pareto", [sc, sh, cap]) => Dist::pareto(
            dur_arg(sc, "pareto scale")?,
            num_arg(sh, "pareto shape, a number > 0 such as `1.5`")?,
            Some(dur_arg(cap, "pareto cap")?),
        ),
        ("pareto", _) => want("2 or 3: pareto(scale, shape) or pareto(scale, shape, cap)"),
        _ => Err(DistError::UnknownKind(s.to_string())),
    }
}

fn dur_arg(text: &str, what: &str) -> Result<Dur, DistError> {
    parse_duration(text).map_err(|source| DistError::Duration {
        what: what.to_string(),
        source,
    })
}

fn num_arg(text: &str, what: &str) -> Result<f64, DistError> {
    let t = text.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(DistError::BadNumber {
            what: what.to_string(),
            text: t.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    fn rng() -> Stream {
        stream(1, 0, "test", 0)
    }

    fn us(n: u64) -> Dur {
        Dur::from_us(n)
    }

    /// `scaled(f)` draws what `self` draws times `f`, within the rounding
    /// of each to whole nanoseconds, from the same random numbers: after
    /// every draw both streams are at the same place.
    #[test]
    fn a_scaled_distribution_draws_the_same_numbers_times_the_factor() {
        let dists = [
            Dist::Const(Dur(3_000)),
            Dist::uniform(us(1), us(9)).unwrap(),
            Dist::exp(us(20)).unwrap(),
            Dist::lognormal(us(6), 0.27).unwrap(),
            Dist::pareto(us(16), 2.58, Some(us(128))).unwrap(),
            Dist::mixture(vec![
                (0.962, Dist::lognormal(us(6), 0.27).unwrap()),
                (0.038, Dist::pareto(us(16), 2.58, Some(us(128))).unwrap()),
            ])
            .unwrap(),
            Dist::Empirical(
                Empirical::from_samples(vec![Dur(1_000), Dur(5_000), Dur(9_000)]).unwrap(),
            ),
            Dist::Empirical(
                Empirical::from_buckets(vec![Bucket {
                    lo: Dur(4_000),
                    hi: Dur(8_000),
                    count: 1,
                }])
                .unwrap(),
            ),
        ];
        for f in [0.5, 2.0, 1.0 / 3.0] {
            for d in &dists {
                let s = d.scaled(f);
                let (mut a, mut b) = (rng(), rng());
                for _ in 0..2_000 {
                    let (x, y) = (
                        d.sample(&mut a).as_nanos_f64(),
                        s.sample(&mut b).as_nanos_f64(),
                    );
                    // Buckets draw a position in the scaled bucket: up to
                    // one original nanosecond apart, times f.
                    assert!((x * f - y).abs() <= 1.0 + f, "{d} x {f}: {x} -> {y}");
                    assert_eq!(a.next_u64(), b.next_u64(), "{d} x {f}: streams apart");
                }
                assert_eq!(s.mean_ns() > 0.0, d.mean_ns() > 0.0);
                assert!(
                    (s.mean_ns() - d.mean_ns() * f).abs() <= 1.0 + d.mean_ns() * f * 1e-9,
                    "{d} x {f}"
                );
            }
        }
        // A cost that was not zero stays at least 1 ns; zero stays zero.
        assert_eq!(Dist::Const(Dur(1)).scaled(0.01), Dist::Const(Dur(1)));
        assert_eq!(Dist::Const(Dur(0)).scaled(100.0), Dist::Const(Dur(0)));
    }

    /// Sample mean and the standard error of that mean.
    fn mean_and_se(d: &Dist, n: usize) -> (f64, f64) {
        let mut r = rng();
        let mut sum = 0.0;
        let mut sum2 = 0.0;
        for _ in 0..n {
            let x = d.sample(&mut r).as_nanos_f64();
            sum += x;
            sum2 += x * x;
        }
        let mean = sum / n as f64;
        let var = (sum2 / n as f64 - mean * mean).max(0.0) * n as f64 / (n as f64 - 1.0);
        (mean, (var / n as f64).sqrt())
    }

    /// The sample mean of 200k draws is within 5 standard errors of the
    /// analytical mean. By the CLT the sample mean is close to normal, so a
    /// correct sampler misses by 5 SE with probability ~6e-7; a wrong
    /// parameterisation (e.g. rate for mean, sigma squared) misses by far
    /// more. 1 ns is added for rounding to whole nanoseconds.
    fn assert_mean(d: &Dist) {
        let (m, se) = mean_and_se(d, 200_000);
        let want = d.mean_ns();
        assert!(
            (m - want).abs() <= 5.0 * se + 1.0,
            "{d}: sample mean {m}, analytical {want}, se {se}"
        );
    }

    #[test]
    fn parses_every_inline_form() {
        assert_eq!(parse_inline("1.3us"), Ok(Dist::Const(Dur(1300))));
        assert_eq!(parse_inline("  0 "), Ok(Dist::Const(Dur(0))));
        assert_eq!(parse_inline("const(1.3us)"), Ok(Dist::Const(Dur(1300))));
        assert_eq!(
            parse_inline("exp(200us)"),
            Ok(Dist::Exp { mean: 200_000.0 })
        );
        assert_eq!(
            parse_inline(" uniform( 1us ,2us ) "),
            Ok(Dist::Uniform {
                lo: Dur(1000),
                hi: Dur(2000)
            })
        );
        assert_eq!(
            parse_inline("lognormal(20ms, 1.5)"),
            Ok(Dist::LogNormal {
                mu: (20e6f64).ln(),
                sigma: 1.5
            })
        );
        assert_eq!(
            parse_inline("pareto(100us, 1.5)"),
            Ok(Dist::Pareto {
                scale: 100_000.0,
                shape: 1.5,
                cap: None
            })
        );
        assert_eq!(
            parse_inline("Pareto (100us, 1.5, 1s)"),
            Ok(Dist::Pareto {
                scale: 100_000.0,
                shape: 1.5,
                cap: Some(Dur(1_000_000_000))
            })
        );
    }

    #[test]
    fn display_round_trips() {
        let ds = [
            Dist::constant(Dur(1300)),
            Dist::exp(us(200)).unwrap(),
            Dist::uniform(us(1), us(2)).unwrap(),
            Dist::lognormal(Dur::from_ms(20), 1.5).unwrap(),
            Dist::lognormal(Dur(6_497), 0.25).unwrap(),
            Dist::pareto(us(100), 1.5, None).unwrap(),
            Dist::pareto(us(100), 1.5, Some(Dur::from_secs(1))).unwrap(),
        ];
        for d in ds {
            assert_eq!(parse_inline(&d.to_string()), Ok(d.clone()), "{d}");
        }
        assert_eq!(Dist::exp(us(200)).unwrap().to_string(), "exp(200us)");
        assert_eq!(
            Dist::lognormal(Dur::from_ms(20), 1.5).unwrap().to_string(),
            "lognormal(20ms, 1.5)"
        );
        let m =
            Dist::mixture(vec![(1.0, Dist::Const(Dur(0))), (3.0, Dist::Const(Dur(5)))]).unwrap();
        assert_eq!(m.to_string(), "mixture(2 parts)");
    }

    #[test]
    fn refuses_bad_inline_forms() {
        assert!(matches!(
            parse_inline("gamma(1us, 2)"),
            Err(DistError::UnknownKind(_))
        ));
        assert!(matches!(
            parse_inline("fast"),
            Err(DistError::UnknownKind(_))
        ));
        assert!(matches!(
            parse_inline("exp(1us, 2us)"),
            Err(DistError::ArgCount { got: 2, .. })
        ));
        assert!(matches!(
            parse_inline("uniform(1us)"),
            Err(DistError::ArgCount { got: 1, .. })
        ));
        assert!(matches!(
            parse_inline("pareto()"),
            Err(DistError::ArgCount { got: 0, .. })
        ));
        assert!(matches!(
            parse_inline("pareto(1us, 1, 2us, 3us)"),
            Err(DistError::ArgCount { got: 4, .. })
        ));
        assert!(matches!(
            parse_inline("exp(200 parsecs)"),
            Err(DistError::Duration {
                source: DurationError::BadUnit(_),
                ..
            })
        ));
        assert!(matches!(
            parse_inline("12"),
            Err(DistError::Duration {
                source: DurationError::NoUnit(_),
                ..
            })
        ));
        assert!(matches!(
            parse_inline("lognormal(20ms, -1.5)"),
            Err(DistError::BadSigma(_))
        ));
        assert!(matches!(
            parse_inline("lognormal(20ms, x)"),
            Err(DistError::BadNumber { .. })
        ));
        assert!(matches!(
            parse_inline("lognormal(20ms, inf)"),
            Err(DistError::BadNumber { .. })
        ));
        assert!(matches!(
            parse_inline("uniform(2us, 1us)"),
            Err(DistError::LoAboveHi { .. })
        ));
        assert!(matches!(
            parse_inline("exp(0)"),
            Err(DistError::NonPositiveMean)
        ));
        assert!(matches!(
            parse_inline("pareto(1us, 0)"),
            Err(DistError::BadShape(_))
        ));
        assert!(matches!(
            parse_inline("pareto(1ms, 1.5, 1us)"),
            Err(DistError::CapBelowScale { .. })
        ));
        assert!(matches!(
            parse_inline("exp(200us"),
            Err(DistError::Syntax { .. })
        ));
        assert!(matches!(
            parse_inline("exp(exp(1us))"),
            Err(DistError::Syntax { .. })
        ));
        // Messages say what was expected.
        let msg = parse_inline("uniform(1us)").unwrap_err().to_string();
        assert!(msg.contains("expected 2: uniform(lo, hi)"), "{msg}");
        let msg = parse_inline("exp(4 parsecs)").unwrap_err().to_string();
        assert!(
            msg.starts_with("exp mean:") && msg.contains("expected"),
            "{msg}"
        );
    }

    #[test]
    fn constructors_refuse_bad_parameters() {
        assert!(Dist::mixture(vec![]).is_err());
        assert!(matches!(
            Dist::mixture(vec![(1.0, Dist::Const(Dur(1))), (0.0, Dist::Const(Dur(2)))]),
            Err(DistError::BadWeight { index: 1, .. })
        ));
        assert!(Dist::mixture(vec![(f64::NAN, Dist::Const(Dur(1)))]).is_err());
        assert!(Dist::lognormal(Dur(0), 1.0).is_err());
        assert!(Dist::lognormal(Dur(5), f64::NAN).is_err());
        assert!(Dist::pareto(Dur(0), 1.0, None).is_err());
        assert!(Dist::uniform(Dur(0), Dur(u64::MAX)).is_err());
        assert_eq!(Dist::constant(Dur(u64::MAX)), Dist::Const(MAX_SAMPLE));
    }

    #[test]
    fn a_draw_beyond_an_elapsed_time_follows_the_conditional_law() {
        // For each kind: every draw is at least the elapsed time, and the
        // share of draws beyond a later point is the conditional survival
        // S(x) / S(elapsed), within 3 standard errors of 20,000 draws.
        let mut rng = stream(7, 0, "beyond", 0);
        let lognormal = parse_inline("lognormal(20ms, 1.2)").unwrap();
        let pareto = parse_inline("pareto(1ms, 1.5, 1s)").unwrap();
        let mix = parse_inline("exp(1ms)").unwrap();
        let mixture = Dist::mixture(vec![(0.9, mix.clone()), (0.1, lognormal.clone())]).unwrap();
        let ms = |m: u64| Dur(m * 1_000_000);
        for (d, elapsed, beyond) in [
            (&lognormal, ms(100), ms(300)),
            (&pareto, ms(10), ms(40)),
            (&mix, ms(5), ms(6)),
            (&mixture, ms(50), ms(150)),
            (&parse_inline("uniform(1ms, 10ms)").unwrap(), ms(4), ms(7)),
        ] {
            let n = 20_000;
            let draws: Vec<Dur> = (0..n)
                .map(|_| d.sample_beyond(elapsed, &mut rng).unwrap())
                .collect();
            assert!(draws.iter().all(|&x| x >= elapsed), "{d:?}");
            let seen = draws.iter().filter(|&&x| x >= beyond).count() as f64 / n as f64;
            let want = d.survival(beyond) / d.survival(elapsed);
            let se = (want * (1.0 - want) / n as f64).sqrt();
            assert!(
                (seen - want).abs() < 3.0 * se + 1e-3,
                "{d:?}: {seen} against {want}"
            );
        }
        assert_eq!(Dist::Const(ms(3)).sample_beyond(ms(1), &mut rng), None);
        assert_eq!(pareto.sample_beyond(ms(2000), &mut rng), None);
    }

    #[test]
    fn to_ns_rounds_to_nearest_and_clamps_nan_and_infinities() {
        assert_eq!(to_ns(0.49), Dur(0));
        assert_eq!(to_ns(0.5), Dur(1));
        assert_eq!(to_ns(1234.6), Dur(1235));
        assert_eq!(to_ns(-5.0), Dur(0));
        assert_eq!(to_ns(f64::NEG_INFINITY), Dur(0));
        assert_eq!(to_ns(f64::NAN), Dur(0));
        assert_eq!(to_ns(1e300), MAX_SAMPLE);
        assert_eq!(to_ns(f64::INFINITY), MAX_SAMPLE);
    }

    #[test]
    fn sample_means_match_analytical_means() {
        assert_mean(&Dist::exp(us(200)).unwrap());
        assert_mean(&Dist::uniform(us(1), us(2)).unwrap());
        assert_mean(&Dist::uniform(Dur(3), Dur(3)).unwrap());
        assert_mean(&Dist::lognormal(Dur::from_ms(20), 1.0).unwrap());
        assert_mean(&Dist::pareto(us(100), 1.5, Some(Dur::from_ms(10))).unwrap());
        assert_mean(&Dist::pareto(us(100), 1.0, Some(Dur::from_ms(10))).unwrap());
        assert_mean(&Dist::pareto(us(100), 0.7, Some(Dur::from_ms(10))).unwrap());
        assert_mean(&Dist::pareto(us(100), 3.0, None).unwrap());
        assert_mean(
            &Dist::mixture(vec![
                (0.9, Dist::Const(Dur(1300))),
                (0.1, Dist::exp(Dur::from_ms(1)).unwrap()),
            ])
            .unwrap(),
        );
    }

    #[test]
    fn analytical_means() {
        assert_eq!(Dist::uniform(us(1), us(2)).unwrap().mean_ns(), 1500.0);
        assert_eq!(
            Dist::pareto(us(1), 1.0, None).unwrap().mean_ns(),
            f64::INFINITY
        );
        assert!((Dist::pareto(us(1), 2.0, None).unwrap().mean_ns() - 2000.0).abs() < 1e-9);
        // shape 1, cap c: scale * (1 + ln(c/scale)).
        let m = Dist::pareto(us(1), 1.0, Some(us(10))).unwrap().mean_ns();
        assert!((m - 1000.0 * (1.0 + 10f64.ln())).abs() < 1e-6, "{m}");
        // shape 2, cap c: 2*scale - scale^2/c.
        let m = Dist::pareto(us(1), 2.0, Some(us(4))).unwrap().mean_ns();
        assert!((m - (2000.0 - 250.0)).abs() < 1e-6, "{m}");
        let ln = Dist::lognormal(Dur(1000), 0.0).unwrap();
        assert!((ln.mean_ns() - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn min_and_always_zero() {
        assert!(Dist::Const(Dur(0)).is_always_zero());
        assert!(!Dist::Const(Dur(1)).is_always_zero());
        assert!(
            Dist::mixture(vec![(1.0, Dist::Const(Dur(0))), (2.0, Dist::Const(Dur(0)))])
                .unwrap()
                .is_always_zero()
        );
        assert!(!Dist::exp(us(1)).unwrap().is_always_zero());
        assert!(
            Dist::Empirical(Empirical::from_samples(vec![Dur(0), Dur(0)]).unwrap())
                .is_always_zero()
        );
        let zero_hist = Empirical::from_bpftrace_hist("[0] 5 |@@|\n", None, 1000.0).unwrap();
        assert!(Dist::Empirical(zero_hist).is_always_zero());
        assert_eq!(Dist::uniform(us(1), us(2)).unwrap().min(), Dur(1000));
        assert_eq!(Dist::exp(us(1)).unwrap().min(), Dur::ZERO);
        assert_eq!(
            Dist::pareto(us(100), 1.5, None).unwrap().min(),
            Dur(100_000)
        );
        assert_eq!(
            Dist::mixture(vec![(1.0, Dist::Const(Dur(7))), (1.0, Dist::Const(Dur(3)))])
                .unwrap()
                .min(),
            Dur(3)
        );
        // Samples respect min.
        let mut r = rng();
        let p = Dist::pareto(us(100), 1.5, Some(us(300))).unwrap();
        for _ in 0..10_000 {
            let x = p.sample(&mut r);
            assert!((Dur(100_000)..=Dur(300_000)).contains(&x), "{x}");
        }
    }

    #[test]
    fn const_draws_no_random_numbers() {
        let mut r = rng();
        let before = r.clone();
        for d in [
            Dist::Const(Dur(0)),
            Dist::Const(Dur(1300)),
            Dist::constant(Dur(u64::MAX)),
        ] {
            d.sample(&mut r);
        }
        assert_eq!(r.clone().next_u64(), before.clone().next_u64());
        assert_eq!(r, before);
        // While every other kind does draw.
        let d = Dist::uniform(Dur(5), Dur(5)).unwrap();
        d.sample(&mut r);
        assert_ne!(r, before);
    }

    #[test]
    fn same_seed_same_sequence() {
        let ds = [
            Dist::exp(us(200)).unwrap(),
            Dist::uniform(us(1), us(2)).unwrap(),
            Dist::lognormal(Dur::from_ms(20), 1.5).unwrap(),
            Dist::pareto(us(100), 1.5, Some(Dur::from_secs(1))).unwrap(),
            Dist::mixture(vec![
                (1.0, Dist::Const(Dur(1))),
                (1.0, Dist::exp(us(1)).unwrap()),
            ])
            .unwrap(),
            Dist::Empirical(Empirical::from_bpftrace_hist(MEASURED, None, 1000.0).unwrap()),
        ];
        let run = || {
            let mut r = rng();
            let mut out = Vec::new();
            for _ in 0..1000 {
                for d in &ds {
                    out.push(d.sample(&mut r));
                }
            }
            out
        };
        let a = run();
        assert_eq!(a, run());
        let mut other = stream(2, 0, "test", 0);
        assert_ne!(a[0], ds[0].sample(&mut other));
    }

    const MEASURED: &str = "\
@usecs:
[0]                   16 |@@@@@@                                              |
[1]                    2 |                                                    |
[2, 4)                80 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                      |
[4, 8)               131 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[8, 16)              121 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@     |
[16, 32)              35 |@@@@@@@@@@@@@                                       |
[32, 64)               7 |@@                                                  |
[64, 128)              1 |                                                    |
[128, 256)             5 |@                                                   |
[256, 512)             3 |@                                                   |
[1K, 2K)               2 |                                                    |
[4K, 8K)               2 |                                                    |
[8K, 16K)              1 |                                                    |
";

    #[test]
    fn parses_measured_bpftrace_hist() {
        let e = Empirical::from_bpftrace_hist(MEASURED, None, 1000.0).unwrap();
        assert_eq!(e.len(), 13);
        assert_eq!(e.total_count(), 406);
        let b = e.buckets().unwrap();
        assert_eq!(
            b[0],
            Bucket {
                lo: Dur(0),
                hi: Dur(1),
                count: 16
            }
        );
        assert_eq!(
            b[1],
            Bucket {
                lo: Dur(1000),
                hi: Dur(1001),
                count: 2
            }
        );
        assert_eq!(
            b[2],
            Bucket {
                lo: Dur(2000),
                hi: Dur(4000),
                count: 80
            }
        );
        assert_eq!(
            b[10],
            Bucket {
                lo: Dur(1_024_000),
                hi: Dur(2_048_000),
                count: 2
            }
        );
        assert_eq!(
            b[12],
            Bucket {
                lo: Dur(8_192_000),
                hi: Dur(16_384_000),
                count: 1
            }
        );
        // Same with the map named, with or without `@`.
        assert_eq!(
            Empirical::from_bpftrace_hist(MEASURED, Some("usecs"), 1000.0),
            Ok(e.clone())
        );
        assert_eq!(
            Empirical::from_bpftrace_hist(MEASURED, Some("@usecs"), 1000.0),
            Ok(e.clone())
        );

        // Analytical mean from bucket midpoints, in µs: [N] is the value N,
        // [lo, hi) contributes (lo + hi) / 2.
        let mid_us = [
            (0.0, 16.0),
            (1.0, 2.0),
            (3.0, 80.0),
            (6.0, 131.0),
            (12.0, 121.0),
            (24.0, 35.0),
            (48.0, 7.0),
            (96.0, 1.0),
            (192.0, 5.0),
            (384.0, 3.0),
            (1536.0, 2.0),
            (6144.0, 2.0),
            (12288.0, 1.0),
        ];
        let midpoint_mean = mid_us.iter().map(|(m, c)| m * c).sum::<f64>() / 406.0 * 1000.0;
        // The sampler's exact mean differs only by the half nanosecond of
        // integer buckets.
        assert!((e.mean_ns() - midpoint_mean).abs() < 1.0);

        let d = Dist::Empirical(e.clone());
        let mut r = rng();
        let n = 200_000;
        let (mut sum, mut sum2) = (0.0, 0.0);
        let mut hits = vec![0u64; b.len()];
        for _ in 0..n {
            let x = d.sample(&mut r);
            let i = b
                .iter()
                .position(|k| (k.lo..k.hi).contains(&x))
                .unwrap_or_else(|| panic!("{x} is in no bucket"));
            hits[i] += 1;
            sum += x.as_nanos_f64();
            sum2 += x.as_nanos_f64() * x.as_nanos_f64();
        }
        let mean = sum / n as f64;
        let se = ((sum2 / n as f64 - mean * mean) / n as f64).sqrt();
        // 5 standard errors, as in `assert_mean`.
        assert!(
            (mean - midpoint_mean).abs() <= 5.0 * se + 1.0,
            "sample mean {mean}, midpoint mean {midpoint_mean}, se {se}"
        );
        // Bucket frequencies follow the counts: the [4, 8) bucket has
        // p = 131/406, binomial sd = sqrt(n p (1-p)) ~ 209; allow 5 sd.
        let expect = n as f64 * 131.0 / 406.0;
        assert!((hits[3] as f64 - expect).abs() < 5.0 * 209.2, "{}", hits[3]);
        assert_eq!(d.min(), Dur::ZERO);
        assert_eq!(d.to_string(), "empirical(406 samples in 13 buckets)");
    }

    #[test]
    fn hist_with_two_maps_needs_a_name() {
        let text = "Attaching 2 probes...\n\n@count: 7\n@lat[read]:\n[1K, 2K)   3 |@@@|\n\n@lat[write]:\n[0, 10)   5 |@@@@@|\n[10, 20)  1 |@|\n(..., 0)  2 |@@|\n[100, ...)  1 |@|\n";
        let err = Empirical::from_bpftrace_hist(text, None, 1.0).unwrap_err();
        assert!(
            matches!(&err, DistError::AmbiguousMap(m) if m.len() == 2),
            "{err}"
        );
        assert!(err.to_string().contains("@lat[read], @lat[write]"), "{err}");
        let r = Empirical::from_bpftrace_hist(text, Some("lat[read]"), 1.0).unwrap();
        assert_eq!(
            r.buckets().unwrap(),
            &[Bucket {
                lo: Dur(1024),
                hi: Dur(2048),
                count: 3
            }]
        );
        let w = Empirical::from_bpftrace_hist(text, Some("@lat[write]"), 1.0).unwrap();
        assert_eq!(
            w.buckets().unwrap(),
            &[
                Bucket {
                    lo: Dur(0),
                    hi: Dur(10),
                    count: 5
                },
                Bucket {
                    lo: Dur(10),
                    hi: Dur(20),
                    count: 1
                },
                Bucket {
                    lo: Dur(0),
                    hi: Dur(1),
                    count: 2
                },
                Bucket {
                    lo: Dur(100),
                    hi: Dur(101),
                    count: 1
                },
            ]
        );
        assert!(matches!(
            Empirical::from_bpftrace_hist(text, Some("lat"), 1.0),
            Err(DistError::MapNotFound { .. })
        ));
        assert!(matches!(
            Empirical::from_bpftrace_hist(text, Some("count"), 1.0),
            Err(DistError::EmptyHist(_))
        ));
    }

    #[test]
    fn hist_garbage_names_the_line() {
        let line_of = |text: &str| match Empirical::from_bpftrace_hist(text, None, 1000.0) {
            Err(DistError::Line { line, .. } | DistError::At { line, .. }) => line,
            other => panic!("expected a line error, got {other:?}"),
        };
        let mut lines: Vec<&str> = MEASURED.lines().collect();
        lines[6] = "[16, 32)              x |@@@|";
        let text = lines.join("\n");
        assert_eq!(line_of(&text), 7);
        let msg = Empirical::from_bpftrace_hist(&text, None, 1000.0)
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "line 7, column 23: a bucket count that is not a whole number of zero or more"
        );
        lines[6] = "hello world";
        assert_eq!(line_of(&lines.join("\n")), 7);
        lines[6] = "[16, 32";
        assert_eq!(line_of(&lines.join("\n")), 7);
        lines[6] = "[32, 16)  3 |@|";
        assert_eq!(line_of(&lines.join("\n")), 7);
        lines[6] = "[16, 3Q)  3 |@|";
        assert_eq!(line_of(&lines.join("\n")), 7);
        lines[6] = "[16, 32)  3 extra";
        assert_eq!(line_of(&lines.join("\n")), 7);
        lines[6] = "[16, 32)";
        assert_eq!(line_of(&lines.join("\n")), 7);
        assert!(matches!(
            Empirical::from_bpftrace_hist("", None, 1000.0),
            Err(DistError::EmptyHist(_))
        ));
        assert!(matches!(
            Empirical::from_bpftrace_hist("@x:\n[0] 0 |\n", None, 1000.0),
            Err(DistError::EmptyHist(_))
        ));
        assert!(matches!(
            Empirical::from_bpftrace_hist(MEASURED, None, 0.0),
            Err(DistError::BadUnit(_))
        ));
    }

    const TSV: &str =
        "time_s\tpid\tlat_us\n\n0.1\t42\t12.5\n0.2\t42\t3\n0.3\t43\t0\n0.4\t43\t1e2\n";

    #[test]
    fn parses_samples_column() {
        let e = Empirical::from_samples_text(TSV, Some("lat_us"), 1000.0).unwrap();
        assert_eq!(e.len(), 4);
        assert_eq!(
            e.samples().unwrap(),
            &[Dur(12_500), Dur(3_000), Dur(0), Dur(100_000)]
        );
        assert_eq!(e.mean_ns(), 115_500.0 / 4.0);
        assert_eq!(e.min(), Dur::ZERO);
        let first = Empirical::from_samples_text(TSV, None, 1e9).unwrap();
        assert_eq!(first.samples().unwrap()[0], Dur(100_000_000));
        // Headerless CSV, first column.
        let csv = Empirical::from_samples_text("5,9\r\n7,1\r\n", None, 1.0).unwrap();
        assert_eq!(csv.samples().unwrap(), &[Dur(5), Dur(7)]);
        // Bootstrap draws only the given samples, each about equally often.
        let d = Dist::Empirical(e);
        let mut r = rng();
        let mut seen = [0u32; 4];
        for _ in 0..4000 {
            let x = d.sample(&mut r);
            let i = [12_500, 3_000, 0, 100_000]
                .iter()
                .position(|&v| Dur(v) == x)
                .unwrap();
            seen[i] += 1;
        }
        assert!(seen.iter().all(|&c| (850..1150).contains(&c)), "{seen:?}");
        assert_eq!(d.to_string(), "empirical(4 samples)");
    }

    #[test]
    fn samples_errors_say_what_and_where() {
        let err = Empirical::from_samples_text(TSV, Some("latency"), 1000.0).unwrap_err();
        assert!(matches!(&err, DistError::ColumnNotFound { name, .. } if name == "latency"));
        assert!(err.to_string().contains("time_s, pid, lat_us"), "{err}");
        let bad = TSV.replace("\t3\n", "\tfast\n");
        let err = Empirical::from_samples_text(&bad, Some("lat_us"), 1000.0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 4: column `lat_us`: not a number of zero or more"
        );
        let short = TSV.replace("0.3\t43\t0", "0.3\t43");
        assert!(matches!(
            Empirical::from_samples_text(&short, Some("lat_us"), 1000.0),
            Err(DistError::Line { line: 5, .. })
        ));
        let neg = TSV.replace("\t3\n", "\t-3\n");
        assert!(matches!(
            Empirical::from_samples_text(&neg, Some("lat_us"), 1000.0),
            Err(DistError::Line { line: 4, .. })
        ));
        assert!(matches!(
            Empirical::from_samples_text("lat\n", None, 1.0),
            Err(DistError::NoSamples)
        ));
        assert!(matches!(
            Empirical::from_samples_text("", None, 1.0),
            Err(DistError::NoSamples)
        ));
        assert!(matches!(
            Empirical::from_samples_text("1\n2\n", Some("lat"), 1.0),
            Err(DistError::ColumnNotFound { .. })
        ));
    }

    #[test]
    fn constants_beyond_the_sample_range_are_refused_not_clamped() {
        let max = format!("{}ns", MAX_SAMPLE.ns());
        assert_eq!(parse_inline(&max), Ok(Dist::Const(MAX_SAMPLE)));
        for text in ["5000000h", "const(5000000h)"] {
            assert!(
                matches!(parse_inline(text), Err(DistError::TooLarge { .. })),
                "{text}"
            );
        }
        assert!(parse_inline(&format!("{}ns", MAX_SAMPLE.ns() + 1)).is_err());
    }
}
