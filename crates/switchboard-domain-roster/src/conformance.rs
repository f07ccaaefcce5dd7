//! The contract every [`RosterStore`] keeps, as a suite each store's tests run unchanged
//! (feature `conformance`).
//!
//! Each check takes a function that opens a new, empty store, and panics with what broke. The
//! in-memory store runs it in this crate's tests; the SQLite and PostgreSQL stores run it
//! against a real file and a real server. [`calls`] are the sample people's calls, for the
//! tests that run the real registry on the roster.

pub mod calls;

use std::future::Future;

use jiff::{Timestamp, civil::date};
use switchboard_core::OrgId;

use crate::{
    SEED_WEEK_START,
    error::RosterError,
    model::Member,
    state::RosterBook,
    store::{Changed, RosterChange, RosterStore},
};

fn acme() -> OrgId {
    OrgId::from("acme")
}

fn globex() -> OrgId {
    OrgId::from("globex")
}

fn nina() -> Member {
    Member {
        user_id: "nina".to_owned(),
        name: "Nina Novak".to_owned(),
        role: "staff".to_owned(),
    }
}

/// A change that adds nina to `org_id`'s roster.
fn add_nina(org_id: OrgId) -> RosterChange {
    Box::new(move |book: &mut RosterBook| {
        let added = book.add_member(&org_id, nina())?;
        Changed::new(added.user_id)
    })
}

/// A change that posts `text` to `org_id`'s board and returns the notice's id.
fn post(org_id: OrgId, text: String) -> RosterChange {
    Box::new(move |book: &mut RosterBook| {
        let notice = book.post_notice(&org_id, "mark", text, Timestamp::UNIX_EPOCH);
        Changed::new(notice.id)
    })
}

async fn load(store: &dyn RosterStore, org_id: OrgId) -> RosterBook {
    store.load(org_id).await.expect("the store answers a load")
}

/// Runs every check, each on a new store from `open`.
pub async fn run_all<S, F, Fut>(open: F)
where
    S: RosterStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    an_organisation_without_a_roster_has_an_empty_one(&open().await).await;
    seeding_adds_only_what_is_missing(&open().await).await;
    a_change_is_kept_and_a_refused_one_changes_nothing(&open().await).await;
    organisations_are_kept_apart(&open().await).await;
    concurrent_changes_of_one_organisation_are_serialized(&[&open().await]).await;
}

/// Loading an organisation the store has never seen gives its empty roster, not an error.
pub async fn an_organisation_without_a_roster_has_an_empty_one(store: &dyn RosterStore) {
    let book = load(store, OrgId::from("initech")).await;
    let initech = OrgId::from("initech");
    assert!(
        book.list(&initech, SEED_WEEK_START, date(2026, 12, 31), None)
            .is_empty()
    );
    assert!(book.notices(&initech).is_empty());
    assert!(!book.is_member(&initech, "alice"));
}

/// Seeding adds each organisation the store does not hold, and leaves the others as they are.
pub async fn seeding_adds_only_what_is_missing(store: &dyn RosterStore) {
    store
        .seed(RosterBook::seeded())
        .await
        .expect("the store takes the seed");
    let seeded = RosterBook::seeded();
    for org_id in [acme(), globex()] {
        assert_eq!(
            load(store, org_id.clone()).await.org_part(&org_id),
            seeded.org_part(&org_id),
            "{org_id} as seeded"
        );
    }
    store
        .change(acme(), None, add_nina(acme()))
        .await
        .expect("nina joins acme");
    store
        .seed(RosterBook::seeded())
        .await
        .expect("seeding again is harmless");
    assert!(
        load(store, acme()).await.is_member(&acme(), "nina"),
        "seeding again must not undo a change"
    );
}

/// A change's result is kept and returned; a change its rules refuse leaves the roster as it
/// was and returns the refusal.
pub async fn a_change_is_kept_and_a_refused_one_changes_nothing(store: &dyn RosterStore) {
    store.seed(RosterBook::seeded()).await.expect("seeded");
    let changed = store
        .change(acme(), None, add_nina(acme()))
        .await
        .expect("nina joins acme");
    assert_eq!(changed.output, serde_json::json!("nina"));
    let before = load(store, acme()).await;
    assert!(before.is_member(&acme(), "nina"));
    // Posts a notice, then fails: neither part of the change may be kept.
    let refused: RosterChange = Box::new(|book: &mut RosterBook| {
        book.post_notice(
            &acme(),
            "mark",
            "half done".to_owned(),
            Timestamp::UNIX_EPOCH,
        );
        book.add_member(&acme(), nina())?;
        Changed::new(())
    });
    let error = store
        .change(acme(), None, refused)
        .await
        .expect_err("nina is already a member");
    assert_eq!(
        error,
        RosterError::MemberExists {
            user_id: "nina".to_owned()
        }
    );
    assert_eq!(
        load(store, acme()).await,
        before,
        "a refused change left something behind"
    );
}

/// A change of one organisation never shows in another.
pub async fn organisations_are_kept_apart(store: &dyn RosterStore) {
    store.seed(RosterBook::seeded()).await.expect("seeded");
    let globex_before = load(store, globex()).await;
    store
        .change(acme(), None, add_nina(acme()))
        .await
        .expect("nina joins acme");
    store
        .change(acme(), None, post(acme(), "acme only".to_owned()))
        .await
        .expect("posted");
    assert_eq!(load(store, globex()).await, globex_before);
    let acme_book = load(store, acme()).await;
    assert!(
        acme_book.org_part(&globex()).is_none(),
        "a load of acme holds globex's roster"
    );
}

/// Changes of one organisation made at once, through each of `stores` in turn (one store, or
/// several on one database, as several processes or nodes see it), are applied one after
/// another: none is lost, and each sees the ones before it (the notices are numbered 1 to N,
/// each once); every store then loads them all.
pub async fn concurrent_changes_of_one_organisation_are_serialized(stores: &[&dyn RosterStore]) {
    const CHANGES: usize = 16;
    assert!(!stores.is_empty(), "the check needs a store");
    let posting = (0..CHANGES).map(|number| {
        let store = stores[number % stores.len()];
        async move {
            store
                .change(acme(), None, post(acme(), format!("notice {number}")))
                .await
                .expect("posted")
                .output
        }
    });
    let mut ids: Vec<String> = futures::future::join_all(posting)
        .await
        .into_iter()
        .map(|id| id.as_str().unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    let mut expected: Vec<String> = (1..=CHANGES).map(|n| format!("acme-notice-{n}")).collect();
    expected.sort();
    assert_eq!(ids, expected, "notices lost or numbered twice");
    for store in stores {
        assert_eq!(load(*store, acme()).await.notices(&acme()).len(), CHANGES);
    }
}
