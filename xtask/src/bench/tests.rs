//! The `BENCH` line format, the verdicts and the table, without running a benchmark.

use super::{
    BENCHMARKS, HEADLINES, Headline, Measurement, Options, Target, Unit, Verdict, render, rows,
    selected,
};

fn measured(id: &str, median: f64, baseline: f64, unit: Unit) -> Measurement {
    Measurement {
        id: id.to_owned(),
        median,
        baseline,
        unit,
    }
}

#[test]
fn a_bench_line_is_read_and_other_lines_are_not() {
    let line = r#"BENCH {"id":"invoke.json","median":1500.5,"baseline":500.0,"unit":"ns"}"#;
    let parsed = Measurement::parse_line(line)
        .expect("a BENCH line")
        .expect("valid JSON");
    assert_eq!(
        parsed,
        measured("invoke.json", 1500.5, 500.0, Unit::Nanoseconds)
    );
    assert!(Measurement::parse_line("Summary: 15 interleaved rounds").is_none());
    let records = r#"BENCH {"id":"w","median":1.0,"baseline":2.0,"unit":"records/s"}"#;
    let parsed = Measurement::parse_line(records)
        .expect("a BENCH line")
        .expect("valid JSON");
    assert_eq!(parsed.unit, Unit::RecordsPerSecond);
    let broken = Measurement::parse_line("BENCH {\"id\":1}").expect("a BENCH line");
    assert!(broken.is_err(), "a malformed BENCH line is an error");
}

#[test]
fn each_kind_of_target_is_judged_on_its_own_terms() {
    let invoke = measured("a", 2_400.0, 500.0, Unit::Nanoseconds);
    assert_eq!(
        Target::AddsAtMostNs(2_000.0).verdict(&invoke),
        Verdict::Pass
    );
    assert_eq!(
        Target::AddsAtMostNs(1_000.0).verdict(&invoke),
        Verdict::Miss
    );
    let round_trip = measured("b", 105.0, 100.0, Unit::Nanoseconds);
    assert_eq!(
        Target::RatioAtMost(1.10).verdict(&round_trip),
        Verdict::Pass
    );
    assert_eq!(
        Target::RatioAtMost(1.01).verdict(&round_trip),
        Verdict::Miss
    );
    let writer = measured("c", 150_000.0, 900_000.0, Unit::RecordsPerSecond);
    assert_eq!(Target::AtLeast(100_000.0).verdict(&writer), Verdict::Pass);
    assert_eq!(Target::AtLeast(200_000.0).verdict(&writer), Verdict::Miss);
    assert_eq!(Target::Reported.verdict(&writer), Verdict::NoTarget);
}

#[test]
fn a_ceiling_judges_the_median_alone_and_strictly() {
    let page = measured("d", 517_000.0, 230_000.0, Unit::Nanoseconds);
    assert_eq!(
        Target::MedianBelowNs(1_000_000.0).verdict(&page),
        Verdict::Pass,
        "a figure under the ceiling passes, however far above its baseline"
    );
    let at_the_ceiling = measured("e", 1_000_000.0, 1.0, Unit::Nanoseconds);
    assert_eq!(
        Target::MedianBelowNs(1_000_000.0).verdict(&at_the_ceiling),
        Verdict::Miss,
        "the ceiling itself is not under it"
    );
    let table = render(&rows(
        &[Headline {
            id: "d",
            benchmark: "x",
            label: "page",
            target: Target::MedianBelowNs(1_000_000.0),
        }],
        &[page],
    ));
    assert!(
        table.contains("| page | 517.0 µs | 230.0 µs | 2.25× | < 1.00 ms median | pass |"),
        "{table}"
    );
}

#[test]
fn rows_follow_the_headlines_and_keep_unnamed_figures() {
    let headlines = [
        Headline {
            id: "first",
            benchmark: "x",
            label: "first row",
            target: Target::RatioAtMost(1.10),
        },
        Headline {
            id: "missing",
            benchmark: "x",
            label: "missing row",
            target: Target::Reported,
        },
    ];
    let measurements = [
        measured("extra", 1.0, 1.0, Unit::Nanoseconds),
        measured("first", 120.0, 100.0, Unit::Nanoseconds),
    ];
    let table = rows(&headlines, &measurements);
    let verdicts: Vec<(&str, Verdict)> = table
        .iter()
        .map(|row| (row.label.as_str(), row.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("first row", Verdict::Miss),
            ("missing row", Verdict::NotMeasured),
            ("extra", Verdict::NoTarget),
        ]
    );
}

#[test]
fn the_table_is_markdown_with_readable_units() {
    let headlines = [
        Headline {
            id: "invoke",
            benchmark: "x",
            label: "invoke vs direct",
            target: Target::AddsAtMostNs(2_000.0),
        },
        Headline {
            id: "writer",
            benchmark: "x",
            label: "writer",
            target: Target::AtLeast(100_000.0),
        },
        Headline {
            id: "http",
            benchmark: "x",
            label: "http",
            target: Target::RatioAtMost(1.10),
        },
    ];
    let measurements = [
        measured("invoke", 1_834.4, 512.0, Unit::Nanoseconds),
        measured("writer", 123_456.7, 1_234_567.0, Unit::RecordsPerSecond),
        measured("http", 315_000.0, 171_000.0, Unit::Nanoseconds),
    ];
    let table = render(&rows(&headlines, &measurements));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines,
        [
            "| measure | median | baseline | ratio | target | result |",
            "|---|---:|---:|---:|---|---|",
            "| invoke vs direct | 1,834 ns | 512 ns | 3.58× | adds ≤ 2,000 ns | pass |",
            "| writer | 123,457/s | 1,234,567/s | 0.10× | ≥ 100,000/s | pass |",
            "| http | 315.0 µs | 171.0 µs | 1.84× | ≤ 1.10× | miss |",
        ]
    );
}

#[test]
fn every_headline_belongs_to_a_benchmark_and_ids_are_unique() {
    for (index, headline) in HEADLINES.iter().enumerate() {
        assert!(
            BENCHMARKS
                .iter()
                .any(|benchmark| benchmark.name == headline.benchmark),
            "{} names no benchmark",
            headline.id
        );
        assert!(
            HEADLINES[..index]
                .iter()
                .all(|earlier| earlier.id != headline.id),
            "{} appears twice",
            headline.id
        );
    }
}

#[test]
fn benchmarks_are_selected_by_name() {
    let all = selected(&Options::default()).expect("no names: all");
    assert_eq!(all.len(), BENCHMARKS.len());
    let only = Options {
        quick: false,
        only: vec!["http".to_owned()],
    };
    let picked = selected(&only).expect("a known name");
    assert_eq!(picked.len(), 1);
    assert_eq!(picked[0].bench, "http");
    let unknown = Options {
        quick: false,
        only: vec!["nope".to_owned()],
    };
    let error = selected(&unknown).expect_err("an unknown name");
    assert!(error.to_string().contains("choose from invoke"), "{error}");
}
