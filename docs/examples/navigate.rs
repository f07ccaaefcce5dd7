//! Walks the sample domains' pages the way an agent does, printing each page's markdown: the
//! home page `/`, a roster week, and an open shift; then claims the shift as a person and
//! shows the page that comes back. Run:
//!
//! ```sh
//! cargo run -p switchboard --example navigate
//! ```
//!
//! This is the walk-through of `docs/navigation.md`, in process: `switchboard serve
//! --navigation` offers the same pages to a model over MCP, and `switchboard serve --http` to a
//! browser. `docs/add-a-page.md` shows how a domain declares a page.

#![allow(clippy::print_stdout, reason = "an example prints to its terminal")]

use serde_json::json;
use switchboard::{CallContext, Initiator, Navigator, PageView, Switchboard, ToolRegistry};
// The sample domains are linked only when the binary names their crate.
use switchboard_domains as _;

/// A week of the seeded roster, and one of its open shifts.
const WEEK: &str = "/roster/weeks/2026-11-23";
const OPEN_SHIFT: &str = "/roster/shifts/acme-2026-11-24-pm";

fn show(page: &PageView) {
    println!("──── {} ────\n\n{}", page.url, page.markdown());
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Switchboard::start(ToolRegistry::builder()).await?;
    let navigator = Navigator::new(runtime.registry.clone())?;
    // sam is a member of acme's staff, at the keyboard himself.
    let sam = CallContext::builder()
        .org("acme")
        .user("sam")
        .session("navigate-example")
        .correlation("navigate-example")
        .role("staff")
        .initiator(Initiator::Human)
        .build();

    for url in ["/", WEEK, OPEN_SHIFT] {
        show(&navigator.navigate(url, &sam).await?);
    }

    // Claiming the open shift runs `roster_claim_shift` with the shift's id from the URL; the
    // page that comes back offers `propose_swap` instead of `claim`.
    let shift = navigator.navigate(OPEN_SHIFT, &sam).await?;
    let outcome = navigator
        .execute_action(OPEN_SHIFT, "claim", json!({}), Some(&shift.version), &sam)
        .await?;
    println!("ran `{}`: next, {}\n", outcome.tool, outcome.next_url);
    show(&outcome.next);

    runtime.shutdown().await;
    Ok(())
}
