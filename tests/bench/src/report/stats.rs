//! Summaries of repetitions (median, min, max), their table cells, and verdicts against a limit.

/// Median, min and max.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

pub fn spread(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
    let mut values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
    Some(Spread { median, min: values[0], max: values[n - 1] })
}

pub(super) fn num(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `median (min–max)`, or `median` alone for a single run.
pub(super) fn cell(s: Option<Spread>) -> String {
    match s {
        None => "–".into(),
        Some(s) if s.min == s.max => num(s.median),
        Some(s) => format!("{} ({}–{})", num(s.median), num(s.min), num(s.max)),
    }
}

/// Like [`cell`] for counts.
pub(super) fn int_cell(s: Option<Spread>) -> String {
    match s {
        None => "–".into(),
        Some(s) if s.min == s.max => format!("{:.0}", s.median),
        Some(s) => format!("{:.0} ({:.0}–{:.0})", s.median, s.min, s.max),
    }
}

pub(super) fn of_runs<T>(runs: &[T], f: impl Fn(&T) -> f64) -> Option<Spread> {
    spread(runs.iter().map(f))
}

/// Per-repetition differences `a − b` (paired by repetition).
pub(super) fn paired<T>(a: &[T], b: &[T], f: impl Fn(&T) -> f64) -> Option<Spread> {
    spread(a.iter().zip(b).map(|(x, y)| f(x) - f(y)))
}

pub(super) fn ratio<T>(a: &[T], b: &[T], f: impl Fn(&T) -> f64) -> Option<Spread> {
    spread(a.iter().zip(b).map(|(x, y)| f(x) / f(y)))
}

/// Whether a measured value is within its limit.
pub(super) fn verdict(value: Option<f64>, limit: f64) -> &'static str {
    match value {
        Some(v) if v <= limit => "**met**",
        Some(_) => "**not met**",
        None => "not measured",
    }
}

/// Like [`verdict`] for a difference of two noisy runs: when the repetitions disagree by more than
/// twice the limit, the median decides nothing.
pub(super) fn noisy_verdict(value: Option<Spread>, limit: f64) -> String {
    match value {
        // Every repetition on one side of the limit decides, however far apart they are.
        Some(s) if s.min > limit => "**not met**".into(),
        Some(s) if s.max <= limit => "**met**".into(),
        Some(s) if s.max - s.min > 2.0 * limit => {
            format!("**undecided**: the repetitions straddle the limit and differ by {} µs", num(s.max - s.min))
        }
        other => verdict(other.map(|s| s.median), limit).to_string(),
    }
}
