//! The link metrics a front registry records for the calls of a domain served by another
//! registry: `switchboard_link_calls_total{link,domain,outcome}`, one count per call by what the
//! link answered (ok, not_sent, refused, failed, in_doubt, open), and
//! `switchboard_link_call_duration_seconds{link,domain}` for every call handed to the link. They
//! are read the way `/metrics` shows them: through the Prometheus recorder the binary installs,
//! here as this thread's recorder around a single-threaded runtime, so every task the calls
//! spawn records into it.

use std::{sync::Arc, time::Duration};

use metrics_exporter_prometheus::PrometheusBuilder;
use serde_json::json;
use switchboard_registry::{
    DomainLink, LINK_CALL_DURATION_SECONDS, LINK_CALLS_TOTAL, RegistryConfig, ToolRegistry,
    describe_metrics,
};

use crate::{
    linked_faults::{Fault, FaultyLink, add, keyed},
    vault::admin,
};

/// The value of the sample `name{labels}` in Prometheus text `text`, labels in any order.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, series_labels) = series.split_once('{')?;
            let series_labels: Vec<&str> = series_labels.trim_end_matches('}').split(',').collect();
            let matches = series_name == name
                && series_labels.len() == labels.len()
                && labels.iter().all(|(key, wanted)| {
                    series_labels.contains(&format!("{key}=\"{wanted}\"").as_str())
                });
            matches.then(|| value.parse().ok())?
        })
}

/// Runs `calls` against a front holding `vault` through a [`FaultyLink`] to a back whose calls
/// time out after 100 ms, with a Prometheus recorder as this thread's, and returns what it
/// renders.
fn scraped<F>(calls: impl FnOnce(ToolRegistry, Arc<FaultyLink>) -> F) -> String
where
    F: Future<Output = ()>,
{
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    metrics::with_local_recorder(&recorder, || {
        describe_metrics();
        runtime.block_on(async {
            let back = ToolRegistry::builder()
                .config(RegistryConfig {
                    default_timeout: Duration::from_millis(100),
                    ..RegistryConfig::default()
                })
                .start()
                .await
                .expect("the back starts");
            let link = Arc::new(FaultyLink::new(back));
            let front = ToolRegistry::builder()
                .remote_domain("vault", Arc::clone(&link) as Arc<dyn DomainLink>)
                .start()
                .await
                .expect("the front starts");
            calls(front, link).await;
        });
    });
    handle.render()
}

#[test]
fn every_linked_call_is_counted_by_link_domain_and_outcome() {
    let text = scraped(|front, link| async move {
        // ok, twice
        for n in 0..2 {
            front
                .invoke("vault_peek", json!({}), &admin(&format!("peek-{n}")))
                .await
                .expect("the back answers");
        }
        // refused: the back's gate refuses 13
        front
            .invoke("vault_guarded_add", add(13), &keyed("unlucky", "guarded"))
            .await
            .expect_err("the back's gate refuses");
        // failed: the tool ran on the back and timed out there
        front
            .invoke(
                "vault_add",
                json!({ "amount": 1, "delay_ms": 500 }),
                &keyed("slow", "slow"),
            )
            .await
            .expect_err("the back times the tool out");
        link.set(Fault::NotSent);
        front
            .invoke("vault_peek", json!({}), &admin("not-sent"))
            .await
            .expect_err("nothing was sent");
        link.set(Fault::LostAnswer);
        front
            .invoke("vault_add", add(5), &keyed("lost", "lost"))
            .await
            .expect_err("the answer was lost");
        link.set(Fault::Open);
        for n in 0..3 {
            front
                .invoke("vault_peek", json!({}), &admin(&format!("open-{n}")))
                .await
                .expect_err("the breaker is open");
        }
    });

    let calls = |outcome: &str| {
        sample(
            &text,
            LINK_CALLS_TOTAL,
            &[
                ("link", "faulty"),
                ("domain", "vault"),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(calls("ok"), Some(2.0), "{text}");
    assert_eq!(calls("refused"), Some(1.0), "{text}");
    assert_eq!(calls("failed"), Some(1.0), "{text}");
    assert_eq!(calls("not_sent"), Some(1.0), "{text}");
    assert_eq!(calls("in_doubt"), Some(1.0), "{text}");
    assert_eq!(calls("open"), Some(3.0), "{text}");
    // Every call handed to the link is timed; those refused at once because it was open are not.
    assert_eq!(
        sample(
            &text,
            &format!("{LINK_CALL_DURATION_SECONDS}_count"),
            &[("link", "faulty"), ("domain", "vault")],
        ),
        Some(6.0),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "# HELP {LINK_CALLS_TOTAL} Calls of domains on other registries"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("# HELP {LINK_CALL_DURATION_SECONDS} How long")),
        "{text}"
    );
}
