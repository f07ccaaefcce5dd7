//! The PostgreSQL store against the in-memory table as a model, on random histories: batches of
//! records with out-of-order timestamps, retention sweeps in between, and random queries. Both
//! stores get the same operations and must give the same answers, record for record.
//!
//! The conformance suite checks each filter on hand-picked data; this test is for what only
//! shows on longer histories: filters combined, timestamps out of id order, retention between
//! batches, cursors and limits. And every field of every record must read back unchanged,
//! missing digests and the reason for them included.

use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use switchboard_audit::{
    ActionEvent, AuditAction, AuditQuery, AuditRecord, AuditStore, Digest, MemoryAuditStore,
    Outcome,
};
use switchboard_audit_postgres::PostgresAuditStore;

use crate::common::TestStore;
use switchboard_core::{ActionId, Category, ErrorKind, Initiator, OrgId};

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
    ) -> AuditRecord {
        AuditRecord {
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

#[derive(Debug, Clone)]
enum Step {
    Append(Vec<AuditRecord>),
    /// `delete_before(at(cutoff), limit)`.
    Expire {
        cutoff: i64,
        limit: usize,
    },
}

fn history() -> impl Strategy<Value = Vec<Step>> {
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
    fn question()(
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn answers_like_the_in_memory_table(
        steps in history(),
        questions in prop::collection::vec(question(), 24),
    ) {
        let postgres = TestStore::new();
        let memory = MemoryAuditStore::new();
        let ask = |step: usize| -> Result<(), TestCaseError> {
            for question in questions.iter().chain([&AuditQuery::all()]) {
                let want = memory.query(question).expect("the model answers");
                let got = postgres.query(question).expect("the store answers");
                prop_assert_eq!(got, want, "after step {}, query {:?}", step, question);
            }
            Ok(())
        };
        for (n, step) in steps.into_iter().enumerate() {
            match step {
                Step::Append(records) => {
                    let mut in_memory = records.clone();
                    let mut in_postgres = records;
                    memory.append_batch(&mut in_memory).expect("the model appends");
                    postgres.append_batch(&mut in_postgres).expect("the store appends");
                    prop_assert_eq!(in_postgres, in_memory, "ids given by step {}", n);
                }
                Step::Expire { cutoff, limit } => {
                    let want = memory.delete_before(at(cutoff, 0), limit).expect("model");
                    let got = postgres.delete_before(at(cutoff, 0), limit).expect("store");
                    prop_assert_eq!(got, want, "records expired by step {}", n);
                }
            }
            ask(n)?;
        }
        let (got, want) = (postgres.stats(), memory.stats());
        prop_assert_eq!(
            (got.appended, got.held, got.expired),
            (want.appended, want.held, want.expired)
        );
        // Reopened, the database answers the same.
        let reopened = PostgresAuditStore::open(postgres.database.url()).expect("reopens");
        for question in &questions {
            let want = memory.query(question).expect("the model answers");
            prop_assert_eq!(reopened.query(question).expect("the store answers"), want);
        }
    }
}
