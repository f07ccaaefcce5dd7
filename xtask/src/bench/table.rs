//! The headline table: what a benchmark's `BENCH` line holds, how a figure is compared with its
//! target, and the table itself (Markdown, so it can go into `docs/benchmarks.md` as printed).

use std::fmt::Write as _;

use serde::Deserialize;

use super::Headline;

/// What a benchmark prints before the JSON of a headline figure.
const PREFIX: &str = "BENCH ";

/// One headline figure, as a benchmark prints it: `BENCH {"id":"invoke.json","median":1234.5,
/// "baseline":567.0,"unit":"ns"}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Measurement {
    /// The figure's stable name, which [`HEADLINES`](super::HEADLINES) looks it up by.
    pub id: String,
    /// The measured median.
    pub median: f64,
    /// The baseline's median, measured in the same run.
    pub baseline: f64,
    /// The unit of both.
    pub unit: Unit,
}

impl Measurement {
    /// Reads a `BENCH` line: `None` for any other line.
    pub fn parse_line(line: &str) -> Option<serde_json::Result<Self>> {
        line.strip_prefix(PREFIX)
            .map(|json| serde_json::from_str(json.trim()))
    }

    /// The median over the baseline.
    pub fn ratio(&self) -> f64 {
        self.median / self.baseline
    }
}

/// The unit of a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Unit {
    /// Nanoseconds per call (lower is better).
    #[serde(rename = "ns")]
    Nanoseconds,
    /// Records written per second (higher is better).
    #[serde(rename = "records/s")]
    RecordsPerSecond,
    /// Workflow steps made per second (higher is better).
    #[serde(rename = "steps/s")]
    StepsPerSecond,
}

/// A headline's target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// The figure adds at most this many nanoseconds to its baseline's median.
    AddsAtMostNs(f64),
    /// The figure is at most this many times its baseline.
    RatioAtMost(f64),
    /// The figure itself is at least this, in its unit.
    AtLeast(f64),
    /// The figure itself is under this many nanoseconds, whatever its baseline.
    MedianBelowNs(f64),
    /// Reported, with no target.
    Reported,
}

impl Target {
    /// Whether `measurement` meets the target (`None` when there is none).
    pub fn verdict(self, measurement: &Measurement) -> Verdict {
        let met = match self {
            Target::AddsAtMostNs(limit) => measurement.median - measurement.baseline <= limit,
            Target::RatioAtMost(limit) => measurement.ratio() <= limit,
            Target::AtLeast(floor) => measurement.median >= floor,
            Target::MedianBelowNs(ceiling) => measurement.median < ceiling,
            Target::Reported => return Verdict::NoTarget,
        };
        if met { Verdict::Pass } else { Verdict::Miss }
    }

    fn describe(self, unit: Unit) -> String {
        match self {
            Target::AddsAtMostNs(limit) => format!("adds ≤ {}", nanoseconds(limit)),
            Target::RatioAtMost(limit) => format!("≤ {limit:.2}×"),
            Target::AtLeast(floor) => format!("≥ {}", amount(floor, unit)),
            Target::MedianBelowNs(ceiling) => format!("< {} median", nanoseconds(ceiling)),
            Target::Reported => "none (reported)".to_owned(),
        }
    }
}

/// How a row's figure compares with its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The target is met.
    Pass,
    /// The target is missed.
    Miss,
    /// The row has no target.
    NoTarget,
    /// The benchmark printed no figure for the row.
    NotMeasured,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Miss => "miss",
            Verdict::NoTarget => "-",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What the row measures, against what.
    pub label: String,
    /// The figure, if the benchmark printed it.
    pub measurement: Option<Measurement>,
    /// The target.
    pub target: Target,
    /// The figure against the target.
    pub verdict: Verdict,
}

/// The rows for `headlines` from what the benchmarks printed, in the headlines' order, then
/// one row (with no target) for each figure that no headline names.
pub fn rows(headlines: &[Headline], measurements: &[Measurement]) -> Vec<Row> {
    let find = |id: &str| {
        measurements
            .iter()
            .rev()
            .find(|measurement| measurement.id == id)
    };
    let named = headlines.iter().map(|headline| {
        let measurement = find(headline.id).cloned();
        let verdict = measurement
            .as_ref()
            .map_or(Verdict::NotMeasured, |measured| {
                headline.target.verdict(measured)
            });
        Row {
            label: headline.label.to_owned(),
            measurement,
            target: headline.target,
            verdict,
        }
    });
    let others = measurements
        .iter()
        .filter(|measurement| {
            !headlines
                .iter()
                .any(|headline| headline.id == measurement.id)
        })
        .map(|measurement| Row {
            label: measurement.id.clone(),
            measurement: Some(measurement.clone()),
            target: Target::Reported,
            verdict: Verdict::NoTarget,
        });
    named.chain(others).collect()
}

/// The rows as a Markdown table.
pub fn render(rows: &[Row]) -> String {
    let mut table = String::from(
        "| measure | median | baseline | ratio | target | result |\n|---|---:|---:|---:|---|---|\n",
    );
    for row in rows {
        let (median, baseline, ratio, unit) = match &row.measurement {
            Some(measured) => (
                amount(measured.median, measured.unit),
                amount(measured.baseline, measured.unit),
                format!("{:.2}×", measured.ratio()),
                measured.unit,
            ),
            None => (
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                Unit::Nanoseconds,
            ),
        };
        let _ = writeln!(
            table,
            "| {} | {median} | {baseline} | {ratio} | {} | {} |",
            row.label,
            row.target.describe(unit),
            row.verdict.label()
        );
    }
    table
}

fn amount(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Nanoseconds => nanoseconds(value),
        Unit::RecordsPerSecond | Unit::StepsPerSecond => format!("{}/s", thousands(value)),
    }
}

/// A duration in nanoseconds, in the unit that keeps it readable.
fn nanoseconds(value: f64) -> String {
    if value < 10_000.0 {
        format!("{} ns", thousands(value))
    } else if value < 1_000_000.0 {
        format!("{:.1} µs", value / 1e3)
    } else {
        format!("{:.2} ms", value / 1e6)
    }
}

/// A whole number with thousands separated by commas (`12,345`).
fn thousands(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let digits = format!("{:.0}", value.abs());
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if value < 0.0 && digits != "0" {
        grouped.insert(0, '-');
    }
    grouped
}
