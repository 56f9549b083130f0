//! Progress on stderr for runs and sweeps that take a while: a bar on a
//! terminal, and otherwise a line every few seconds, so that a run under
//! `nohup`, CI or a batch scheduler does not look hung (`--progress`).

use indicatif::ProgressBar;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How progress is shown (`--progress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, lines otherwise.
    #[default]
    Auto,
    /// A bar (drawn only on a terminal).
    Bar,
    /// A line every few seconds.
    Lines,
    /// Nothing.
    Off,
}

impl ProgressMode {
    /// `Auto` as what it means here: a bar or lines.
    fn resolve(self) -> ProgressMode {
        match self {
            ProgressMode::Auto if std::io::stderr().is_terminal() => ProgressMode::Bar,
            ProgressMode::Auto => ProgressMode::Lines,
            m => m,
        }
    }
}

/// Nothing is shown before this: most runs end sooner.
const QUIET_START: Duration = Duration::from_secs(2);

/// Between two lines (`CONVOY_PROGRESS_EVERY_MS` overrides it, for tests).
const LINE_EVERY: Duration = Duration::from_secs(10);

fn line_every() -> Duration {
    std::env::var("CONVOY_PROGRESS_EVERY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(LINE_EVERY, Duration::from_millis)
}

/// What a progress figure counts, for the lines.
#[derive(Clone, Copy, Debug)]
pub enum Unit {
    /// Simulated nanoseconds of every run together.
    Simulated,
    /// Sweep points.
    Points,
}

/// A reporter of `done` out of `total`, started now.
pub struct Progress {
    mode: ProgressMode,
    label: String,
    unit: Unit,
    total: u64,
    start: Instant,
    bar: Option<ProgressBar>,
    template: &'static str,
    every: Duration,
    next_line: Duration,
}

impl Progress {
    /// `label` starts each line (`run pidlist-flush-run-a`); `template` is
    /// the bar's.
    pub fn new(
        mode: ProgressMode,
        label: impl Into<String>,
        unit: Unit,
        total: u64,
        template: &'static str,
    ) -> Progress {
        let every = line_every();
        Progress {
            mode: mode.resolve(),
            label: label.into(),
            unit,
            total,
            start: Instant::now(),
            bar: None,
            template,
            every,
            next_line: every,
        }
    }

    /// `done` of the total is done now.
    pub fn set(&mut self, done: u64) {
        let elapsed = self.start.elapsed();
        if self.mode == ProgressMode::Off || elapsed < QUIET_START.min(self.every) {
            return;
        }
        match self.mode {
            ProgressMode::Bar => {
                let (total, start, template) = (self.total, self.start, self.template);
                let pb = self.bar.get_or_insert_with(|| {
                    // Shown after a moment, but timed from the start, as
                    // its ETA reads it.
                    progress_bar(total, template).with_elapsed(start.elapsed())
                });
                pb.set_position(done.min(total));
            }
            ProgressMode::Lines if elapsed >= self.next_line => {
                while self.next_line <= elapsed {
                    self.next_line += self.every;
                }
                eprintln!("{}", self.line(done.min(self.total), elapsed));
            }
            _ => {}
        }
    }

    /// One line: `convoy: run X: 35% simulated, elapsed 12s, eta 22s`.
    fn line(&self, done: u64, elapsed: Duration) -> String {
        let what = match self.unit {
            Unit::Simulated => format!(
                "{}% simulated",
                (done as u128 * 100 / u128::from(self.total.max(1))) as u64
            ),
            Unit::Points => format!("{done}/{} points", self.total),
        };
        let eta = linear_eta(elapsed, done, self.total);
        format!(
            "convoy: {}: {what}, elapsed {:#}, eta {:#}",
            self.label,
            indicatif::HumanDuration(elapsed),
            indicatif::HumanDuration(eta)
        )
    }

    /// Clears the bar, if one is drawn.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// A progress bar on stderr (drawn only when stderr is a terminal). Its
/// `{eta}` is the time so far scaled by the work left: a run's rate is
/// steady, and indicatif's smoothed estimate, which forgets over 15 s,
/// read half the time left through most of a minute-long run.
fn progress_bar(len: u64, template: &'static str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    pb.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("static template")
            .with_key(
                "eta",
                |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let left = linear_eta(s.elapsed(), s.pos(), s.len().unwrap_or(0));
                    let _ = write!(w, "{:#}", indicatif::HumanDuration(left));
                },
            )
            .progress_chars("=> "),
    );
    pb
}

/// The time left if the work goes on at the rate it went so far: `done`
/// of `len` took `elapsed`. Zero before any work is done.
fn linear_eta(elapsed: Duration, done: u64, len: u64) -> Duration {
    if done == 0 || done >= len {
        return Duration::ZERO;
    }
    elapsed.mul_f64((len - done) as f64 / done as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn eta_is_the_time_so_far_scaled_by_the_work_left() {
        let s = Duration::from_secs;
        // 30% done in 6 s: 14 s to go.
        assert_eq!(linear_eta(s(6), 30, 100), s(14));
        assert_eq!(linear_eta(s(6), 0, 100), Duration::ZERO);
        assert_eq!(linear_eta(s(6), 100, 100), Duration::ZERO);
        assert_eq!(linear_eta(s(6), 120, 100), Duration::ZERO);
    }

    #[test]
    fn a_line_says_how_far_and_how_long_is_left() {
        let p = Progress::new(ProgressMode::Lines, "run x", Unit::Simulated, 400, "");
        assert_eq!(
            p.line(100, Duration::from_secs(12)),
            "convoy: run x: 25% simulated, elapsed 12s, eta 36s"
        );
        let p = Progress::new(ProgressMode::Lines, "sweep s", Unit::Points, 200, "");
        assert_eq!(
            p.line(50, Duration::from_secs(60)),
            "convoy: sweep s: 50/200 points, elapsed 60s, eta 3m"
        );
    }

    #[test]
    fn off_and_forced_modes_stay_as_asked() {
        assert_eq!(ProgressMode::Off.resolve(), ProgressMode::Off);
        assert_eq!(ProgressMode::Lines.resolve(), ProgressMode::Lines);
        assert_eq!(ProgressMode::Bar.resolve(), ProgressMode::Bar);
    }
}
