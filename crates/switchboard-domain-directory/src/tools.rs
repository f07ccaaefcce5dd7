//! The `core` domain's tools: `core_get_current_user`, `core_list_users` and `core_add_member`.
//!
//! Each reads the caller's organisation from the verified context and touches only that
//! organisation of the [`DirectoryState`]. `core_list_users` is also what the orchestrator
//! reads to turn a name in an utterance ("assign it to Sam") into a user id. `core_add_member`
//! (execute) is the one write, applied through `ctx.write` in the domain's actor; it records a
//! new person in the directory, the first step of onboarding them.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{NoInput, OrgId, Role, ToolContext, ToolError, ToolInput, UserId, tool};
use validator::{Validate, ValidationError};

use crate::directory::{DirectoryState, DirectoryUser};

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

/// A person to add to the caller's organisation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct AddMemberInput {
    /// The new member's user id, unique within your organisation (for example `nina`).
    #[validate(length(min = 1, max = 64))]
    pub user_id: String,
    /// The new member's display name (for example `Nina Novak`).
    #[validate(length(min = 1, max = 100))]
    pub name: String,
    /// The roles to record for the new member (for example `["staff"]`): one to eight, each
    /// 1 to 32 characters.
    #[validate(length(min = 1, max = 8), custom(function = check_roles))]
    pub roles: Vec<String>,
}

fn check_roles(roles: &[String]) -> Result<(), ValidationError> {
    match roles
        .iter()
        .find(|role| role.is_empty() || role.chars().count() > 32)
    {
        Some(role) => Err(
            ValidationError::new("role_length").with_message(Cow::Owned(format!(
                "the role \"{role}\" is not 1 to 32 characters long; name each role, like `staff`"
            ))),
        ),
        None => Ok(()),
    }
}

/// A member of an organisation, as the directory records them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Member {
    /// The member's user id.
    pub user_id: String,
    /// The member's display name.
    pub name: String,
    /// The roles the directory records for the member.
    pub roles: Vec<String>,
    /// The organisation the member belongs to.
    pub org_id: String,
}

/// Adds a person to your organisation's directory, with their user id, display name and
/// roles, and returns them. Refuses a user id your organisation already has (`member_exists`).
#[tool(
    name = "core_add_member",
    title = "Add a member",
    domain = crate::Directory,
    category = execute,
    permission = "core.users.add"
)]
pub async fn add_member(
    ctx: &ToolContext<DirectoryState>,
    input: AddMemberInput,
) -> Result<Member, ToolError> {
    let org_id: OrgId = ctx.caller().org_id.clone();
    let user = DirectoryUser {
        user_id: UserId::from(input.user_id.as_str()),
        name: input.name,
        roles: input
            .roles
            .iter()
            .map(|role| Role::from(role.as_str()))
            .collect(),
    };
    let write_org_id = org_id.clone();
    let added = ctx
        .write(move |directory| directory.add(write_org_id, user))
        .await??;
    Ok(Member {
        user_id: added.user_id.to_string(),
        name: added.name,
        roles: added.roles.iter().map(Role::to_string).collect(),
        org_id: org_id.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use switchboard_core::{Category, Tool, linked_tools, schema::find_org_id_property};
    use validator::Validate;

    use super::*;
    use futures::executor::block_on;

    use crate::testing::{context, execute_context};

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

    fn nina() -> AddMemberInput {
        AddMemberInput {
            user_id: "nina".to_owned(),
            name: "Nina Novak".to_owned(),
            roles: vec!["staff".to_owned()],
        }
    }

    #[test]
    fn an_added_member_is_listed_in_their_org_only() {
        let ctx = execute_context("acme", "mark", "core_add_member");
        let member = block_on(AddMember::call(&ctx, nina())).expect("adds");
        assert_eq!(
            member,
            Member {
                user_id: "nina".to_owned(),
                name: "Nina Novak".to_owned(),
                roles: vec!["staff".to_owned()],
                org_id: "acme".to_owned(),
            }
        );
        let list = block_on(ListUsers::call(&ctx, NoInput {})).expect("lists");
        let ids: Vec<&str> = list
            .users
            .iter()
            .map(|user| user.user_id.as_str())
            .collect();
        assert_eq!(ids, ["alice", "mark", "nina", "sam"]);
        let directory = ctx.state();
        assert!(
            directory
                .find(&OrgId::from("globex"), &UserId::from("nina"))
                .is_none()
        );
    }

    #[test]
    fn adding_an_existing_member_is_refused() {
        let ctx = execute_context("acme", "mark", "core_add_member");
        let sam = AddMemberInput {
            user_id: "sam".to_owned(),
            ..nina()
        };
        let error = block_on(AddMember::call(&ctx, sam)).expect_err("sam is in acme");
        assert_eq!(error.code(), "member_exists");
        assert!(error.message().contains("`sam`"), "{}", error.message());
        assert_eq!(*ctx.state(), DirectoryState::seeded());
    }

    #[test]
    fn a_read_context_cannot_add() {
        let ctx = context("acme", "mark", &["manager"]);
        let error = block_on(AddMember::call(&ctx, nina())).expect_err("read contexts never write");
        assert_eq!(error.code(), "write_not_allowed");
    }

    #[test]
    fn roles_must_be_named() {
        let mut input = nina();
        assert!(input.validate().is_ok());
        input.roles = vec![];
        assert!(input.validate().is_err());
        input.roles = vec![String::new()];
        let errors = input.validate().expect_err("an empty role");
        assert!(
            errors.to_string().contains("1 to 32 characters"),
            "{errors}"
        );
        input.roles = vec!["x".repeat(33)];
        assert!(input.validate().is_err());
    }

    #[test]
    fn add_member_is_an_execute_tool() {
        assert_eq!(AddMember::SPEC.category, Category::Execute);
        assert_eq!(AddMember::SPEC.permission, "core.users.add");
        assert_eq!(AddMember::SPEC.domain, "core");
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
