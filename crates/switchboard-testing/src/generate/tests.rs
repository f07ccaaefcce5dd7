//! Tests of the generator against jsonschema.
