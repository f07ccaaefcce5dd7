#![doc = include_str!("../README.md")]

mod config;
mod guard;
mod handlers;
mod negotiate;
mod person;
mod render;
mod session;
mod status;
mod workflows;

use std::sync::Arc;

use axum::{Router, routing::get};
use switchboard_navigation::Navigator;

pub use config::WebConfig;
pub use person::{Person, SignIn, TokenCheck};
pub use session::{MAX_SESSIONS, SESSION_LIFETIME};
pub use workflows::{MAX_EVENT_STREAMS, MAX_EVENT_STREAMS_PER_PERSON, RUN_EVENTS_PATH};

/// The path of the sign-in form.
pub const SIGN_IN_PATH: &str = "/sign-in";
/// The path that ends a sign-in.
pub const SIGN_OUT_PATH: &str = "/sign-out";
/// The cookie that holds a sign-in's session id.
pub const SESSION_COOKIE: &str = "switchboard_session";

/// The pages of `navigator` at their own paths, as HTML or markdown, with sign-in at
/// [`SIGN_IN_PATH`], and a workflow run's events at [`RUN_EVENTS_PATH`] when the config has
/// an engine ([`WebConfig::workflows`]). Mount it beside other routes (every path that is not
/// theirs is a page path); it authenticates on its own.
pub fn router(navigator: Arc<Navigator>, config: WebConfig) -> Router {
    let workflows = config.workflows.clone();
    let state = handlers::AppState::new(navigator, config);
    let mut router = Router::new()
        .route(
            SIGN_IN_PATH,
            get(handlers::sign_in_form).post(handlers::sign_in),
        )
        .route(SIGN_OUT_PATH, axum::routing::post(handlers::sign_out))
        .fallback(handlers::page)
        .with_state(state.clone());
    if let Some(workflows) = workflows {
        let events = Router::new()
            .route(RUN_EVENTS_PATH, get(workflows::run_events))
            .with_state(workflows::WorkflowsState::new(state, workflows));
        router = router.merge(events);
    }
    router
}
