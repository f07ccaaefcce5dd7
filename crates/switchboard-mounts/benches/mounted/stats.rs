//! Latencies of one variant over interleaved rounds, their medians and p99, and the `BENCH`
//! lines `cargo xtask bench` collects.

use std::time::Duration;

/// Every call's latency of one variant, and each round's median.
#[derive(Debug, Default)]
pub(crate) struct Series {
    latencies_ns: Vec<f64>,
    round_medians_ns: Vec<f64>,
}

impl Series {
    /// Adds one round's latencies.
    pub(crate) fn push_round(&mut self, round: &[Duration]) {
        let mut round_ns: Vec<f64> = round.iter().map(|took| took.as_nanos() as f64).collect();
        self.round_medians_ns.push(median(&mut round_ns));
        self.latencies_ns.extend(round_ns);
    }

    /// The `p` quantile of every call (0.5: the median).
    pub(crate) fn quantile(&self, p: f64) -> f64 {
        let mut sorted = self.latencies_ns.clone();
        sorted.sort_by(f64::total_cmp);
        quantile(&sorted, p)
    }

    pub(crate) fn median(&self) -> f64 {
        self.quantile(0.5)
    }

    pub(crate) fn p99(&self) -> f64 {
        self.quantile(0.99)
    }

    /// The median over the rounds of this series' round median over `baseline`'s in the same
    /// round: load that comes and goes between rounds cancels out.
    pub(crate) fn paired_ratio(&self, baseline: &Series) -> f64 {
        let mut ratios: Vec<f64> = self
            .round_medians_ns
            .iter()
            .zip(&baseline.round_medians_ns)
            .map(|(figure, base)| figure / base)
            .collect();
        median(&mut ratios)
    }

    /// The same, as a difference in nanoseconds.
    pub(crate) fn paired_difference_ns(&self, baseline: &Series) -> f64 {
        let mut differences: Vec<f64> = self
            .round_medians_ns
            .iter()
            .zip(&baseline.round_medians_ns)
            .map(|(figure, base)| figure - base)
            .collect();
        median(&mut differences)
    }
}

/// The `p` quantile of `sorted` (NaN when empty).
fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    quantile(values, 0.5)
}

/// `ns` for people: µs below a millisecond, ms above.
pub(crate) fn human(ns: f64) -> String {
    if ns.abs() >= 1_000_000.0 {
        format!("{:.2} ms", ns / 1_000_000.0)
    } else {
        format!("{:.1} µs", ns / 1_000.0)
    }
}

/// `ns` for people with its sign: what a figure adds to its baseline.
pub(crate) fn added(ns: f64) -> String {
    if ns >= 0.0 {
        format!("+{}", human(ns))
    } else {
        human(ns)
    }
}

/// A headline figure and its baseline from this run, as the line `cargo xtask bench` collects.
pub(crate) fn print_headline(id: &str, median_ns: f64, baseline_ns: f64) {
    let figure = serde_json::json!({
        "id": id,
        "median": median_ns,
        "baseline": baseline_ns,
        "unit": "ns",
    });
    println!("BENCH {figure}");
}
