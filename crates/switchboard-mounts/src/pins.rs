//! Rug-pull protection: what a person accepted of each mounted server, pinned in a lock file, and
//! the quarantine of whatever changed since.
//!
//! A mounted server can change a tool after a person agreed to it: a description that was
//! harmless at review time can carry instructions to the model a week later. So the first time
//! a server's tools are admitted (trust on first use: the lock file holds nothing for the
//! server), Switchboard pins a hash of
//! - each tool's *whole* wire definition, as the server sent it (name, title, description, input
//!   and output schemas with their nested descriptions, annotations, `_meta`, icons);
//! - the server's `instructions`;
//! - the *set* of its tool names, so a rename or an added tool cannot pass as "the same tools".
//!
//! Every later admission (at start, after `tools/list_changed`, after a restart) compares the
//! listing with the pins: a tool whose definition changed, and a tool that is not in the accepted
//! set, is withheld (unlisted, every call answered with why and the command that accepts it);
//! changed instructions withhold every tool of the server, since instructions speak for all of
//! them. A tool that disappeared simply goes away. Nothing is exposed again until a person
//! accepts the change ([`crate::review`], [`crate::Mounts::accept`]).
//!
//! **The lock file** sits beside the mounts file, with the extension `lock` (`mounts.toml` →
//! `mounts.lock`). It is pretty-printed JSON (tool definitions are JSON), sorted, so it diffs
//! well and can be committed. It keeps the pinned definitions themselves, not only their hashes,
//! so that a change can be shown as a diff. It is read again at every admission, so an accept
//! made by another process counts at the next one; it is written whole, to a temporary file
//! renamed over it, so a reader never sees half a file. A lock file that cannot be read, is not
//! valid, or whose hashes do not match the definitions it holds is an error naming the file and
//! the fault: it is never pinned over silently.
//!
//! **Hashes** are [`switchboard_core::digest`]'s: BLAKE3 of the RFC 8785 (JCS) canonical JSON,
//! lower-case hex, so anyone can recompute them, and key order or whitespace do not count.

use std::{
    collections::{BTreeMap, BTreeSet},
    io::Write as _,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
    time::SystemTime,
};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_core::digest_json;

use crate::gate::{Admission, Listing};

/// The lock file's format version; a file of another version is refused.
pub const LOCK_FILE_VERSION: u32 = 1;

/// The lock file of the mounts file at `config`: beside it, with the extension `lock`.
pub fn lock_path(config: &Path) -> PathBuf {
    config.with_extension("lock")
}

/// Why the lock file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// It exists but could not be read.
    #[error("cannot read the mounts lock file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a valid lock file, or does not agree with itself.
    #[error(
        "the mounts lock file {} is corrupt: {problem}; restore it (from version control), or \
         delete it (or the server's entry) to pin the servers' tools as they are at the next \
         start",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// It could not be written.
    #[error("cannot write the mounts lock file {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A tool's definition cannot be hashed (it holds what JSON cannot).
    #[error("the tool `{tool}` cannot be pinned: {reason}")]
    Unpinnable {
        /// The server's name for the tool.
        tool: String,
        /// Why.
        reason: String,
    },
}

/// The pins of every server, as the lock file holds them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// [`LOCK_FILE_VERSION`].
    pub version: u32,
    /// Each server's pins, by server id.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerPins>,
}

/// What a person accepted of one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerPins {
    /// The hash of the sorted array of its tool names.
    pub tool_set: String,
    /// The hash of its `instructions` (of `null` when it gave none).
    pub instructions_hash: String,
    /// Its `instructions`.
    pub instructions: Option<String>,
    /// Each tool's pin, by the server's name for the tool.
    pub tools: BTreeMap<String, PinnedTool>,
}

/// One tool's pin: its whole wire definition, and that definition's hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedTool {
    /// The hash of `definition`.
    pub hash: String,
    /// The tool as the server listed it.
    pub definition: Value,
}

/// What differs between the pins of a server and what it offers now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PinChanges {
    /// Whether its `instructions` changed.
    pub instructions_changed: bool,
    /// Tools not in the accepted set, by the server's name.
    pub added: Vec<String>,
    /// Tools whose definition changed.
    pub changed: Vec<String>,
    /// Accepted tools it no longer lists.
    pub removed: Vec<String>,
}

impl PinChanges {
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        !self.instructions_changed
            && self.added.is_empty()
            && self.changed.is_empty()
            && self.removed.is_empty()
    }
}

/// The hash of a JSON value, as the module docs say.
fn hash_of(value: &Value) -> Result<String, String> {
    digest_json(value)
        .map(|digest| digest.to_hex())
        .map_err(|error| error.to_string())
}

/// The hash of a set of tool names.
fn tool_set_hash<'a>(names: impl Iterator<Item = &'a String>) -> Result<String, String> {
    let sorted: BTreeSet<&String> = names.collect();
    hash_of(&serde_json::json!(sorted))
}

impl ServerPins {
    /// The pins of `tools` and `instructions`, as a server offers them now.
    pub fn of(tools: &[Tool], instructions: Option<&str>) -> Result<Self, LockError> {
        let mut pinned = BTreeMap::new();
        for tool in tools {
            let unpinnable = |reason: String| LockError::Unpinnable {
                tool: tool.name.to_string(),
                reason,
            };
            let definition =
                serde_json::to_value(tool).map_err(|error| unpinnable(error.to_string()))?;
            let hash = hash_of(&definition).map_err(unpinnable)?;
            pinned.insert(tool.name.to_string(), PinnedTool { hash, definition });
        }
        let unpinnable = |reason: String| LockError::Unpinnable {
            tool: "(the server's instructions and tool set)".to_owned(),
            reason,
        };
        Ok(Self {
            tool_set: tool_set_hash(pinned.keys()).map_err(unpinnable)?,
            instructions_hash: hash_of(&serde_json::json!(instructions)).map_err(unpinnable)?,
            instructions: instructions.map(str::to_owned),
            tools: pinned,
        })
    }

    /// What differs in `current` from these pins.
    pub fn changes_to(&self, current: &ServerPins) -> PinChanges {
        let mut changes = PinChanges {
            instructions_changed: self.instructions_hash != current.instructions_hash,
            ..PinChanges::default()
        };
        for (name, tool) in &current.tools {
            match self.tools.get(name) {
                None => changes.added.push(name.clone()),
                Some(pinned) if pinned.hash != tool.hash => changes.changed.push(name.clone()),
                Some(_) => {}
            }
        }
        changes.removed = self
            .tools
            .keys()
            .filter(|name| !current.tools.contains_key(*name))
            .cloned()
            .collect();
        changes
    }

    /// Whether the hashes agree with what they are of: `Err` says where not.
    fn check(&self) -> Result<(), String> {
        for (name, tool) in &self.tools {
            if tool.definition.get("name").and_then(Value::as_str) != Some(name.as_str()) {
                return Err(format!(
                    "the pinned definition of `{name}` does not have that name"
                ));
            }
            if hash_of(&tool.definition)? != tool.hash {
                return Err(format!(
                    "the hash of `{name}` does not match its pinned definition"
                ));
            }
        }
        if tool_set_hash(self.tools.keys())? != self.tool_set {
            return Err("the tool set's hash does not match the pinned tools".to_owned());
        }
        if hash_of(&serde_json::json!(self.instructions))? != self.instructions_hash {
            return Err("the instructions' hash does not match the pinned instructions".to_owned());
        }
        Ok(())
    }
}

impl LockFile {
    /// The lock file at `path`; an empty one when there is no file.
    pub fn load(path: &Path) -> Result<Self, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    version: LOCK_FILE_VERSION,
                    servers: BTreeMap::new(),
                });
            }
            Err(source) => {
                return Err(LockError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        Self::parse(path, &text)
    }

    /// Checks `text`, the contents of the lock file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, LockError> {
        let corrupt = |problem: String| LockError::Corrupt {
            path: path.to_owned(),
            problem,
        };
        let file: LockFile = serde_json::from_str(text).map_err(|error| {
            corrupt(format!(
                "not a lock file at line {} column {}: {error}",
                error.line(),
                error.column()
            ))
        })?;
        if file.version != LOCK_FILE_VERSION {
            return Err(corrupt(format!(
                "its version is {}, and this Switchboard reads version {LOCK_FILE_VERSION}",
                file.version
            )));
        }
        for (id, pins) in &file.servers {
            pins.check()
                .map_err(|problem| corrupt(format!("server `{id}`: {problem}")))?;
        }
        Ok(file)
    }

    /// Writes the file whole at `path`: to a temporary file beside it, renamed over it.
    pub fn save(&self, path: &Path) -> Result<(), LockError> {
        let write_error = |source| LockError::Write {
            path: path.to_owned(),
            source,
        };
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|error| write_error(std::io::Error::other(error)))?;
        text.push('\n');
        let mut temporary_name = path.file_name().unwrap_or_default().to_owned();
        temporary_name.push(format!(".{}.tmp", std::process::id()));
        let temporary = path.with_file_name(temporary_name);
        let written = std::fs::File::create(&temporary).and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()
        });
        let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
        if let Err(source) = renamed {
            let _ = std::fs::remove_file(&temporary);
            return Err(write_error(source));
        }
        Ok(())
    }
}

/// The pins of the servers of one mounts file: where their lock file is, and the admission of
/// a listing against it.
#[derive(Debug, Clone)]
pub(crate) struct Pins {
    /// The mounts file, for the command that accepts a change.
    config: PathBuf,
    /// Its lock file.
    lock: PathBuf,
    /// Held around each read-modify-write of the lock file by this process.
    writing: Arc<Mutex<()>>,
}

impl Pins {
    /// The pins of the servers of the mounts file at `config`.
    pub(crate) fn beside(config: &Path) -> Self {
        Self {
            config: config.to_owned(),
            lock: lock_path(config),
            writing: Arc::default(),
        }
    }

    /// The lock file.
    pub(crate) fn path(&self) -> &Path {
        &self.lock
    }

    /// The lock file as it is now.
    pub(crate) fn load(&self) -> Result<LockFile, LockError> {
        LockFile::load(&self.lock)
    }

    /// When the lock file was last written, if it exists.
    pub(crate) fn modified(&self) -> Option<SystemTime> {
        std::fs::metadata(&self.lock)
            .and_then(|metadata| metadata.modified())
            .ok()
    }

    /// The admission of each of `listing`'s tools, in order: each whose pin matches is exposed,
    /// the others are withheld with why. A server without pins has its listing pinned first.
    pub(crate) fn admit(
        &self,
        server: &str,
        listing: &Listing,
    ) -> Result<Vec<Admission>, LockError> {
        let current = ServerPins::of(&listing.tools, listing.instructions.as_deref())?;
        let pinned = {
            let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
            let mut file = self.load()?;
            match file.servers.get(server) {
                Some(pinned) => pinned.clone(),
                None => {
                    tracing::info!(server, lock = %self.lock.display(), tools = current.tools.len(), "the mounted server's tools are pinned (trust on first use)");
                    file.servers.insert(server.to_owned(), current.clone());
                    file.save(&self.lock)?;
                    current.clone()
                }
            }
        };
        let accept = format!(
            "review it, and accept it with `switchboard mounts accept {server} --mounts {}` \
             (pins in {})",
            self.config.display(),
            self.lock.display()
        );
        let instructions_changed = pinned.instructions_hash != current.instructions_hash;
        Ok(listing
            .tools
            .iter()
            .map(|tool| {
                let name = tool.name.as_ref();
                let reason = if instructions_changed {
                    format!(
                        "quarantined: the server's instructions changed since they were accepted, \
                         so none of its tools is exposed; {accept}"
                    )
                } else {
                    match (pinned.tools.get(name), current.tools.get(name)) {
                        (Some(was), Some(now)) if was.hash == now.hash => {
                            return Admission::Exposed;
                        }
                        (Some(_), _) => format!(
                            "quarantined: its definition changed since it was accepted; {accept}"
                        ),
                        (None, _) => format!(
                            "quarantined: it is a new tool, not in the set accepted for this \
                             server; {accept}"
                        ),
                    }
                };
                Admission::Withheld { reason }
            })
            .collect())
    }

    /// Pins `listing` as `server`'s accepted tools, and says what changed.
    pub(crate) fn accept(&self, server: &str, listing: &Listing) -> Result<PinChanges, LockError> {
        let current = ServerPins::of(&listing.tools, listing.instructions.as_deref())?;
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut file = self.load()?;
        let changes = match file.servers.get(server) {
            Some(pinned) => pinned.changes_to(&current),
            None => PinChanges {
                added: current.tools.keys().cloned().collect(),
                ..PinChanges::default()
            },
        };
        file.servers.insert(server.to_owned(), current);
        file.save(&self.lock)?;
        tracing::info!(server, lock = %self.lock.display(), ?changes, "the mounted server's current tools are accepted");
        Ok(changes)
    }
}

#[cfg(test)]
mod tests;
