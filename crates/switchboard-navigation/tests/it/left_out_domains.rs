//! A registry that leaves a linked domain out (`RegistryBuilder::exclude_domain`, what
//! `switchboard serve --domains` does) leaves its pages out of the navigator, instead of
//! refusing to start: the pages that declare that domain, and a page declaring none whose
//! action runs one of its tools. The other domains' pages are served as before.

use switchboard_core::{CallContext, Initiator, NoInput, Page, PageEntry, PageError, PageLoader};
use switchboard_domain_roster::ClearRoster;
use switchboard_navigation::Navigator;
use switchboard_registry::ToolRegistry;

/// A page of no declared domain, whose one action runs a roster tool.
#[derive(Debug)]
struct Elsewhere;

impl Page for Elsewhere {
    type Params = NoInput;
    type Data = ();
    const SPEC: switchboard_core::PageSpec = switchboard_core::page_spec! {
        route: "/elsewhere",
        title: "Elsewhere",
        description: "A page whose action clears a roster week.",
    };

    async fn load(_loader: &PageLoader<'_>, _params: &NoInput) -> Result<(), PageError> {
        Ok(())
    }

    fn render(_params: &NoInput, _data: &()) -> String {
        String::new()
    }

    fn actions() -> Vec<switchboard_core::Action<Self>> {
        vec![Self::action::<ClearRoster>("clear")]
    }
}

static ELSEWHERE: PageEntry = PageEntry::of::<Elsewhere>();

async fn without_roster() -> ToolRegistry {
    ToolRegistry::builder()
        .exclude_domain("roster")
        .start()
        .await
        .expect("the registry starts")
}

fn mark() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("mark")
        .role("manager")
        .session("left-out")
        .correlation("left-out")
        .initiator(Initiator::Human)
        .build()
}

#[tokio::test]
async fn the_pages_of_a_left_out_domain_are_not_served_and_the_others_are() {
    let navigator = Navigator::new(without_roster().await)
        .expect("the roster's pages go with the roster instead of stopping the start");

    let routes: Vec<&str> = navigator.routes().collect();
    let me = navigator
        .navigate("/me", &mark())
        .await
        .expect("the core domain's page is served");
    let roster = navigator
        .navigate("/roster", &mark())
        .await
        .expect_err("the roster's home went with the roster");

    assert!(
        routes.contains(&"/me") && routes.contains(&"/people"),
        "{routes:?}"
    );
    assert!(
        !routes.iter().any(|route| route.starts_with("/roster")),
        "{routes:?}"
    );
    assert!(me.markdown().contains("mark"), "{}", me.markdown());
    assert_eq!(roster.kind(), "no_such_page", "{roster}");
}

#[tokio::test]
async fn a_page_whose_action_runs_a_tool_of_a_left_out_domain_goes_with_it() {
    let served = Navigator::with_pages(
        ToolRegistry::builder()
            .start()
            .await
            .expect("the registry starts"),
        [&ELSEWHERE],
    )
    .expect("the action's tool is there");
    let left_out = Navigator::with_pages(without_roster().await, [&ELSEWHERE])
        .expect("the page goes with the roster instead of stopping the start");

    assert_eq!(
        served.routes().next(),
        Some("/elsewhere"),
        "served with the roster"
    );
    assert!(
        !left_out.routes().any(|route| route == "/elsewhere"),
        "left out with the roster"
    );
}
