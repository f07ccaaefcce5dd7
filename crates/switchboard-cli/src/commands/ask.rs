//! `switchboard ask "UTTERANCE" [IDENTITY] [--json]`: route an utterance through the
//! orchestrator and call the tool it reaches, with the same checks and audit as `call`.
//!
//! The route (tool, tier, cost, matched intent, params) is printed with the result, so a person
//! sees why this tool ran; an utterance that matches nothing lists the closest intents.

use switchboard::{AskError, Switchboard};

use crate::{
    app::Exit,
    args::AskArgs,
    hints,
    output::{self, JsonReport},
    render,
};

/// Asks and prints the route, the result (or why there is none) and the audit records.
pub(super) async fn run(switchboard: &Switchboard, args: AskArgs) -> anyhow::Result<Exit> {
    let identity = args.identity.into_identity();
    super::open_thread(&switchboard.registry, &identity.context);
    let answer = switchboard
        .orchestrator
        .ask(&args.utterance, &identity.context)
        .await;
    let audit = super::audit_of(&switchboard.registry, &identity.correlation_id).await?;
    match (answer, args.json) {
        (Ok(answer), true) => {
            let report = JsonReport::<AskError> {
                result: Some(&answer.result),
                error: None,
                route: Some(&answer.route),
                audit: &audit,
            };
            output::write_stdout(&output::to_json(&report)?);
            Ok(Exit::Success)
        }
        (Ok(answer), false) => {
            output::write_stdout(&render::ask_success(
                &answer.route,
                &answer.result,
                &audit,
                &identity.correlation_id,
            ));
            Ok(Exit::Success)
        }
        (Err(error), true) => {
            let report = JsonReport {
                result: None,
                error: Some(&error),
                route: error.route(),
                audit: &audit,
            };
            output::write_stdout(&output::to_json(&report)?);
            Ok(Exit::Refused)
        }
        (Err(error), false) => {
            let hints = hints::for_ask(&error, switchboard.registry.permissions());
            output::write_stderr(&render::ask_refusal(
                &error,
                &hints,
                &audit,
                &identity.correlation_id,
            ));
            Ok(Exit::Refused)
        }
    }
}
