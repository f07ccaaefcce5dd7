//! A typed value's JSON shape, recorded as bytes on the caller's thread and written out as
//! canonical JSON on the audit writer's thread.
//!
//! The writer digests a call's output after the call has returned it to its caller, so the
//! record needs something of its own to digest. A clone of the output costs an allocation per
//! string in it, and each of those is freed on the writer's thread, which glibc's allocator
//! handles slowly; hashing on the caller costs more still. A [`Tape`] is a flat copy of what
//! the value's `Serialize` impl emits, in JSON's data model (null, booleans, numbers, strings,
//! arrays, objects; struct fields are object members keyed by their `&'static str` names),
//! appended to a per-thread arena ([`bytes::BytesMut`]) and handed over as a shared slice of
//! it: no allocation per call, one reference count per tape, and an arena block reused once the
//! writer has digested every tape in it.
//!
//! The writer turns a tape into canonical JSON straight from its bytes ([`canonical`]). A tape
//! also implements [`Serialize`], replaying the same calls a `serde_json::Value` of the value
//! would (to get the value back, and for tests); both give the digest
//! [`digest_of`](crate::digest_of) gives the value itself (property tests check it).
//!
//! What [`crate::canonical`] does not take straight from `Serialize` (tuple and struct enum
//! variants, map keys that are not strings, chars or integers) is not taped either:
//! [`Tape::record`] returns `None` and the caller keeps the value instead.

use std::{
    cell::{Cell, RefCell},
    collections::VecDeque,
};

use bytes::{Bytes, BytesMut};
use serde::{
    Serialize,
    ser::{self, Impossible, SerializeMap, SerializeSeq},
};

use crate::canonical::{KeySink, KeyText};

mod canonical;

/// A value's JSON shape, recorded by [`Tape::record`].
#[derive(Clone, PartialEq, Eq)]
pub struct Tape(Bytes);

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tape({} bytes)", self.0.len())
    }
}

/// The size of the arena's blocks: one block serves hundreds of calls.
const BLOCK: usize = 32 * 1024;
/// How many used blocks a thread keeps to reuse once the writer has digested their tapes
/// (the writer takes a batch at least every 16 ms, every millisecond when busy). With the
/// current block, a thread holds at most 160 KiB of tapes' room when idle.
const RETIRED_MAX: usize = 4;

thread_local! {
    static ARENA: RefCell<Arena> = RefCell::new(Arena::default());
}

/// A thread's tapes: written into `scratch` (plain `Vec` writes are the cheapest), then cut
/// from the current block in one copy. A used block is kept and reused once every tape cut
/// from it is gone (the writer digests tapes within milliseconds), so a steady stream of
/// calls neither allocates nor faults in fresh pages.
#[derive(Default)]
struct Arena {
    scratch: Vec<u8>,
    current: BytesMut,
    /// Whether the current block is larger than [`BLOCK`] (made for one huge tape).
    oversized: bool,
    retired: VecDeque<BytesMut>,
    /// How many blocks this arena has allocated (reuse is what keeps it low).
    allocated: usize,
}

impl Arena {
    fn record<T: Serialize + ?Sized>(&mut self, value: &T) -> Option<Tape> {
        self.scratch.clear();
        let recorded = value.serialize(Recorder {
            out: &mut self.scratch,
        });
        let tape = recorded.ok().map(|()| self.cut());
        if self.scratch.capacity() > BLOCK {
            // Keep the scratch buffer from staying huge after one huge value.
            self.scratch = Vec::new();
        }
        tape
    }

    fn cut(&mut self) -> Tape {
        let len = self.scratch.len();
        if self.current.capacity() < len {
            self.next_block(len);
        }
        self.current.extend_from_slice(&self.scratch);
        Tape(self.current.split().freeze())
    }

    fn next_block(&mut self, len: usize) {
        let wanted = len.max(BLOCK);
        let reusable = self
            .retired
            .iter_mut()
            .position(|block| block.try_reclaim(wanted));
        let block = match reusable.and_then(|index| self.retired.remove(index)) {
            Some(block) => block,
            None => {
                self.allocated += 1;
                BytesMut::with_capacity(wanted)
            }
        };
        let used = std::mem::replace(&mut self.current, block);
        // A huge block is not kept: it would hold its memory for a rare value.
        if !self.oversized {
            self.retired.push_back(used);
            if self.retired.len() > RETIRED_MAX {
                self.retired.pop_front();
            }
        }
        self.oversized = wanted > BLOCK;
    }
}

impl Tape {
    /// Records `value`'s JSON shape, or `None` if it has a shape the tape does not take (see
    /// the module docs) or its `Serialize` impl fails. A panicking impl panics here.
    pub fn record<T: Serialize + ?Sized>(value: &T) -> Option<Tape> {
        ARENA.with(|arena| match arena.try_borrow_mut() {
            Ok(mut arena) => arena.record(value),
            // Only a `Serialize` impl that itself records a tape gets here.
            Err(_) => Arena::default().record(value),
        })
    }

    /// Appends the canonical JSON of the recorded value to `out`: the bytes
    /// [`digest_of`](crate::digest_of) hashes for the value itself, written straight from the
    /// tape (see [`canonical`]).
    pub(crate) fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), canonical::Corrupt> {
        thread_local! {
            static MEMBERS: RefCell<Vec<canonical::Member>> = const { RefCell::new(Vec::new()) };
        }
        MEMBERS.with(|members| match members.try_borrow_mut() {
            Ok(mut members) => canonical::write(&self.0, out, &mut members),
            // Writing a tape never writes another, so this is unreachable; stay correct anyway.
            Err(_) => canonical::write(&self.0, out, &mut Vec::new()),
        })
    }

    /// The tape's size in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the tape is empty (never, for a recorded value).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

// What each value on a tape starts with.
const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const I64: u8 = 3;
const U64: u8 = 4;
const F64: u8 = 5;
const STR: u8 = 6;
const I128: u8 = 7;
const U128: u8 = 8;
const ARRAY: u8 = 9;
const OBJECT: u8 = 10;
/// Closes an array or an object.
const END: u8 = 11;

/// Why a value was not taped (the caller keeps the value instead; the reason is not shown).
#[derive(Debug)]
struct Untaped;

impl std::fmt::Display for Untaped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("this value is digested from a copy, not a tape")
    }
}

impl std::error::Error for Untaped {}

impl ser::Error for Untaped {
    fn custom<T: std::fmt::Display>(_message: T) -> Self {
        Untaped
    }
}

fn put_str(out: &mut Vec<u8>, text: &str) -> Result<(), Untaped> {
    let len = u32::try_from(text.len()).map_err(|_| Untaped)?;
    let [a, b, c, d] = len.to_le_bytes();
    out.extend_from_slice(&[STR, a, b, c, d]);
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

/// Writes one value onto the tape.
struct Recorder<'a> {
    out: &'a mut Vec<u8>,
}

macro_rules! record_as {
    ($($method:ident: $ty:ty => $tag:ident, $wide:ty);* $(;)?) => {
        $(fn $method(self, v: $ty) -> Result<(), Untaped> {
            self.out.push($tag);
            self.out.extend_from_slice(&<$wide>::from(v).to_le_bytes());
            Ok(())
        })*
    };
}

impl<'a> ser::Serializer for Recorder<'a> {
    type Ok = ();
    type Error = Untaped;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Impossible<(), Untaped>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Impossible<(), Untaped>;

    fn serialize_bool(self, v: bool) -> Result<(), Untaped> {
        self.out.push(if v { TRUE } else { FALSE });
        Ok(())
    }

    record_as!(
        serialize_i8: i8 => I64, i64;
        serialize_i16: i16 => I64, i64;
        serialize_i32: i32 => I64, i64;
        serialize_i64: i64 => I64, i64;
        serialize_i128: i128 => I128, i128;
        serialize_u8: u8 => U64, u64;
        serialize_u16: u16 => U64, u64;
        serialize_u32: u32 => U64, u64;
        serialize_u64: u64 => U64, u64;
        serialize_u128: u128 => U128, u128;
        // A `Value` widens an `f32` to `f64`, and so does the canonical writer.
        serialize_f32: f32 => F64, f64;
        serialize_f64: f64 => F64, f64;
    );

    fn serialize_char(self, v: char) -> Result<(), Untaped> {
        put_str(self.out, v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<(), Untaped> {
        put_str(self.out, v)
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Untaped> {
        // As `serde_json` writes bytes: an array of numbers.
        self.out.push(ARRAY);
        for byte in v {
            self.out.push(U64);
            self.out.extend_from_slice(&u64::from(*byte).to_le_bytes());
        }
        self.out.push(END);
        Ok(())
    }

    fn serialize_none(self) -> Result<(), Untaped> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Untaped> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Untaped> {
        self.out.push(NULL);
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Untaped> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Untaped> {
        put_str(self.out, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Untaped> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Untaped> {
        // `{"variant": value}`, as a `Value` has it.
        self.out.push(OBJECT);
        put_str(self.out, variant)?;
        value.serialize(Recorder {
            out: &mut *self.out,
        })?;
        self.out.push(END);
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Untaped> {
        self.out.push(ARRAY);
        Ok(Compound { out: self.out })
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, Untaped> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Untaped> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Untaped> {
        Err(Untaped)
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Untaped> {
        self.out.push(OBJECT);
        Ok(Compound { out: self.out })
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a>, Untaped> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Untaped> {
        Err(Untaped)
    }
}

/// An array or an object on the tape, closed by `end`.
struct Compound<'a> {
    out: &'a mut Vec<u8>,
}

impl Compound<'_> {
    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Untaped> {
        value.serialize(Recorder {
            out: &mut *self.out,
        })
    }

    fn close(self) -> Result<(), Untaped> {
        self.out.push(END);
        Ok(())
    }
}

macro_rules! sequence_of_values {
    ($($trait:ident :: $method:ident),*) => {
        $(impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Untaped;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Untaped> {
                self.value(value)
            }

            fn end(self) -> Result<(), Untaped> {
                self.close()
            }
        })*
    };
}

sequence_of_values!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Untaped;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Untaped> {
        // A key takes the canonical writer's rules (strings, chars, integers, as text).
        key.serialize(KeyText(KeyOnTape(&mut *self.out)))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Untaped> {
        self.value(value)
    }

    fn end(self) -> Result<(), Untaped> {
        self.close()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Untaped;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Untaped> {
        put_str(self.out, key)?;
        self.value(value)
    }

    fn end(self) -> Result<(), Untaped> {
        self.close()
    }
}

/// Puts a map key's text on the tape.
struct KeyOnTape<'a>(&'a mut Vec<u8>);

impl KeySink for KeyOnTape<'_> {
    type Ok = ();
    type Error = Untaped;

    fn text(self, key: &str) -> Result<(), Untaped> {
        put_str(self.0, key)
    }
}

/// A tape being replayed: the next value starts at `at`.
struct Reader<'a> {
    bytes: &'a [u8],
    at: Cell<usize>,
}

impl<'a> Reader<'a> {
    fn take<const N: usize>(&self) -> Option<[u8; N]> {
        let at = self.at.get();
        let taken = self.bytes.get(at..at.checked_add(N)?)?.try_into().ok()?;
        self.at.set(at + N);
        Some(taken)
    }

    fn tag(&self) -> Option<u8> {
        self.take::<1>().map(|[tag]| tag)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at.get()).copied()
    }

    fn text(&self) -> Option<&'a str> {
        let len = usize::try_from(u32::from_le_bytes(self.take::<4>()?)).ok()?;
        let at = self.at.get();
        let text = std::str::from_utf8(self.bytes.get(at..at.checked_add(len)?)?).ok()?;
        self.at.set(at + len);
        Some(text)
    }
}

impl Serialize for Tape {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let reader = Reader {
            bytes: &self.0,
            at: Cell::new(0),
        };
        let replayed = Next(&reader).serialize(serializer)?;
        if reader.at.get() != reader.bytes.len() {
            return Err(corrupt());
        }
        Ok(replayed)
    }
}

fn corrupt<E: ser::Error>() -> E {
    E::custom("an audit tape is corrupt (a bug in switchboard-audit)")
}

/// The next value of a tape, replayed.
struct Next<'r, 'a>(&'r Reader<'a>);

impl Serialize for Next<'_, '_> {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let reader = self.0;
        match reader.tag().ok_or_else(corrupt)? {
            NULL => serializer.serialize_unit(),
            FALSE => serializer.serialize_bool(false),
            TRUE => serializer.serialize_bool(true),
            I64 => serializer.serialize_i64(i64::from_le_bytes(reader.take().ok_or_else(corrupt)?)),
            U64 => serializer.serialize_u64(u64::from_le_bytes(reader.take().ok_or_else(corrupt)?)),
            F64 => serializer.serialize_f64(f64::from_le_bytes(reader.take().ok_or_else(corrupt)?)),
            I128 => {
                serializer.serialize_i128(i128::from_le_bytes(reader.take().ok_or_else(corrupt)?))
            }
            U128 => {
                serializer.serialize_u128(u128::from_le_bytes(reader.take().ok_or_else(corrupt)?))
            }
            STR => serializer.serialize_str(reader.text().ok_or_else(corrupt)?),
            ARRAY => {
                let mut array = serializer.serialize_seq(None)?;
                while reader.peek().ok_or_else(corrupt)? != END {
                    array.serialize_element(&Next(reader))?;
                }
                reader.tag();
                array.end()
            }
            OBJECT => {
                let mut object = serializer.serialize_map(None)?;
                while reader.peek().ok_or_else(corrupt)? != END {
                    if reader.tag() != Some(STR) {
                        return Err(corrupt());
                    }
                    object.serialize_key(reader.text().ok_or_else(corrupt)?)?;
                    object.serialize_value(&Next(reader))?;
                }
                reader.tag();
                object.end()
            }
            _ => Err(corrupt()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::hash::{digest_json, digest_of};

    #[derive(Serialize)]
    struct Shift {
        id: u32,
        who: Option<&'static str>,
        hours: f32,
        kind: Kind,
        tags: Vec<char>,
        wrapped: Wrapped,
    }

    #[derive(Serialize)]
    enum Kind {
        Day,
        #[allow(dead_code, reason = "only the other variants are recorded")]
        Night,
        Split(u8),
    }

    #[derive(Serialize)]
    struct Wrapped(i128);

    fn replayed(value: &impl Serialize) -> Value {
        let tape = Tape::record(value).expect("taped");
        serde_json::to_value(&tape).expect("a tape replays")
    }

    #[test]
    fn a_tape_replays_as_the_values_json() {
        let shift = Shift {
            id: 7,
            who: None,
            hours: 7.5,
            kind: Kind::Split(2),
            tags: vec!['a', 'é'],
            wrapped: Wrapped(-1),
        };
        assert_eq!(
            replayed(&shift),
            serde_json::to_value(&shift).expect("json")
        );
        let day = [Kind::Day];
        assert_eq!(replayed(&day), json!(["Day"]));
        let keyed: BTreeMap<u16, &[u8]> = [(3, &b"hi"[..])].into();
        assert_eq!(replayed(&keyed), json!({"3": [104, 105]}));
        let value = json!({"a": [1, -2, 3.5, null, true, "x"], "b": {}});
        assert_eq!(replayed(&value), value);
    }

    #[test]
    fn a_tape_digests_as_its_value() {
        let value = json!({"to": "2026-11-29", "from": "2026-11-23", "note": null});
        let tape = Tape::record(&value).expect("taped");
        assert_eq!(digest_of(&tape), digest_json(&value));
    }

    #[test]
    fn shapes_the_canonical_writer_refuses_are_not_taped() {
        #[derive(Serialize)]
        enum Odd {
            Pair(u8, u8),
            Named { a: u8 },
        }
        assert!(Tape::record(&Odd::Pair(1, 2)).is_none());
        assert!(Tape::record(&Odd::Named { a: 1 }).is_none());
        let keyed: BTreeMap<bool, u8> = [(true, 1)].into();
        assert!(Tape::record(&keyed).is_none());
        // A failed recording leaves nothing behind for the next one.
        assert_eq!(replayed(&"next"), json!("next"));
    }

    #[test]
    fn tapes_share_the_arena_and_outlive_it() {
        let tapes: Vec<Tape> = (0..10_000).filter_map(|n| Tape::record(&n)).collect();
        for (n, tape) in tapes.iter().enumerate() {
            assert_eq!(serde_json::to_value(tape).expect("replays"), json!(n));
        }
    }

    #[test]
    fn blocks_are_reused_once_their_tapes_are_gone_and_huge_ones_are_not_kept() {
        let mut arena = Arena::default();
        let line = "x".repeat(1_000);
        for _ in 0..100 {
            // ~3 MB of tapes, each dropped (digested) right away: the same blocks serve them.
            let tape = arena.record(&line).expect("taped");
            assert_eq!(tape.len(), 1_005);
        }
        assert!(arena.allocated <= 2, "{} blocks", arena.allocated);
        let kept: Vec<Tape> = (0..100).filter_map(|_| arena.record(&line)).collect();
        assert!(arena.allocated >= 4, "live tapes keep their blocks");
        assert!(arena.retired.len() <= RETIRED_MAX);
        drop(kept);
        let huge = "y".repeat(BLOCK * 4);
        assert!(arena.record(&huge).is_some());
        assert!(arena.record(&line).is_some());
        assert!(
            arena.record(&huge[..BLOCK * 3]).is_some(),
            "a second huge tape needs its own block"
        );
        assert!(arena.retired.iter().all(|block| block.capacity() <= BLOCK));
        assert!(
            arena.scratch.capacity() <= BLOCK,
            "the scratch buffer shrinks back"
        );
    }

    #[test]
    fn a_corrupt_tape_is_an_error_not_a_panic() {
        for bytes in [
            &[STR, 9][..],
            &[ARRAY, NULL],
            &[OBJECT, NULL, END],
            &[99],
            &[NULL, NULL],
        ] {
            let tape = Tape(Bytes::copy_from_slice(bytes));
            assert!(serde_json::to_value(&tape).is_err(), "{bytes:?}");
        }
    }
}
