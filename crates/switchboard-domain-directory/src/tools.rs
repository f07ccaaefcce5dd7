//! The `core` domain's tools: `core_get_current_user` and `core_list_users`.
//!
//! Both read the caller's organisation from the verified context and search only that
//! organisation of the [`DirectoryState`]. Neither writes. `core_list_users` is also what the
//! orchestrator reads to turn a name in an utterance ("assign it to Sam") into a user id.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{NoInput, Role, ToolContext, ToolError, tool};

use crate::directory::DirectoryState;

/// Who the caller is, as the runtime and the directory see them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CurrentUser {
    /// The caller's user id, from the call context.
    pub user_id: String,
    /// The caller's display name from the directory of their organisation; absent when the
    /// directory does not list them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The roles the caller holds in this call, from the call context.
    pub roles: Vec<String>,
    /// The organisation the caller acts for, from the call context.
    pub org_id: String,
}

/// Returns the calling user: their user id, display name, roles and organisation.
/// Use it to answer "who am I" or to learn which organisation and roles the session acts with.
#[tool(
    name = "core_get_current_user",
    title = "Who am I",
    domain = crate::Directory,
    category = read,
    permission = "core.users.read",
    intents = ["who am i", "current user", "me", "whoami"]
)]
pub async fn get_current_user(
    ctx: &ToolContext<DirectoryState>,
    _input: NoInput,
) -> Result<CurrentUser, ToolError> {
    let caller = ctx.caller();
    let directory = ctx.state();
    let name = directory
        .find(&caller.org_id, &caller.user_id)
        .map(|user| user.name.clone());
    Ok(CurrentUser {
        user_id: caller.user_id.to_string(),
        name,
        roles: caller.roles.iter().map(Role::to_string).collect(),
        org_id: caller.org_id.to_string(),
    })
}

/// One member of an organisation, as `core_list_users` shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserSummary {
    /// The member's user id.
    pub user_id: String,
    /// The member's display name.
    pub name: String,
}

/// The members of the caller's organisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserList {
    /// Every member, ordered by user id.
    pub users: Vec<UserSummary>,
}

/// Lists the members of your organisation: each one's user id and display name.
/// Use it to find the id of a colleague you know by name.
#[tool(
    name = "core_list_users",
    title = "List users",
    domain = crate::Directory,
    category = read,
    permission = "core.users.read",
    intents = ["[list|show] users|people|members|colleagues", "who works here"]
)]
pub async fn list_users(
    ctx: &ToolContext<DirectoryState>,
    _input: NoInput,
) -> Result<UserList, ToolError> {
    let users = ctx
        .state()
        .users(&ctx.caller().org_id)
        .map(|user| UserSummary {
            user_id: user.user_id.to_string(),
            name: user.name.clone(),
        })
        .collect();
    Ok(UserList { users })
}

#[cfg(test)]
mod tests {
    use switchboard_core::{Category, Tool, linked_tools, schema::find_org_id_property};

    use super::*;
    use futures::executor::block_on;

    use crate::testing::context;

    #[test]
    fn returns_the_caller_with_their_directory_name() {
        let ctx = context("acme", "mark", &["manager"]);
        let user = block_on(GetCurrentUser::call(&ctx, NoInput {})).expect("tool succeeds");
        assert_eq!(
            user,
            CurrentUser {
                user_id: "mark".to_owned(),
                name: Some("Mark Mendez".to_owned()),
                roles: vec!["manager".to_owned()],
                org_id: "acme".to_owned(),
            }
        );
    }

    #[test]
    fn a_user_of_another_org_has_no_name() {
        // `gina` exists, but in globex: calling as acme must not reveal her name.
        let ctx = context("acme", "gina", &["staff"]);
        let user = block_on(GetCurrentUser::call(&ctx, NoInput {})).expect("tool succeeds");
        assert_eq!(user.name, None);
        assert_eq!(user.org_id, "acme");
        assert_eq!(user.roles, ["staff"]);
    }

    #[test]
    fn roles_come_from_the_context_not_the_directory() {
        let ctx = context("globex", "sue", &["staff", "auditor"]);
        let user = block_on(GetCurrentUser::call(&ctx, NoInput {})).expect("tool succeeds");
        assert_eq!(user.name.as_deref(), Some("Sue Storm"));
        assert_eq!(user.roles, ["staff", "auditor"]);
    }

    #[test]
    fn lists_only_the_callers_organisation() {
        let ctx = context("globex", "sue", &["staff"]);
        let list = block_on(ListUsers::call(&ctx, NoInput {})).expect("tool succeeds");
        let ids: Vec<&str> = list
            .users
            .iter()
            .map(|user| user.user_id.as_str())
            .collect();
        assert_eq!(ids, ["gina", "hank", "sue"]);
        assert_eq!(list.users[2].name, "Sue Storm");
        let unknown = context("initech", "bob", &["staff"]);
        let list = block_on(ListUsers::call(&unknown, NoInput {})).expect("tool succeeds");
        assert!(list.users.is_empty());
    }

    #[test]
    fn is_linked_with_its_declared_spec() {
        let entry = linked_tools()
            .find(|entry| entry.spec.name == "core_get_current_user")
            .expect("the tool is linked");
        assert_eq!(entry.spec.domain, "core");
        assert_eq!(entry.spec.category, Category::Read);
        assert_eq!(entry.spec.permission, "core.users.read");
        assert!(entry.spec.intents.contains(&"who am i"));
        assert_eq!(
            find_org_id_property(&(entry.input_schema)().to_value()),
            None
        );
        assert!(
            switchboard_core::linked_domains().any(|domain| domain.name == "core"),
            "the core domain is declared"
        );
    }
}
