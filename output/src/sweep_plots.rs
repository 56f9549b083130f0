//! Plots of a sweep's `points.csv` (PNG and SVG, via plots.rs):
//!
//! - one swept parameter: per figure, `sweep-<figure>`, the figure against
//!   the parameter, one line per variant, with a band from the minimum to
//!   the maximum over replications;
//! - two: per figure and variant, `sweep-<figure>-<variant>`, a heatmap
//!   (first parameter across, second up; colour on a log scale); and with
//!   two variants or more, `sweep-<figure>-<variant>-vs-<first>`, the ratio
//!   to the first variant: where does the patch matter?
//!
//! A random sample or more than two parameters gets no plot: `points.csv`
//! has every number. Log-spaced parameters and values spanning more than
//! two decades are drawn on log axes (as log10 coordinates, labelled in
//! real units), so every chart has the same plain coordinate type.

use crate::plots::{color, font, human_count, legend, write_figure, Figure, PlotError};
use crate::sweep_table::{FigureSpec, ParamAxis, PointRecord, SweepHeader};
use crate::terminal;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Writes the sweep's plots into `dir`; returns the files written.
pub fn write_sweep_plots(
    dir: &Path,
    h: &SweepHeader,
    points: &[PointRecord],
) -> Result<Vec<PathBuf>, PlotError> {
    let grid = !h.params.is_empty() && h.params.iter().all(|p| !p.values.is_empty());
    if points.is_empty() || !grid || h.params.len() > 2 {
        return Ok(Vec::new());
    }
    font()?;
    let mut out = Vec::new();
    for (f, fig) in h.figures.iter().enumerate() {
        let stem = format!("sweep-{}", slug(&fig.name));
        if h.params.len() == 1 {
            let lines = Lines { h, fig, f, points };
            out.extend(write_figure(dir, &stem, &lines)?);
            continue;
        }
        for v in 0..h.variants.len() {
            for base in [None, Some(0)] {
                if base == Some(v) || (base.is_some() && v == 0) {
                    continue;
                }
                let map = Heatmap {
                    h,
                    fig,
                    f,
                    points,
                    variant: v,
                    base,
                };
                let name = match base {
                    None => format!("{stem}-{}", slug(&h.variants[v])),
                    Some(b) => format!(
                        "{stem}-{}-vs-{}",
                        slug(&h.variants[v]),
                        slug(&h.variants[b])
                    ),
                };
                out.extend(write_figure(dir, &name, &map)?);
            }
        }
    }
    Ok(out)
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A figure's value as a reader says it.
fn human(fig: &FigureSpec, v: f64) -> String {
    if fig.is_duration() {
        // Nanoseconds, as points.csv keeps durations.
        terminal::human(sim::Dur(v.max(0.0).round() as u64))
    } else {
        human_count(v)
    }
}

/// An axis: linear, or log10 coordinates of positive values.
#[derive(Copy, Clone)]
struct Axis {
    log: bool,
}

impl Axis {
    fn to(self, v: f64) -> f64 {
        if self.log {
            v.max(1e-300).log10()
        } else {
            v
        }
    }
    fn from(self, c: f64) -> f64 {
        if self.log {
            10f64.powf(c)
        } else {
            c
        }
    }
    /// Coordinate range of values from `lo` to `hi`, with a margin.
    fn range(self, lo: f64, hi: f64) -> std::ops::Range<f64> {
        let (a, b) = (self.to(lo), self.to(hi));
        let pad = if b > a { (b - a) * 0.05 } else { 0.5 };
        let a = if self.log {
            a - pad
        } else {
            (a - pad).min(0.0)
        };
        a..b + pad
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The parameter's numeric values, or `None` when one is not a number.
fn numbers(p: &ParamAxis) -> Option<Vec<f64>> {
    p.values.iter().map(|v| v.parse::<f64>().ok()).collect()
}

/// One parameter: a line per variant with a min..max band.
struct Lines<'a> {
    h: &'a SweepHeader,
    fig: &'a FigureSpec,
    f: usize,
    points: &'a [PointRecord],
}

impl Figure for Lines<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (h, fig, f) = (self.h, self.fig, self.f);
        let p = &h.params[0];
        let nums = numbers(p);
        // Categorical when a value is not a number: positions 0, 1, 2...
        let xlog = p.log && nums.as_ref().is_some_and(|n| n.iter().all(|&x| x > 0.0));
        let xa = Axis { log: xlog };
        let x_of = |value: &str| -> Option<f64> {
            let i = p.values.iter().position(|v| v == value)?;
            Some(match &nums {
                Some(n) => xa.to(n[i]),
                None => i as f64,
            })
        };
        // (x, pooled, min, max) per variant, by x.
        let mut lines: Vec<Vec<(f64, f64, f64, f64)>> = vec![Vec::new(); h.variants.len()];
        for pt in self.points {
            let Some(x) = pt.values.first().and_then(|v| x_of(v)) else {
                continue;
            };
            for (v, pv) in pt.variants.iter().enumerate().take(lines.len()) {
                if let (Some(y), Some((lo, _, hi))) = (pv.pooled[f], pv.spread(f)) {
                    // A pooled count is the sum over replications; drawn
                    // per replication, so that it sits among the bands.
                    let n = pv.reps.iter().filter(|r| r[f].is_some()).count().max(1);
                    let y = if fig.is_duration() {
                        y as f64
                    } else {
                        y as f64 / n as f64
                    };
                    lines[v].push((x, y, lo as f64, hi as f64));
                }
            }
        }
        lines
            .iter_mut()
            .for_each(|l| l.sort_by(|a, b| a.0.total_cmp(&b.0)));
        let all = || lines.iter().flatten();
        let ymin = all().map(|p| p.1.min(p.2)).fold(f64::INFINITY, f64::min);
        let ymax = all().map(|p| p.1.max(p.3)).fold(0.0, f64::max).max(1.0);
        let ya = Axis {
            log: ymin > 0.0 && ymax / ymin > 100.0,
        };
        let (xlo, xhi) = match &nums {
            Some(n) => (
                n.iter().copied().fold(f64::INFINITY, f64::min),
                n.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ),
            None => (0.0, (p.values.len() - 1) as f64),
        };
        let xr = {
            let (a, b) = (xa.to(xlo), xa.to(xhi));
            let pad = if b > a { (b - a) * 0.05 } else { 0.5 };
            (a - pad)..(b + pad)
        };
        // Ticks at the swept values themselves, drawn below.
        let keys: Vec<(f64, &String)> = match &nums {
            Some(n) => n.iter().map(|&x| xa.to(x)).zip(&p.values).collect(),
            None => p
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, v))
                .collect(),
        };
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("{}: {} {} {}", h.sweep, fig.subject, fig.metric, fig.stat),
                ("sans-serif", 22),
            )
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(xr, ya.range(ymin.min(ymax), ymax))
            .map_err(err)?;
        let yfmt = |c: &f64| human(fig, ya.from(*c));
        chart
            .configure_mesh()
            .x_desc(format!(
                "{}{}",
                p.name,
                if xlog { " (log scale)" } else { "" }
            ))
            .y_desc(format!(
                "{} {}{}",
                fig.stat,
                fig.metric,
                if ya.log { " (log scale)" } else { "" }
            ))
            .x_labels(0)
            .y_label_formatter(&yfmt)
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        for (v, line) in lines.iter().enumerate() {
            let c = color(v);
            let band: Vec<(f64, f64)> = line
                .iter()
                .map(|p| (p.0, ya.to(p.2)))
                .chain(line.iter().rev().map(|p| (p.0, ya.to(p.3))))
                .collect();
            if h.reps > 1 {
                chart
                    .draw_series(std::iter::once(Polygon::new(band, c.mix(0.18).filled())))
                    .map_err(err)?;
            }
            let pts: Vec<(f64, f64)> = line.iter().map(|p| (p.0, ya.to(p.1))).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(err)?
                .label(h.variants[v].clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled())))
                .map_err(err)?;
        }
        if h.reps > 1 {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, 0.0), (0.0, 0.0)],
                    WHITE,
                )))
                .map_err(err)?
                .label(format!(
                    "bands: min..max over {} replications; lines: {}",
                    h.reps,
                    if fig.is_duration() {
                        "pooled"
                    } else {
                        "pooled, per replication"
                    }
                ))
                .legend(|(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 18, y + 5)], BLACK.mix(0.18).filled())
                });
        }
        let y0 = chart.y_range().start;
        for (x, label) in keys {
            let (px, py) = chart.backend_coord(&(x, y0));
            root.draw(&PathElement::new(vec![(px, py), (px, py + 5)], BLACK))
                .map_err(err)?;
            let style = TextStyle::from(("sans-serif", 15).into_font()).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Top,
                ),
            );
            root.draw(&Text::new(label.clone(), (px, py + 8), style))
                .map_err(err)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// A ratio as a reader says it: `3.2x`, and below one `1/250` (a
/// 250-fold reduction), never a string of zeros.
fn ratio(r: f64) -> String {
    let n = |x: f64| {
        if x >= 1000.0 {
            human_count(short(x).parse().unwrap_or(x))
        } else {
            short(x)
        }
    };
    if (r - 1.0).abs() < 0.005 {
        "1x".into()
    } else if r <= 0.0 {
        format!("{}x", short(r))
    } else if r > 1.0 {
        format!("{}x", n(r))
    } else {
        format!("1/{}", n(1.0 / r))
    }
}

/// A number as an axis label: 3 significant digits, no trailing zeros.
fn short(x: f64) -> String {
    let r: f64 = format!("{x:.2e}").parse().unwrap_or(x);
    format!("{r}")
}

/// Two parameters: the figure of one variant over the grid, or its ratio
/// to a base variant.
struct Heatmap<'a> {
    h: &'a SweepHeader,
    fig: &'a FigureSpec,
    f: usize,
    points: &'a [PointRecord],
    variant: usize,
    base: Option<usize>,
}

impl Heatmap<'_> {
    /// `(column, row, value)` of every cell with a value.
    fn cells(&self) -> Vec<(usize, usize, f64)> {
        let (px, py) = (&self.h.params[0], &self.h.params[1]);
        let value = |pt: &PointRecord, v: usize| {
            pt.variants
                .get(v)
                .and_then(|pv| pv.pooled[self.f])
                .map(|x| x as f64)
        };
        self.points
            .iter()
            .filter_map(|pt| {
                let i = px.values.iter().position(|v| *v == pt.values[0])?;
                let j = py.values.iter().position(|v| *v == pt.values[1])?;
                let y = value(pt, self.variant)?;
                match self.base {
                    None => Some((i, j, y)),
                    Some(b) => {
                        let x = value(pt, b)?;
                        (x > 0.0 && y > 0.0).then_some((i, j, y / x))
                    }
                }
            })
            .collect()
    }
}

/// Viridis, sampled: dark blue (low) to yellow (high).
const VIRIDIS: [(u8, u8, u8); 6] = [
    (68, 1, 84),
    (65, 68, 135),
    (42, 120, 142),
    (34, 168, 132),
    (122, 209, 81),
    (253, 231, 37),
];

fn gradient(stops: &[(u8, u8, u8)], t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
    let i = (t.floor() as usize).min(stops.len() - 2);
    let u = t - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * u).round() as u8;
    let (a, b) = (stops[i], stops[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Blue (the variant is lower) through white (equal) to red (higher).
const DIVERGING: [(u8, u8, u8); 3] = [(33, 102, 172), (247, 247, 247), (178, 24, 43)];

impl Figure for Heatmap<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (h, fig) = (self.h, self.fig);
        let (px, py) = (&h.params[0], &h.params[1]);
        let cells = self.cells();
        // Colour coordinate of a value and its range.
        let (to_t, lo, hi): (Box<dyn Fn(f64) -> f64>, f64, f64) = match self.base {
            Some(_) => {
                let m = cells
                    .iter()
                    .map(|c| c.2.log2().abs())
                    .fold(1.0f64, f64::max);
                (
                    Box::new(move |r: f64| 0.5 + r.log2() / (2.0 * m)),
                    2f64.powf(-m),
                    2f64.powf(m),
                )
            }
            None => {
                let pos = || cells.iter().map(|c| c.2).filter(|&v| v > 0.0);
                let lo = pos().fold(f64::INFINITY, f64::min);
                let hi = pos().fold(0.0, f64::max);
                let (a, b) = (lo.max(1.0).log10(), hi.max(1.0).log10());
                let span = (b - a).max(1e-9);
                (
                    Box::new(move |v: f64| (v.max(1.0).log10() - a) / span),
                    lo,
                    hi,
                )
            }
        };
        let stops: &[(u8, u8, u8)] = if self.base.is_some() {
            &DIVERGING
        } else {
            &VIRIDIS
        };
        root.fill(&WHITE).map_err(err)?;
        let (main, bar) = root.split_horizontally(root.dim_in_pixel().0 as i32 - 130);
        let title = match self.base {
            None => format!(
                "{}: {} {} {} ({})",
                h.sweep, fig.subject, fig.metric, fig.stat, h.variants[self.variant]
            ),
            Some(b) => format!(
                "{}: {} {} {}, {} / {}",
                h.sweep, fig.subject, fig.metric, fig.stat, h.variants[self.variant], h.variants[b]
            ),
        };
        let (nx, ny) = (px.values.len(), py.values.len());
        let mut chart = ChartBuilder::on(&main)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..nx as f64 - 0.5, -0.5..ny as f64 - 0.5)
            .map_err(err)?;
        let label = |vals: &[String], c: f64| {
            let i = c.round();
            if (c - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            vals.get(i as usize).cloned().unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(&px.name)
            .y_desc(&py.name)
            .x_labels(nx)
            .y_labels(ny)
            .x_label_formatter(&|c| label(&px.values, *c))
            .y_label_formatter(&|c| label(&py.values, *c))
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        let text_size = ((main.dim_in_pixel().0 as f64 - 100.0) / nx as f64 / 5.5).clamp(9.0, 16.0);
        for &(i, j, v) in &cells {
            let c = gradient(stops, to_t(v));
            let (x, y) = (i as f64, j as f64);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                    c.filled(),
                )))
                .map_err(err)?;
            let light = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64 > 140.0;
            let text = match self.base {
                Some(_) => ratio(v),
                None => human(fig, v),
            };
            let style = TextStyle::from(("sans-serif", text_size).into_font())
                .color(if light { &BLACK } else { &WHITE })
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Center,
                ));
            chart
                .draw_series(std::iter::once(Text::new(text, (x, y), style)))
                .map_err(err)?;
        }
        // The colour scale: 50 steps from low to high.
        let mut scale = ChartBuilder::on(&bar)
            .margin_top(50)
            .margin_bottom(57)
            .margin_right(10)
            .y_label_area_size(75)
            .build_cartesian_2d(0.0..1.0, 0.0..1.0)
            .map_err(err)?;
        let at = |t: f64| -> f64 {
            match self.base {
                Some(_) => lo * (hi / lo).powf(t),
                None => 10f64
                    .powf(lo.max(1.0).log10() + t * (hi.max(1.0).log10() - lo.max(1.0).log10())),
            }
        };
        scale
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_labels(6)
            .y_label_formatter(&|t| match self.base {
                Some(_) => ratio(at(*t)),
                None => human(fig, at(*t)),
            })
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        scale
            .draw_series((0..50).map(|k| {
                let (a, b) = (k as f64 / 50.0, (k + 1) as f64 / 50.0);
                Rectangle::new(
                    [(0.0, a), (1.0, b)],
                    gradient(stops, (a + b) / 2.0).filled(),
                )
            }))
            .map_err(err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep_table::PointVariant;

    fn sweep(
        params: Vec<ParamAxis>,
        points: Vec<(Vec<&str>, [u64; 2])>,
    ) -> (SweepHeader, Vec<PointRecord>) {
        let h = crate::sweep_table::tests::header(2, &["before", "after"], params);
        let recs = points
            .into_iter()
            .enumerate()
            .map(|(index, (values, v))| PointRecord {
                hash: "h".into(),
                version: "v".into(),
                seed: 1,
                index,
                point_seed: 0,
                values: values.into_iter().map(String::from).collect(),
                sets: vec![],
                variants: ["before", "after"]
                    .iter()
                    .zip(v)
                    .map(|(n, x)| PointVariant {
                        variant: n.to_string(),
                        pooled: vec![Some(x)],
                        reps: vec![vec![Some(x / 2)], vec![Some(x)]],
                    })
                    .collect(),
            })
            .collect();
        (h, recs)
    }

    fn axis(name: &str, values: &[&str], log: bool) -> ParamAxis {
        ParamAxis {
            key: format!("k.{name}"),
            name: name.into(),
            log,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn ratios_read_as_factors() {
        assert_eq!(ratio(1.0), "1x");
        assert_eq!(ratio(0.999), "1x");
        assert_eq!(ratio(0.99), "1/1.01");
        assert_eq!(ratio(2.5), "2.5x");
        assert_eq!(ratio(25_000.0), "25kx");
        assert_eq!(ratio(1.0 / 4200.0), "1/4.2k");
        assert_eq!(ratio(1.0 / 280_812.0), "1/281k");
    }

    #[test]
    fn one_parameter_gives_a_line_plot_two_give_heatmaps_and_ratios() {
        let d = tempfile::tempdir().unwrap();
        let (h, p) = sweep(
            vec![axis("rate", &["1", "10", "100"], true)],
            vec![
                (vec!["1"], [1_000, 900]),
                (vec!["10"], [50_000, 1_000]),
                (vec!["100"], [3_000_000, 1_200]),
            ],
        );
        let files = match write_sweep_plots(d.path(), &h, &p) {
            Err(PlotError::NoFont) => return,
            r => r.unwrap(),
        };
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["sweep-f.png", "sweep-f.svg"]);
        let (h, p) = sweep(
            vec![axis("a", &["1", "2"], false), axis("b", &["x", "y"], false)],
            vec![
                (vec!["1", "x"], [10, 5]),
                (vec!["1", "y"], [100, 5]),
                (vec!["2", "x"], [1_000, 5]),
                (vec!["2", "y"], [10_000, 5]),
            ],
        );
        let files = write_sweep_plots(d.path(), &h, &p).unwrap();
        let names: Vec<String> = files
            .iter()
            .filter(|f| f.extension().unwrap() == "png")
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "sweep-f-before.png",
                "sweep-f-after.png",
                "sweep-f-after-vs-before.png"
            ]
        );
        let svg = std::fs::read_to_string(d.path().join("sweep-f-after-vs-before.svg")).unwrap();
        assert!(svg.contains("1/2k"), "ratio labels in the cells");
    }
}
