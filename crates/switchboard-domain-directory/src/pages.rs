//! The `core` domain's page: `/me`, who the caller is.

use switchboard_core::{NoInput, Page, PageError, PageLoader, PageSpec};

use crate::tools::{CurrentUser, GetCurrentUser, ListUsers, UserList};

/// `/me`: the caller, as the runtime and the directory see them.
#[derive(Debug)]
pub struct MePage;

impl Page for MePage {
    type Params = NoInput;
    type Data = CurrentUser;
    const SPEC: PageSpec = switchboard_core::page_spec! {
        domain: crate::Directory,
        route: "/me",
        title: "Me",
        description: "Who you are: your user id, name, roles and organisation.",
    };

    async fn load(loader: &PageLoader<'_>, _params: &NoInput) -> Result<CurrentUser, PageError> {
        loader.call::<GetCurrentUser>(NoInput {}).await
    }

    fn render(_params: &NoInput, user: &CurrentUser) -> String {
        format!(
            "- **User:** {name} (`{id}`)\n- **Organisation:** `{org}`\n- **Roles:** {roles}\n\n\
             [Your colleagues](/people)\n",
            name = user.name.as_deref().unwrap_or("not in the directory"),
            id = user.user_id,
            org = user.org_id,
            roles = user.roles.join(", "),
        )
    }
}

/// `/people`: the members of the caller's organisation.
#[derive(Debug)]
pub struct PeoplePage;

impl Page for PeoplePage {
    type Params = NoInput;
    type Data = UserList;
    const SPEC: PageSpec = switchboard_core::page_spec! {
        domain: crate::Directory,
        route: "/people",
        title: "People",
        description: "The members of your organisation, by user id and name.",
    };

    async fn load(loader: &PageLoader<'_>, _params: &NoInput) -> Result<UserList, PageError> {
        loader.call::<ListUsers>(NoInput {}).await
    }

    fn render(_params: &NoInput, list: &UserList) -> String {
        list.users
            .iter()
            .map(|user| format!("- {} (`{}`)\n", user.name, user.user_id))
            .collect()
    }
}

switchboard_core::page!(MePage);
switchboard_core::page!(PeoplePage);
