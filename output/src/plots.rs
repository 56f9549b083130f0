//! Plots of a run, PNG and SVG (plotters), for the subjects a reader looks
//! at first: an experiment's headline waits and spans, then the wait and
//! span series with the largest maxima.
//!
//! For each chosen subject, three figures, variants overlaid:
//! - `*-percentiles`: the latency distribution on a log time axis against
//!   percentiles on a "nines" axis (p50, p90, p99, p99.9, ...), so tails
//!   are as readable as medians;
//! - `*-log2`: bpftrace-style log2 buckets, variants side by side;
//! - `*-windows`: the maximum per window over simulated time (when the
//!   run spans two windows or more), on a log axis when the variants'
//!   maxima are more than 20 times apart.
//!
//! Text needs a font: DejaVu Sans, read once from the system (Debian's
//! fonts-dejavu-core). Without it no plot is written and the caller is told
//! why; CSV files are unaffected.

use crate::files::write_atomic;
use crate::results::{ExperimentResult, Metric, Series};
use crate::terminal::human;
use plotters::prelude::*;
use sim::Dur;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the font is looked for.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("no font for plot text (looked for {}); install fonts-dejavu-core", FONT_PATHS.join(", "))]
    NoFont,
    #[error("cannot draw {path}: {message}")]
    Draw { path: PathBuf, message: String },
    /// Drawn, but the file could not be written.
    #[error(transparent)]
    Write(#[from] crate::files::WriteError),
}

/// Registers DejaVu Sans as plotters' "sans-serif", once.
pub(crate) fn font() -> Result<(), PlotError> {
    static FONT: OnceLock<bool> = OnceLock::new();
    let ok = *FONT.get_or_init(|| {
        FONT_PATHS.iter().any(|p| match std::fs::read(p) {
            Ok(bytes) => {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
            }
            Err(_) => false,
        })
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::NoFont)
    }
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

pub(crate) fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// A file name for a subject: `kernfs_rwsem/read/oomd` -> `wait-kernfs_rwsem-read-oomd`.
pub fn file_stem(metric: Metric, subject: &str) -> String {
    let s: String = subject
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{}-{s}", metric.as_str())
}

/// The subjects to plot, at most `n`: first those of `first` (an
/// experiment's headline) that are waits or spans with samples, then the
/// wait and span series with the largest maxima over all variants. A
/// series whose every sample is zero shows nothing and is left out.
pub fn chosen_subjects(
    r: &ExperimentResult,
    first: &[(Metric, &str)],
    n: usize,
) -> Vec<(Metric, String)> {
    let mut best: Vec<(Dur, Metric, String)> = Vec::new();
    for v in &r.variants {
        for s in v
            .series
            .iter()
            .filter(|s| matches!(s.metric, Metric::Wait | Metric::Span))
        {
            match best
                .iter_mut()
                .find(|b| b.1 == s.metric && b.2 == s.subject)
            {
                Some(b) => b.0 = b.0.max(s.hist.max()),
                None => best.push((s.hist.max(), s.metric, s.subject.clone())),
            }
        }
    }
    best.retain(|b| b.0 > Dur::ZERO);
    let rank = |b: &(Dur, Metric, String)| {
        first
            .iter()
            .position(|&(m, s)| m == b.1 && s == b.2)
            .unwrap_or(usize::MAX)
    };
    best.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| b.0.cmp(&a.0))
            .then_with(|| (a.1, &a.2).cmp(&(b.1, &b.2)))
    });
    best.into_iter().take(n).map(|b| (b.1, b.2)).collect()
}

/// Figure size in pixels.
const W: u32 = 1000;
const H: u32 = 600;

/// An RGB buffer of `W` x `H` as a PNG file's bytes.
fn encode_png(rgb: &[u8]) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, W, H);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(rgb)?;
    Ok(out)
}

/// Writes the three figures of each chosen subject (see
/// [`chosen_subjects`]) as PNG and SVG into `dir`; returns the files
/// written.
pub fn write_plots(
    dir: &Path,
    r: &ExperimentResult,
    first: &[(Metric, &str)],
    subjects: usize,
) -> Result<Vec<PathBuf>, PlotError> {
    font()?;
    let mut written = Vec::new();
    let mut stems: Vec<String> = Vec::new();
    for (metric, subject) in chosen_subjects(r, first, subjects) {
        let series: Vec<(&str, &Series)> = r
            .variants
            .iter()
            .filter_map(|v| v.series(metric, &subject).map(|s| (v.variant.as_str(), s)))
            .collect();
        // Subjects that differ only where file names cannot (`a.b` and
        // `a-b`) get `-2`, `-3`, ... in the order they are plotted.
        let base = file_stem(metric, &subject);
        let mut stem = base.clone();
        let mut k = 1;
        while stems.contains(&stem) {
            k += 1;
            stem = format!("{base}-{k}");
        }
        stems.push(stem.clone());
        let title = format!("{} {} ({})", r.experiment, subject, metric.as_str());
        // A run of one window has no course over time to show.
        let windows = series.iter().map(|s| s.1.windows.len()).max().unwrap_or(0);
        let kinds = if windows >= 2 {
            &KINDS[..]
        } else {
            &KINDS[..2]
        };
        for &kind in kinds {
            let fig = RunFigure {
                kind,
                title: &title,
                series: &series,
            };
            written.extend(write_figure(dir, &format!("{stem}-{kind}"), &fig)?);
        }
    }
    Ok(written)
}

/// The figures of a subject, each a file stem's suffix (`STEM-KIND`); a
/// run of one window has no `windows`.
const KINDS: [&str; 3] = ["percentiles", "log2", "windows"];

/// The kinds of figure among `files` (from [`write_plots`]), in order.
pub fn kinds_written(files: &[PathBuf]) -> Vec<&'static str> {
    KINDS
        .into_iter()
        .filter(|k| {
            files.iter().any(|f| {
                (f.file_stem().and_then(|s| s.to_str()))
                    .is_some_and(|s| s.strip_suffix(k).is_some_and(|h| h.ends_with('-')))
            })
        })
        .collect()
}

/// A figure that draws itself on any plotters backend, so one drawing
/// serves the PNG and the SVG.
pub(crate) trait Figure {
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String>;
}

/// Draws `fig` in memory as `dir/stem.png` and `dir/stem.svg` and writes
/// each whole (write_atomic), so an interrupted run never leaves half a
/// figure; returns both paths.
pub(crate) fn write_figure(
    dir: &Path,
    stem: &str,
    fig: &impl Figure,
) -> Result<[PathBuf; 2], PlotError> {
    let png = format!("{stem}.png");
    let svg = format!("{stem}.svg");
    let err = |name: &str, e: String| PlotError::Draw {
        path: dir.join(name),
        message: e,
    };
    let mut rgb = vec![0u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (W, H)).into_drawing_area();
        fig.draw(&root).map_err(|e| err(&png, e))?;
        root.present().map_err(|e| err(&png, e.to_string()))?;
    }
    let bytes = encode_png(&rgb).map_err(|e| err(&png, e.to_string()))?;
    write_atomic(dir, &png, &bytes)?;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (W, H)).into_drawing_area();
        fig.draw(&root).map_err(|e| err(&svg, e))?;
        root.present().map_err(|e| err(&svg, e.to_string()))?;
    }
    write_atomic(dir, &svg, text.as_bytes())?;
    Ok([dir.join(png), dir.join(svg)])
}

/// One of a run's figures of one subject.
struct RunFigure<'a> {
    kind: &'a str,
    title: &'a str,
    series: &'a [(&'a str, &'a Series)],
}

impl Figure for RunFigure<'_> {
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        draw(self.kind, root, self.title, self.series)
    }
}

/// One figure on any backend (PNG or SVG).
fn draw<DB: DrawingBackend>(
    kind: &str,
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    series: &[(&str, &Series)],
) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    match kind {
        "percentiles" => draw_percentiles(root, title, series),
        "log2" => draw_log2(root, title, series),
        _ => draw_windows(root, title, series),
    }
}

/// The variants' legend, boxed, at `pos`.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .position(pos)
        .draw()
        .map_err(|e| e.to_string())
}

/// The duration at a coordinate of a time axis (nanoseconds as a float),
/// truncated to whole nanoseconds: for tick labels.
fn dur_at(coord: f64) -> Dur {
    Dur(coord as u64)
}

/// Nines: -log10(1 - q); p50 -> 0.30, p90 -> 1, p99 -> 2, p99.9 -> 3.
fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-9).log10()
}

fn draw_percentiles<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    series: &[(&str, &Series)],
) -> Result<(), String> {
    let max = series
        .iter()
        .map(|s| s.1.hist.max())
        .max()
        .unwrap_or(Dur(1))
        .max(Dur(1));
    let min = series
        .iter()
        .flat_map(|s| {
            s.1.hist
                .recorded()
                .into_iter()
                .map(|(v, _)| v)
                .find(|&v| v > Dur::ZERO)
        })
        .min()
        .unwrap_or(Dur(1))
        .max(Dur(1));
    let top = series
        .iter()
        .map(|s| nines(1.0 - 1.0 / s.1.hist.count().max(1) as f64))
        .fold(1.0f64, f64::max)
        .ceil()
        .min(6.0);
    let mut chart = ChartBuilder::on(root)
        .caption(format!("{title}: percentiles"), ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            ((min.as_nanos_f64() / 2.0)..(max.as_nanos_f64() * 2.0)).log_scale(),
            0.0..top,
        )
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("latency (log scale)")
        .y_desc("percentile")
        .x_label_formatter(&|v| human(dur_at(*v)))
        .y_labels(top as usize + 1)
        .y_label_formatter(&|y| {
            let q = 1.0 - 10f64.powf(-y);
            format!(
                "p{}",
                format!("{:.4}", q * 100.0)
                    .trim_end_matches('0')
                    .trim_end_matches('.')
            )
        })
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (name, s)) in series.iter().enumerate() {
        let n = s.hist.count() as f64;
        let mut seen = 0u64;
        let mut pts = Vec::new();
        for (v, c) in s.hist.recorded() {
            if v > Dur::ZERO && pts.is_empty() {
                // The curve rises from where the samples below it leave it,
                // so a single-valued series still draws a step.
                pts.push((v.as_nanos_f64(), nines(seen as f64 / n)));
            }
            seen += c;
            if v == Dur::ZERO {
                // Off the log axis; the curve starts at the zeros' percentile.
                continue;
            }
            let q = seen as f64 / n;
            pts.push((v.as_nanos_f64(), nines(q.min(1.0 - 1.0 / (n + 1.0)))));
        }
        let c = color(i);
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(format!("{name} (max {})", human(s.hist.max())))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

fn draw_log2<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    series: &[(&str, &Series)],
) -> Result<(), String> {
    // Bucket index k: [0] -> 0, [2^(k-1), 2^k) ns -> k.
    let idx = |lo: Dur| {
        if lo == Dur::ZERO {
            0
        } else {
            64 - lo.ns().leading_zeros() as usize
        }
    };
    let mut kmin = usize::MAX;
    let mut kmax = 1;
    let mut cmax = 1u64;
    for (_, s) in series {
        for b in s.hist.log2_buckets() {
            kmin = kmin.min(idx(b.lo));
            kmax = kmax.max(idx(b.lo));
            cmax = cmax.max(b.count);
        }
    }
    let kmin = kmin.min(kmax);
    // Label every bucket while they fit, else every other one.
    let step = if kmax - kmin > 16 { 2 } else { 1 };
    let nv = series.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(format!("{title}: log2 histogram"), ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (kmin as f64 - 0.5)..(kmax as f64 + 0.5),
            (0.5f64..(cmax as f64 * 2.0)).log_scale(),
        )
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("bucket lower bound")
        .y_desc("count (log scale)")
        .x_labels(kmax - kmin + 1)
        .x_label_formatter(&|k| {
            let k = k.round() as u32;
            if !(k as usize - kmin).is_multiple_of(step) {
                String::new()
            } else if k == 0 {
                "0".into()
            } else {
                human(Dur(1 << (k - 1).min(62)))
            }
        })
        .y_label_formatter(&|c| human_count(*c))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (name, s)) in series.iter().enumerate() {
        let c = color(i);
        let w = 0.8 / nv;
        let off = -0.4 + w * i as f64;
        chart
            .draw_series(s.hist.log2_buckets().into_iter().map(move |b| {
                let x = idx(b.lo) as f64 + off;
                Rectangle::new([(x, 0.5), (x + w, b.count as f64)], c.filled())
            }))
            .map_err(|e| e.to_string())?
            .label(name.to_string())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::MiddleRight)
}

/// The mesh, one line and its points per variant, and the legend of a
/// windows chart (`$chart`, linear or log value axis: a macro, as the two
/// coordinate types share no trait that `configure_mesh` accepts);
/// `$only_sampled` leaves out windows with no sample.
macro_rules! window_lines {
    ($chart:expr, $series:expr, $width_s:expr, $only_sampled:expr, $y_desc:expr) => {{
        let chart = $chart;
        chart
            .configure_mesh()
            .x_desc("simulated time (s)")
            .y_desc($y_desc)
            .y_label_formatter(&|v| human(dur_at(*v)))
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (name, s)) in $series.iter().enumerate() {
            let c = color(i);
            let pts: Vec<(f64, f64)> = s
                .windows
                .iter()
                .filter(|(_, b)| !$only_sampled || b.count > 0)
                .map(|(t, b)| (t.as_secs_f64() + $width_s / 2.0, b.max.as_nanos_f64()))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(name.to_string())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.into_iter().map(move |p| Circle::new(p, 3, c.filled())))
                .map_err(|e| e.to_string())?;
        }
        legend(chart, SeriesLabelPosition::MiddleRight)
    }};
}

/// The maximum per window over simulated time, variants overlaid. The
/// value axis is logarithmic when the variants' maxima span more than
/// [`WINDOWS_LOG_SPAN`] (a patched 50 us next to an unpatched 30 ms would
/// otherwise lie flat on zero); windows with no sample have no maximum and
/// are left out there.
fn draw_windows<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    series: &[(&str, &Series)],
) -> Result<(), String> {
    let width_s = series
        .first()
        .map_or(10.0, |s| s.1.windows.width().as_secs_f64());
    let nwin = series
        .iter()
        .map(|s| s.1.windows.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let maxima = || {
        series
            .iter()
            .flat_map(|s| s.1.windows.iter().filter(|(_, b)| b.count > 0))
            .map(|(_, b)| b.max)
    };
    let ymax = maxima().max().unwrap_or(Dur(1)).max(Dur(1));
    let ymin = maxima().filter(|&m| m > Dur::ZERO).min().unwrap_or(ymax);
    let caption = format!("{title}: max per {} window", human(dur_at(width_s * 1e9)));
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(caption, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70);
    let x = 0.0..(nwin as f64 * width_s);
    if log_value_axis(ymin, ymax) {
        let y = ((ymin.as_nanos_f64() / 2.0)..(ymax.as_nanos_f64() * 2.0)).log_scale();
        let mut chart = builder
            .build_cartesian_2d(x, y)
            .map_err(|e| e.to_string())?;
        window_lines!(
            &mut chart,
            series,
            width_s,
            true,
            "max in window (log scale)"
        )
    } else {
        let y = 0.0..(ymax.as_nanos_f64() * 1.1);
        let mut chart = builder
            .build_cartesian_2d(x, y)
            .map_err(|e| e.to_string())?;
        window_lines!(&mut chart, series, width_s, false, "max in window")
    }
}

/// Variants' window maxima spanning more than this factor get a log axis.
const WINDOWS_LOG_SPAN: f64 = 20.0;

/// Whether maxima from `lo` to `hi` need a log value axis to be read.
fn log_value_axis(lo: Dur, hi: Dur) -> bool {
    hi.as_nanos_f64() > lo.as_nanos_f64() * WINDOWS_LOG_SPAN
}

/// Counts as a reader says them: 950, 12k, 3.4M.
pub(crate) fn human_count(c: f64) -> String {
    let (v, unit) = match c {
        c if c >= 1e9 => (c / 1e9, "G"),
        c if c >= 1e6 => (c / 1e6, "M"),
        c if c >= 1e3 => (c / 1e3, "k"),
        c => (c, ""),
    };
    format!("{}{unit}", format!("{v:.1}").trim_end_matches(".0"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::VariantResult;
    use sim::stats::{LatencyHist, Windows};
    use sim::SimTime;

    fn variant(name: &str, subject: &str, samples: &[u64]) -> VariantResult {
        let mut hist = LatencyHist::new();
        let mut windows = Windows::new(Dur::from_secs(1));
        for (i, &v) in samples.iter().enumerate() {
            hist.record(Dur(v));
            windows.record(SimTime(i as u64 * 400_000_000), Dur(v));
        }
        VariantResult {
            variant: name.into(),
            series: vec![Series {
                metric: Metric::Wait,
                subject: subject.into(),
                hist: hist.into(),
                windows,
            }],
            counters: vec![],
            horizon: SimTime(2_000_000_000),
            events: 0,
            replications: 1,
            open_waits: Vec::new(),
        }
    }

    #[test]
    fn nines_axis_puts_p99_at_two_and_p999_at_three() {
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
        assert!((nines(0.999) - 3.0).abs() < 1e-9);
        assert_eq!(nines(1.0), 9.0);
    }

    #[test]
    fn counts_read_as_people_say_them() {
        assert_eq!(human_count(950.0), "950");
        assert_eq!(human_count(10_000.0), "10k");
        assert_eq!(human_count(3_400_000.0), "3.4M");
    }

    #[test]
    fn subjects_with_the_largest_maxima_come_first() {
        let r = ExperimentResult {
            experiment: "x".into(),
            variants: vec![
                variant("a", "L/read/small", &[5, 10]),
                variant("b", "L/read/big", &[0, 7_000]),
                variant("c", "L/read/empty", &[]),
            ],
        };
        let got = chosen_subjects(&r, &[], 4);
        assert_eq!(
            got,
            vec![
                (Metric::Wait, "L/read/big".to_string()),
                (Metric::Wait, "L/read/small".to_string())
            ]
        );
        // An experiment's headline comes first; all-zero series never.
        let got = chosen_subjects(&r, &[(Metric::Wait, "L/read/small")], 1);
        assert_eq!(got, vec![(Metric::Wait, "L/read/small".to_string())]);
        let zeros = ExperimentResult {
            experiment: "z".into(),
            variants: vec![variant("a", "L/read/none", &[0, 0])],
        };
        assert!(chosen_subjects(&zeros, &[], 4).is_empty());
        assert_eq!(file_stem(Metric::Wait, "L/read/big"), "wait-L-read-big");
    }

    #[test]
    fn subjects_that_map_to_one_file_name_get_their_own_files() {
        // `L/a.b` and `L/a-b` both make `wait-L-a-b`: the second is `-2`.
        let mut r = ExperimentResult {
            experiment: "x".into(),
            variants: vec![variant("base", "L/a.b", &[900, 1_500])],
        };
        let other = variant("base", "L/a-b", &[700, 1_000]).series.remove(0);
        r.variants[0].series.push(other);
        let d = tempfile::tempdir().unwrap();
        match write_plots(d.path(), &r, &[], 4) {
            Err(PlotError::NoFont) => {}
            Err(e) => panic!("{e}"),
            Ok(files) => {
                let names: Vec<String> = files
                    .iter()
                    .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
                    .collect();
                assert_eq!(names.len(), 8, "{names:?}");
                assert!(
                    names.contains(&"wait-L-a-b-log2.png".to_string()),
                    "{names:?}"
                );
                assert!(
                    names.contains(&"wait-L-a-b-2-log2.png".to_string()),
                    "{names:?}"
                );
            }
        }
    }

    #[test]
    fn window_maxima_twenty_times_apart_get_a_log_axis() {
        assert!(log_value_axis(Dur(50_000), Dur(30_000_000)));
        assert!(!log_value_axis(Dur(10_000_000), Dur(30_000_000)));
        assert!(!log_value_axis(Dur(1), Dur(20)));
        assert!(log_value_axis(Dur(1), Dur(21)));
    }

    #[test]
    fn writes_whole_png_and_svg_files_for_each_figure() {
        let r = ExperimentResult {
            experiment: "x".into(),
            variants: vec![
                variant("base", "L/read/g", &[0, 0, 900, 1_500, 40_000]),
                variant("patched", "L/read/g", &[0, 800, 1_000, 2_000]),
            ],
        };
        let d = tempfile::tempdir().unwrap();
        match write_plots(d.path(), &r, &[], 4) {
            Err(PlotError::NoFont) => return, // a machine without DejaVu: warned, not failed
            Err(e) => panic!("{e}"),
            Ok(files) => {
                assert_eq!(files.len(), 6);
                for f in files {
                    let bytes = std::fs::read(&f).unwrap();
                    if f.extension().unwrap() == "png" {
                        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", f.display());
                    } else {
                        let text = String::from_utf8(bytes).unwrap();
                        assert!(text.trim_end().ends_with("</svg>"), "{}", f.display());
                        assert!(text.contains("patched"), "legend in {}", f.display());
                        // Window maxima from 900 ns to 40 us: a log axis.
                        if f.to_string_lossy().contains("-windows") {
                            assert!(
                                text.contains("max in window (log scale)"),
                                "{}",
                                f.display()
                            );
                        }
                    }
                }
            }
        }
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with('.')),
            "temp files left: {names:?}"
        );
    }
}
