//! The role → permission matrix: which roles may call which tools.
//!
//! Loaded from TOML. The built-in matrix is `default-permissions.toml` (the grants that span
//! domains, such as `admin`) joined with the default grants every linked domain declares for
//! its own permissions (`switchboard_core::default_grants!`), so a domain brings its grants
//! with it. Patterns are exact names, `prefix.*` or `*`. The matrix is resolved once per tool
//! when the tool table is built, so the per-call check is a scan of the caller's few roles against a short list.

use std::{collections::BTreeMap, path::Path};

use serde::Deserialize;
use switchboard_core::{Role, linked_default_grants};

/// The base of the built-in matrix: the grants that span domains. Each linked domain adds its
/// own default grants to it ([`PermissionMatrix::built_in`]).
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
    /// A domain's default grants give a role a permission outside the domain.
    #[error(
        "the default grants of domain `{domain}` give role `{role}` the pattern `{pattern}`: a \
         domain grants only its own permissions, so each pattern must start with `{domain}.`"
    )]
    ForeignGrant {
        /// The domain that declared the grants.
        domain: String,
        /// The role.
        role: String,
        /// The pattern.
        pattern: String,
    },
    /// A domain's default grants are not a valid permission file.
    #[error("invalid default grants of domain `{domain}`: {source}")]
    DefaultGrants {
        /// The domain that declared the grants.
        domain: String,
        /// What is wrong with them.
        #[source]
        source: Box<PermissionsError>,
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

    /// Whether every permission this pattern grants starts with `prefix`.
    fn stays_within(&self, prefix: &str) -> bool {
        match self {
            Pattern::Everything => false,
            Pattern::Prefix(granted) | Pattern::Exact(granted) => granted.starts_with(prefix),
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

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::Everything => f.write_str("*"),
            Pattern::Prefix(prefix) => write!(f, "{prefix}*"),
            Pattern::Exact(exact) => f.write_str(exact),
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

    /// The built-in matrix: [`DEFAULT_PERMISSIONS_TOML`] joined with the default grants of every
    /// domain linked into this binary.
    pub fn built_in() -> Result<Self, PermissionsError> {
        let mut matrix = Self::from_toml(DEFAULT_PERMISSIONS_TOML)?;
        for entry in linked_default_grants() {
            matrix.add_domain_grants(entry.domain, entry.toml)?;
        }
        Ok(matrix)
    }

    /// Adds one domain's default grants (`toml`), refusing any pattern outside the domain.
    fn add_domain_grants(&mut self, domain: &str, toml: &str) -> Result<(), PermissionsError> {
        let grants = Self::from_toml(toml).map_err(|error| PermissionsError::DefaultGrants {
            domain: domain.to_owned(),
            source: Box::new(error),
        })?;
        let own_prefix = format!("{domain}.");
        for (role, patterns) in grants.roles {
            if let Some(foreign) = patterns
                .iter()
                .find(|pattern| !pattern.stays_within(&own_prefix))
            {
                return Err(PermissionsError::ForeignGrant {
                    domain: domain.to_owned(),
                    role: role.to_string(),
                    pattern: foreign.to_string(),
                });
            }
            self.roles.entry(role).or_default().extend(patterns);
        }
        Ok(())
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
    /// The [built-in](PermissionMatrix::built_in) matrix. If a linked domain's default grants
    /// are invalid (the architecture tests check every linked domain's), the error is logged
    /// and the matrix fails closed: it holds the base grants alone.
    fn default() -> Self {
        Self::built_in().unwrap_or_else(|error| {
            tracing::error!(%error, "the built-in permission matrix is incomplete");
            match Self::from_toml(DEFAULT_PERMISSIONS_TOML) {
                Ok(matrix) => matrix,
                // The base file is checked by a unit test; it cannot fail at run time.
                Err(error) => unreachable!("the built-in permission matrix is invalid: {error}"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(names: &[&str]) -> Vec<Role> {
        names.iter().map(|name| Role::from(*name)).collect()
    }

    /// A matrix shaped like the sample deployment's: an admin, a manager and staff.
    const GRADED_MATRIX: &str = r#"
        [roles]
        admin = ["*"]
        manager = ["core.*", "roster.shifts.*", "roster.swaps.*"]
        staff = ["core.users.read", "roster.shifts.read", "roster.swaps.propose"]
    "#;

    #[test]
    fn the_base_matrix_parses() {
        let matrix = PermissionMatrix::from_toml(DEFAULT_PERMISSIONS_TOML).expect("valid");
        assert!(matrix.allows(&roles(&["admin"]), "roster.roster.clear"));
    }

    #[test]
    fn a_matrix_grades_roles() {
        let matrix = PermissionMatrix::from_toml(GRADED_MATRIX).expect("valid");
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
        let matrix = PermissionMatrix::from_toml(GRADED_MATRIX).expect("valid");
        assert_eq!(
            matrix.roles_granting("roster.shifts.assign"),
            roles(&["admin", "manager"])
        );
    }

    #[test]
    fn domain_grants_join_the_base_grants() {
        let mut matrix = PermissionMatrix::from_toml(DEFAULT_PERMISSIONS_TOML).expect("valid");
        for (domain, toml) in [
            ("core", "[roles]\nmanager = [\"core.*\"]"),
            (
                "roster",
                "[roles]\nmanager = [\"roster.shifts.*\"]\nstaff = [\"roster.shifts.read\"]",
            ),
        ] {
            matrix
                .add_domain_grants(domain, toml)
                .expect("grants within the domain");
        }
        assert_eq!(
            matrix,
            PermissionMatrix::from_toml(
                "[roles]\nadmin = [\"*\"]\nmanager = [\"core.*\", \"roster.shifts.*\"]\n\
                 staff = [\"roster.shifts.read\"]"
            )
            .expect("valid")
        );
    }

    #[test]
    fn domain_grants_stay_within_their_domain() {
        let mut matrix = PermissionMatrix::from_toml(DEFAULT_PERMISSIONS_TOML).expect("valid");
        for pattern in ["*", "core.*", "core.users.read", "rosterx.shifts.read"] {
            let toml = format!("[roles]\nstaff = [\"{pattern}\"]");
            let error = matrix
                .add_domain_grants("roster", &toml)
                .expect_err("a grant outside the domain");
            assert!(
                matches!(&error, PermissionsError::ForeignGrant { pattern: found, .. } if found == pattern),
                "{error}"
            );
        }
        let error = matrix
            .add_domain_grants("roster", "[roles]\nstaff = \"roster.shifts.read\"")
            .expect_err("not a list");
        assert!(error.to_string().contains("domain `roster`"), "{error}");
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
