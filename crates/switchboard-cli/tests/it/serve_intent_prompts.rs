//! `serve --intent-prompts` and the config file's `[serve] intent_prompts`, seen from a real MCP
//! client over stdio: when on, every linked tool's intent is listed as an `intent_` prompt whose
//! arguments are the intent's placeholders and whose message is the filled-in request; when off
//! (the default), none is. Every wait is bounded by `common::LIMIT`.

use rmcp::model::{GetPromptRequestParams, Prompt};
use serde_json::{Map, Value, json};

use crate::common::{StateDir, bounded, exit_of};

/// The prompts `serve --stdio` with `extra` flags lists, and the messages of
/// `intent_roster_assign_shift` rendered for shift `s-1` and user `bob`, if it is listed.
async fn served_prompts(extra: &[&str]) -> (Vec<Prompt>, Option<Value>) {
    let (mut child, client) = crate::common::serve_stdio_client(extra).await;
    let prompts = bounded("prompts/list", client.list_all_prompts())
        .await
        .expect("prompts/list");
    let mut rendered = None;
    if prompts
        .iter()
        .any(|prompt| prompt.name == "intent_roster_assign_shift")
    {
        let mut arguments = Map::new();
        arguments.insert("shift_id".to_owned(), json!("s-1"));
        arguments.insert("user_id".to_owned(), json!("bob"));
        let params =
            GetPromptRequestParams::new("intent_roster_assign_shift").with_arguments(arguments);
        let result = bounded("prompts/get", client.get_prompt(params))
            .await
            .expect("rendered");
        rendered = Some(serde_json::to_value(&result.messages).expect("serialises"));
    }
    bounded("closing the client", client.cancel())
        .await
        .expect("the client closes");
    let status = exit_of("the server exiting", &mut child).await;
    assert!(status.success(), "{status:?}");
    (prompts, rendered)
}

/// Checks that `prompts` list `intent_roster_assign_shift` with its two arguments, and that
/// `rendered` is its filled-in request.
fn assert_assign_prompt(prompts: &[Prompt], rendered: Option<Value>) {
    let assign = prompts
        .iter()
        .find(|prompt| prompt.name == "intent_roster_assign_shift")
        .unwrap_or_else(|| panic!("listed: {prompts:?}"));
    let arguments: Vec<(&str, Option<bool>)> = assign
        .arguments
        .iter()
        .flatten()
        .map(|argument| (argument.name.as_str(), argument.required))
        .collect();
    assert_eq!(
        arguments,
        [("shift_id", Some(true)), ("user_id", Some(true))]
    );
    assert_eq!(
        rendered,
        Some(json!([{"role": "user", "content": {
            "type": "text",
            "text": "assign shift s-1 to bob"
        }}]))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_intent_prompts_offers_them_without_a_config_file() {
    let (prompts, rendered) = served_prompts(&["--intent-prompts"]).await;
    assert_assign_prompt(&prompts, rendered);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flag_turns_them_on_whatever_the_config_file_says() {
    let state = StateDir::new();
    std::fs::create_dir_all(&state.0).expect("the state directory");
    let config = state.0.join("switchboard.toml");
    std::fs::write(&config, "[serve]\nintent_prompts = false\n").expect("config written");
    let config = config.to_str().expect("a UTF-8 temp path");
    let (prompts, rendered) = served_prompts(&["--config", config, "--intent-prompts"]).await;
    assert_assign_prompt(&prompts, rendered);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_offers_intent_prompts_only_when_the_config_file_says_so() {
    let (prompts, rendered) = served_prompts(&[]).await;
    assert!(
        !prompts
            .iter()
            .any(|prompt| prompt.name.starts_with("intent_")),
        "{prompts:?}"
    );
    assert_eq!(rendered, None);

    let state = StateDir::new();
    std::fs::create_dir_all(&state.0).expect("the state directory");
    let config = state.0.join("switchboard.toml");
    std::fs::write(&config, "[serve]\nintent_prompts = true\n").expect("config written");
    let config = config.to_str().expect("a UTF-8 temp path");
    let (prompts, rendered) = served_prompts(&["--config", config]).await;
    assert_assign_prompt(&prompts, rendered);
}
