//! HTML for pages, errors and the sign-in form.
//!
//! Every value is interpolated through `maud`, which escapes it; page markdown becomes HTML
//! through `pulldown-cmark` and is then cleaned by `ammonia` (a whitelist of tags and
//! attributes, `rel="noopener noreferrer"` on links), the only place raw HTML enters a page.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use switchboard_core::Category;
use switchboard_navigation::{ActionMode, ActionView, PageView};

/// The form field that names the action.
pub(crate) const ACTION_FIELD: &str = "_action";
/// The form field that carries the page version the person saw.
pub(crate) const VERSION_FIELD: &str = "_version";
/// The form field that carries the anti-CSRF token.
pub(crate) const CSRF_FIELD: &str = "_csrf";
/// The checkbox that confirms a restricted action.
pub(crate) const CONFIRM_FIELD: &str = "_confirm";
/// The prefix of the fields of an action's parameters (`param.user_id`).
pub(crate) const PARAM_PREFIX: &str = "param.";

/// The stylesheet, inline in every page: no other request, nothing to build.
const STYLE: &str = "\
body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:0 auto;padding:0 1rem 3rem;color:#1d232a;background:#fbfbfc}\
header{display:flex;justify-content:space-between;align-items:center;gap:1rem;border-bottom:1px solid #d8dde3;padding:.6rem 0;margin-bottom:1rem}\
header a{color:inherit;text-decoration:none;font-weight:600}\
header form{display:inline;margin:0}\
a{color:#0b5cad}\
h1{font-size:1.6rem;margin:.5rem 0 1rem}h2{font-size:1.2rem;margin-top:2rem}\
table{border-collapse:collapse}td,th{border:1px solid #d8dde3;padding:.25rem .5rem;text-align:left}\
code{background:#eef1f4;padding:0 .2rem;border-radius:3px}\
.error{border:1px solid #d33;background:#fdeeee;padding:.6rem .8rem;border-radius:6px}\
.action{border:1px solid #d8dde3;background:#fff;border-radius:6px;padding:.8rem 1rem;margin:.8rem 0}\
.action h3{margin:0 0 .3rem;font-size:1.05rem}.action p{margin:.2rem 0}\
.how{color:#5a6570;font-size:.9rem}\
label{display:block;margin:.5rem 0}label small{display:block;color:#5a6570}\
input[type=text],input[type=number],input[type=password]{width:100%;max-width:24rem;padding:.35rem;border:1px solid #b8c0c8;border-radius:4px}\
button{margin-top:.5rem;padding:.4rem .9rem;border:0;border-radius:4px;background:#0b5cad;color:#fff;font:inherit;cursor:pointer}\
button.confirm{background:#b3261e}header button{margin:0;background:none;color:#0b5cad;padding:0}";

/// A page's common frame: head, header (who is signed in) and `body`.
fn layout(title: &str, who: Option<&Signed<'_>>, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Switchboard" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    a href="/" { "Switchboard" }
                    @if let Some(who) = who {
                        span {
                            (who.name)
                            @if who.can_sign_out {
                                " · "
                                form method="post" action="/sign-out" {
                                    input type="hidden" name=(CSRF_FIELD) value=(who.csrf);
                                    button type="submit" { "Sign out" }
                                }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
    .into_string()
}

/// Who a page is shown to, for its header and forms.
#[derive(Debug)]
pub(crate) struct Signed<'a> {
    /// `org/user`.
    pub(crate) name: String,
    /// The anti-CSRF token for this person's forms.
    pub(crate) csrf: &'a str,
    /// Whether they signed in (and so may sign out).
    pub(crate) can_sign_out: bool,
}

/// Markdown as sanitised HTML.
pub(crate) fn markdown_html(markdown: &str) -> String {
    let parser = pulldown_cmark::Parser::new_ext(markdown, pulldown_cmark::Options::ENABLE_TABLES);
    let mut unsafe_html = String::new();
    pulldown_cmark::html::push_html(&mut unsafe_html, parser);
    ammonia::clean(&unsafe_html)
}

/// A page: its title, content, an error from the last action (if any) and its actions as
/// forms.
pub(crate) fn page(view: &PageView, path: &str, who: &Signed<'_>, error: Option<&str>) -> String {
    let body = html! {
        h1 { (view.title) }
        @if let Some(error) = error {
            p.error role="alert" { (error) }
        }
        (PreEscaped(markdown_html(&view.content)))
        h2 { "Available actions" }
        @if view.actions.is_empty() {
            p { "None for you here." }
        }
        @for action in &view.actions {
            (action_form(action, path, &view.version, who.csrf))
        }
    };
    layout(view.title, Some(who), body)
}

/// One action as a form that posts it to the page's own path.
fn action_form(action: &ActionView, path: &str, version: &str, csrf: &str) -> Markup {
    let (how, button) = match action.mode {
        ActionMode::Run => match action.category {
            Category::Read => ("Reads, changes nothing.", "Run"),
            Category::Propose => ("Proposes, changes nothing.", "Propose"),
            Category::Execute | Category::Restricted => ("Changes data.", "Run"),
        },
        ActionMode::Confirm => (
            "Changes data and cannot be undone: confirm to run it.",
            "Run",
        ),
        ActionMode::Propose => ("Becomes a proposal that a person approves.", "Propose"),
    };
    let confirm = action.mode == ActionMode::Confirm;
    html! {
        form.action method="post" action=(path) {
            h3 { (action.name) }
            p { (action.description) }
            p.how { (how) }
            input type="hidden" name=(ACTION_FIELD) value=(action.name);
            input type="hidden" name=(VERSION_FIELD) value=(version);
            input type="hidden" name=(CSRF_FIELD) value=(csrf);
            @for param in &action.params {
                @let input_type = if matches!(param.json_type.as_str(), "integer" | "number") { "number" } else { "text" };
                label {
                    code { (param.name) }
                    " (" (param.json_type) ", " (if param.required { "required" } else { "optional" }) ")"
                    input type=(input_type) name={ (PARAM_PREFIX) (param.name) } required[param.required]
                        step=[(param.json_type == "number").then_some("any")];
                    @if !param.description.is_empty() {
                        small { (param.description) }
                    }
                }
            }
            @if confirm {
                label {
                    input type="checkbox" name=(CONFIRM_FIELD) value="yes" required;
                    " I confirm: run " code { (action.name) } " now."
                }
            }
            button type="submit" class=[confirm.then_some("confirm")] { (button) " " (action.name) }
        }
    }
}

/// A page that could not be shown (or an answer that is not a page): `title`, the message
/// and the nearest routes to try.
pub(crate) fn problem(
    title: &str,
    message: &str,
    nearest: &[String],
    who: Option<&Signed<'_>>,
) -> String {
    let body = html! {
        h1 { (title) }
        p.error role="alert" { (message) }
        @if !nearest.is_empty() {
            p { "The nearest pages:" }
            ul {
                @for route in nearest {
                    li { code { (route) } }
                }
            }
        }
        p { a href="/" { "Start at the home page" } ", which lists the pages you can reach." }
    };
    layout(title, who, body)
}

/// The sign-in form, returning to `next` afterwards.
pub(crate) fn sign_in(next: &str, error: Option<&str>) -> String {
    let body = html! {
        h1 { "Sign in" }
        @if let Some(error) = error {
            p.error role="alert" { (error) }
        }
        p { "Sign in with your access token: the same bearer token an agent of yours uses." }
        form method="post" action="/sign-in" {
            input type="hidden" name="next" value=(next);
            label {
                "Token"
                input type="password" name="token" autocomplete="current-password" required;
            }
            button type="submit" { "Sign in" }
        }
    };
    layout("Sign in", None, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_rendered_and_sanitised() {
        let html = markdown_html(
            "Hello **there** [home](/) <script>alert(1)</script> \
             [x](javascript:alert(1)) <img src=x onerror=alert(1)>",
        );
        assert!(html.contains("<strong>there</strong>"), "{html}");
        assert!(html.contains("href=\"/\""), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("onerror"), "{html}");
    }

    #[test]
    fn interpolated_values_are_escaped() {
        let html = problem("<b>", "\"><script>x</script>", &["<i>".to_owned()], None);
        assert!(!html.contains("<script>x"), "{html}");
        assert!(html.contains("&lt;b&gt;"), "{html}");
        assert!(html.contains("&lt;i&gt;"), "{html}");
    }
}
