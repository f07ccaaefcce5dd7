//! The check of each listing of a remote domain's tools against the linked code
//! ([`DomainSink`]): the front holds the domain's tools as its own linked code describes them,
//! so a remote node that announces one of them with another input or output schema runs
//! another version of the tool. That opens the link's breaker, with a reason naming the tool,
//! until a later listing matches again. Nothing is quarantined and nothing is pinned: the
//! linked code is the pin.

use std::{collections::BTreeMap, sync::Arc};

use serde_json::Value;
use switchboard_core::{Digest, ToolDescriptor, digest_json};
use tokio::sync::watch;

use crate::gate::Listing;

/// What the latest listing of the remote domain's tools said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listed {
    /// No listing was taken on the current connection yet.
    NotYet,
    /// Every tool of the domain is announced as the linked code describes it.
    Matches,
    /// A tool is missing or announced otherwise: why.
    Differs(String),
}

/// The schemas a tool is announced with, as digests of their canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Announced {
    input: Option<Digest>,
    output: Option<Digest>,
}

impl Announced {
    /// The schemas of `tool`, an MCP `Tool` as JSON (`inputSchema`, `outputSchema`).
    fn of(tool: &Value) -> Self {
        let digest = |key: &str| tool.get(key).and_then(|schema| digest_json(schema).ok());
        Self {
            input: digest("inputSchema"),
            output: digest("outputSchema"),
        }
    }
}

/// Checks each listing of a remote node's tools against the linked descriptors of its domain.
#[derive(Debug, Clone)]
pub(crate) struct DomainSink {
    node: String,
    /// The domain's tools as the linked code announces them, by name.
    expected: Arc<BTreeMap<String, Announced>>,
    listed: watch::Sender<Listed>,
}

impl DomainSink {
    /// The check of `node`'s listings against `descriptors`, and where its verdict is read.
    pub(crate) fn new(
        node: &str,
        descriptors: &[ToolDescriptor],
    ) -> (Self, watch::Receiver<Listed>) {
        let expected = descriptors
            .iter()
            .map(|descriptor| {
                (
                    descriptor.name.to_string(),
                    Announced::of(&descriptor.mcp()),
                )
            })
            .collect();
        let (listed, reader) = watch::channel(Listed::NotYet);
        let sink = Self {
            node: node.to_owned(),
            expected: Arc::new(expected),
            listed,
        };
        (sink, reader)
    }

    /// The names of the domain's tools.
    pub(crate) fn tools(&self) -> Vec<String> {
        self.expected.keys().cloned().collect()
    }

    /// A new connection: its tools are not listed yet.
    pub(crate) fn connected(&self) {
        self.listed.send_replace(Listed::NotYet);
    }

    /// Checks `listing`; `Err` says which tool differs.
    pub(crate) fn take(&self, listing: &Listing) -> Result<(), String> {
        let announced: BTreeMap<&str, Announced> = listing
            .tools
            .iter()
            .map(|tool| {
                let json = serde_json::to_value(tool).unwrap_or(Value::Null);
                (tool.name.as_ref(), Announced::of(&json))
            })
            .collect();
        let node = &self.node;
        let differs =
            self.expected
                .iter()
                .find_map(|(name, expected)| match announced.get(name.as_str()) {
                    None => Some(format!(
                        "{node} does not announce {name}, which the linked code of its domain has \
                     (version skew: deploy the same version on both nodes)"
                    )),
                    Some(announced) if announced != expected => Some(format!(
                        "{node} announces another schema for {name} (version skew: deploy the same \
                     version on both nodes)"
                    )),
                    Some(_) => None,
                });
        match differs {
            None => {
                self.listed.send_replace(Listed::Matches);
                Ok(())
            }
            Some(reason) => {
                tracing::error!(%node, %reason, "a remote domain's tools differ from the linked code; its calls are refused");
                self.listed.send_replace(Listed::Differs(reason.clone()));
                Err(reason)
            }
        }
    }
}
