//! Canonical JSON written straight from a tape's bytes.
//!
//! The audit writer digests every taped value, so this is its hot loop. Replaying a tape
//! through `Serialize` into [`crate::canonical`]'s writer gives the right bytes but costs more
//! than hashing them: every string is checked as UTF-8 again before `serde_json` escapes it,
//! every object allocates a scratch buffer, a member list and an owned copy of each key, and
//! writes each member twice (to scratch, then out in key order). Here an object's members are
//! found where they lie on the tape, sorted by key there, and written once, in order. Strings
//! are escaped from their bytes: they were `&str` when recorded, and escaping only touches ASCII
//! bytes, so what comes out is as valid UTF-8 as what went in, without a second check.
//!
//! The bytes are the ones the canonical writer gives for the recorded value (keys sorted,
//! members whose value is `null` left out, scalars as `serde_json` writes them); the tests
//! below and the property tests in `hash.rs` compare the two.

use super::{ARRAY, END, F64, FALSE, I64, I128, NULL, OBJECT, STR, TRUE, U64, U128};

/// A tape that does not hold what the recorder writes (a bug in this crate).
#[derive(Debug)]
pub(crate) struct Corrupt;

/// An object member found on a tape: where its key's text lies and where its value starts.
#[derive(Clone, Copy)]
pub(crate) struct Member {
    /// The key's first eight bytes, big-endian, zero-padded: most keys differ there, so most
    /// comparisons while sorting are one integer comparison.
    prefix: u64,
    key_start: usize,
    key_end: usize,
    value: usize,
}

/// Appends the canonical JSON of the value recorded in `tape` to `out`. `members` is scratch
/// room, reused across calls so that objects allocate nothing once it has grown.
pub(crate) fn write(
    tape: &[u8],
    out: &mut Vec<u8>,
    members: &mut Vec<Member>,
) -> Result<(), Corrupt> {
    members.clear();
    let end = value(tape, 0, out, members)?;
    if end == tape.len() {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// Writes the value that starts at `at`; returns where the next one starts.
fn value(
    tape: &[u8],
    at: usize,
    out: &mut Vec<u8>,
    members: &mut Vec<Member>,
) -> Result<usize, Corrupt> {
    let tag = *tape.get(at).ok_or(Corrupt)?;
    let at = at + 1;
    match tag {
        NULL => out.extend_from_slice(b"null"),
        FALSE => out.extend_from_slice(b"false"),
        TRUE => out.extend_from_slice(b"true"),
        I64 => integer(out, i64::from_le_bytes(fixed(tape, at)?)),
        U64 => integer(out, u64::from_le_bytes(fixed(tape, at)?)),
        I128 => integer(out, i128::from_le_bytes(fixed(tape, at)?)),
        U128 => integer(out, u128::from_le_bytes(fixed(tape, at)?)),
        // Rare in tool data, and `serde_json`'s float text (and `null` for NaN and the
        // infinities) is the canonical form, so floats take `serde_json`'s own writer.
        F64 => serde_json::to_writer(&mut *out, &f64::from_le_bytes(fixed(tape, at)?))
            .map_err(|_| Corrupt)?,
        STR => {
            let (start, end) = text(tape, at)?;
            escaped(out, &tape[start..end]);
            return Ok(end);
        }
        ARRAY => return array(tape, at, out, members),
        OBJECT => return object(tape, at, out, members),
        _ => return Err(Corrupt),
    }
    skip_scalar(tape, tag, at)
}

fn array(
    tape: &[u8],
    mut at: usize,
    out: &mut Vec<u8>,
    members: &mut Vec<Member>,
) -> Result<usize, Corrupt> {
    out.push(b'[');
    let mut first = true;
    while *tape.get(at).ok_or(Corrupt)? != END {
        if !first {
            out.push(b',');
        }
        first = false;
        at = value(tape, at, out, members)?;
    }
    out.push(b']');
    Ok(at + 1)
}

fn object(
    tape: &[u8],
    mut at: usize,
    out: &mut Vec<u8>,
    members: &mut Vec<Member>,
) -> Result<usize, Corrupt> {
    // This object's members go on top of the shared list; nested objects stack theirs above
    // and take them off again before this one goes on.
    let base = members.len();
    while *tape.get(at).ok_or(Corrupt)? != END {
        if tape[at] != STR {
            return Err(Corrupt);
        }
        let (key_start, key_end) = text(tape, at + 1)?;
        let value = key_end;
        at = skip(tape, value)?;
        if !writes_null(tape, value) {
            let mut prefix = [0; 8];
            let head = &tape[key_start..key_end.min(key_start + 8)];
            prefix[..head.len()].copy_from_slice(head);
            members.push(Member {
                prefix: u64::from_be_bytes(prefix),
                key_start,
                key_end,
                value,
            });
        }
    }
    let top = members.len();
    // A stable sort, like the canonical writer's: repeated keys keep their order.
    members[base..top].sort_by(|a, b| {
        a.prefix
            .cmp(&b.prefix)
            .then_with(|| tape[a.key_start..a.key_end].cmp(&tape[b.key_start..b.key_end]))
    });
    out.push(b'{');
    for index in base..top {
        let member = members[index];
        if index > base {
            out.push(b',');
        }
        escaped(out, &tape[member.key_start..member.key_end]);
        out.push(b':');
        value(tape, member.value, out, members)?;
    }
    members.truncate(base);
    out.push(b'}');
    Ok(at + 1)
}

/// Whether the value at `at` writes as `null`, which drops it from its object.
fn writes_null(tape: &[u8], at: usize) -> bool {
    match tape.get(at) {
        Some(&NULL) => true,
        Some(&F64) => fixed(tape, at + 1).is_ok_and(|bytes| !f64::from_le_bytes(bytes).is_finite()),
        _ => false,
    }
}

/// Where the value that starts at `at` ends.
fn skip(tape: &[u8], at: usize) -> Result<usize, Corrupt> {
    let tag = *tape.get(at).ok_or(Corrupt)?;
    let mut at = at + 1;
    match tag {
        STR => Ok(text(tape, at)?.1),
        ARRAY | OBJECT => {
            while *tape.get(at).ok_or(Corrupt)? != END {
                if tag == OBJECT {
                    if tape[at] != STR {
                        return Err(Corrupt);
                    }
                    at = text(tape, at + 1)?.1;
                }
                at = skip(tape, at)?;
            }
            Ok(at + 1)
        }
        _ => skip_scalar(tape, tag, at),
    }
}

/// Where a scalar whose tag has been read (its payload starts at `at`) ends.
fn skip_scalar(tape: &[u8], tag: u8, at: usize) -> Result<usize, Corrupt> {
    let len = match tag {
        NULL | FALSE | TRUE => 0,
        I64 | U64 | F64 => 8,
        I128 | U128 => 16,
        _ => return Err(Corrupt),
    };
    let end = at + len;
    if end <= tape.len() {
        Ok(end)
    } else {
        Err(Corrupt)
    }
}

/// The `N` bytes at `at`.
fn fixed<const N: usize>(tape: &[u8], at: usize) -> Result<[u8; N], Corrupt> {
    tape.get(at..at + N)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or(Corrupt)
}

/// A string's text, after its tag: a little-endian `u32` length, then the bytes.
fn text(tape: &[u8], at: usize) -> Result<(usize, usize), Corrupt> {
    let len = usize::try_from(u32::from_le_bytes(fixed(tape, at)?)).map_err(|_| Corrupt)?;
    let start = at + 4;
    let end = start.checked_add(len).ok_or(Corrupt)?;
    if end <= tape.len() {
        Ok((start, end))
    } else {
        Err(Corrupt)
    }
}

fn integer(out: &mut Vec<u8>, number: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
}

/// Writes `text` as a JSON string, escaped exactly as `serde_json` escapes it: `"` and `\`,
/// the short forms `\b \f \n \r \t`, and `\u00XX` (lowercase hex) for the other control
/// characters; everything else as it is.
fn escaped(out: &mut Vec<u8>, text: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut start = 0;
    while let Some(index) = next_to_escape(text, start) {
        out.extend_from_slice(&text[start..index]);
        let byte = text[index];
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
        }
        start = index + 1;
    }
    out.extend_from_slice(&text[start..]);
    out.push(b'"');
}

/// Where the first byte at or after `from` that JSON escapes is. Most strings have none, so
/// the text is checked eight bytes at a time (the last word overlapping the one before it),
/// and searched byte by byte only where a word has one.
fn next_to_escape(text: &[u8], from: usize) -> Option<usize> {
    let rest = &text[from..];
    let search = |start: usize| {
        rest[start..]
            .iter()
            .position(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\')
            .map(|index| from + start + index)
    };
    let word_at = |at: usize| {
        let mut word = [0; 8];
        word.copy_from_slice(&rest[at..at + 8]);
        u64::from_le_bytes(word)
    };
    if rest.len() < 8 {
        return search(0);
    }
    let mut at = 0;
    while at + 8 <= rest.len() {
        if any_to_escape(word_at(at)) {
            return search(at);
        }
        at += 8;
    }
    let last = rest.len() - 8;
    if at < rest.len() && any_to_escape(word_at(last)) {
        return search(last);
    }
    None
}

/// Whether any of the eight bytes in `word` is below 0x20, `"` or `\` (the classic bit
/// tricks: a byte below `n` borrows into its top bit when `n` is subtracted from every byte,
/// and a byte equal to `c` is a zero byte of `word ^ c`).
fn any_to_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOPS: u64 = 0x8080_8080_8080_8080;
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & TOPS;
    below(word, 0x20)
        | below(word ^ (ONES * u64::from(b'"')), 1)
        | below(word ^ (ONES * u64::from(b'\\')), 1)
        != 0
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::json;

    use super::*;
    use crate::Tape;

    /// The canonical JSON of `value`, through its tape and through the canonical writer.
    fn both_ways<T: Serialize>(value: &T) -> (String, String) {
        let tape = Tape::record(value).expect("taped");
        let mut from_tape = Vec::new();
        write(&tape.0, &mut from_tape, &mut Vec::new()).expect("a recorded tape is sound");
        let mut direct = Vec::new();
        crate::canonical::write_canonical(value, &mut direct).expect("canonical");
        (
            String::from_utf8(from_tape).expect("utf-8"),
            String::from_utf8(direct).expect("utf-8"),
        )
    }

    #[test]
    fn every_ascii_and_some_wider_characters_escape_as_serde_json_escapes_them() {
        let mut text: String = (0u8..0x80).map(char::from).collect();
        text.push_str("é \u{2028} \u{1F600} \u{7f}");
        let (from_tape, direct) = both_ways(&text);
        assert_eq!(from_tape, direct);
        assert_eq!(from_tape, serde_json::to_string(&text).expect("json"));
    }

    #[test]
    fn objects_are_sorted_and_lose_their_null_members_at_every_depth() {
        #[derive(Serialize)]
        struct Inner {
            zed: Option<u8>,
            b: f64,
            a: f64,
        }
        #[derive(Serialize)]
        struct Outer {
            y: Vec<Inner>,
            x: i128,
            w: Option<Inner>,
            v: [Option<u8>; 2],
        }
        let value = Outer {
            y: vec![
                Inner {
                    zed: Some(1),
                    b: f64::NAN,
                    a: 0.5,
                },
                Inner {
                    zed: None,
                    b: -1e300,
                    a: f64::INFINITY,
                },
            ],
            x: i128::MIN,
            w: None,
            v: [None, Some(u8::MAX)],
        };
        let (from_tape, direct) = both_ways(&value);
        assert_eq!(from_tape, direct);
        assert_eq!(
            from_tape,
            r#"{"v":[null,255],"x":-170141183460469231731687303715884105728,"y":[{"a":0.5,"zed":1},{"b":-1e+300}]}"#
        );
        let map = json!({"b": {"d": [], "c": {}}, "a": "", "": null});
        let (from_tape, direct) = both_ways(&map);
        assert_eq!(from_tape, direct);
    }

    /// A map written in the order given (repeated keys included), unlike a `BTreeMap` or a
    /// `serde_json::Map`, which arrive sorted.
    struct InOrder(Vec<(String, Option<i32>)>);

    impl Serialize for InOrder {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_map(self.0.iter().map(|(key, value)| (key, value)))
        }
    }

    #[test]
    fn keys_sharing_their_first_eight_bytes_or_ending_early_sort_by_their_whole_text() {
        let keys = [
            "abcdefghZ",
            "abcdefghA",
            "a\0b",
            "a",
            "a\0",
            "",
            "é",
            "abcdefgh",
            "b",
            "a",
        ];
        let value = InOrder(
            keys.iter()
                .zip(0..)
                .map(|(key, n)| ((*key).to_owned(), Some(n)))
                .collect(),
        );
        let (from_tape, direct) = both_ways(&value);
        assert_eq!(from_tape, direct);
        assert_eq!(
            from_tape,
            r#"{"":5,"a":3,"a":9,"a\u0000":4,"a\u0000b":2,"abcdefgh":7,"abcdefghA":1,"abcdefghZ":0,"b":8,"é":6}"#
        );
    }

    proptest::proptest! {
        /// Maps in any key order, with nulls and repeated keys, write as the canonical writer
        /// writes them.
        #[test]
        fn maps_in_any_order_write_as_the_canonical_writer_writes_them(
            pairs in proptest::collection::vec(
                ("[a-c\\x00-\\x1f\"\\\\é]{0,10}", proptest::option::of(proptest::num::i32::ANY)),
                0..12,
            )
        ) {
            let (from_tape, direct) = both_ways(&InOrder(pairs));
            proptest::prop_assert_eq!(from_tape, direct);
        }
    }

    #[test]
    fn a_corrupt_tape_is_an_error_not_a_panic() {
        for bytes in [
            &[][..],
            &[STR, 9],
            &[STR, 9, 0, 0, 0, b'a'],
            &[ARRAY, NULL],
            &[OBJECT, NULL, END],
            &[OBJECT, STR, 1, 0, 0, 0, b'k'],
            &[OBJECT, STR, 1, 0, 0, 0, b'k', ARRAY, END],
            &[I64, 1, 2],
            &[99],
            &[NULL, NULL],
            &[STR, 0xff, 0xff, 0xff, 0xff],
        ] {
            let result = write(bytes, &mut Vec::new(), &mut Vec::new());
            assert!(result.is_err(), "{bytes:?}");
        }
    }
}
