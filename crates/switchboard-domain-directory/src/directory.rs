//! The `core` domain's state: a directory of users, kept separately for each organisation.
//!
//! Users are keyed by organisation first, so every lookup names the organisation it searches
//! and a user of one organisation can never be found through another. The directory is plain
//! data with no I/O; the seed is the sample tenants `acme` and `globex`. It changes only
//! through [`DirectoryState::add`], which `core_add_member` runs in the domain's actor.

use std::collections::BTreeMap;

use switchboard_core::{OrgId, Role, ToolError, UserId};

/// A user as the directory knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryUser {
    /// The user's id, unique within their organisation.
    pub user_id: UserId,
    /// The name to show for the user.
    pub name: String,
    /// The roles the directory records for the user.
    pub roles: Vec<Role>,
}

/// A change the directory refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DirectoryError {
    /// A user was added under an id the organisation already has.
    #[error(
        "`{user_id}` is already a member of your organisation; choose another user id, or list \
         the members with `core_list_users`"
    )]
    MemberExists {
        /// The user id asked for.
        user_id: UserId,
    },
}

impl DirectoryError {
    /// The stable snake_case code callers match on.
    pub const fn code(&self) -> &'static str {
        match self {
            DirectoryError::MemberExists { .. } => "member_exists",
        }
    }
}

impl From<DirectoryError> for ToolError {
    fn from(error: DirectoryError) -> Self {
        ToolError::new(error.code(), error.to_string())
    }
}

/// The users of every organisation. Cloned whole on each write, so keep it small.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryState {
    orgs: BTreeMap<OrgId, BTreeMap<UserId, DirectoryUser>>,
}

/// The sample tenants: (org, user id, display name, role).
const SEED: [(&str, &str, &str, &str); 6] = [
    ("acme", "alice", "Alice Archer", "admin"),
    ("acme", "mark", "Mark Mendez", "manager"),
    ("acme", "sam", "Sam Stone", "staff"),
    ("globex", "gina", "Gina Gold", "admin"),
    ("globex", "hank", "Hank Hill", "manager"),
    ("globex", "sue", "Sue Storm", "staff"),
];

impl DirectoryState {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sample directory: `acme` (alice, mark, sam) and `globex` (gina, hank, sue), one
    /// admin, one manager and one staff member each.
    pub fn seeded() -> Self {
        let mut directory = Self::new();
        for (org_id, user_id, name, role) in SEED {
            directory.insert(
                OrgId::from(org_id),
                DirectoryUser {
                    user_id: UserId::from(user_id),
                    name: name.to_owned(),
                    roles: vec![Role::from(role)],
                },
            );
        }
        directory
    }

    /// Adds `user` to `org_id`, replacing a user with the same id in that organisation.
    pub fn insert(&mut self, org_id: OrgId, user: DirectoryUser) {
        self.orgs
            .entry(org_id)
            .or_default()
            .insert(user.user_id.clone(), user);
    }

    /// Adds `user` to `org_id` and returns it; refuses an id the organisation already has, and
    /// then changes nothing.
    pub fn add(
        &mut self,
        org_id: OrgId,
        user: DirectoryUser,
    ) -> Result<DirectoryUser, DirectoryError> {
        if self.find(&org_id, &user.user_id).is_some() {
            return Err(DirectoryError::MemberExists {
                user_id: user.user_id,
            });
        }
        self.insert(org_id, user.clone());
        Ok(user)
    }

    /// The user `user_id` of organisation `org_id`; `None` if that organisation has no such
    /// user, whether or not another organisation has one.
    pub fn find(&self, org_id: &OrgId, user_id: &UserId) -> Option<&DirectoryUser> {
        self.orgs.get(org_id)?.get(user_id)
    }

    /// The users of `org_id`, ordered by id; empty for an unknown organisation.
    pub fn users(&self, org_id: &OrgId) -> impl Iterator<Item = &DirectoryUser> {
        self.orgs.get(org_id).into_iter().flat_map(BTreeMap::values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_has_an_admin_a_manager_and_staff_in_each_org() {
        let directory = DirectoryState::seeded();
        for org_id in ["acme", "globex"] {
            let mut roles: Vec<&str> = directory
                .users(&OrgId::from(org_id))
                .flat_map(|user| user.roles.iter().map(Role::as_str))
                .collect();
            roles.sort_unstable();
            assert_eq!(roles, ["admin", "manager", "staff"], "{org_id}");
        }
    }

    #[test]
    fn finds_users_only_in_their_own_org() {
        let directory = DirectoryState::seeded();
        let acme = OrgId::from("acme");
        let globex = OrgId::from("globex");
        let mark = directory
            .find(&acme, &UserId::from("mark"))
            .expect("mark is in acme");
        assert_eq!(mark.name, "Mark Mendez");
        assert!(directory.find(&globex, &UserId::from("mark")).is_none());
        assert!(directory.find(&acme, &UserId::from("gina")).is_none());
        assert!(
            directory
                .find(&OrgId::from("initech"), &UserId::from("alice"))
                .is_none()
        );
    }

    #[test]
    fn adds_a_user_once_per_org() {
        let mut directory = DirectoryState::seeded();
        let acme = OrgId::from("acme");
        let nina = DirectoryUser {
            user_id: UserId::from("nina"),
            name: "Nina Novak".to_owned(),
            roles: vec![Role::from("staff")],
        };
        assert_eq!(directory.add(acme.clone(), nina.clone()), Ok(nina.clone()));
        assert_eq!(directory.find(&acme, &UserId::from("nina")), Some(&nina));
        let before = directory.clone();
        let error = directory
            .add(acme, nina.clone())
            .expect_err("nina is in acme already");
        assert_eq!(error.code(), "member_exists");
        assert_eq!(directory, before);
        assert!(directory.add(OrgId::from("globex"), nina).is_ok());
    }

    #[test]
    fn unknown_org_has_no_users() {
        assert_eq!(
            DirectoryState::seeded()
                .users(&OrgId::from("initech"))
                .count(),
            0
        );
    }
}
