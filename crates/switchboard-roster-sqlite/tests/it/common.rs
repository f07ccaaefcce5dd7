//! What the test files share: a store on a new file in its own temporary directory, a change
//! that posts a notice, and the notices a store loads.

use std::{ops::Deref, path::PathBuf};

use jiff::Timestamp;
use switchboard_core::OrgId;
use switchboard_domain_roster::{Changed, RosterBook, RosterChange, RosterStore};
use switchboard_roster_sqlite::SqliteRosterStore;

/// A store on a new file, with the directory that holds it (removed when dropped).
pub(crate) struct TempStore {
    store: SqliteRosterStore,
    _dir: tempfile::TempDir,
}

impl TempStore {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store =
            SqliteRosterStore::open(dir.path().join("roster.db")).expect("a new file opens");
        Self { store, _dir: dir }
    }

    /// The store's file, for a second store value on it.
    pub(crate) fn path(&self) -> PathBuf {
        self.store.path().to_path_buf()
    }
}

impl Deref for TempStore {
    type Target = SqliteRosterStore;

    fn deref(&self) -> &SqliteRosterStore {
        &self.store
    }
}

pub(crate) fn acme() -> OrgId {
    OrgId::from("acme")
}

/// A change that posts `text` to acme's board and returns the notice's id.
pub(crate) fn post(text: String) -> RosterChange {
    Box::new(move |book: &mut RosterBook| {
        let notice = book.post_notice(&acme(), "mark", text, Timestamp::UNIX_EPOCH);
        Changed::new(notice.id)
    })
}

/// The texts of acme's notices as `store` loads them, oldest first.
pub(crate) async fn notice_texts(store: &dyn RosterStore) -> Vec<String> {
    let book = store.load(acme()).await.expect("loads");
    book.notices(&acme())
        .iter()
        .map(|notice| notice.text.clone())
        .collect()
}
