//! The roster's records: shifts, the members who can work them, and the notices posted for
//! them.
//!
//! A [`Shift`] is also a tool output, so it derives `Serialize` and `JsonSchema` and every field
//! is documented for the schema. It always carries the `org_id` it belongs to, so a caller can
//! see which organisation any shift in an answer came from.

use jiff::{
    Timestamp,
    civil::{Date, Time},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One shift of an organisation's roster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Shift {
    /// The shift's id, unique across organisations (for example `acme-2026-11-23-am`).
    pub id: String,
    /// The organisation the shift belongs to.
    pub org_id: String,
    /// The day of the shift (`YYYY-MM-DD`).
    pub date: Date,
    /// When the shift starts, local time (`HH:MM:SS`).
    pub start: Time,
    /// When the shift ends, local time, on the same day (`HH:MM:SS`).
    pub end: Time,
    /// The job worked on the shift (for example `front desk`).
    pub position: String,
    /// The user id of the member working the shift; absent while the shift is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
}

/// Someone on an organisation's roster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The member's user id, the same id the call context carries.
    pub user_id: String,
    /// The member's display name.
    pub name: String,
    /// The member's role (`admin`, `manager`, `staff`).
    pub role: String,
}

/// A message posted to an organisation's notice board, for every member to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Notice {
    /// The notice's id, unique across organisations (for example `acme-notice-1`).
    pub id: String,
    /// The organisation whose board the notice is on.
    pub org_id: String,
    /// The user id of the member who posted it.
    pub author: String,
    /// The notice's text, at most 2000 characters.
    pub text: String,
    /// When it was posted (RFC 3339, UTC).
    pub posted_at: Timestamp,
}
