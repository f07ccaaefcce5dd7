//! The prompt-injection verifier: what a mounted server says to the model, checked before any
//! model reads it.
//!
//! A server's tool definitions and `instructions` go to the model verbatim, so a malicious or
//! compromised server can talk to the model through them: tell it to ignore its instructions,
//! hide text in invisible Unicode, ask it to read `~/.ssh/id_rsa` and send it somewhere, or
//! steer how it uses another server's tools. The [`Verifier`] reads every such text and answers
//! [`Finding`]s; the [`Gate`](crate::gate) acts on them by the server's [`VerifyPolicy`].
//!
//! [`Verifier`] is a trait so that a model-based checker can stand beside or replace the
//! default, [`RuleVerifier`], whose rules are data ([`Rules`]): the embedded
//! `rules/injection.toml`, extended by a file the mounts file names.
//!
//! What it does not do: it does not look at what a tool *answers* (a call's result is data for
//! the model, and screening it is another layer), and it cannot prove a server harmless; it
//! catches the known shapes of injection and makes them visible.

mod rules;

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use switchboard_registry::ToolRegistry;

pub use rules::{RuleVerifier, Rules};

use crate::{config::ServerConfig, gate::Listing, tool::mounted_name};

/// What a server's tools and instructions are checked for.
pub trait Verifier: Send + Sync + fmt::Debug {
    /// Every problem found in `input`; none when it is clean.
    fn check(&self, input: &VerifyInput<'_>) -> Vec<Finding>;
}

/// What one server offers, with what it must not talk about.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct VerifyInput<'a> {
    /// The server's id.
    pub server: &'a str,
    /// Its tools, as it listed them.
    pub tools: &'a [Tool],
    /// The `instructions` it gave at the handshake.
    pub instructions: Option<&'a str>,
    /// The tools that are not the server's: the registry's and the other mounted servers'.
    pub others: &'a [OtherTool],
}

impl<'a> VerifyInput<'a> {
    /// The input for `server`'s `tools` and `instructions`, with the `others`' tools.
    pub fn new(
        server: &'a str,
        tools: &'a [Tool],
        instructions: Option<&'a str>,
        others: &'a [OtherTool],
    ) -> Self {
        Self {
            server,
            tools,
            instructions,
            others,
        }
    }
}

/// A tool of another server (or of the registry), by one of its names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct OtherTool {
    /// The name: a mounted tool's registry name (`files_write_file`) or its server's name for
    /// it (`write_file`), or a native tool's name.
    pub name: String,
    /// Whose it is: a mounted server's id, or a native tool's domain.
    pub owner: String,
}

/// One problem the verifier found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// The id of the rule that found it (`ignore-instructions`, `unicode-tags`, ...).
    pub rule: String,
    /// The server's name for the tool it is in; `None`: the server's `instructions`.
    pub tool: Option<String>,
    /// Where in the tool: `name`, `title`, `description`, `annotations.title`,
    /// `inputSchema.properties.path.description`, ...; `instructions` for the instructions.
    pub field: String,
    /// The offending text, trimmed, with invisible characters written as `\u{E0041}`.
    pub excerpt: String,
    /// What the rule means.
    pub message: String,
}

impl Finding {
    /// A finding of `rule` in `field` of `tool`.
    pub fn new(
        rule: impl Into<String>,
        tool: Option<String>,
        field: impl Into<String>,
        excerpt: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            rule: rule.into(),
            tool,
            field: field.into(),
            excerpt: excerpt.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tool {
            Some(tool) => write!(f, "[{}] tool `{tool}` {}", self.rule, self.field)?,
            None => write!(f, "[{}] {}", self.rule, self.field)?,
        }
        write!(f, ": \"{}\" ({})", self.excerpt, self.message)
    }
}

/// What the gate does with a server's findings, by its `verify` key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyPolicy {
    /// Any finding keeps all of the server's tools from being exposed.
    #[default]
    Block,
    /// Findings are logged and shown in the server's status; its tools are exposed.
    Warn,
    /// No checks.
    Off,
}

/// The verifier with what it knows of the other tools, shared by every server's gate, and the
/// latest findings of each server.
#[derive(Debug, Clone)]
pub(crate) struct Screen {
    verifier: Arc<dyn Verifier>,
    shared: Arc<Mutex<Shared>>,
}

#[derive(Debug, Default)]
struct Shared {
    /// Tool names by owner (a server id or a native domain).
    known: BTreeMap<String, BTreeSet<String>>,
    /// The latest findings, by server id.
    findings: BTreeMap<String, Vec<Finding>>,
}

impl Default for Screen {
    fn default() -> Self {
        Self::new(Arc::new(RuleVerifier::new(Rules::defaults())))
    }
}

impl Screen {
    /// A screen that checks with `verifier`.
    pub(crate) fn new(verifier: Arc<dyn Verifier>) -> Self {
        Self {
            verifier,
            shared: Arc::default(),
        }
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Learns the names of `registry`'s tools, by domain.
    pub(crate) fn know_registry(&self, registry: &ToolRegistry) {
        let mut shared = self.shared();
        for tool in registry.list() {
            shared
                .known
                .entry(tool.domain.to_string())
                .or_default()
                .insert(tool.name.to_string());
        }
    }

    /// Learns `server`'s tools from `listing`: both its names and their registry names.
    pub(crate) fn know(&self, server: &str, listing: &Listing) {
        let names = listing
            .tools
            .iter()
            .flat_map(|tool| [tool.name.to_string(), mounted_name(server, &tool.name)])
            .collect();
        self.shared().known.insert(server.to_owned(), names);
    }

    /// Checks `listing` by `server`'s policy: `Err` with every finding when the policy blocks
    /// and something was found. The findings are kept for [`Screen::findings`].
    pub(crate) fn screen(&self, server: &ServerConfig, listing: &Listing) -> Result<(), String> {
        self.know(&server.id, listing);
        if server.verify == VerifyPolicy::Off {
            self.shared().findings.remove(&server.id);
            return Ok(());
        }
        let others: Vec<OtherTool> = self
            .shared()
            .known
            .iter()
            .filter(|(owner, _)| **owner != server.id)
            .flat_map(|(owner, names)| {
                names.iter().map(|name| OtherTool {
                    name: name.clone(),
                    owner: owner.clone(),
                })
            })
            .collect();
        let input = VerifyInput::new(
            &server.id,
            &listing.tools,
            listing.instructions.as_deref(),
            &others,
        );
        let findings = self.verifier.check(&input);
        self.shared()
            .findings
            .insert(server.id.clone(), findings.clone());
        if findings.is_empty() {
            return Ok(());
        }
        match server.verify {
            VerifyPolicy::Block => Err(refusal(&findings)),
            VerifyPolicy::Warn | VerifyPolicy::Off => {
                for finding in &findings {
                    tracing::warn!(
                        server = %server.id,
                        rule = %finding.rule,
                        tool = finding.tool.as_deref().unwrap_or("-"),
                        field = %finding.field,
                        excerpt = %finding.excerpt,
                        "the prompt-injection verifier found: {}",
                        finding.message
                    );
                }
                Ok(())
            }
        }
    }

    /// The findings of `server`'s latest listing.
    pub(crate) fn findings(&self, server: &str) -> Vec<Finding> {
        self.shared()
            .findings
            .get(server)
            .cloned()
            .unwrap_or_default()
    }
}

/// Why a server's tools are not exposed, with each finding on a line of its own.
fn refusal(findings: &[Finding]) -> String {
    let mut reason = format!(
        "the prompt-injection verifier found {} problem{} (verify = \"block\"):",
        findings.len(),
        if findings.len() == 1 { "" } else { "s" }
    );
    for finding in findings {
        reason.push_str("\n  - ");
        reason.push_str(&finding.to_string());
    }
    reason.push_str(
        "\nfix the server, or, having read the findings, set `verify = \"warn\"` for it in the \
         mounts file",
    );
    reason
}

/// `text` with every invisible or control character written as `\u{…}` (newlines as `\n`),
/// so that an excerpt shows what a person would not see.
pub(crate) fn escape_invisible(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '\n' => escaped.push_str("\\n"),
            '\t' => escaped.push_str("\\t"),
            character if is_invisible(character) => {
                escaped.push_str(&format!("\\u{{{:X}}}", u32::from(character)));
            }
            character => escaped.push(character),
        }
    }
    escaped
}

/// Whether `character` is a control or format character a person does not see.
fn is_invisible(character: char) -> bool {
    character.is_control()
        || matches!(
            u32::from(character),
            0x00AD
                | 0x034F
                | 0x061C
                | 0x115F..=0x1160
                | 0x17B4..=0x17B5
                | 0x180B..=0x180F
                | 0x200B..=0x200F
                | 0x202A..=0x202E
                | 0x2060..=0x206F
                | 0x3164
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF0..=0xFFFB
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE0FFF
        )
}

#[cfg(test)]
mod tests;
