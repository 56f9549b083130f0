//! The sweep file (docs/sweeps.md): TOML naming a scenario, variants,
//! parameters and figures, expanded here into the list of points.
//!
//! A point is a list of `--set key=value` arguments. Its identity is the
//! canonical text of those arguments (in the file's parameter order), and
//! its seed derives from the master seed and that text alone, never from
//! its index, thread or shard. Errors name the sweep file, line and field.

use crate::builtin;
use crate::scenario::{ScenarioError, Source};
use output::{Metric, Stat};
use serde::Deserialize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Most points one sweep may have, and replications per point: a sweep
/// lays out every point before it runs one.
const MAX_POINTS: usize = 1_000_000;
const MAX_SWEEP_REPS: u64 = 100_000;

/// A parsed sweep with its points expanded.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    pub name: String,
    /// One line on what the sweep maps (`convoy list`).
    pub description: String,
    /// The scenario: a built-in name, or a path (relative ones are taken
    /// from the sweep file's directory).
    pub scenario: String,
    /// Variants to run; empty means all of the scenario's.
    pub variants: Vec<String>,
    pub seed: u64,
    pub reps: u64,
    /// `--set` arguments every point gets (`duration` included).
    pub sets: Vec<String>,
    pub params: Vec<Param>,
    pub figures: Vec<Figure>,
    pub points: Vec<Point>,
    /// A fleet report's observation and exposure (`convoy check`).
    pub check: Option<CheckSpec>,
    /// `--machine NAME`: the profile every point runs on, in place of the
    /// scenario's `[machine]` table (the resolved scenarios, and so the
    /// sweep's identity, say so).
    pub machine: Option<String>,
}

/// What a fleet report saw, and over how much running it saw it.
#[derive(Clone, Debug)]
pub struct CheckSpec {
    /// The observed statistic's figure (an index into `figures`).
    pub figure: usize,
    /// The observed value: nanoseconds, or a count for `count`.
    pub observed: u64,
    pub hosts: u64,
    pub exposure: sim::Dur,
    /// One run's simulated duration (`sweep.duration`).
    pub run: sim::Dur,
}

impl CheckSpec {
    /// How many runs of the scenario the exposure amounts to.
    pub fn runs_in_exposure(&self) -> f64 {
        self.hosts as f64 * self.exposure.0 as f64 / self.run.0.max(1) as f64
    }
}

#[derive(Clone, Debug)]
pub struct Param {
    pub key: String,
    /// Where the parameter is declared (`file:line`), for errors.
    pub location: String,
    pub name: String,
    /// `{}` replaced by the value, e.g. `{}ms` or `lognormal({}ms, 1.2)`.
    pub format: Option<String>,
    pub log: bool,
    /// The grid's values in order (empty for a Latin-hypercube sample).
    pub values: Vec<String>,
}

impl Param {
    /// The `--set` argument for `value`.
    pub fn set(&self, value: &str) -> String {
        let v = match &self.format {
            Some(f) => f.replace("{}", value),
            None => value.to_string(),
        };
        format!("{}={v}", self.key)
    }
}

#[derive(Clone, Debug)]
pub struct Figure {
    pub name: String,
    pub metric: Metric,
    pub subject: String,
    pub stat: Stat,
    /// A fleet report's observation: a worst wait counts the waits still
    /// going on at the run's end (a stall that outlasts the run reached
    /// at least that much). Other figures read the histograms, as
    /// `summary.csv` does.
    pub open_waits: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub index: usize,
    /// One value per parameter, as text.
    pub values: Vec<String>,
    /// The parameters' `--set` arguments, in parameter order.
    pub sets: Vec<String>,
    /// Canonical identity: `sets` joined by newlines.
    pub key: String,
    pub seed: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    sweep: Spanned<Header>,
    #[serde(default)]
    param: Vec<ParamDoc>,
    sample: Option<SampleDoc>,
    #[serde(default)]
    figure: Vec<FigureDoc>,
    observation: Option<Spanned<ObservationDoc>>,
    exposure: Option<Spanned<ExposureDoc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObservationDoc {
    metric: Spanned<String>,
    subject: String,
    stat: Option<Spanned<String>>,
    threshold: Option<Spanned<String>>,
    /// A duration (`625ms`), or a whole number for `stat = "count"`.
    value: Option<Spanned<toml::Value>>,
    /// Or read off a measurement: `perf lock contention` output or
    /// `/proc/lock_stat`.
    from: Option<Spanned<FromDoc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FromDoc {
    /// Relative to the report file.
    file: String,
    /// `perf-lock` or `lock_stat`.
    format: String,
    /// The lock as the file names it (`kernfs_rwsem` for `&kernfs_rwsem-R`).
    lock: String,
    /// `read`, `write` or `lock`; default: the mode of `subject`.
    mode: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExposureDoc {
    #[serde(default = "one")]
    hosts: u64,
    /// Running time per host, e.g. `696h` (29 days).
    duration: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    name: String,
    description: Option<String>,
    scenario: String,
    #[serde(default)]
    variants: Vec<String>,
    #[serde(default = "one")]
    seed: u64,
    reps: Option<Spanned<u64>>,
    duration: Option<Spanned<String>>,
    #[serde(default)]
    sets: Vec<Spanned<String>>,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ParamDoc {
    key: Spanned<String>,
    name: Option<String>,
    format: Option<Spanned<String>>,
    values: Option<Spanned<Vec<toml::Value>>>,
    range: Option<Spanned<RangeDoc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RangeDoc {
    from: toml::Value,
    to: toml::Value,
    steps: Option<usize>,
    #[serde(default)]
    scale: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleDoc {
    latin_hypercube: Spanned<usize>,
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FigureDoc {
    name: Option<String>,
    metric: Spanned<String>,
    subject: String,
    stat: Option<Spanned<String>>,
    /// For `stat = "count_above"`: the duration a sample must reach.
    threshold: Option<Spanned<String>>,
}

/// The source of a sweep: a built-in sweep name or a file path.
pub fn sweep_source(arg: &str) -> Result<Source, ScenarioError> {
    file_source(arg, builtin::SWEEPS, "sweep")
}

/// The source of a fleet report (`convoy check`): a built-in report name
/// or a file path.
pub fn report_source(arg: &str) -> Result<Source, ScenarioError> {
    file_source(arg, builtin::REPORTS, "report")
}

fn file_source(arg: &str, builtins: &[(&str, &str)], what: &str) -> Result<Source, ScenarioError> {
    if let Some((name, text)) = builtins.iter().find(|(n, _)| *n == arg) {
        return Ok(Source::new(format!("builtin:{name}"), *text));
    }
    let text =
        crate::scenario::source::read_text(Path::new(arg), crate::scenario::source::MAX_TEXT_FILE)
            .map_err(|e| {
                let names: Vec<&str> = builtins.iter().map(|b| b.0).collect();
                ScenarioError::new(
                    arg,
                    "",
                    format!(
                        "cannot read {what} file: {e}; built-in {what}s are: {}",
                        names.join(", ")
                    ),
                )
            })?;
    let mut s = Source::new(arg, text);
    s.dir = Path::new(arg).parent().map(Path::to_path_buf);
    Ok(s)
}

/// A range's bound: its value and whether the file wrote an integer.
fn number(v: &toml::Value) -> Option<(f64, bool)> {
    match v {
        toml::Value::Integer(i) => Some((*i as f64, true)),
        toml::Value::Float(f) if f.is_finite() => Some((*f, false)),
        _ => None,
    }
}

/// A value as `--set` text; sampled numbers keep 3 significant digits
/// (HDR's resolution), whole numbers when both bounds are integers.
fn number_text(x: f64, integer: bool) -> String {
    if integer {
        return format!("{}", x.round() as i64);
    }
    let rounded: f64 = format!("{x:.2e}").parse().unwrap_or(x);
    format!("{rounded}")
}

fn lerp(lo: f64, hi: f64, u: f64, log: bool) -> f64 {
    if log {
        lo * (hi / lo).powf(u)
    } else {
        lo + (hi - lo) * u
    }
}

/// A checked range: bounds, integer-ness, log scale.
struct Bounds {
    lo: f64,
    hi: f64,
    integer: bool,
    log: bool,
}

impl Bounds {
    fn at(&self, u: f64) -> String {
        // The ends exactly as written, not through powf.
        let x = if u <= 0.0 {
            self.lo
        } else if u >= 1.0 {
            self.hi
        } else {
            lerp(self.lo, self.hi, u, self.log)
        };
        number_text(x, self.integer)
    }
}

/// Reads and checks a sweep file, and expands its points.
pub fn parse(src: &Source) -> Result<SweepSpec, ScenarioError> {
    let err = |span: Option<Range<usize>>, field: &str, msg: String| {
        ScenarioError::new(src.locate(span), field, msg)
    };
    let de = toml::Deserializer::parse(&src.text)
        .map_err(|e| err(e.span(), "", format!("not valid TOML: {}", e.message())))?;
    // Names and values that no file of convoy may hold (control
    // characters, integers past TOML's), told with their field.
    if let Ok(tree) = toml::de::DeTable::parse(&src.text) {
        let tree = toml::Spanned::new(tree.span(), toml::de::DeValue::Table(tree.into_inner()));
        if let Some((field, span, msg)) = crate::scenario::resolve::bad_value(&tree, "") {
            return Err(err(Some(span), &field, msg));
        }
    }
    let doc: Doc = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e
            .path()
            .to_string()
            .split('.')
            .filter(|s| !s.contains("__serde_spanned") && *s != "?")
            .collect::<Vec<_>>()
            .join(".");
        let inner = e.into_inner();
        let field = if field == "." { String::new() } else { field };
        err(inner.span(), &field, inner.message().to_string())
    })?;
    // Where `[sweep]` is, for a field it lacks.
    let sweep_at = doc.sweep.span();
    let h = doc.sweep.into_inner();
    let reps = match &h.reps {
        Some(r) if *r.get_ref() == 0 => {
            return Err(err(
                Some(r.span()),
                "sweep.reps",
                "at least one replication is needed".into(),
            ))
        }
        Some(r) if *r.get_ref() > MAX_SWEEP_REPS => {
            return Err(err(
                Some(r.span()),
                "sweep.reps",
                format!(
                    "{} replications per point is too many; at most {MAX_SWEEP_REPS}",
                    r.get_ref()
                ),
            ))
        }
        Some(r) => *r.get_ref(),
        None => 1,
    };
    let mut sets = Vec::new();
    if let Some(d) = &h.duration {
        sim::time::parse_duration(d.get_ref())
            .map_err(|e| err(Some(d.span()), "sweep.duration", e.to_string()))?;
        sets.push(format!("scenario.duration={}", d.get_ref()));
    }
    for (i, s) in h.sets.iter().enumerate() {
        if !s.get_ref().contains('=') {
            return Err(err(
                Some(s.span()),
                &format!("sweep.sets[{i}]"),
                "expected key=value, e.g. `tasks.readers.count=32`".into(),
            ));
        }
        sets.push(s.get_ref().clone());
    }
    let scenario = if builtin::find(&h.scenario).is_some() {
        h.scenario.clone()
    } else {
        match &src.dir {
            Some(d) if !Path::new(&h.scenario).is_absolute() => {
                d.join(&h.scenario).to_string_lossy().into_owned()
            }
            _ => h.scenario.clone(),
        }
    };
    let lhs = doc.sample.as_ref().map(|s| s.latin_hypercube.clone());
    if let Some(n) = &lhs {
        if *n.get_ref() == 0 || *n.get_ref() > MAX_POINTS {
            return Err(err(
                Some(n.span()),
                "sample.latin_hypercube",
                format!("expected the number of points (1 to {MAX_POINTS})"),
            ));
        }
    }
    let mut params = Vec::new();
    let mut bounds = Vec::new();
    for (i, p) in doc.param.iter().enumerate() {
        let field = |f: &str| format!("param[{i}].{f}");
        let key = p.key.get_ref().trim().to_string();
        if key.is_empty() || key.contains('=') || key.split('.').any(str::is_empty) {
            return Err(err(
                Some(p.key.span()),
                &field("key"),
                "expected a dotted `--set` key like `tasks.readers.count`".into(),
            ));
        }
        if params.iter().any(|q: &Param| q.key == key) {
            return Err(err(
                Some(p.key.span()),
                &field("key"),
                format!("`{key}` is swept twice"),
            ));
        }
        if let Some(f) = &p.format {
            if !f.get_ref().contains("{}") {
                return Err(err(
                    Some(f.span()),
                    &field("format"),
                    "expected `{}` where the value goes, e.g. \"{}ms\"".into(),
                ));
            }
        }
        let (values, b) = match (&p.values, &p.range) {
            (Some(v), None) => {
                if lhs.is_some() {
                    return Err(err(
                        Some(v.span()),
                        &field("values"),
                        "a Latin-hypercube sample needs a range { from, to } per parameter".into(),
                    ));
                }
                let mut out = Vec::new();
                for x in v.get_ref() {
                    out.push(match x {
                        toml::Value::String(s) => s.clone(),
                        toml::Value::Integer(n) => n.to_string(),
                        toml::Value::Float(f) => format!("{f}"),
                        toml::Value::Boolean(b) => b.to_string(),
                        _ => {
                            return Err(err(
                                Some(v.span()),
                                &field("values"),
                                "expected numbers, strings or booleans".into(),
                            ))
                        }
                    });
                }
                if out.is_empty() {
                    return Err(err(
                        Some(v.span()),
                        &field("values"),
                        "expected at least one value".into(),
                    ));
                }
                (out, None)
            }
            (None, Some(r)) => {
                let span = Some(r.span());
                let r = r.get_ref();
                let log = match r.scale.as_deref() {
                    None | Some("linear") => false,
                    Some("log") => true,
                    Some(s) => {
                        return Err(err(
                            span,
                            &field("range.scale"),
                            format!("`{s}`: expected \"linear\" or \"log\""),
                        ))
                    }
                };
                let (Some((lo, li)), Some((hi, hi_int))) = (number(&r.from), number(&r.to)) else {
                    return Err(err(
                        span,
                        &field("range"),
                        "`from` and `to` must be numbers (use `format` for units)".into(),
                    ));
                };
                if log && (lo <= 0.0 || hi <= 0.0) {
                    return Err(err(
                        span,
                        &field("range"),
                        "a log range needs `from` and `to` above zero".into(),
                    ));
                }
                let b = Bounds {
                    lo,
                    hi,
                    integer: li && hi_int,
                    log,
                };
                let values = match (r.steps, &lhs) {
                    (Some(_), Some(_)) => {
                        return Err(err(
                            span,
                            &field("range.steps"),
                            "a Latin-hypercube sample draws its own points; leave out `steps`"
                                .into(),
                        ))
                    }
                    (None, Some(_)) => Vec::new(),
                    (None, None) | (Some(0), None) => {
                        return Err(err(
                            span,
                            &field("range.steps"),
                            "expected `steps` (number of values, at least 1)".into(),
                        ))
                    }
                    (Some(n), None) if n > MAX_POINTS => {
                        return Err(err(
                            span,
                            &field("range.steps"),
                            format!(
                                "{n} values is too many; at most {MAX_POINTS} points in a sweep"
                            ),
                        ))
                    }
                    (Some(n), None) => {
                        let mut v: Vec<String> = (0..n)
                            .map(|k| {
                                b.at(if n == 1 {
                                    0.0
                                } else {
                                    k as f64 / (n - 1) as f64
                                })
                            })
                            .collect();
                        // Integer ranges on a log scale repeat small values.
                        v.dedup();
                        v
                    }
                };
                (values, Some(b))
            }
            _ => {
                return Err(err(
                    Some(p.key.span()),
                    &format!("param[{i}]"),
                    "expected exactly one of `values = [...]` or `range = { from, to, steps }`"
                        .into(),
                ))
            }
        };
        params.push(Param {
            location: src.locate(Some(p.key.span())),
            name: p.name.clone().unwrap_or_else(|| key.clone()),
            key,
            format: p.format.as_ref().map(|f| f.get_ref().clone()),
            log: b.as_ref().is_some_and(|b| b.log),
            values,
        });
        bounds.push(b);
    }
    report_pairing(doc.observation.as_ref(), doc.exposure.as_ref(), &err)?;
    let mut figure_docs = doc.figure.clone();
    if let Some(o) = &doc.observation {
        let o = o.get_ref();
        figure_docs.push(FigureDoc {
            name: None,
            metric: o.metric.clone(),
            subject: o.subject.clone(),
            stat: o.stat.clone(),
            threshold: o.threshold.clone(),
        });
    }
    let observation_index = doc.observation.as_ref().map(|_| figure_docs.len() - 1);
    let mut figures = figures(&figure_docs, observation_index, &err)?;
    if doc.observation.is_some() {
        if let Some(f) = figures.last_mut() {
            f.open_waits = true;
        }
    }
    let check = check_spec(
        (doc.observation.as_ref(), doc.exposure.as_ref()),
        (&h, &sweep_at),
        &figures,
        src.dir.as_deref(),
        &err,
    )?;
    let value_lists: Vec<Vec<String>> = match &lhs {
        Some(n) => latin_hypercube(*n.get_ref(), h.seed, &params, &bounds),
        None => {
            let points = params
                .iter()
                .try_fold(1usize, |n, p| n.checked_mul(p.values.len()))
                .filter(|&n| n <= MAX_POINTS);
            if points.is_none() {
                return Err(err(
                    None,
                    "param",
                    format!(
                        "the grid of every `[[param]]`'s values has more than {MAX_POINTS} points"
                    ),
                ));
            }
            grid(&params)
        }
    };
    let points = value_lists
        .into_iter()
        .enumerate()
        .map(|(index, values)| {
            let sets: Vec<String> = params.iter().zip(&values).map(|(p, v)| p.set(v)).collect();
            let key = sets.join("\n");
            let seed = sim::rng::derive_u64(h.seed, &format!("sweep point\n{key}"), 0);
            Point {
                index,
                values,
                sets,
                key,
                seed,
            }
        })
        .collect();
    Ok(SweepSpec {
        name: h.name,
        description: h.description.unwrap_or_default(),
        scenario,
        variants: h.variants,
        seed: h.seed,
        reps,
        sets,
        params,
        figures,
        points,
        check,
        machine: None,
    })
}

/// A fleet report has both `[observation]` and `[exposure]`, or neither.
/// Checked before the figures, so a report missing one is told that, not
/// that it has no `[[figure]]`.
fn report_pairing(
    observation: Option<&Spanned<ObservationDoc>>,
    exposure: Option<&Spanned<ExposureDoc>>,
    err: &ErrFn<'_>,
) -> Result<(), ScenarioError> {
    match (observation, exposure) {
        (Some(o), None) => Err(err(
            Some(o.span()),
            "exposure",
            "a report needs `[exposure]` (hosts, duration) beside `[observation]`".into(),
        )),
        (None, Some(e)) => Err(err(
            Some(e.span()),
            "observation",
            "a report needs `[observation]` (metric, subject, stat, value) beside `[exposure]`"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// The `[observation]` and `[exposure]` of a fleet report, if any.
fn check_spec(
    (observation, exposure): (
        Option<&Spanned<ObservationDoc>>,
        Option<&Spanned<ExposureDoc>>,
    ),
    h: (&Header, &Range<usize>),
    figures: &[Figure],
    dir: Option<&Path>,
    err: &ErrFn<'_>,
) -> Result<Option<CheckSpec>, ScenarioError> {
    let (Some(o), Some(e)) = (observation, exposure) else {
        return Ok(None);
    };
    let figure = figures.len() - 1;
    let v = match (&o.get_ref().value, &o.get_ref().from) {
        (Some(v), None) => v,
        (None, Some(f)) => {
            return measured_observation(f, &figures[figure], dir, err)
                .and_then(|observed| check_spec_with(observed, figure, e, h, err))
        }
        _ => {
            return Err(err(
                Some(o.span()),
                "observation.value",
                "give the observed `value`, or `from` a measurement file (not both)".into(),
            ))
        }
    };
    let observed = match (figures[figure].stat, v.get_ref()) {
        (Stat::Count | Stat::Above(_), toml::Value::Integer(n)) if *n >= 0 => *n as u64,
        (Stat::Count | Stat::Above(_), _) => {
            return Err(err(
                Some(v.span()),
                "observation.value",
                "a count is a whole number".into(),
            ))
        }
        (_, toml::Value::String(d)) => {
            sim::time::parse_duration(d)
                .map_err(|x| err(Some(v.span()), "observation.value", x.to_string()))?
                .0
        }
        _ => {
            return Err(err(
                Some(v.span()),
                "observation.value",
                "expected a duration, e.g. \"625ms\"".into(),
            ))
        }
    };
    check_spec_with(observed, figure, e, h, err)
}

/// The observed value read off a measurement file (`[observation.from]`):
/// the figure's statistic of the named lock and mode.
fn measured_observation(
    f: &Spanned<FromDoc>,
    figure: &Figure,
    dir: Option<&Path>,
    err: &ErrFn<'_>,
) -> Result<u64, ScenarioError> {
    let fd = f.get_ref();
    let at = |field: &str, msg: String| err(Some(f.span()), field, msg);
    let path = match dir {
        Some(d) => d.join(&fd.file),
        None => PathBuf::from(&fd.file),
    };
    let text = crate::scenario::source::read_text(&path, crate::scenario::source::MAX_DATA_FILE)
        .map_err(|e| {
            at(
                "observation.from.file",
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
    let lines = output::measured::read(&fd.format, &text)
        .map_err(|e| at("observation.from", format!("{}: {e}", path.display())))?;
    let mode = fd.mode.clone().unwrap_or_else(|| {
        figure
            .subject
            .split('/')
            .nth(1)
            .unwrap_or("lock")
            .to_string()
    });
    let Some(l) = lines.iter().find(|l| l.lock == fd.lock && l.mode == mode) else {
        let have: Vec<String> = lines
            .iter()
            .map(|l| format!("{} ({})", l.lock, l.mode))
            .collect();
        return Err(at(
            "observation.from.lock",
            format!(
                "{}: no line for `{}` ({mode}); it has: {}",
                path.display(),
                fd.lock,
                have.join(", ")
            ),
        ));
    };
    let v = match (figure.metric, figure.stat) {
        (output::Metric::Wait, Stat::Max) => Some(l.wait_max_ns),
        (output::Metric::Wait, Stat::Mean) => Some(l.wait_avg_ns),
        (output::Metric::Hold, Stat::Max) => l.hold_max_ns,
        (output::Metric::Hold, Stat::Mean) => l.hold_avg_ns,
        _ => None,
    };
    let Some(v) = v else {
        return Err(at(
            "observation.from",
            format!(
                "{} gives a wait's max or mean (and with lock_stat a hold's), not the {} of a {}",
                fd.format,
                figure.stat.as_str(),
                figure.metric.as_str()
            ),
        ));
    };
    Ok(v.round() as u64)
}

/// A report's check, its observed value known.
fn check_spec_with(
    observed: u64,
    figure: usize,
    e: &Spanned<ExposureDoc>,
    (h, sweep_at): (&Header, &Range<usize>),
    err: &ErrFn<'_>,
) -> Result<Option<CheckSpec>, ScenarioError> {
    let ex = e.get_ref();
    let exposure = sim::time::parse_duration(ex.duration.get_ref())
        .map_err(|x| err(Some(ex.duration.span()), "exposure.duration", x.to_string()))?;
    let Some(run) = &h.duration else {
        return Err(err(
            Some(sweep_at.clone()),
            "sweep.duration",
            "a report needs `duration` in [sweep]: the simulated time of one run".into(),
        ));
    };
    let run = sim::time::parse_duration(run.get_ref())
        .map_err(|x| err(Some(run.span()), "sweep.duration", x.to_string()))?;
    if ex.hosts == 0 || exposure.0 == 0 {
        return Err(err(
            Some(e.span()),
            "exposure",
            "the exposure must be more than zero".into(),
        ));
    }
    Ok(Some(CheckSpec {
        figure,
        observed,
        hosts: ex.hosts,
        exposure,
        run,
    }))
}

type ErrFn<'a> = dyn Fn(Option<Range<usize>>, &str, String) -> ScenarioError + 'a;

/// The figures of `[[figure]]`, and last the observation's if
/// `observation` is its index (its errors then name `observation.FIELD`).
fn figures(
    docs: &[FigureDoc],
    observation: Option<usize>,
    err: &ErrFn<'_>,
) -> Result<Vec<Figure>, ScenarioError> {
    if docs.is_empty() {
        return Err(err(
            None,
            "figure",
            "expected at least one `[[figure]]` (metric, subject, stat)".into(),
        ));
    }
    let mut out: Vec<Figure> = Vec::new();
    for (i, f) in docs.iter().enumerate() {
        let field = |x: &str| match observation {
            Some(o) if o == i => format!("observation.{x}"),
            _ => format!("figure[{i}].{x}"),
        };
        let metric = Metric::parse(f.metric.get_ref()).ok_or_else(|| {
            err(
                Some(f.metric.span()),
                &field("metric"),
                format!(
                    "`{}`: expected wait, hold, span or counter",
                    f.metric.get_ref()
                ),
            )
        })?;
        let stat = match &f.stat {
            None if metric == Metric::Counter => Stat::Count,
            None => {
                return Err(err(
                    Some(f.metric.span()),
                    &field("stat"),
                    "expected `stat`: count, mean, p50, p90, p99, p999, max or count_above".into(),
                ))
            }
            Some(s) if s.get_ref() == "count_above" && metric != Metric::Counter => {
                let Some(t) = &f.threshold else {
                    return Err(err(
                        Some(s.span()),
                        &field("threshold"),
                        "`count_above` needs `threshold`, a duration such as \"100ms\"".into(),
                    ));
                };
                let threshold = sim::time::parse_duration(t.get_ref())
                    .map_err(|e| err(Some(t.span()), &field("threshold"), e.to_string()))?;
                Stat::Above(threshold)
            }
            Some(s) => {
                let st = Stat::parse(s.get_ref()).ok_or_else(|| {
                    err(
                        Some(s.span()),
                        &field("stat"),
                        format!(
                            "`{}`: expected count, mean, p50, p90, p99, p999, max or count_above",
                            s.get_ref()
                        ),
                    )
                })?;
                if metric == Metric::Counter && st != Stat::Count {
                    return Err(err(
                        Some(s.span()),
                        &field("stat"),
                        "a counter has only `count`".into(),
                    ));
                }
                st
            }
        };
        let name = (f.name.clone()).unwrap_or_else(|| figure_name(metric, &f.subject, stat));
        if out.iter().any(|o| o.name == name) {
            return Err(err(
                Some(f.metric.span()),
                &field("name"),
                format!("two figures are named `{name}`; give one a `name`"),
            ));
        }
        out.push(Figure {
            name,
            metric,
            subject: f.subject.clone(),
            stat,
            open_waits: false,
        });
    }
    Ok(out)
}

/// A figure's default name, its column in `points.csv`:
/// `wait_lock_read_readers_max_ns`.
pub fn figure_name(metric: Metric, subject: &str, stat: Stat) -> String {
    let subject: String = (subject.chars())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    match (metric, stat) {
        (Metric::Counter, _) => format!("counter_{subject}"),
        (_, Stat::Count) => format!("{}_{subject}_count", metric.as_str()),
        (_, Stat::Above(t)) => {
            format!("{}_{subject}_count_above_{}ns", metric.as_str(), t.ns())
        }
        _ => format!("{}_{subject}_{}_ns", metric.as_str(), stat.as_str()),
    }
}

/// Every combination of the parameters' values, the last parameter
/// varying fastest.
fn grid(params: &[Param]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    for p in params {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                p.values.iter().map(move |v| {
                    let mut x = prefix.clone();
                    x.push(v.clone());
                    x
                })
            })
            .collect();
    }
    out
}

/// `n` points, each parameter's range cut into `n` equal strata (equal in
/// log space on a log scale) and each stratum used once, at a random place
/// in it. Drawn from streams keyed by the master seed and the parameter's
/// key, so the sample is the same on every machine and in every shard.
fn latin_hypercube(
    n: usize,
    seed: u64,
    params: &[Param],
    bounds: &[Option<Bounds>],
) -> Vec<Vec<String>> {
    let keys: Vec<&str> = params.iter().map(|p| p.key.as_str()).collect();
    let units = latin_hypercube_units(n, seed, &keys);
    let mut out = vec![Vec::with_capacity(params.len()); n];
    for (k, b) in bounds.iter().enumerate() {
        let b = b.as_ref().expect("checked: sampled parameters have ranges");
        for (point, u) in out.iter_mut().zip(&units) {
            point.push(b.at(u[k]));
        }
    }
    out
}

/// The places of a Latin-hypercube sample of `n` points, in (0, 1) per
/// key: `[point][key]`. Each key's interval is cut into `n` equal strata,
/// each used once at a random place in it, drawn from a stream of the
/// master seed and the key (the same sample on every machine and shard).
pub fn latin_hypercube_units(n: usize, seed: u64, keys: &[&str]) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::with_capacity(keys.len()); n];
    for key in keys {
        let mut s = sim::rng::stream(seed, 0, &format!("sweep lhs/{key}"), 0);
        let mut strata: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = ((sim::rng::unit(&mut s) * (i + 1) as f64) as usize).min(i);
            strata.swap(i, j);
        }
        for (point, stratum) in out.iter_mut().zip(strata) {
            let u = (stratum as f64 + sim::rng::unit(&mut s)) / n as f64;
            point.push(u.clamp(1e-12, 1.0 - 1e-12));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Result<SweepSpec, ScenarioError> {
        parse(&Source::new("s.toml", text))
    }

    const HEAD: &str = "[sweep]\nname = \"t\"\nscenario = \"bench-convoy\"\n\
        [[figure]]\nmetric = \"wait\"\nsubject = \"lock/read/readers\"\nstat = \"max\"\n";

    #[test]
    fn grid_is_the_product_in_file_order_last_fastest() {
        let s = spec(&format!(
            "{HEAD}[[param]]\nkey = \"a.x\"\nvalues = [1, 2]\n\
             [[param]]\nkey = \"b.y\"\nformat = \"{{}}ms\"\n\
             range = {{ from = 1, to = 100, steps = 3, scale = \"log\" }}\n"
        ))
        .unwrap();
        let sets: Vec<String> = s.points.iter().map(|p| p.key.replace('\n', " ")).collect();
        assert_eq!(
            sets,
            [
                "a.x=1 b.y=1ms",
                "a.x=1 b.y=10ms",
                "a.x=1 b.y=100ms",
                "a.x=2 b.y=1ms",
                "a.x=2 b.y=10ms",
                "a.x=2 b.y=100ms"
            ]
        );
        assert_eq!(s.figures[0].name, "wait_lock_read_readers_max_ns");
        // Seeds depend on the point, not on its position.
        assert_ne!(s.points[0].seed, s.points[1].seed);
        let t = spec(&format!("{HEAD}[[param]]\nkey = \"a.x\"\nvalues = [2]\n[[param]]\nkey = \"b.y\"\nvalues = [\"100ms\"]\n")).unwrap();
        assert_eq!(t.points[0].seed, s.points[5].seed);
    }

    #[test]
    fn float_ranges_keep_three_digits_and_lhs_uses_each_stratum_once() {
        let s = spec(&format!(
            "{HEAD}[[param]]\nkey = \"a.x\"\nrange = {{ from = 1.0, to = 2.0, steps = 4 }}\n"
        ))
        .unwrap();
        let v: Vec<&str> = s.params[0].values.iter().map(String::as_str).collect();
        assert_eq!(v, ["1", "1.33", "1.67", "2"]);
        let s = spec(&format!(
            "{HEAD}[sample]\nlatin_hypercube = 10\n\
             [[param]]\nkey = \"a.x\"\nrange = {{ from = 0.0, to = 10.0 }}\n"
        ))
        .unwrap();
        let mut strata: Vec<usize> = s
            .points
            .iter()
            .map(|p| p.values[0].parse::<f64>().unwrap() as usize)
            .collect();
        strata.sort_unstable();
        assert_eq!(strata, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = spec(&format!(
            "{HEAD}[[param]]\nkey = \"a.x\"\nrange = {{ from = 0, to = 10, steps = 3, scale = \"log\" }}\n"
        ))
        .unwrap_err();
        assert_eq!(e.location, "s.toml:10");
        assert_eq!(e.field, "param[0].range");
        let e = spec(&HEAD.replace("\"max\"", "\"p42\"")).unwrap_err();
        assert_eq!(
            (e.location.as_str(), e.field.as_str()),
            ("s.toml:7", "figure[0].stat")
        );
        let e = spec(&format!("{HEAD}[[param]]\nkey = \"a.x\"\nvalue = [1]\n")).unwrap_err();
        assert!(e.to_string().contains("unknown field `value`"), "{e}");
        assert!(e.location.starts_with("s.toml:"), "{e}");
    }
}
