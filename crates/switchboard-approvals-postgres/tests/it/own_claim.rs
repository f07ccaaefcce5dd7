//! A claim this node made but never ran under (its release, or its answer, lost to a database
//! that stopped answering) is claimed again by this node's retry once the database answers,
//! rather than left in doubt for the whole retention.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use switchboard_approvals::{Claim, Fingerprint, IdempotencyScope, IdempotencyStore};
use switchboard_approvals_postgres::ApprovalsDatabase;
use switchboard_core::{Digest, IdempotencyKey, OrgId};
use switchboard_postgres::{Database, PostgresOptions, QueryError, Schema};

use crate::common::fresh_database;

static NOTHING: Schema = Schema {
    store: "stall",
    migrations: &[],
};

/// Makes every store of this process on `url` refuse calls for a moment: a call there times
/// out, so the database is marked unresponsive until a probe has an answer.
fn stall(url: &str) {
    let options = PostgresOptions::new(url).with_call_timeout(Duration::from_millis(200));
    let database = Database::open(&options, &NOTHING).expect("opens");
    // The server's own statement timeout is lifted for this one statement, so it is the
    // client that stops waiting (as it does for a server that does not answer at all).
    let timed_out = database.call(|client| async move {
        client
            .batch_execute("BEGIN; SET LOCAL statement_timeout = 0; SELECT pg_sleep(1); COMMIT")
            .await?;
        Ok(())
    });
    assert!(
        matches!(timed_out, Err(QueryError::Timeout(_))),
        "{timed_out:?}"
    );
}

#[test]
fn a_claim_whose_release_was_lost_is_claimed_again_by_its_node() {
    let test = fresh_database();
    let store = ApprovalsDatabase::open(test.url())
        .expect("opens")
        .idempotency_store(Duration::from_secs(3600));
    let scope = IdempotencyScope::new(OrgId::from("acme"), IdempotencyKey::new("key-1"));
    let fingerprint = Fingerprint::new("roster_assign_shift", Digest([3; 32]));
    assert!(matches!(
        store.claim(&scope, &fingerprint, Timestamp::now()),
        Claim::Run
    ));
    // Nothing ran (the domain was down, say): the key is given back, but the database does
    // not take the release.
    stall(test.url());
    store.release(&scope);
    // Once the database answers, the retry runs: the row names this store value, which never
    // ran the tool under it.
    let began = Instant::now();
    let claim = loop {
        let claim = store.claim(&scope, &fingerprint, Timestamp::now());
        let refused = matches!(&claim, Claim::Done(stored)
            if stored.result.as_ref().is_err_and(|error| error.to_string().contains("fail at once")));
        if !refused || began.elapsed() > Duration::from_secs(10) {
            break claim;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(matches!(claim, Claim::Run), "{claim:?}");
}
