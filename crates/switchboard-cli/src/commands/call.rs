//! `switchboard call TOOL [PARAMS_JSON] [IDENTITY] [--json]`: one call through the registry,
//! with every check the runtime makes, and the audit record it left.

use serde_json::Value;
use switchboard::{InvokeError, ToolRegistry};

use crate::{
    app::Exit,
    args::CallArgs,
    hints,
    output::{self, JsonReport},
    render,
};

/// Calls the tool and prints its result (or why it was refused) and its audit records.
pub(super) async fn run(
    registry: &ToolRegistry,
    args: CallArgs,
    params: Value,
) -> anyhow::Result<Exit> {
    let identity = args.identity.into_identity();
    super::open_thread(registry, &identity.context);
    let result = registry.invoke(&args.tool, params, &identity.context).await;
    let audit = super::audit_of(registry, &identity.correlation_id).await?;
    match (result, args.json) {
        (Ok(result), true) => {
            let report = JsonReport::<InvokeError> {
                result: Some(&result),
                error: None,
                route: None,
                audit: &audit,
            };
            output::write_stdout(&output::to_json(&report)?);
            Ok(Exit::Success)
        }
        (Ok(result), false) => {
            output::write_stdout(&render::call_success(
                &args.tool,
                &result,
                &audit,
                &identity.correlation_id,
            ));
            Ok(Exit::Success)
        }
        (Err(error), true) => {
            let report = JsonReport {
                result: None,
                error: Some(&error),
                route: None,
                audit: &audit,
            };
            output::write_stdout(&output::to_json(&report)?);
            Ok(Exit::Refused)
        }
        (Err(error), false) => {
            let hints = hints::for_invoke(&error, registry.permissions());
            output::write_stderr(&render::call_refusal(
                &error,
                &hints,
                &audit,
                &identity.correlation_id,
            ));
            Ok(Exit::Refused)
        }
    }
}
