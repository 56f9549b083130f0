//! Simulated time: integer nanoseconds, never floats (ARCHITECTURE.md, invariants).

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub fn ns(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`; zero if `earlier` is later.
    pub fn since(self, earlier: SimTime) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }

    /// Seconds since the start of the run, as a float (for plot axes).
    pub fn as_secs_f64(self) -> f64 {
        self.since(SimTime::ZERO).as_secs_f64()
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);

    pub fn ns(self) -> u64 {
        self.0
    }
    pub fn from_us(us: u64) -> Dur {
        Dur(us.saturating_mul(1_000))
    }
    pub fn from_ms(ms: u64) -> Dur {
        Dur(ms.saturating_mul(1_000_000))
    }
    pub fn from_secs(s: u64) -> Dur {
        Dur(s.saturating_mul(1_000_000_000))
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Nanoseconds as a float, for ratios, averages and plot coordinates
    /// (exact up to 2^53 ns, about 104 days).
    pub fn as_nanos_f64(self) -> f64 {
        self.0 as f64
    }
}

impl Add<Dur> for SimTime {
    type Output = SimTime;
    fn add(self, d: Dur) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Dur> for SimTime {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<SimTime> for SimTime {
    type Output = Dur;
    fn sub(self, rhs: SimTime) -> Dur {
        self.since(rhs)
    }
}

/// Saturating, as `SimTime + Dur` is: a sum past `u64::MAX` ns (584
/// years) stays there.
impl Add for Dur {
    type Output = Dur;
    fn add(self, rhs: Dur) -> Dur {
        Dur(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Dur {
    fn add_assign(&mut self, rhs: Dur) {
        *self = *self + rhs;
    }
}

/// Saturating: a longer span taken from a shorter one leaves zero.
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, rhs: Dur) -> Dur {
        Dur(self.0.saturating_sub(rhs.0))
    }
}

/// `n` spans end to end; saturating.
impl Mul<u64> for Dur {
    type Output = Dur;
    fn mul(self, n: u64) -> Dur {
        Dur(self.0.saturating_mul(n))
    }
}

/// `n` spans end to end, written count first (`10 * MS`); saturating.
impl Mul<Dur> for u64 {
    type Output = Dur;
    fn mul(self, d: Dur) -> Dur {
        d * self
    }
}

/// The span cut into `n` equal parts, rounded down to whole nanoseconds.
/// Panics when `n` is 0, as integer division does.
impl Div<u64> for Dur {
    type Output = Dur;
    fn div(self, n: u64) -> Dur {
        Dur(self.0 / n)
    }
}

/// How many whole `rhs` fit in the span. Panics when `rhs` is zero.
impl Div for Dur {
    type Output = u64;
    fn div(self, rhs: Dur) -> u64 {
        self.0 / rhs.0
    }
}

/// Why a duration string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration; expected a number with a unit, e.g. `850ns`, `1.3us`, `4ms`, `60s`")]
    Empty,
    #[error("`{0}` has no unit; expected one of ns, us, ms, s, min, h (e.g. `4ms`)")]
    NoUnit(String),
    #[error("`{0}` has an unknown unit; expected one of ns, us, ms, s, min, h")]
    BadUnit(String),
    #[error("`{0}` is not a number followed by a unit (e.g. `1.3us`)")]
    BadNumber(String),
    #[error("`{0}` is negative; durations are zero or more")]
    Negative(String),
    #[error("`{0}` is too large (more than about 584 years)")]
    TooLarge(String),
}

/// Parses `850ns`, `1.3us`, `1.3µs`, `4ms`, `60s`, `2min`, `1h`, or a bare `0`.
///
/// Fractions are rounded to the nearest nanosecond. Parsing goes through the
/// decimal text, not through a float multiplication, so `1.3us` is exactly
/// 1300 ns.
pub fn parse_duration(text: &str) -> Result<Dur, DurationError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    if s == "0" {
        return Ok(Dur::ZERO);
    }
    if s.starts_with('-') {
        return Err(DurationError::Negative(s.to_string()));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .ok_or_else(|| DurationError::NoUnit(s.to_string()))?;
    let (num, unit) = s.split_at(split);
    let unit = unit.trim();
    let scale: u64 = match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return Err(DurationError::BadUnit(s.to_string())),
    };
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num.as_str(), ""),
    };
    if (int_part.is_empty() && frac_part.is_empty())
        || !int_part.chars().all(|c| c.is_ascii_digit())
        || !frac_part.chars().all(|c| c.is_ascii_digit())
    {
        return Err(DurationError::BadNumber(s.to_string()));
    }
    let too_large = || DurationError::TooLarge(s.to_string());
    let int: u64 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| too_large())?
    };
    let mut total = int.checked_mul(scale).ok_or_else(too_large)?;
    // Fractional part: digits beyond nanosecond resolution are rounded.
    // The fraction is kept as an exact ratio frac/denom of one unit.
    let mut frac: u128 = 0;
    let mut denom: u128 = 1;
    for c in frac_part.chars().take(24) {
        frac = frac * 10 + c.to_digit(10).unwrap_or(0) as u128;
        denom *= 10;
    }
    if denom > 1 {
        let num = frac * scale as u128;
        let rounded = (num + denom / 2) / denom;
        total = total
            .checked_add(u64::try_from(rounded).map_err(|_| too_large())?)
            .ok_or_else(too_large)?;
    }
    Ok(Dur(total))
}

impl fmt::Display for Dur {
    /// Shortest exact rendering in the largest unit that keeps it exact up to
    /// three decimals: `1.3us`, `4ms`, `60s`, `850ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        for (unit, scale) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
            if ns >= scale {
                let whole = ns / scale;
                let rest = ns % scale;
                if rest == 0 {
                    return write!(f, "{whole}{unit}");
                }
                let step = scale / 1000;
                if rest.is_multiple_of(step) {
                    let milli = rest / step;
                    let frac = format!("{milli:03}");
                    return write!(f, "{whole}.{}{unit}", frac.trim_end_matches('0'));
                }
            }
        }
        write!(f, "{ns}ns")
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Dur(self.0).fmt(f)
    }
}

impl std::str::FromStr for Dur {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Dur, DurationError> {
        parse_duration(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_design_examples_exactly() {
        assert_eq!(parse_duration("850ns"), Ok(Dur(850)));
        assert_eq!(parse_duration("1.3us"), Ok(Dur(1_300)));
        assert_eq!(parse_duration("1.65us"), Ok(Dur(1_650)));
        assert_eq!(parse_duration("4ms"), Ok(Dur(4_000_000)));
        assert_eq!(parse_duration("60s"), Ok(Dur(60_000_000_000)));
        assert_eq!(parse_duration("2min"), Ok(Dur(120_000_000_000)));
        assert_eq!(parse_duration("0"), Ok(Dur(0)));
        assert_eq!(parse_duration("0.5ns"), Ok(Dur(1)));
        assert_eq!(parse_duration(".5us"), Ok(Dur(500)));
        assert_eq!(parse_duration("1_000us"), Ok(Dur(1_000_000)));
        assert_eq!(parse_duration("6.497µs"), Ok(Dur(6_497)));
    }

    #[test]
    fn refuses_bad_text_with_a_reason() {
        assert!(matches!(parse_duration(""), Err(DurationError::Empty)));
        assert!(matches!(
            parse_duration("12"),
            Err(DurationError::NoUnit(_))
        ));
        assert!(matches!(
            parse_duration("12 parsecs"),
            Err(DurationError::BadUnit(_))
        ));
        assert!(matches!(
            parse_duration("1.2.3ms"),
            Err(DurationError::BadNumber(_))
        ));
        assert!(matches!(
            parse_duration("-4ms"),
            Err(DurationError::Negative(_))
        ));
        assert!(matches!(
            parse_duration("99999999999h"),
            Err(DurationError::TooLarge(_))
        ));
        assert!(matches!(
            parse_duration("ms"),
            Err(DurationError::BadNumber(_))
        ));
    }

    #[test]
    fn duration_arithmetic_is_exact_and_saturates_at_the_ends() {
        assert_eq!(Dur(1_300) + Dur(700), Dur(2_000));
        let mut d = Dur(5);
        d += Dur(6);
        assert_eq!(d, Dur(11));
        assert_eq!(Dur(u64::MAX) + Dur(1), Dur(u64::MAX));
        assert_eq!(Dur(2_000) - Dur(700), Dur(1_300));
        assert_eq!(Dur(700) - Dur(2_000), Dur::ZERO);
        assert_eq!(Dur(1_300) * 3, Dur(3_900));
        assert_eq!(Dur(u64::MAX / 2 + 1) * 2, Dur(u64::MAX));
        assert_eq!(3 * Dur(1_300), Dur(3_900));
        assert_eq!(Dur(1_000) / 3, Dur(333));
        assert_eq!(Dur(7) / 7, Dur(1));
        assert_eq!(Dur::from_secs(25) / Dur::from_secs(10), 2);
        assert_eq!(Dur(9) / Dur(10), 0);
        assert_eq!(Dur(1_500).as_nanos_f64(), 1_500.0);
    }

    #[test]
    fn display_round_trips() {
        for s in ["850ns", "1.3us", "4ms", "60s", "1.65us", "6.497us"] {
            let d = parse_duration(s).unwrap();
            assert_eq!(parse_duration(&d.to_string()), Ok(d), "{s}");
        }
        assert_eq!(Dur(1_300).to_string(), "1.3us");
        assert_eq!(Dur(60_000_000_000).to_string(), "60s");
        assert_eq!(Dur(1_234_567).to_string(), "1234.567us");
        assert_eq!(Dur(1_234_567_891).to_string(), "1234567.891us");
    }
}
