//! Default role grants: which roles a domain's permissions go to when a deployment loads no
//! permission file of its own.
//!
//! Each domain ships its part of the built-in role → permission matrix as a TOML fragment of
//! the permission-file format (`[roles]`, `role = ["pattern", ...]`) and declares it with
//! [`default_grants!`](crate::default_grants). The registry collects every linked fragment
//! through `inventory` and joins them to its own base grants, so a new domain brings its grants
//! with it and no central file lists them. A deployment that loads its own matrix
//! (`--permissions FILE`) replaces all of this.

/// A domain's default role grants, declared with [`default_grants!`](crate::default_grants).
#[derive(Debug)]
pub struct DefaultGrantsEntry {
    /// The domain whose permissions the fragment grants; every pattern in it must start with
    /// `<domain>.`.
    pub domain: &'static str,
    /// The fragment, in the permission-file format.
    pub toml: &'static str,
}

inventory::collect!(DefaultGrantsEntry);

/// Every linked domain's default grants, sorted by domain.
pub fn linked_default_grants() -> Vec<&'static DefaultGrantsEntry> {
    let mut entries: Vec<&'static DefaultGrantsEntry> =
        inventory::iter::<DefaultGrantsEntry>.into_iter().collect();
    entries.sort_by_key(|entry| entry.domain);
    entries
}

/// Declares a domain's default role grants: a TOML fragment of the permission-file format whose
/// patterns all name the domain's own permissions.
///
/// ```
/// switchboard_core::default_grants! {
///     domain: "counter",
///     toml: r#"
///         [roles]
///         staff = ["counter.read"]
///     "#,
/// }
/// ```
///
/// A domain crate usually keeps the fragment in a file beside its manifest:
/// `toml: include_str!("../default-permissions.toml")`.
#[macro_export]
macro_rules! default_grants {
    (domain: $domain:literal, toml: $toml:expr $(,)?) => {
        $crate::__private::inventory::submit! {
            $crate::DefaultGrantsEntry {
                domain: $domain,
                toml: $toml,
            }
        }
    };
}
