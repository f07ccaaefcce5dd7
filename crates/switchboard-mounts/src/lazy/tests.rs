//! Search matching, the lazy servers' one-line descriptions, and the instructions paragraph.

use std::collections::BTreeMap;

use super::*;

#[test]
fn every_word_of_a_query_must_match_in_any_field_whatever_its_case() {
    let fields = [
        "everything",
        "get-sum",
        "Get Sum",
        "Returns the sum of two numbers.",
    ];
    assert!(matches("sum", &fields));
    assert!(matches("SUM numbers", &fields));
    assert!(matches("everything get", &fields));
    assert!(!matches("sum strings", &fields), "every word must match");
    assert!(matches("", &fields), "an empty query matches everything");
    assert!(matches("  ", &fields));
}

#[test]
fn a_lazy_server_is_introduced_by_its_instructions_then_title_then_the_configuration() {
    let instructions = "\n  Reference server for testing.  \nIgnore the rest.";
    assert_eq!(
        one_line_description(Some(instructions), Some("Everything"), Some("configured")),
        "Reference server for testing."
    );
    assert_eq!(
        one_line_description(Some("   \n"), Some("Everything"), Some("configured")),
        "Everything",
        "blank instructions say nothing"
    );
    assert_eq!(
        one_line_description(None, None, Some("The vendor's tickets")),
        "The vendor's tickets"
    );
    assert_eq!(one_line_description(None, None, None), "no description");
    let long = "x".repeat(500);
    let clamped = one_line_description(Some(&long), None, None);
    assert_eq!(clamped.chars().count(), 200);
    assert!(clamped.ends_with('…'));
}

#[test]
fn the_instructions_list_each_lazy_server_on_its_own_line() {
    assert_eq!(instructions(&BTreeMap::new()), None);
    let servers = BTreeMap::from([
        ("everything".to_owned(), "Reference server.".to_owned()),
        ("time".to_owned(), "Time and time zones.".to_owned()),
    ]);
    let text = instructions(&servers).expect("a paragraph");
    assert!(text.contains("mcp_search"), "{text}");
    assert!(text.contains("mcp_call(server, tool, arguments)"), "{text}");
    assert!(
        text.ends_with("\n- everything: Reference server.\n- time: Time and time zones."),
        "{text}"
    );
}

#[test]
fn the_meta_tools_inputs_are_objects_without_org_id() {
    for schema in [
        schema_of::<SearchInput>().to_value(),
        schema_of::<DescribeInput>().to_value(),
        schema_of::<CallInput>().to_value(),
        schema_of::<ConnectInput>().to_value(),
    ] {
        assert_eq!(schema["type"], "object", "{schema}");
        assert_eq!(
            switchboard_core::schema::find_org_id_property(&schema),
            None,
            "{schema}"
        );
    }
    let call = schema_of::<CallInput>().to_value();
    assert_eq!(call["properties"]["arguments"]["type"], "object", "{call}");
    assert_eq!(call["required"], json!(["server", "tool"]), "{call}");
}
