//! Fresh ids for sessions and calls that bring none: `<prefix>-<uuid v7>`, minted without a
//! system call.
//!
//! The ids are version 7 UUIDs (RFC 9562): the first 48 bits are the Unix time in
//! milliseconds, so a persistent audit store's correlation index takes them at its end
//! instead of on a random page. `uuid::Uuid::now_v7` fills the remaining 74 bits from the OS
//! random source, one `getrandom` system call per id; an MCP call mints one correlation id, so
//! that call was a measurable share of the per-call cost (`docs/benchmarks.md`, MCP section).
//! Here they come from per-process state instead (RFC 9562 §6.2, method 1, "fixed-length
//! dedicated counter bits"):
//!
//! - 42 bits: a counter, started at a random value when the process mints its first id and
//!   incremented for every id, so ids are unique within the process and grow even within one
//!   millisecond;
//! - 32 bits: a random value drawn once per process, so two processes minting in the same
//!   millisecond still differ.
//!
//! The random source is read once per process (one `Uuid::new_v4`). The ids stay unguessable
//! enough for what they are, correlation handles in logs and audit records, not secrets: no
//! id here is ever an authorisation.

use std::{
    sync::{
        OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::{SystemTime, UNIX_EPOCH},
};

use uuid::Uuid;

/// How many bits of the id the counter takes (the rest of the 74 free bits are random).
const COUNTER_BITS: u32 = 42;

/// The per-process random parts: the counter's start and the fixed random tail.
struct ProcessSeed {
    counter: AtomicU64,
    tail: u32,
}

fn seed() -> &'static ProcessSeed {
    static SEED: OnceLock<ProcessSeed> = OnceLock::new();
    SEED.get_or_init(|| {
        let random = Uuid::new_v4().as_u128();
        ProcessSeed {
            // Start anywhere in the lower half of the counter's range, so it cannot wrap.
            counter: AtomicU64::new((random as u64) & ((1 << (COUNTER_BITS - 1)) - 1)),
            tail: (random >> 64) as u32,
        }
    })
}

/// A fresh version 7 UUID: now in milliseconds, then the process's counter, then its random
/// tail.
pub(crate) fn time_ordered_uuid() -> Uuid {
    let seed = seed();
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        });
    let count = seed.counter.fetch_add(1, Ordering::Relaxed) & ((1 << COUNTER_BITS) - 1);
    // `from_unix_timestamp_millis` keeps the low 12 bits of the first two bytes (`rand_a`)
    // and the low 62 bits of the last eight (`rand_b`): the counter's top 12 bits go to
    // `rand_a`, its low 30 bits and the 32-bit tail to `rand_b`.
    let rand_a = (count >> 30) as u16;
    let rand_b = ((count & ((1 << 30) - 1)) << 32) | u64::from(seed.tail);
    let mut bytes = [0; 10];
    bytes[..2].copy_from_slice(&rand_a.to_be_bytes());
    bytes[2..].copy_from_slice(&rand_b.to_be_bytes());
    uuid::Builder::from_unix_timestamp_millis(millis, &bytes).into_uuid()
}

/// A fresh `<prefix>-<uuid v7>` (see the module docs) as the id type `T`, formatted on the
/// stack: the only allocation is `T`'s own.
pub(crate) fn with_prefix<T: for<'a> From<&'a str>>(prefix: &str) -> T {
    /// Long enough for the prefixes used here (`mcp`, `mcp-session`) and a hyphenated UUID.
    const BUFFER: usize = 64;
    let uuid = time_ordered_uuid();
    let uuid_start = prefix.len() + 1;
    let end = uuid_start + uuid::fmt::Hyphenated::LENGTH;
    if end > BUFFER {
        return T::from(&format!("{prefix}-{uuid}"));
    }
    let mut buffer = [0u8; BUFFER];
    buffer[..prefix.len()].copy_from_slice(prefix.as_bytes());
    buffer[prefix.len()] = b'-';
    uuid.hyphenated().encode_lower(&mut buffer[uuid_start..end]);
    match std::str::from_utf8(&buffer[..end]) {
        Ok(id) => T::from(id),
        // Unreachable: a `&str` prefix, a `-` and hex digits are UTF-8.
        Err(_) => T::from(&format!("{prefix}-{uuid}")),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn ids_are_version_7_unique_and_grow_with_time_and_count() {
        let ids: Vec<Uuid> = (0..10_000).map(|_| time_ordered_uuid()).collect();
        for id in &ids {
            assert_eq!(id.get_version_num(), 7, "{id}");
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122, "{id}");
        }
        let distinct: HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "every id is unique");
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "ids grow");
    }

    #[test]
    fn the_timestamp_is_now() {
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis();
        let id = time_ordered_uuid();
        let (seconds, nanos) = id
            .get_timestamp()
            .expect("a v7 id has a timestamp")
            .to_unix();
        let millis = u128::from(seconds) * 1_000 + u128::from(nanos) / 1_000_000;
        assert!(
            millis >= before && millis <= before + 1_000,
            "{id}: {millis} vs {before}"
        );
    }

    #[test]
    fn prefixed_ids_read_prefix_dash_uuid() {
        let id: String = with_prefix("mcp-session");
        let uuid = id.strip_prefix("mcp-session-").expect("the prefix");
        assert_eq!(Uuid::parse_str(uuid).map(|id| id.get_version_num()), Ok(7));
        let long = "p".repeat(40);
        let id: String = with_prefix(&long);
        assert!(id.starts_with(&format!("{long}-")), "{id}");
        assert_eq!(id.len(), 40 + 1 + 36);
    }
}
