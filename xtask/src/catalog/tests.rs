//! The committed catalog must match the registry, so `cargo test --workspace` fails while
//! `docs/reference/tools.{md,json}` are stale (rust-analyzer's codegen test pattern).

use super::{
    generate,
    markdown_file::{GENERATED_MARKER, first_sentence},
    snapshot_registry,
};

#[test]
fn committed_catalog_is_up_to_date() {
    // The error names the stale files and the command that fixes them (`FIX_COMMAND`).
    if let Err(error) = super::check() {
        panic!("{error:#}");
    }
}

#[test]
fn generation_is_deterministic_and_sorted() {
    let snapshot = snapshot_registry().expect("the registry boots");
    let first = generate(&snapshot).expect("the catalog renders");
    let second = generate(&snapshot_registry().expect("the registry boots again"))
        .expect("the catalog renders again");
    assert_eq!(first, second, "two runs must produce the same bytes");
    assert!(first.markdown.starts_with(GENERATED_MARKER));
    assert!(
        first.json.ends_with("}\n"),
        "pretty JSON with one trailing newline"
    );

    let order: Vec<(&str, &str)> = snapshot
        .tools
        .iter()
        .map(|tool| (&*tool.domain, &*tool.name))
        .collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(order, sorted, "tools are sorted by domain, then name");
}

#[test]
fn summaries_stop_at_the_first_sentence() {
    assert_eq!(
        first_sentence("Returns the user: id and name.\nUse it to answer \"who am I\"."),
        "Returns the user: id and name."
    );
    assert_eq!(
        first_sentence("Lists shifts (for example `a.b`), sorted by\ndate. Open shifts."),
        "Lists shifts (for example `a.b`), sorted by date."
    );
    assert_eq!(first_sentence("No full stop"), "No full stop");
}
