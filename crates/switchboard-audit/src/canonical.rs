//! Canonical JSON straight from any `Serialize`, without building a `serde_json::Value`.
//!
//! Canonical here means what [`digest_json`](crate::digest_json) hashes: object keys in sorted
//! order and object members whose value is `null` left out; arrays and scalars as `serde_json`
//! writes them. Going through a `Value` allocates a string per key and a node per field; this
//! serializer writes each object's members into a scratch buffer, sorts them by key and copies
//! them out, which is what makes auditing a typed call cheap. Tuple and struct enum variants,
//! and maps whose keys are not strings or integers, are refused here and take the `Value`
//! route instead. A property test checks that both routes produce the same bytes.

use std::{borrow::Cow, fmt, ops::Range};

use serde::{
    Serialize,
    ser::{self, Impossible},
};

/// Why a value has no canonical JSON form (for example, a map with non-string keys).
#[derive(Debug)]
pub(crate) struct CanonicalError(String);

impl fmt::Display for CanonicalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CanonicalError {}

impl ser::Error for CanonicalError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        CanonicalError(message.to_string())
    }
}

/// Appends the canonical JSON of `value` to `out`.
pub(crate) fn write_canonical<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    value.serialize(Canonical { out })
}

/// Writes a scalar exactly as `serde_json` does.
fn scalar<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), CanonicalError> {
    serde_json::to_writer(out, value).map_err(|error| CanonicalError(error.to_string()))
}

struct Canonical<'a> {
    out: &'a mut Vec<u8>,
}

/// Scalars that `serde_json` writes the same way whether or not they sit in a `Value`.
macro_rules! scalars {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, v: $ty) -> Result<(), CanonicalError> {
            scalar(self.out, &v)
        })*
    };
}

impl<'a> ser::Serializer for Canonical<'a> {
    type Ok = ();
    type Error = CanonicalError;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Impossible<(), CanonicalError>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Impossible<(), CanonicalError>;

    fn serialize_bool(self, v: bool) -> Result<(), CanonicalError> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    scalars!(
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_u128: u128, serialize_f64: f64, serialize_char: char
    );

    fn serialize_f32(self, v: f32) -> Result<(), CanonicalError> {
        // A `Value` widens an `f32` to `f64`; do the same so both routes agree.
        scalar(self.out, &f64::from(v))
    }

    fn serialize_str(self, v: &str) -> Result<(), CanonicalError> {
        scalar(self.out, v)
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), CanonicalError> {
        scalar(self.out, v)
    }

    fn serialize_none(self) -> Result<(), CanonicalError> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CanonicalError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), CanonicalError> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), CanonicalError> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), CanonicalError> {
        scalar(self.out, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        // `{"variant": value}`, with the member left out if the value is null, like a `Value`.
        let mut object = Object::new(self.out);
        ser::SerializeStruct::serialize_field(&mut object, variant, value)?;
        ser::SerializeStruct::end(object)
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'a>, CanonicalError> {
        self.out.push(b'[');
        Ok(Seq {
            out: self.out,
            first: true,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, CanonicalError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Seq<'a>, CanonicalError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, CanonicalError> {
        Err(unsupported_variant(variant))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Object<'a>, CanonicalError> {
        Ok(Object::new(self.out))
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Object<'a>, CanonicalError> {
        Ok(Object::new(self.out))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, CanonicalError> {
        Err(unsupported_variant(variant))
    }
}

/// Tuple and struct enum variants are rare in tool inputs and outputs; they are left to the
/// `Value` route (same bytes, more allocation) rather than given a writer of their own.
fn unsupported_variant(variant: &str) -> CanonicalError {
    CanonicalError(format!(
        "enum variant `{variant}` is hashed through a JSON value"
    ))
}

struct Seq<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        value.serialize(Canonical {
            out: &mut *self.out,
        })
    }

    fn close(self) -> Result<(), CanonicalError> {
        self.out.push(b']');
        Ok(())
    }
}

impl ser::SerializeSeq for Seq<'_> {
    type Ok = ();
    type Error = CanonicalError;

    fn serialize_element<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), CanonicalError> {
        self.element(value)
    }

    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

impl ser::SerializeTuple for Seq<'_> {
    type Ok = ();
    type Error = CanonicalError;

    fn serialize_element<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), CanonicalError> {
        self.element(value)
    }

    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Seq<'_> {
    type Ok = ();
    type Error = CanonicalError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
        self.element(value)
    }

    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

/// An object being written: members go to `scratch` in arrival order, then out sorted by key.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    scratch: Vec<u8>,
    members: Vec<(Cow<'static, str>, Range<usize>)>,
    pending_key: Option<String>,
}

impl<'a> Object<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        // Buffers are sized on the first member (an empty object allocates nothing).
        Object {
            out,
            scratch: Vec::new(),
            members: Vec::new(),
            pending_key: None,
        }
    }

    fn member<T: Serialize + ?Sized>(
        &mut self,
        key: Cow<'static, str>,
        value: &T,
    ) -> Result<(), CanonicalError> {
        if self.members.capacity() == 0 {
            // Sized for a typical tool input or output: most objects allocate once each.
            self.scratch.reserve(256);
            self.members.reserve(8);
        }
        let start = self.scratch.len();
        value.serialize(Canonical {
            out: &mut self.scratch,
        })?;
        if &self.scratch[start..] == b"null" {
            self.scratch.truncate(start);
        } else {
            self.members.push((key, start..self.scratch.len()));
        }
        Ok(())
    }

    fn close(mut self) -> Result<(), CanonicalError> {
        self.members.sort_by(|a, b| a.0.cmp(&b.0));
        self.out.push(b'{');
        for (index, (key, range)) in self.members.iter().enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            scalar(self.out, key.as_ref())?;
            self.out.push(b':');
            self.out.extend_from_slice(&self.scratch[range.clone()]);
        }
        self.out.push(b'}');
        Ok(())
    }
}

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = CanonicalError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        self.member(Cow::Borrowed(key), value)
    }

    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = CanonicalError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CanonicalError> {
        self.pending_key = Some(key.serialize(KeyText(Owned))?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
        let key = self
            .pending_key
            .take()
            .ok_or_else(|| CanonicalError("a map value came without its key".to_owned()))?;
        self.member(Cow::Owned(key), value)
    }

    fn end(self) -> Result<(), CanonicalError> {
        self.close()
    }
}

/// Turns a map key into its JSON object key, as `serde_json` does: strings as they are,
/// integers and chars as their text; anything else has no JSON form. The key's text goes to a
/// [`KeySink`]: an owned `String` here, the audit tape's arena in [`crate::tape`].
pub(crate) struct KeyText<S>(pub(crate) S);

/// Where [`KeyText`] puts a key's text.
pub(crate) trait KeySink {
    /// What taking a key gives.
    type Ok;
    /// The error for a key with no JSON form.
    type Error: ser::Error;
    /// Takes the key's text.
    fn text(self, key: &str) -> Result<Self::Ok, Self::Error>;
}

/// Keys as owned strings (what [`Object`] sorts).
pub(crate) struct Owned;

impl KeySink for Owned {
    type Ok = String;
    type Error = CanonicalError;

    fn text(self, key: &str) -> Result<String, CanonicalError> {
        Ok(key.to_owned())
    }
}

fn key_error<E: ser::Error>() -> E {
    E::custom("a map key must be a string, a char or an integer")
}

macro_rules! integer_keys {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
            self.0.text(&v.to_string())
        })*
    };
}

impl<S: KeySink> ser::Serializer for KeyText<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Impossible<S::Ok, S::Error>;
    type SerializeTuple = Impossible<S::Ok, S::Error>;
    type SerializeTupleStruct = Impossible<S::Ok, S::Error>;
    type SerializeTupleVariant = Impossible<S::Ok, S::Error>;
    type SerializeMap = Impossible<S::Ok, S::Error>;
    type SerializeStruct = Impossible<S::Ok, S::Error>;
    type SerializeStructVariant = Impossible<S::Ok, S::Error>;

    integer_keys!(
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_u128: u128, serialize_char: char
    );

    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        self.0.text(v)
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.0.text(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        value.serialize(self)
    }

    fn serialize_bool(self, _v: bool) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_f32(self, _v: f32) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_f64(self, _v: f64) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<S::Ok, S::Error> {
        Err(key_error())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        Err(key_error())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, S::Error> {
        Err(key_error())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        Err(key_error())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        Err(key_error())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        Err(key_error())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        Err(key_error())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        Err(key_error())
    }
}
