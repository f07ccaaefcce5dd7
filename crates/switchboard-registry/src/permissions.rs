//! The role → permission matrix: which roles may call which tools.
//!
//! Loaded from TOML (the built-in default is `default-permissions.toml`). Patterns are exact
//! names, `prefix.*` or `*`. The matrix is resolved once per tool when the tool table is built,
//! so the per-call check is a scan of the caller's few roles against a short list.

use std::{collections::BTreeMap, path::Path};

use serde::Deserialize;
use switchboard_core::Role;

/// The built-in matrix.
pub const DEFAULT_PERMISSIONS_TOML: &str = include_str!("../default-permissions.toml");

/// Why a permission file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PermissionsError {
    /// The file could not be read.
    #[error("cannot read the permission file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("invalid permission matrix: {0}; expected `[roles]` with `role = [\"pattern\", ...]`")]
    Parse(String),
    /// A pattern is malformed.
    #[error(
        "invalid permission pattern `{pattern}` for role `{role}`: use `a.b.c`, `a.b.*` or `*`"
    )]
    Pattern {
        /// The role.
        role: String,
        /// The pattern.
        pattern: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFile {
    roles: BTreeMap<String, Vec<String>>,
}

/// Which permissions each role grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionMatrix {
    roles: BTreeMap<Role, Vec<Pattern>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Everything,
    Prefix(String),
    Exact(String),
}

impl Pattern {
    fn parse(text: &str) -> Option<Pattern> {
        let valid_name = |name: &str| {
            !name.is_empty()
                && name.split('.').all(|part| {
                    !part.is_empty()
                        && part
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                })
        };
        if text == "*" {
            Some(Pattern::Everything)
        } else if let Some(prefix) = text.strip_suffix(".*") {
            valid_name(prefix).then(|| Pattern::Prefix(format!("{prefix}.")))
        } else {
            valid_name(text).then(|| Pattern::Exact(text.to_owned()))
        }
    }

    fn grants(&self, permission: &str) -> bool {
        match self {
            Pattern::Everything => true,
            Pattern::Prefix(prefix) => permission.starts_with(prefix.as_str()),
            Pattern::Exact(exact) => exact == permission,
        }
    }
}

impl PermissionMatrix {
    /// Parses a matrix from TOML.
    pub fn from_toml(text: &str) -> Result<Self, PermissionsError> {
        let file: MatrixFile =
            toml::from_str(text).map_err(|error| PermissionsError::Parse(error.to_string()))?;
        let mut roles = BTreeMap::new();
        for (role, patterns) in file.roles {
            let parsed = patterns
                .iter()
                .map(|pattern| {
                    Pattern::parse(pattern).ok_or_else(|| PermissionsError::Pattern {
                        role: role.clone(),
                        pattern: pattern.clone(),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            roles.insert(Role::from(role), parsed);
        }
        Ok(Self { roles })
    }

    /// Reads a matrix from a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, PermissionsError> {
        let text = std::fs::read_to_string(path).map_err(|source| PermissionsError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml(&text)
    }

    /// Whether any of `roles` grants `permission`.
    pub fn allows(&self, roles: &[Role], permission: &str) -> bool {
        roles.iter().any(|role| {
            self.roles
                .get(role)
                .is_some_and(|patterns| patterns.iter().any(|p| p.grants(permission)))
        })
    }

    /// Every role that grants `permission`, sorted.
    pub fn roles_granting(&self, permission: &str) -> Vec<Role> {
        self.roles
            .iter()
            .filter(|(_, patterns)| patterns.iter().any(|p| p.grants(permission)))
            .map(|(role, _)| role.clone())
            .collect()
    }

    /// The roles the matrix knows.
    pub fn roles(&self) -> impl Iterator<Item = &Role> {
        self.roles.keys()
    }
}

impl Default for PermissionMatrix {
    fn default() -> Self {
        match Self::from_toml(DEFAULT_PERMISSIONS_TOML) {
            Ok(matrix) => matrix,
            // The built-in file is checked by a unit test; it cannot fail at run time.
            Err(error) => unreachable!("the built-in permission matrix is invalid: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(names: &[&str]) -> Vec<Role> {
        names.iter().map(|name| Role::from(*name)).collect()
    }

    #[test]
    fn default_matrix_parses_and_grades_roles() {
        let matrix = PermissionMatrix::from_toml(DEFAULT_PERMISSIONS_TOML).expect("valid");
        assert!(matrix.allows(&roles(&["admin"]), "roster.roster.clear"));
        assert!(matrix.allows(&roles(&["manager"]), "roster.shifts.assign"));
        assert!(!matrix.allows(&roles(&["manager"]), "roster.roster.clear"));
        assert!(matrix.allows(&roles(&["staff"]), "roster.swaps.propose"));
        assert!(!matrix.allows(&roles(&["staff"]), "roster.shifts.assign"));
        assert!(!matrix.allows(&roles(&["intern"]), "core.users.read"));
        assert!(!matrix.allows(&[], "core.users.read"));
        assert!(matrix.allows(&roles(&["intern", "staff"]), "core.users.read"));
    }

    #[test]
    fn prefix_patterns_do_not_match_lookalikes() {
        let matrix = PermissionMatrix::from_toml("[roles]\nr = [\"roster.*\"]").expect("valid");
        assert!(matrix.allows(&roles(&["r"]), "roster.shifts.read"));
        assert!(!matrix.allows(&roles(&["r"]), "rosterx.shifts.read"));
        assert!(!matrix.allows(&roles(&["r"]), "roster"));
    }

    #[test]
    fn lists_roles_granting_a_permission() {
        let matrix = PermissionMatrix::default();
        assert_eq!(
            matrix.roles_granting("roster.shifts.assign"),
            roles(&["admin", "manager"])
        );
    }

    #[test]
    #[allow(
        clippy::unwrap_used,
        reason = "a test asserting on the error it expects"
    )]
    fn rejects_bad_files_with_clear_errors() {
        let error = PermissionMatrix::from_toml("[roles]\nr = [\"roster..x\"]").unwrap_err();
        assert!(error.to_string().contains("`roster..x`"), "{error}");
        let error = PermissionMatrix::from_toml("roles = 3").unwrap_err();
        assert!(matches!(error, PermissionsError::Parse(_)));
        let error = PermissionMatrix::from_toml("[rolez]\n").unwrap_err();
        assert!(matches!(error, PermissionsError::Parse(_)));
    }
}
