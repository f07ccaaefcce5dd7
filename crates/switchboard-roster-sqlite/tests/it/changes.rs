//! What a change leaves beyond the contract: a panicking change rolls back and its panic
//! reaches the caller, the call's action is accepted (and ignored), and the store works where
//! there is no Tokio runtime (a startup that seeds it with `block_on`).

use switchboard_core::{ActionId, ActionKey, IdempotencyKey};
use switchboard_domain_roster::{Changed, RosterBook, RosterChange, RosterStore};

use crate::common::{TempStore, acme, notice_texts, post};

/// Posts a notice, then panics.
fn post_then_panic() -> RosterChange {
    Box::new(|book: &mut RosterBook| {
        book.post_notice(
            &acme(),
            "mark",
            "half done".to_owned(),
            jiff::Timestamp::UNIX_EPOCH,
        );
        panic!("the change broke");
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_change_rolls_back_and_its_panic_reaches_the_caller() {
    let store = std::sync::Arc::new(TempStore::new());
    store.seed(RosterBook::seeded()).await.expect("seeded");
    let before = store.load(acme()).await.expect("loads");

    let changing = std::sync::Arc::clone(&store);
    let joined = tokio::spawn(async move {
        let _ = changing.change(acme(), None, post_then_panic()).await;
    })
    .await;
    let panic = joined
        .expect_err("the change's panic is resumed in the calling task")
        .into_panic();
    assert_eq!(
        panic.downcast_ref::<&str>().copied(),
        Some("the change broke")
    );
    assert_eq!(
        store.load(acme()).await.expect("loads"),
        before,
        "the panicking change left something"
    );

    // The connection is usable: no transaction was left open.
    store
        .change(acme(), None, post("after the panic".to_owned()))
        .await
        .expect("the next change is made");
    assert_eq!(notice_texts(&**store).await, ["after the panic"]);
}

#[tokio::test]
async fn a_change_with_an_action_is_made_like_any_other() {
    let store = TempStore::new();
    let action = ActionKey {
        org_id: acme(),
        key: IdempotencyKey::new("post-1"),
        action_id: ActionId::new("act-post-1"),
    };
    let changed = store
        .change(acme(), Some(action), post("keyed".to_owned()))
        .await
        .expect("posted");
    assert_eq!(changed.output, serde_json::json!("acme-notice-1"));
    assert_eq!(notice_texts(&*store).await, ["keyed"]);
}

#[test]
fn the_store_works_without_a_runtime() {
    let store = TempStore::new();
    futures::executor::block_on(async {
        store.seed(RosterBook::seeded()).await.expect("seeded");
        let changed: Changed = store
            .change(acme(), None, post("no runtime".to_owned()))
            .await
            .expect("posted");
        assert_eq!(changed.output, serde_json::json!("acme-notice-1"));
        assert_eq!(notice_texts(&*store).await, ["no runtime"]);
    });
}
