//! Tool categories: what a tool may do, and so who may start it.
//!
//! The category is declared on the tool itself, so no separate list of "dangerous" tools can
//! drift from the registry. The rules that enforce it live in the registry; this module only
//! names the categories and what they mean.

use std::{fmt, str::FromStr};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a tool may do.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Reads data. No restriction beyond the tool's permission.
    Read,
    /// Returns a proposal for a change and never writes.
    Propose,
    /// Writes. Must be initiated by a human in a session; an agent acting alone is refused.
    Execute,
    /// Writes something that cannot easily be undone. Never runs on an agent's initiative and
    /// needs an explicit human action in the session (a confirmation).
    Restricted,
}

impl Category {
    /// Every category, in order of increasing power.
    pub const ALL: [Category; 4] = [
        Category::Read,
        Category::Propose,
        Category::Execute,
        Category::Restricted,
    ];

    /// The stable snake_case name used in attributes, JSON and the CLI.
    pub const fn as_str(self) -> &'static str {
        match self {
            Category::Read => "read",
            Category::Propose => "propose",
            Category::Execute => "execute",
            Category::Restricted => "restricted",
        }
    }

    /// Whether tools of this category may change domain state.
    pub const fn mutates(self) -> bool {
        matches!(self, Category::Execute | Category::Restricted)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no category.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown category `{0}`: expected one of read, propose, execute, restricted")]
pub struct UnknownCategory(pub String);

impl FromStr for Category {
    type Err = UnknownCategory;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Category::ALL
            .into_iter()
            .find(|category| category.as_str() == value)
            .ok_or_else(|| UnknownCategory(value.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for category in Category::ALL {
            assert_eq!(category.as_str().parse::<Category>(), Ok(category));
            let json = serde_json::to_string(&category).expect("category serializes");
            assert_eq!(json, format!("\"{category}\""));
        }
        assert!("write".parse::<Category>().is_err());
    }

    #[test]
    fn only_execute_and_restricted_mutate() {
        let mutating: Vec<_> = Category::ALL.into_iter().filter(|c| c.mutates()).collect();
        assert_eq!(mutating, [Category::Execute, Category::Restricted]);
    }
}
