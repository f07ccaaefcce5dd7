//! Guards the workflows domains export as tools.
//!
//! Architecture Invariant: every linked exported workflow (`switchboard_core::workflow!`)
//! validates against the linked tools, is exported as a category no laxer than any of its
//! steps, and has a tool name no linked tool or other exported workflow has: the registration
//! at boot (`Engine::register_exported`) cannot fail on a linked binary.

use std::{collections::BTreeSet, sync::Arc};

use switchboard_core::{ToolDescriptor, linked_tools, linked_workflows};
use switchboard_workflows_engine::validate_exported;

#[test]
fn every_exported_workflow_validates_against_the_linked_tools() {
    let tools: Vec<Arc<ToolDescriptor>> = linked_tools()
        .map(|entry| Arc::new(ToolDescriptor::from_entry(entry)))
        .collect();
    // Every domain present, no tool left out with one.
    let exported =
        validate_exported(&tools, &|_| true, &|_| false).unwrap_or_else(|error| panic!("{error}"));
    assert!(
        exported
            .iter()
            .any(|workflow| workflow.spec.name == "roster_swap_shifts"),
        "the roster exports roster_swap_shifts"
    );
    let mut names: BTreeSet<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    let mut offenders = Vec::new();
    for workflow in linked_workflows() {
        if !names.insert(workflow.name) {
            offenders.push(format!(
                "`{}` (declared at {}:{}) takes a name already taken",
                workflow.name, workflow.location.file, workflow.location.line
            ));
        }
    }
    assert!(
        offenders.is_empty(),
        "exported workflows that cannot be registered:\n  - {}",
        offenders.join("\n  - ")
    );
}
