//! Calls once open: from a plain thread and from inside a current-thread runtime (where a
//! blocking client would panic), the call timeout, and notifications across two `Database`s
//! (two nodes).

use std::time::Duration;

use switchboard_postgres::{
    Database, Listener, Migration, Notification, PostgresOptions, QueryError, Schema,
};

use crate::open::fresh;

static EMPTY: Schema = Schema {
    store: "calls",
    migrations: &[Migration {
        description: "nothing",
        sql: "SELECT 1",
    }],
};

fn one(database: &Database) -> Result<i32, QueryError> {
    database.call(|client| async move { Ok(client.query_one("SELECT 1", &[]).await?.get(0)) })
}

#[test]
fn a_synchronous_call_works_from_inside_a_current_thread_runtime() {
    let test = fresh();
    let database = Database::open(&PostgresOptions::new(test.url()), &EMPTY).expect("open");
    assert_eq!(one(&database).expect("from a plain thread"), 1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let answer = runtime.block_on(async { one(&database) });
    assert_eq!(answer.expect("from a runtime's thread"), 1);
    let awaited = runtime.block_on(database.run(|client| async move {
        Ok(client.query_one("SELECT 2", &[]).await?.get::<_, i32>(0))
    }));
    assert_eq!(awaited.expect("awaited"), 2);
    // The last handle dropped inside an async context does not panic.
    runtime.block_on(async move { drop(database) });
}

#[test]
fn a_call_longer_than_the_timeout_fails_without_hanging() {
    let test = fresh();
    let database = Database::open(
        &PostgresOptions::new(test.url()).with_call_timeout(Duration::from_millis(300)),
        &EMPTY,
    )
    .expect("open");
    let started = std::time::Instant::now();
    let error = database
        .call(|client| async move {
            client.execute("SELECT pg_sleep(5)", &[]).await?;
            Ok(())
        })
        .expect_err("too slow");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error.is_unavailable() || error.sql_state().is_some(),
        "{error:?}"
    );
    // The store answers again as soon as a probe has had an answer.
    answers_again(&database);
}

#[test]
fn a_notification_from_one_node_wakes_a_waiter_on_another() {
    let test = fresh();
    let options = PostgresOptions::new(test.url());
    let (node_a, node_b) = (
        Database::open(&options, &EMPTY).expect("a"),
        Database::open(&options, &EMPTY).expect("b"),
    );
    let listener = node_b.listener(&["calls_done"]);
    let mut subscription = listener.subscribe();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // The listener connects in the background: send until a notification arrives.
    let heard = runtime.block_on(async {
        for _ in 0..50 {
            node_a
                .run(|client| async move {
                    client
                        .execute("SELECT pg_notify('calls_done', 'run-7')", &[])
                        .await?;
                    Ok(())
                })
                .await
                .expect("notify");
            if let Ok(Ok(notification)) =
                tokio::time::timeout(Duration::from_millis(200), subscription.recv()).await
            {
                return Some(notification);
            }
        }
        None
    });
    assert_eq!(
        heard,
        Some(Notification::Notify {
            channel: "calls_done".to_owned(),
            payload: "run-7".to_owned()
        })
    );
    // A wait with nothing wanted arriving ends at the poll interval.
    let started = std::time::Instant::now();
    runtime.block_on(Listener::wait(
        &mut subscription,
        Duration::from_millis(200),
        |_, payload| payload == "never",
    ));
    assert!(started.elapsed() >= Duration::from_millis(200));
}

/// A statement that outlasts a short call timeout on the client's side: the server's own
/// statement timeout is lifted for it, so it is the client that stops waiting, as it does for
/// a server that does not answer at all.
const STALL: &str = "BEGIN; SET LOCAL statement_timeout = 0; SELECT pg_sleep(2); COMMIT";

/// Waits (at most 10 s) until `database` answers again after a timeout marked it
/// unresponsive.
fn answers_again(database: &Database) {
    let started = std::time::Instant::now();
    loop {
        match one(database) {
            Ok(answer) => {
                assert_eq!(answer, 1);
                return;
            }
            Err(QueryError::Unresponsive { .. }) if started.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(error) => panic!("the database should answer again: {error}"),
        }
    }
}

#[test]
fn after_a_timeout_every_store_on_the_database_fails_at_once_until_it_answers_again() {
    let test = fresh();
    let options = PostgresOptions::new(test.url()).with_call_timeout(Duration::from_millis(400));
    let slow = Database::open(&options, &EMPTY).expect("open");
    // Another store of the same process on the same database.
    let other = Database::open(&options, &EMPTY).expect("open");
    let timed_out = slow.call(|client| async move {
        client.batch_execute(STALL).await?;
        Ok(())
    });
    assert!(
        matches!(timed_out, Err(QueryError::Timeout(_))),
        "{timed_out:?}"
    );
    // Both stores refuse at once rather than wait another timeout each.
    for database in [&slow, &other] {
        let started = std::time::Instant::now();
        let refused = one(database);
        assert!(
            matches!(refused, Err(QueryError::Unresponsive { .. })),
            "{refused:?}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "refused after {:?}",
            started.elapsed()
        );
        let message = refused.expect_err("refused").to_string();
        assert!(message.contains("fail at once"), "{message}");
    }
    // The server answers (the slow statement is its only busy connection): a probe notices,
    // and calls of both stores go through again.
    answers_again(&other);
    assert_eq!(one(&slow).expect("the slow store answers too"), 1);
}

#[test]
fn a_database_on_another_target_is_not_marked() {
    let slow_test = fresh();
    let other_test = fresh();
    let short = Duration::from_millis(300);
    let slow = Database::open(
        &PostgresOptions::new(slow_test.url()).with_call_timeout(short),
        &EMPTY,
    )
    .expect("open");
    let other = Database::open(&PostgresOptions::new(other_test.url()), &EMPTY).expect("open");
    let _ = slow.call(|client| async move {
        client.batch_execute(STALL).await?;
        Ok(())
    });
    assert_eq!(one(&other).expect("another database is not marked"), 1);
}
