//! `convoy check`'s plot: how often the model's runs reach each value of
//! the observed figure (the share of runs at or above it, on log axes),
//! with the observation marked, and the splitting estimate at it when
//! one was made. It shows at a glance how far out in the model's tail a
//! fleet report sits.

use crate::plots::{color, font, human_count, write_figure, Figure, PlotError};
use crate::terminal;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// What the plot shows.
pub struct CheckPlot<'a> {
    /// `check NAME: SUBJECT METRIC STAT`.
    pub title: &'a str,
    /// The figure's value in each run (nanoseconds or a count).
    pub runs: &'a [u64],
    /// The report's observation.
    pub observed: u64,
    /// Whether the values are durations (else counts).
    pub duration: bool,
    /// The splitting estimate of the chance per run at the observation,
    /// and its 95% interval.
    pub split: Option<(f64, f64, f64)>,
}

/// Writes `check-runs.png` and `.svg` into `dir`; nothing (an empty list)
/// when there is no run or no positive value to put on a log axis.
pub fn write_check_plot(dir: &Path, plot: &CheckPlot) -> Result<Vec<PathBuf>, PlotError> {
    if plot.runs.iter().all(|&v| v == 0) || plot.observed == 0 {
        return Ok(Vec::new());
    }
    font()?;
    Ok(write_figure(dir, "check-runs", plot)?.to_vec())
}

/// The share of runs at or above each distinct positive value: `(value,
/// share)`, by value.
fn survival(runs: &[u64]) -> Vec<(f64, f64)> {
    let mut v: Vec<u64> = runs.iter().copied().filter(|&x| x > 0).collect();
    v.sort_unstable();
    let n = runs.len() as f64;
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, &x) in v.iter().enumerate() {
        if i > 0 && v[i - 1] == x {
            continue;
        }
        out.push((x as f64, (v.len() - i) as f64 / n));
    }
    out
}

impl Figure for CheckPlot<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let pts = survival(self.runs);
        let n = self.runs.len() as f64;
        let obs = self.observed as f64;
        let xmin = pts.first().map_or(obs, |p| p.0).min(obs).max(1.0);
        let xmax = pts.last().map_or(obs, |p| p.0).max(obs);
        let mut ymin = (0.5 / n).min(1.0);
        if let Some((p, lo, _)) = self.split {
            ymin = ymin.min(if lo > 0.0 { lo } else { p }).max(1e-300);
        }
        let (lx0, lx1) = (xmin.log10() - 0.1, xmax.log10() + 0.1);
        let (ly0, ly1) = (ymin.log10() - 0.2, 0.05);
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(lx0..lx1, ly0..ly1)
            .map_err(|e| err(&e))?;
        let duration = self.duration;
        let xfmt = move |x: &f64| {
            let v = 10f64.powf(*x);
            if duration {
                terminal::human(sim::Dur(v as u64))
            } else {
                human_count(v)
            }
        };
        let yfmt = |y: &f64| format!("{:.0e}", 10f64.powf(*y));
        chart
            .configure_mesh()
            .x_desc(if duration {
                "value in a run (log)"
            } else {
                "count in a run (log)"
            })
            .y_desc("share of runs at or above (log)")
            .x_label_formatter(&xfmt)
            .y_label_formatter(&yfmt)
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(|e| err(&e))?;
        // The runs' survival curve, a step down at each value.
        let mut steps: Vec<(f64, f64)> = Vec::new();
        for (i, &(x, s)) in pts.iter().enumerate() {
            if i > 0 {
                steps.push((x.log10(), pts[i - 1].1.log10()));
            }
            steps.push((x.log10(), s.log10()));
        }
        if let Some(&(x, s)) = pts.last() {
            steps.push(((x * 1.0001).log10(), s.log10()));
        }
        let blue = color(0);
        chart
            .draw_series(LineSeries::new(steps, blue.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(format!("runs one by one ({})", self.runs.len()))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], blue.stroke_width(2)));
        // The observation.
        let red = RGBColor(200, 30, 30);
        chart
            .draw_series(LineSeries::new(
                [(obs.log10(), ly0), (obs.log10(), ly1)],
                red.stroke_width(2),
            ))
            .map_err(|e| err(&e))?
            .label(format!("observed: {}", xfmt(&obs.log10())))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], red.stroke_width(2)));
        if let Some((p, lo, hi)) = self.split.filter(|s| s.0 > 0.0) {
            let x = obs.log10();
            let lo = if lo > 0.0 { lo } else { ymin };
            let black = BLACK;
            chart
                .draw_series([PathElement::new(
                    [(x, lo.log10()), (x, hi.log10())],
                    black.stroke_width(2),
                )])
                .map_err(|e| err(&e))?;
            chart
                .draw_series([Circle::new((x, p.log10()), 6, black.filled())])
                .map_err(|e| err(&e))?
                .label(format!("splitting: {p:.2e} per run (95% CI)"))
                .legend(move |(x, y)| Circle::new((x + 9, y), 5, black.filled()));
        }
        crate::plots::legend(&mut chart, SeriesLabelPosition::LowerLeft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_survival_curve_counts_runs_at_or_above_each_value() {
        assert_eq!(
            survival(&[0, 5, 5, 10, 20]),
            [(5.0, 0.8), (10.0, 0.4), (20.0, 0.2)]
        );
    }
}
