//! The fixed media the content tools return: the same tiny files the official SDKs' reference
//! conformance servers use, base64-encoded as MCP content blocks carry them.

/// A 1×1 red PNG.
pub(crate) const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";

/// A WAV file with a header and no samples.
pub(crate) const EMPTY_WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";
