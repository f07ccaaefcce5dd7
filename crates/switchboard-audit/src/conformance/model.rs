//! The model test every persistent store runs beside the suite: random histories (batches of
//! records with out-of-order timestamps, retention sweeps in between, random queries) applied
//! to the store and to the in-memory table as a model, which must give the same answers,
//! record for record, and again once the store is reopened.
//!
//! The suite checks each filter on hand-picked data; this test is for what only shows on
//! longer histories: filters combined, timestamps out of id order, retention between batches,
//! cursors and limits. And every field of every record must read back unchanged, missing
//! digests and the reason for them included, and the questions a call asked the client (any
//! text in their error codes, a NUL too). A store's test draws [`history`] and
//! [`question`]s with `proptest!`, at the number of cases its speed allows, and calls
//! [`answers_like_the_in_memory_table`].

use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use switchboard_core::{
    ActionId, Category, Digest, ErrorKind, Initiator, OrgId,
    ask::{AskKind, AskOutcome, AskRecord},
};

use crate::{
    action::{ActionEvent, AuditAction},
    memory::MemoryAuditStore,
    record::{AuditRecord, Outcome},
    store::{AuditError, AuditQuery, AuditStore},
};

const TOOLS: [&str; 3] = [
    "roster_list_shifts",
    "core_get_current_user",
    "outil é ' \"",
];
const ORGS: [&str; 3] = ["acme", "globex", ""];
const USERS: [&str; 2] = ["alice", "bob"];
const CORRELATIONS: [&str; 3] = ["c0", "c1", "c2"];
const OUTCOMES: [Outcome; 3] = [
    Outcome::Ok,
    Outcome::Error(ErrorKind::Timeout),
    Outcome::Error(ErrorKind::PermissionDenied),
];

fn base() -> Timestamp {
    Timestamp::constant(1_795_000_000, 0)
}

/// A time `seconds` after the base, plus some nanoseconds.
fn at(seconds: i64, nanoseconds: i32) -> Timestamp {
    base() + SignedDuration::new(seconds, nanoseconds)
}

fn optional<T: Clone + std::fmt::Debug + 'static>(
    values: &'static [T],
) -> impl Strategy<Value = Option<T>> {
    prop_oneof![Just(None), prop::sample::select(values).prop_map(Some)]
}

prop_compose! {
    /// A question a call asked the client, as its record lists it.
    fn ask()(
        kind in prop::sample::select(&[AskKind::Form, AskKind::Url, AskKind::Sampling][..]),
        outcome in prop::sample::select(&[
            AskOutcome::Accepted, AskOutcome::Declined, AskOutcome::Cancelled,
            AskOutcome::Answered, AskOutcome::Failed,
        ][..]),
        error in proptest::option::of("[\\x00 -~é]{0,16}"),
        request in proptest::option::of(any::<[u8; 32]>()),
        answer in proptest::option::of(any::<[u8; 32]>()),
        duration_us in prop_oneof![Just(0_u64), Just(u64::MAX), any::<u64>()],
    ) -> AskRecord {
        AskRecord {
            kind,
            outcome,
            error,
            request_hash: request.map(Digest),
            answer_hash: answer.map(Digest),
            duration_us,
        }
    }
}

prop_compose! {
    /// A record of batch `batch`: its call started around the batch's time, sometimes long
    /// before (a slow call), sometimes a little after.
    fn record(batch: i64)(
        late in prop_oneof![4 => -5_i64..5, 1 => -300_i64..0],
        nanoseconds in 0_i32..1_000_000_000,
        tool in prop::sample::select(&TOOLS[..]),
        org in optional(&ORGS),
        user in optional(&USERS),
        correlation in optional(&CORRELATIONS),
        outcome in prop::sample::select(&OUTCOMES[..]),
        category in optional(&Category::ALL),
        agent in any::<bool>(),
        input in proptest::option::of(any::<[u8; 32]>()),
        output in proptest::option::of(any::<[u8; 32]>()),
        digest_error in proptest::option::of("[ -~]{0,24}"),
        duration_us in prop_oneof![Just(0_u64), Just(u64::MAX), any::<u64>()],
        action in proptest::option::of(("[a-z0-9-]{1,12}", prop::sample::select(&[
            ActionEvent::Executed, ActionEvent::Replayed, ActionEvent::Proposed,
            ActionEvent::Approved, ActionEvent::Rejected, ActionEvent::Expired,
        ][..]))),
        domain in proptest::option::of("[a-z_]{0,8}"),
        session in proptest::option::of("[ -~]{0,12}"),
        asks in prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(ask(), 1..4)],
    ) -> AuditRecord {
        AuditRecord {
            asks,
            switch: None,
            node: None,
            id: 0,
            timestamp: at(batch * 10 + late, nanoseconds),
            tool: tool.into(),
            domain: domain.map(Into::into),
            category,
            org_id: org.map(OrgId::from),
            user_id: user.map(Into::into),
            session_id: session.map(Into::into),
            correlation_id: correlation.map(Into::into),
            initiator: if agent { Initiator::Agent } else { Initiator::Human },
            input_hash: input.map(Digest),
            output_hash: output.map(Digest),
            digest_error,
            duration_us,
            outcome,
            action: action.map(|(id, event)| AuditAction::new(ActionId::from(id.as_str()), event)),
        }
    }
}

/// One step of a history.
#[derive(Debug, Clone)]
pub enum Step {
    /// `append_batch` of these records.
    Append(Vec<AuditRecord>),
    /// `delete_before(at(cutoff), limit)`.
    Expire {
        /// Seconds after the histories' base.
        cutoff: i64,
        /// The most records to delete.
        limit: usize,
    },
}

/// Histories of up to nine steps: batches of records, with retention sweeps in between.
pub fn history() -> impl Strategy<Value = Vec<Step>> {
    (1_usize..10).prop_flat_map(|batches| {
        (0..batches)
            .map(|batch| {
                let append =
                    prop::collection::vec(record(batch as i64), 1..40).prop_map(Step::Append);
                let expire = (-320_i64..(batch as i64 * 10 + 10), 0_usize..60)
                    .prop_map(|(cutoff, limit)| Step::Expire { cutoff, limit });
                prop_oneof![4 => append, 1 => expire]
            })
            .collect::<Vec<_>>()
    })
}

prop_compose! {
    /// A query combining random filters, some of which match nothing.
    pub fn question()(
        correlation in optional(&["c0", "c1", "c-none"]),
        tool in optional(&["roster_list_shifts", "outil é ' \"", "no_such_tool"]),
        org in optional(&["acme", "", "nobody"]),
        user in optional(&USERS),
        outcome in optional(&OUTCOMES),
        since in proptest::option::of(-320_i64..100),
        until in proptest::option::of(-320_i64..100),
        before_id in proptest::option::of(0_u64..400),
        limit in optional(&[1_usize, 3, 10]),
    ) -> AuditQuery {
        AuditQuery {
            correlation_id: correlation.map(Into::into),
            tool: tool.map(Into::into),
            org_id: org.map(OrgId::from),
            user_id: user.map(Into::into),
            outcome,
            since: since.map(|seconds| at(seconds, 500_000_000)),
            until: until.map(|seconds| at(seconds, 0)),
            before_id,
            limit,
        }
    }
}

/// Applies `steps` to `store` and to the in-memory table, asks every one of `questions` (and
/// the query of everything) of both after each step, compares the ids each append gave, what
/// each sweep deleted and the counters at the end; then drops `store`, and asks `questions` of
/// the store `reopen` opens on the same data. Fails at the first answer that differs.
pub fn answers_like_the_in_memory_table<S: AuditStore>(
    store: S,
    reopen: impl FnOnce() -> S,
    steps: Vec<Step>,
    questions: &[AuditQuery],
) -> Result<(), TestCaseError> {
    let memory = MemoryAuditStore::new();
    let ask = |step: usize| -> Result<(), TestCaseError> {
        for question in questions.iter().chain([&AuditQuery::all()]) {
            let want = answered(memory.query(question), "the model")?;
            let got = answered(store.query(question), "the store")?;
            prop_assert_eq!(got, want, "after step {}, query {:?}", step, question);
        }
        Ok(())
    };
    for (n, step) in steps.into_iter().enumerate() {
        match step {
            Step::Append(records) => {
                let mut in_memory = records.clone();
                let mut in_store = records;
                answered(memory.append_batch(&mut in_memory), "the model")?;
                answered(store.append_batch(&mut in_store), "the store")?;
                prop_assert_eq!(in_store, in_memory, "ids given by step {}", n);
            }
            Step::Expire { cutoff, limit } => {
                let want = answered(memory.delete_before(at(cutoff, 0), limit), "the model")?;
                let got = answered(store.delete_before(at(cutoff, 0), limit), "the store")?;
                prop_assert_eq!(got, want, "records expired by step {}", n);
            }
        }
        ask(n)?;
    }
    let (got, want) = (store.stats(), memory.stats());
    prop_assert_eq!(
        (got.appended, got.held, got.expired),
        (want.appended, want.held, want.expired)
    );
    drop(store);
    let reopened = reopen();
    for question in questions {
        let want = answered(memory.query(question), "the model")?;
        prop_assert_eq!(
            answered(reopened.query(question), "the reopened store")?,
            want
        );
    }
    Ok(())
}

/// A store's answer, or the test case failed naming who failed (`who`) and why.
fn answered<T>(answer: Result<T, AuditError>, who: &str) -> Result<T, TestCaseError> {
    answer.map_err(|error| TestCaseError::fail(format!("{who} failed: {error}")))
}
