//! Guards pages: what a page offers is what the registry can run.
//!
//! Architecture Invariant: every action a linked page names is a linked tool (the navigator
//! also refuses to start otherwise), and every parameter of a page's route is a field of each
//! of its actions' inputs: an action gets the URL's parameters under their own names, so the
//! shift in `/roster/shifts/{shift_id}` is the `shift_id` the action runs on, never one the
//! agent supplies.

use serde_json::Value;
use switchboard_core::{linked_pages, linked_tools};

#[test]
fn every_action_is_a_linked_tool_taking_its_routes_parameters() {
    let mut offenders = Vec::new();
    let mut checked = 0;
    for page in linked_pages() {
        let route = page.spec.route;
        let params: Vec<&str> = route
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        for (action, tool) in (page.actions)() {
            checked += 1;
            let Some(entry) = linked_tools().find(|entry| entry.spec.name == tool) else {
                offenders.push(format!(
                    "{route}: action `{action}` names `{tool}`, which is not a linked tool"
                ));
                continue;
            };
            let schema = (entry.input_schema)().to_value();
            let properties = schema.get("properties").and_then(Value::as_object);
            for param in &params {
                if !properties.is_some_and(|properties| properties.contains_key(*param)) {
                    offenders.push(format!(
                        "{route}: action `{action}` ({tool}) has no input field `{param}` for the URL to bind"
                    ));
                }
            }
        }
    }
    assert!(checked > 0, "the sample domains declare pages with actions");
    assert!(
        offenders.is_empty(),
        "pages offer what cannot run:\n  - {}",
        offenders.join("\n  - ")
    );
}
