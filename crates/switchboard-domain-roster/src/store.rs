//! Where the roster is kept: the [`RosterStore`] trait, the in-memory store, and
//! [`RosterState`], the domain's state, which is a handle on a store.
//!
//! A real domain wraps a database, not a value in memory, so the roster's state is not its data
//! but the store its data lives in. Every store keeps each organisation's part of the roster
//! (an [`OrgRoster`]) as one record and applies the rules of [`RosterBook`] to it:
//!
//! - [`RosterStore::load`] reads one organisation's part;
//! - [`RosterStore::change`] applies a change to one organisation's part atomically: the change
//!   sees the part as it is, and either all of it is kept or nothing is. Changes of one
//!   organisation are serialized (a lock in memory, a row lock in a database), so two nodes on
//!   one database never lose each other's changes.
//!
//! A change also receives the [`ActionKey`] of the call making it. A store that keeps the
//! idempotency keys in the same database (the PostgreSQL store) writes the key's first result
//! in the transaction of the change, so a crash can never keep the change and lose the result
//! (which would let a retry run the change again) or the reverse. The other stores ignore it:
//! the registry completes the key right after the tool returns.
//!
//! The in-memory store is the default: seeded with the sample organisations, kept for the
//! process's life. The SQLite and PostgreSQL stores live in crates of their own.

use std::{
    any::Any,
    collections::BTreeMap,
    fmt,
    panic::{AssertUnwindSafe, catch_unwind, resume_unwind},
    sync::{Arc, Mutex, PoisonError},
};

use serde::Serialize;
use serde_json::Value;
use switchboard_core::{ActionKey, BoxFuture, OrgId, ToolContext, ToolError};

use crate::{
    error::RosterError,
    state::{OrgRoster, RosterBook},
};

/// What a change made: the tool's output as JSON (what the idempotency key keeps) and typed
/// (what the tool returns).
pub struct Changed {
    /// The output, serialized as the registry serializes a tool's output.
    pub output: Value,
    typed: Box<dyn Any + Send>,
}

impl Changed {
    /// The change's output, typed and as JSON.
    pub fn new<T: Serialize + Send + 'static>(typed: T) -> Result<Self, RosterError> {
        let output = serde_json::to_value(&typed).map_err(|error| RosterError::Unavailable {
            reason: format!("the change's output cannot be serialized: {error}"),
        })?;
        Ok(Self {
            output,
            typed: Box::new(typed),
        })
    }

    fn into_typed<T: 'static>(self) -> Result<T, RosterError> {
        self.typed
            .downcast::<T>()
            .map(|typed| *typed)
            .map_err(|_| RosterError::Unavailable {
                reason: "the store returned another change's output".to_owned(),
            })
    }
}

impl fmt::Debug for Changed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Changed")
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

/// A change to one organisation's part of the roster. It gets a book holding only that part,
/// and its error leaves the part as it was.
pub type RosterChange = Box<dyn FnOnce(&mut RosterBook) -> Result<Changed, RosterError> + Send>;

impl OrgRoster {
    /// This part as a database store keeps it: its JSON, the form this type serializes to, so
    /// that the roster's rules stay in this crate, one place for every store.
    pub fn to_stored(&self) -> Result<String, RosterError> {
        serde_json::to_string(self).map_err(|error| RosterError::Unavailable {
            reason: format!("an organisation's roster cannot be serialized: {error}"),
        })
    }
}

impl RosterBook {
    /// Every organisation's part, as a database store keeps it ([`OrgRoster::to_stored`]):
    /// `(organisation, JSON)` rows, for a seed.
    pub fn into_stored_parts(self) -> Result<Vec<(String, String)>, RosterError> {
        self.into_parts()
            .map(|(org_id, part)| Ok((org_id.to_string(), part.to_stored()?)))
            .collect()
    }
}

/// How a change ran in a database store's transaction: what the transaction does next (commit,
/// or roll back) and what the store's caller then gets ([`Applied::into_result`]).
///
/// The change runs inside the transaction, where a panic must not escape before the
/// transaction is rolled back: [`Applied::of`] catches it, and [`Applied::into_result`] resumes
/// it in the caller, where the registry reports it like any tool's panic.
pub enum Applied {
    /// The change succeeded: write the changed part and commit.
    Kept(Changed),
    /// The roster's rules refused it (or the store could not keep it): roll back.
    Refused(RosterError),
    /// It panicked: roll back, then resume the panic.
    Panicked(Box<dyn Any + Send>),
}

impl Applied {
    /// Runs `change` on `book`, catching a panic. A book a change panicked on may be half
    /// changed: the store rolls back and never keeps it.
    pub fn of(change: RosterChange, book: &mut RosterBook) -> Self {
        match catch_unwind(AssertUnwindSafe(|| change(book))) {
            Ok(Ok(changed)) => Applied::Kept(changed),
            Ok(Err(refused)) => Applied::Refused(refused),
            Err(panic) => Applied::Panicked(panic),
        }
    }

    /// What the store's caller gets: the change's result, its refusal, or its panic, resumed
    /// here.
    pub fn into_result(self) -> Result<Changed, RosterError> {
        match self {
            Applied::Kept(changed) => Ok(changed),
            Applied::Refused(error) => Err(error),
            Applied::Panicked(panic) => resume_unwind(panic),
        }
    }
}

impl fmt::Debug for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Applied::Kept(changed) => f.debug_tuple("Kept").field(changed).finish(),
            Applied::Refused(error) => f.debug_tuple("Refused").field(error).finish(),
            Applied::Panicked(_) => f.debug_tuple("Panicked").finish_non_exhaustive(),
        }
    }
}

/// Where the roster is kept. Each method acts for one organisation, named by the caller's
/// context, never by a tool's input.
pub trait RosterStore: Send + Sync + 'static {
    /// A book holding the part of `org_id` as it is now (none if it has no roster).
    fn load(&self, org_id: OrgId) -> BoxFuture<'_, Result<RosterBook, RosterError>>;

    /// Applies `change` to the part of `org_id` atomically, serialized with every other change
    /// of that organisation, and keeps the result only if it succeeds. `action` is the call's
    /// action: a store that also keeps the idempotency keys completes it with the change's
    /// output in the same transaction.
    fn change(
        &self,
        org_id: OrgId,
        action: Option<ActionKey>,
        change: RosterChange,
    ) -> BoxFuture<'_, Result<Changed, RosterError>>;

    /// Adds each organisation's part of `book` that the store does not hold yet; a part it
    /// holds is left as it is (seeding twice, or on a second node, changes nothing).
    fn seed(&self, book: RosterBook) -> BoxFuture<'_, Result<(), RosterError>>;
}

/// The roster in memory: each organisation's part behind one lock, for the process's life.
#[derive(Debug, Default)]
pub struct MemoryRosterStore {
    orgs: Mutex<BTreeMap<OrgId, Arc<OrgRoster>>>,
}

impl MemoryRosterStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding the sample roster ([`RosterBook::seeded`]).
    pub fn seeded() -> Self {
        Self {
            orgs: Mutex::new(RosterBook::seeded().into_parts().collect()),
        }
    }

    /// Every organisation's part as it is now.
    pub fn snapshot(&self) -> RosterBook {
        let orgs = self.lock();
        let mut book = RosterBook::new();
        for (org_id, part) in orgs.iter() {
            book.put_org_part(org_id, Arc::clone(part));
        }
        book
    }

    // A change that panicked poisons the lock without having changed anything (a part is
    // replaced only after its change succeeded), so the data behind a poisoned lock is sound.
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<OrgId, Arc<OrgRoster>>> {
        self.orgs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RosterStore for MemoryRosterStore {
    fn load(&self, org_id: OrgId) -> BoxFuture<'_, Result<RosterBook, RosterError>> {
        let part = self.lock().get(&org_id).cloned().unwrap_or_default();
        Box::pin(async move { Ok(RosterBook::of_org(&org_id, part)) })
    }

    fn change(
        &self,
        org_id: OrgId,
        _action: Option<ActionKey>,
        change: RosterChange,
    ) -> BoxFuture<'_, Result<Changed, RosterError>> {
        let changed = {
            let mut orgs = self.lock();
            let part = orgs.get(&org_id).cloned().unwrap_or_default();
            let mut book = RosterBook::of_org(&org_id, part);
            change(&mut book).inspect(|_| {
                orgs.insert(org_id.clone(), book.take_org_part(&org_id));
            })
        };
        Box::pin(async move { changed })
    }

    fn seed(&self, book: RosterBook) -> BoxFuture<'_, Result<(), RosterError>> {
        let mut orgs = self.lock();
        for (org_id, part) in book.into_parts() {
            orgs.entry(org_id).or_insert(part);
        }
        Box::pin(async { Ok(()) })
    }
}

/// The `roster` domain's state: the store its data lives in. Cloning it clones the handle.
#[derive(Clone)]
pub struct RosterState {
    store: Arc<dyn RosterStore>,
}

impl RosterState {
    /// The roster kept in `store`.
    pub fn new(store: Arc<dyn RosterStore>) -> Self {
        Self { store }
    }

    /// The default: the sample roster, in memory ([`MemoryRosterStore::seeded`]).
    pub fn in_memory() -> Self {
        Self::new(Arc::new(MemoryRosterStore::seeded()))
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn RosterStore> {
        &self.store
    }
}

impl fmt::Debug for RosterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RosterState").finish_non_exhaustive()
    }
}

/// The caller's organisation's part of the roster, as the store has it now.
pub(crate) async fn read(ctx: &ToolContext<RosterState>) -> Result<RosterBook, ToolError> {
    let store = Arc::clone(ctx.state().store());
    Ok(store.load(ctx.caller().org_id.clone()).await?)
}

/// Applies `change` to the caller's organisation's part of the roster and returns what it
/// returned. Only `execute` and `restricted` tools may, as with [`ToolContext::write`].
pub(crate) async fn change<T: Serialize + Send + 'static>(
    ctx: &ToolContext<RosterState>,
    change: impl FnOnce(&mut RosterBook) -> Result<T, RosterError> + Send + 'static,
) -> Result<T, ToolError> {
    ctx.may_write()?;
    let store = Arc::clone(ctx.state().store());
    let change: RosterChange = Box::new(move |book| change(book).and_then(Changed::new));
    let changed = store
        .change(ctx.caller().org_id.clone(), ctx.action().cloned(), change)
        .await?;
    Ok(changed.into_typed()?)
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use super::*;

    fn acme() -> OrgId {
        OrgId::from("acme")
    }

    #[test]
    fn the_stored_parts_are_each_organisations_json_and_read_back_the_same() {
        let seeded = RosterBook::seeded();
        let rows = seeded.clone().into_stored_parts().expect("serializes");
        let orgs: Vec<&str> = rows.iter().map(|(org, _)| org.as_str()).collect();
        assert_eq!(orgs, ["acme", "globex"]);
        for (org, text) in &rows {
            let part: OrgRoster = serde_json::from_str(text).expect("the stored JSON reads");
            assert_eq!(Some(&part), seeded.org_part(&OrgId::from(org.as_str())));
        }
    }

    #[test]
    fn a_change_is_kept_refused_or_its_panic_caught_and_resumed() {
        let mut book = RosterBook::seeded();
        let kept = Applied::of(
            Box::new(|book: &mut RosterBook| Changed::new(book.notices(&acme()).len())),
            &mut book,
        );
        assert_eq!(
            kept.into_result().expect("kept").output,
            serde_json::json!(0)
        );

        let exists = RosterError::MemberExists {
            user_id: "mark".to_owned(),
        };
        let refusal = exists.clone();
        let refused = Applied::of(Box::new(move |_: &mut RosterBook| Err(refusal)), &mut book);
        assert!(matches!(refused, Applied::Refused(_)), "{refused:?}");
        assert_eq!(refused.into_result().err(), Some(exists));

        let panicked = Applied::of(
            Box::new(|_: &mut RosterBook| panic!("the change broke")),
            &mut book,
        );
        assert!(matches!(panicked, Applied::Panicked(_)), "{panicked:?}");
        let resumed = catch_unwind(AssertUnwindSafe(|| panicked.into_result()))
            .expect_err("the panic is resumed in the caller");
        assert_eq!(
            resumed.downcast_ref::<&str>().copied(),
            Some("the change broke")
        );
    }
}
