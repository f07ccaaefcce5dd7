//! Reviewing a server's changes before accepting them, outside a running Switchboard: what
//! `switchboard mounts accept ID` does.
//!
//! [`review`] starts the one server, lists what it offers, ends it, and compares that with the
//! server's pins; [`PinReview::diff`] shows the difference as a unified diff of the pretty JSON
//! of each changed tool (and of the instructions), and [`PinReview::accept`] pins exactly what
//! was shown. A running `switchboard serve` notices the rewritten lock file within one ping
//! interval of the server (`[server.restart] ping_every`) and admits the server's tools again.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
};

use serde_json::Value;
use similar::TextDiff;

use crate::{
    accept::AcceptError,
    config::MountsConfig,
    connection::connect,
    gate::Listing,
    pins::{LockError, LockFile, PinChanges, ServerPins, lock_path},
    progress::CallRoutes,
};

/// What one server offers now, beside what was accepted of it.
#[derive(Debug, Clone)]
pub struct PinReview {
    server: String,
    lock: PathBuf,
    pinned: Option<ServerPins>,
    current: ServerPins,
    changes: PinChanges,
}

/// Starts server `id` of `config`, lists what it offers, and compares it with its pins.
pub async fn review(config: &MountsConfig, id: &str) -> Result<PinReview, AcceptError> {
    let server = config
        .servers
        .iter()
        .find(|server| server.id == id)
        .ok_or_else(|| AcceptError::UnknownServer {
            id: id.to_owned(),
            known: config
                .servers
                .iter()
                .map(|server| server.id.clone())
                .collect(),
        })?;
    let lock = lock_path(&config.path);
    // A corrupt lock file is reported before the server is started for nothing.
    let pinned = LockFile::load(&lock)?.servers.remove(id);
    let connection = connect(server, CallRoutes::default()).await?;
    let listing = Listing::of(&connection.peer()).await;
    connection.close().await;
    let listing = listing.map_err(|error| AcceptError::ListTools {
        id: id.to_owned(),
        reason: error.to_string(),
    })?;
    let current = ServerPins::of(&listing.tools, listing.instructions.as_deref())?;
    let changes = match &pinned {
        Some(pinned) => pinned.changes_to(&current),
        None => PinChanges {
            added: current.tools.keys().cloned().collect(),
            ..PinChanges::default()
        },
    };
    Ok(PinReview {
        server: id.to_owned(),
        lock,
        pinned,
        current,
        changes,
    })
}

impl PinReview {
    /// The server's id.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The lock file its pins are in.
    pub fn lock_path(&self) -> &Path {
        &self.lock
    }

    /// Whether it had pins at all.
    pub fn was_pinned(&self) -> bool {
        self.pinned.is_some()
    }

    /// What differs.
    pub fn changes(&self) -> &PinChanges {
        &self.changes
    }

    /// The changes, readable: a unified diff (pinned → current) of the instructions and of
    /// each changed tool's pretty JSON, each new tool in full, and the removed tools' names.
    /// Empty when nothing changed.
    pub fn diff(&self) -> String {
        let empty = ServerPins {
            tool_set: String::new(),
            instructions_hash: String::new(),
            instructions: None,
            tools: Default::default(),
        };
        let pinned = self.pinned.as_ref().unwrap_or(&empty);
        let mut text = String::new();
        if self.changes.instructions_changed {
            let _ = writeln!(text, "instructions changed:");
            text.push_str(&unified(
                pinned.instructions.as_deref().unwrap_or_default(),
                self.current.instructions.as_deref().unwrap_or_default(),
                "instructions",
            ));
        }
        for name in &self.changes.changed {
            let _ = writeln!(text, "tool `{name}` changed:");
            text.push_str(&unified(
                &pretty(pinned.tools.get(name).map(|tool| &tool.definition)),
                &pretty(self.current.tools.get(name).map(|tool| &tool.definition)),
                name,
            ));
        }
        for name in &self.changes.added {
            let _ = writeln!(text, "new tool `{name}`:");
            text.push_str(&unified(
                "",
                &pretty(self.current.tools.get(name).map(|tool| &tool.definition)),
                name,
            ));
        }
        for name in &self.changes.removed {
            let _ = writeln!(text, "removed tool `{name}`");
        }
        text
    }

    /// Pins what was reviewed as the server's accepted tools, in the lock file as it is now.
    pub fn accept(self) -> Result<(), LockError> {
        let mut file = LockFile::load(&self.lock)?;
        file.servers.insert(self.server, self.current);
        file.save(&self.lock)
    }
}

/// `value` as pretty JSON, ending with a new line; empty for none.
fn pretty(value: Option<&Value>) -> String {
    value
        .and_then(|value| serde_json::to_string_pretty(value).ok())
        .map(|text| text + "\n")
        .unwrap_or_default()
}

/// The unified diff of `old` and `new`, with `name` in its headers.
fn unified(old: &str, new: &str, name: &str) -> String {
    let mut old = old.to_owned();
    let mut new = new.to_owned();
    for text in [&mut old, &mut new] {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("pinned/{name}"), &format!("current/{name}"))
        .to_string()
}
