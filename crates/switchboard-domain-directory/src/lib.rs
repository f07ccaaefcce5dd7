#![doc = include_str!("../README.md")]

mod directory;
mod pages;
#[cfg(test)]
mod testing;
mod tools;

pub use directory::{DirectoryError, DirectoryState, DirectoryUser};
pub use pages::{MePage, PeoplePage};
pub use tools::{
    AddMember, AddMemberInput, CurrentUser, GetCurrentUser, ListUsers, Member, UserList,
    UserSummary, add_member, get_current_user, list_users,
};

switchboard_core::domain! {
    /// Who is calling: the users of each organisation, their display names and roles.
    pub Directory { name: "core", state: DirectoryState = DirectoryState::seeded }
}

switchboard_core::default_grants! {
    domain: "core",
    toml: include_str!("../default-permissions.toml"),
}
