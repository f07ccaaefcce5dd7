//! Tier-1 routing, measured: what `ask` spends choosing a tool before it calls one.
//!
//! Each utterance (an exact match, a match with dates and a colleague, a typo, filler, and a
//! miss that ranks suggestions) is routed through a table with the intents of every sample tool,
//! linked as the binary links them (`switchboard-domains`), beside the baseline of only tokenising it ([`normalize`]), measured in the same run. The summary
//! prints each median and its ratio to the baseline, and one `BENCH` line per utterance for
//! `cargo xtask bench`.
//!
//! Run: `cargo bench -p switchboard-orchestrator --bench route`.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{hint::black_box, time::Duration};

use criterion::Criterion;
use jiff::civil::date;
use switchboard_core::linked_tools;
use switchboard_orchestrator::{Facts, IntentTable, People, Person, normalize};
// Links the sample domains, whose tools `linked_tools` lists (rust-lang/rust#64731).
use switchboard_domains as _;

const UTTERANCES: &[(&str, &str)] = &[
    ("exact", "who am i"),
    (
        "dates and a colleague",
        "shifts from 2026-11-23 to friday for Sam Stone",
    ),
    ("typo", "lsit shifts next week"),
    ("filler", "can you please show me the shifts, thanks"),
    ("miss", "what shifts are there"),
];

fn main() {
    let intents = linked_tools().flat_map(|tool| {
        tool.spec
            .intents
            .iter()
            .map(|intent| (tool.spec.name, *intent))
    });
    let table = IntentTable::build(intents).expect("the sample intents build");
    let people: Vec<Person> = [
        ("alice", "Alice Archer"),
        ("mark", "Mark Mendez"),
        ("sam", "Sam Stone"),
    ]
    .map(|(user_id, name)| Person {
        user_id: user_id.to_owned(),
        name: name.to_owned(),
    })
    .to_vec();
    let facts = Facts {
        today: date(2026, 11, 26),
        people: People::Known(&people),
    };
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let mut rows = Vec::new();
    for &(label, utterance) in UTTERANCES {
        let mut group = criterion.benchmark_group(label);
        group.bench_function("normalize", |b| b.iter(|| normalize(black_box(utterance))));
        group.bench_function("route", |b| {
            b.iter(|| table.route(black_box(utterance), &facts).is_ok())
        });
        group.finish();
        rows.push((
            label,
            median_ns(|| normalize(utterance)),
            median_ns(|| table.route(utterance, &facts).is_ok()),
        ));
    }
    criterion.final_summary();
    println!(
        "\nroute vs normalize (the same utterance tokenised only), medians of 51 rounds of 2,000:"
    );
    for (label, baseline, route) in rows {
        println!(
            "  {label:<22} route {route:>9.0} ns   normalize {baseline:>6.0} ns   {:>6.1}x",
            route / baseline
        );
        let id = format!("route.{}", label.replace(' ', "_"));
        let figure =
            serde_json::json!({"id": id, "median": route, "baseline": baseline, "unit": "ns"});
        println!("BENCH {figure}");
    }
}

/// The median over 51 rounds of the mean time of 2,000 runs of `work`, in nanoseconds.
fn median_ns<T>(mut work: impl FnMut() -> T) -> f64 {
    let mut rounds: Vec<f64> = (0..51)
        .map(|_| {
            let started = std::time::Instant::now();
            for _ in 0..2_000 {
                black_box(work());
            }
            started.elapsed().as_nanos() as f64 / 2_000.0
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[rounds.len() / 2]
}
