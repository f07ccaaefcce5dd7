//! Page versions: what an agent saw, so that an action on a page that has changed since is
//! refused with what changed, instead of acting on a state the agent never saw.
//!
//! A version is the digest of each top-level field of the page's data, written
//! `field=digest;field=digest` with 12 hex digits per digest (BLAKE3 of the canonical JSON).
//! It is short enough to travel in a `page_state` token, and comparing two names the fields
//! that changed ("`assignee` changed") without keeping the old data anywhere.

use std::collections::BTreeMap;

use serde_json::Value;
use switchboard_core::digest_json;

/// How many hex digits of each field's digest a version keeps.
const DIGITS: usize = 12;

/// The version of a page's data.
pub(crate) fn version_of(data: &Value) -> String {
    let fields: BTreeMap<&str, &Value> = match data {
        Value::Object(map) => map
            .iter()
            .map(|(name, value)| (name.as_str(), value))
            .collect(),
        other => BTreeMap::from([("", other)]),
    };
    fields
        .into_iter()
        .map(|(name, value)| format!("{name}={}", short_digest(value)))
        .collect::<Vec<_>>()
        .join(";")
}

fn short_digest(value: &Value) -> String {
    digest_json(value).map_or_else(
        |_| "-".repeat(DIGITS),
        |digest| digest.to_hex().chars().take(DIGITS).collect(),
    )
}

/// The fields whose digests differ between two versions (or that one of them lacks), sorted.
pub(crate) fn changed_fields(seen: &str, now: &str) -> Vec<String> {
    let parse = |version: &str| -> BTreeMap<String, String> {
        version
            .split(';')
            .filter(|part| !part.is_empty())
            .map(|part| match part.split_once('=') {
                Some((name, digest)) => (name.to_owned(), digest.to_owned()),
                None => (part.to_owned(), String::new()),
            })
            .collect()
    };
    let (seen, now) = (parse(seen), parse(now));
    let mut changed: Vec<String> = now
        .iter()
        .filter(|(name, digest)| seen.get(*name) != Some(digest))
        .map(|(name, _)| name.clone())
        .chain(seen.keys().filter(|name| !now.contains_key(*name)).cloned())
        .collect();
    changed.sort();
    changed.dedup();
    changed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_the_fields_that_changed() {
        let before = version_of(&json!({"id": "s1", "assignee": null}));
        let after = version_of(&json!({"id": "s1", "assignee": "sam"}));
        assert_ne!(before, after);
        assert_eq!(changed_fields(&before, &after), ["assignee"]);
        assert!(changed_fields(&after, &after).is_empty());
        assert_eq!(changed_fields("", &after), ["assignee", "id"]);
        assert_eq!(version_of(&json!([1, 2])).split('=').next(), Some(""));
    }
}
