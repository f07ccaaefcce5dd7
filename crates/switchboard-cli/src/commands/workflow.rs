//! `switchboard workflow ACTION`: workflows of tool calls.
//!
//! `validate FILE` loads a definition file with the sub-workflow files it names and checks it
//! against the tools linked into this binary (the registry's descriptors are the
//! `ToolSignatures` validation reads), so a file that passes here names only tools that exist,
//! with params their schemas accept. Every problem is printed, one per line with its file,
//! line when known, and path, so a file is fixed in one pass.

use serde::Serialize;
use switchboard::ToolRegistry;
use switchboard_workflows::{Block, NodeKind, ValidationError, load};

use crate::{
    app::Exit,
    args::{WorkflowAction, WorkflowArgs, WorkflowValidateArgs},
    output,
};

/// What `workflow validate --json` prints.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ValidateReport<'a> {
    Valid {
        valid: bool,
        workflow: &'a str,
        nodes: usize,
    },
    Invalid {
        valid: bool,
        problems: &'a [ValidationError],
    },
}

/// Runs a workflow action.
pub(super) fn run(registry: &ToolRegistry, args: &WorkflowArgs) -> anyhow::Result<Exit> {
    match &args.action {
        WorkflowAction::Validate(args) => validate(registry, args),
    }
}

fn validate(registry: &ToolRegistry, args: &WorkflowValidateArgs) -> anyhow::Result<Exit> {
    let tools = registry.list();
    match load(&args.file, &tools) {
        Ok(definition) => {
            let nodes = count_nodes(&definition.body);
            if args.json {
                output::write_stdout(&output::to_json(&ValidateReport::Valid {
                    valid: true,
                    workflow: &definition.name,
                    nodes,
                })?);
            } else {
                output::write_stdout(&format!("ok: {}, {nodes} nodes\n", definition.name));
            }
            Ok(Exit::Success)
        }
        Err(errors) => {
            if args.json {
                output::write_stdout(&output::to_json(&ValidateReport::Invalid {
                    valid: false,
                    problems: &errors.errors,
                })?);
            } else {
                output::write_stdout(&format!("{errors}\n"));
            }
            Ok(Exit::Refused)
        }
    }
}

/// The nodes of a block and of the blocks nested in it (a sub-workflow's own are not counted).
fn count_nodes(block: &Block) -> usize {
    block
        .nodes
        .iter()
        .map(|node| {
            1 + match &node.kind {
                NodeKind::Foreach { body, .. } => count_nodes(body),
                NodeKind::Parallel { branches, .. } => {
                    branches.iter().map(|(_, body)| count_nodes(body)).sum()
                }
                _ => 0,
            }
        })
        .sum()
}
