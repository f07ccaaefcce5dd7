//! The handlers: a page (`GET`), an action posted from its form (`POST`), sign-in and
//! sign-out.

use std::sync::Arc;

use axum::{
    Form,
    extract::{FromRequest as _, Query, Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use cookie::{Cookie, SameSite};
use serde_json::{Map, Value};
use switchboard_core::{CallContext, Initiator};
use switchboard_navigation::{NavError, Navigator, PageView, ParamView, truncated};
use tracing::Instrument as _;

use crate::{
    SESSION_COOKIE, SIGN_IN_PATH,
    config::WebConfig,
    guard,
    negotiate::{Format, HTML_TYPE, MARKDOWN_TYPE, negotiate},
    person::{Person, SignIn},
    render::{self, ACTION_FIELD, CONFIRM_FIELD, CSRF_FIELD, PARAM_PREFIX, Signed, VERSION_FIELD},
    session::Sessions,
    status,
};

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct AppState(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    navigator: Arc<Navigator>,
    config: WebConfig,
    sessions: Sessions,
}

impl AppState {
    pub(crate) fn new(navigator: Arc<Navigator>, config: WebConfig) -> Self {
        Self(Arc::new(Shared {
            navigator,
            config,
            sessions: Sessions::new(),
        }))
    }

    /// How the pages are served.
    pub(crate) fn config(&self) -> &WebConfig {
        &self.0.config
    }

    /// The context of a read by the person behind `headers` (a session cookie, a bearer token
    /// or the operator), and their `org/user`; `None` when nobody is signed in.
    pub(crate) fn caller(&self, headers: &HeaderMap) -> Option<(CallContext, String)> {
        let visitor = self.0.visitor(headers)?;
        Some((visitor.context(false), visitor.person.describe()))
    }
}

/// The person behind a request, and what their anti-CSRF token derives from.
#[derive(Debug)]
struct Visitor {
    person: Person,
    /// The session id of the registry's audit records.
    audit_session: String,
    /// The secret the anti-CSRF token is keyed on.
    csrf_basis: String,
    /// Signed in with a cookie (and so may sign out).
    signed_in: bool,
}

impl Visitor {
    /// The context of one call: a human, with a fresh correlation id.
    fn context(&self, confirmed: bool) -> CallContext {
        let mut builder = CallContext::builder()
            .session(self.audit_session.as_str())
            .correlation(switchboard_core::mint_id("web-req"))
            .initiator(Initiator::Human)
            .confirmed(confirmed)
            .roles(self.person.roles.iter().cloned());
        if let Some(org) = &self.person.org {
            builder = builder.org(org.as_str());
        }
        if let Some(user) = &self.person.user {
            builder = builder.user(user.as_str());
        }
        builder.build()
    }
}

impl Shared {
    /// Who sent `headers`: the operator, a signed-in session, or a bearer token's person.
    fn visitor(&self, headers: &HeaderMap) -> Option<Visitor> {
        match &self.config.sign_in {
            SignIn::Operator(person) => Some(Visitor {
                person: person.clone(),
                audit_session: "web-operator".to_owned(),
                csrf_basis: "operator".to_owned(),
                signed_in: false,
            }),
            SignIn::Tokens(check) => {
                if let Some(id) = session_cookie(headers)
                    && let Some(session) = self.sessions.find(&id)
                {
                    return Some(Visitor {
                        person: session.person,
                        audit_session: session.audit_id,
                        csrf_basis: id,
                        signed_in: true,
                    });
                }
                let token = headers
                    .get(header::AUTHORIZATION)?
                    .to_str()
                    .ok()?
                    .strip_prefix("Bearer ")?
                    .trim();
                let person = check(token)?;
                let token_hash = blake3::hash(token.as_bytes()).to_hex();
                Some(Visitor {
                    person,
                    audit_session: format!("web-bearer-{}", &token_hash[..16]),
                    csrf_basis: format!("bearer:{token_hash}"),
                    signed_in: false,
                })
            }
        }
    }

    /// The header and form details of pages shown to `visitor`.
    fn signed<'a>(&self, visitor: &Visitor, csrf: &'a str) -> Signed<'a> {
        Signed {
            name: visitor.person.describe(),
            csrf,
            can_sign_out: visitor.signed_in,
        }
    }
}

/// The session id of the request's cookie.
fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == SESSION_COOKIE)
        .map(|cookie| cookie.value().to_owned())
}

/// Whether the request reached us over https (through a proxy that says so).
pub(crate) fn over_https(request_headers: &HeaderMap) -> bool {
    request_headers
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
}

/// An answer with `body` of `content_type`, varying by `Accept`.
fn answer(status: StatusCode, content_type: &'static str, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::VARY, HeaderValue::from_static("Accept")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response()
}

/// A plain-text answer (`406`, `403`, ...).
fn plain(status: StatusCode, message: &str) -> Response {
    answer(status, "text/plain; charset=utf-8", format!("{message}\n"))
}

/// `303 See Other` to `location`.
fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// The answer to a request without a person: the sign-in form for a browser, `401` otherwise.
fn sign_in_first(format: Format, path: &str) -> Response {
    match format {
        Format::Html => {
            let next =
                percent_encoding::utf8_percent_encode(path, percent_encoding::NON_ALPHANUMERIC);
            see_other(&format!("{SIGN_IN_PATH}?next={next}"))
        }
        Format::Markdown => {
            let mut response = answer(
                StatusCode::UNAUTHORIZED,
                MARKDOWN_TYPE,
                format!(
                    "# Sign in first\n\nSend `Authorization: Bearer <token>`, or sign in at \
                     `{SIGN_IN_PATH}`.\n"
                ),
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"switchboard\""),
            );
            response
        }
    }
}

/// `406` for an `Accept` that asks for neither representation.
fn not_acceptable() -> Response {
    plain(
        StatusCode::NOT_ACCEPTABLE,
        "406 Not Acceptable: pages are served as text/html or text/markdown; ask for one of \
         them in Accept (or send */*)",
    )
}

/// The format a request asks for, from its `Accept` header.
fn format_of(headers: &HeaderMap) -> Option<Format> {
    match headers.get(header::ACCEPT) {
        None => Some(Format::Html),
        Some(value) => negotiate(Some(value.to_str().ok()?)),
    }
}

/// A page shown as `format`, with `error` (from an action) above it.
fn show(
    shared: &Shared,
    visitor: &Visitor,
    view: &PageView,
    path: &str,
    format: Format,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    match format {
        Format::Markdown => {
            let body = match error {
                Some(error) => format!("> **Error:** {error}\n\n{}", view.markdown()),
                None => view.markdown(),
            };
            answer(status, MARKDOWN_TYPE, body)
        }
        Format::Html => {
            let csrf = shared.sessions.csrf_token(&visitor.csrf_basis);
            let signed = shared.signed(visitor, &csrf);
            answer(status, HTML_TYPE, render::page(view, path, &signed, error))
        }
    }
}

/// A navigation error as a page (or markdown) of its own.
fn problem(
    shared: &Shared,
    visitor: Option<&Visitor>,
    error: &NavError,
    format: Format,
) -> Response {
    let (status, title) = status::of(error);
    let message = error.to_string();
    let nearest = match error {
        NavError::NoSuchPage { nearest, .. } => nearest.as_slice(),
        _ => &[],
    };
    match format {
        Format::Markdown => answer(status, MARKDOWN_TYPE, format!("# {title}\n\n{message}\n")),
        Format::Html => {
            let csrf = visitor.map(|visitor| shared.sessions.csrf_token(&visitor.csrf_basis));
            let signed = visitor
                .zip(csrf.as_deref())
                .map(|(visitor, csrf)| shared.signed(visitor, csrf));
            answer(
                status,
                HTML_TYPE,
                render::problem(title, &message, nearest, signed.as_ref()),
            )
        }
    }
}

/// Every path that is not sign-in or sign-out: `GET` shows the page, `POST` runs an action of
/// it.
pub(crate) async fn page(State(state): State<AppState>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let span = tracing::info_span!("web_page", %method, path = %truncated(&path));
    async move {
        let shared = &state.0;
        if !matches!(shared.config.sign_in, SignIn::Tokens(_))
            && !guard::host_allowed(request.headers(), &shared.config)
        {
            return plain(
                StatusCode::FORBIDDEN,
                "403 Forbidden: this server does not answer that Host (allow it with --allow-host)",
            );
        }
        let Some(format) = format_of(request.headers()) else {
            return not_acceptable();
        };
        match method {
            Method::GET | Method::HEAD => show_page(shared, request.headers(), &path, format).await,
            Method::POST => act(&state, request, &path, format).await,
            _ => {
                let mut response = plain(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "405 Method Not Allowed: open a page with GET, run an action with POST",
                );
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, POST"));
                response
            }
        }
    }
    .instrument(span)
    .await
}

/// `GET`: the page at `path`.
async fn show_page(shared: &Shared, headers: &HeaderMap, path: &str, format: Format) -> Response {
    let Some(visitor) = shared.visitor(headers) else {
        return sign_in_first(format, path);
    };
    match shared
        .navigator
        .navigate(path, &visitor.context(false))
        .await
    {
        Ok(view) => show(shared, &visitor, &view, path, format, StatusCode::OK, None),
        Err(error) => problem(shared, Some(&visitor), &error, format),
    }
}

/// `POST`: runs the action a page's form posted, then sends the browser to the page to look
/// at next (`303`), or shows the page again with the refusal.
async fn act(state: &AppState, request: Request, path: &str, format: Format) -> Response {
    let shared = &state.0;
    let https = over_https(request.headers());
    if !guard::same_origin(request.headers(), &shared.config, https) {
        return plain(
            StatusCode::FORBIDDEN,
            "403 Forbidden: a form may only be posted from this server's own pages",
        );
    }
    let Some(visitor) = shared.visitor(request.headers()) else {
        return sign_in_first(format, path);
    };
    let Ok(Form(fields)) = Form::<Vec<(String, String)>>::from_request(request, state).await else {
        return plain(
            StatusCode::BAD_REQUEST,
            "400 Bad Request: post an action as application/x-www-form-urlencoded, from its page",
        );
    };
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    if !field(CSRF_FIELD)
        .is_some_and(|token| shared.sessions.csrf_matches(&visitor.csrf_basis, token))
    {
        return plain(
            StatusCode::FORBIDDEN,
            "403 Forbidden: the form's anti-CSRF token is missing or stale; open the page again \
             and post its form",
        );
    }
    let Some(action) = field(ACTION_FIELD) else {
        return plain(
            StatusCode::BAD_REQUEST,
            "400 Bad Request: the form names no action; post one of the page's forms",
        );
    };
    let confirmed = field(CONFIRM_FIELD) == Some("yes");
    let version = field(VERSION_FIELD);
    let context = visitor.context(confirmed);
    // The action's tool tells each parameter's type, so a typed field becomes JSON of that
    // type; running the action checks everything, its availability included.
    let declared = shared.navigator.action_params(path, action);
    let params = params_of(&fields, &declared);
    match shared
        .navigator
        .execute_action(path, action, params, version, &context)
        .await
    {
        Ok(outcome) => see_other(&outcome.next_url),
        Err(error) => {
            let (status, _) = status::of(&error);
            let message = error.to_string();
            match shared
                .navigator
                .navigate(path, &visitor.context(false))
                .await
            {
                Ok(view) => show(
                    shared,
                    &visitor,
                    &view,
                    path,
                    format,
                    status,
                    Some(&message),
                ),
                Err(_) => problem(shared, Some(&visitor), &error, format),
            }
        }
    }
}

/// The `param.*` fields as JSON: a field of an `integer`, `number` or `boolean` parameter
/// becomes that type when it parses as one; an empty field is left out.
fn params_of(fields: &[(String, String)], declared: &[ParamView]) -> Value {
    let mut params = Map::new();
    for (key, value) in fields {
        let Some(name) = key.strip_prefix(PARAM_PREFIX) else {
            continue;
        };
        if value.trim().is_empty() {
            continue;
        }
        let json_type = declared
            .iter()
            .find(|param| param.name == name)
            .map_or("string", |param| param.json_type.as_str());
        let typed = match json_type {
            "integer" => value.trim().parse::<i64>().ok().map(Value::from),
            "number" => value.trim().parse::<f64>().ok().map(Value::from),
            "boolean" => value.trim().parse::<bool>().ok().map(Value::from),
            "array" | "object" => serde_json::from_str(value).ok(),
            _ => None,
        };
        params.insert(
            name.to_owned(),
            typed.unwrap_or_else(|| Value::String(value.clone())),
        );
    }
    Value::Object(params)
}

/// Where to go after signing in: a local path, else `/`.
fn local_path(next: Option<&str>) -> &str {
    match next {
        Some(next)
            if next.starts_with('/')
                && !next.starts_with("//")
                && !next.contains(['\\', '\r', '\n']) =>
        {
            next
        }
        _ => "/",
    }
}

/// The query of `GET /sign-in`.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct SignInQuery {
    next: Option<String>,
}

/// `GET /sign-in`: the form (without sign-in, straight to the page).
pub(crate) async fn sign_in_form(
    State(state): State<AppState>,
    Query(query): Query<SignInQuery>,
) -> Response {
    let next = local_path(query.next.as_deref());
    if matches!(state.0.config.sign_in, SignIn::Operator(_)) {
        return see_other(next);
    }
    answer(StatusCode::OK, HTML_TYPE, render::sign_in(next, None))
}

/// The posted sign-in form.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct SignInForm {
    token: String,
    next: Option<String>,
}

/// `POST /sign-in`: a valid token starts a session, kept in an `HttpOnly`, `SameSite=Strict`
/// cookie, and goes back to the page the person came from.
pub(crate) async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Response {
    let shared = &state.0;
    let https = over_https(&headers);
    if !guard::same_origin(&headers, &shared.config, https) {
        return plain(
            StatusCode::FORBIDDEN,
            "403 Forbidden: sign in from this server's own sign-in page",
        );
    }
    let next = local_path(form.next.as_deref());
    let SignIn::Tokens(check) = &shared.config.sign_in else {
        return see_other(next);
    };
    let Some(person) = check(form.token.trim()) else {
        tracing::info!("web sign-in refused: unknown token");
        return answer(
            StatusCode::UNAUTHORIZED,
            HTML_TYPE,
            render::sign_in(
                next,
                Some("That token is not valid here. Check it and try again."),
            ),
        );
    };
    let who = person.describe();
    let Some(id) = shared.sessions.start(person) else {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "503 Service Unavailable: too many people are signed in; try again later",
        );
    };
    tracing::info!(%who, "web sign-in");
    let cookie = Cookie::build((SESSION_COOKIE, id))
        .http_only(true)
        .same_site(SameSite::Strict)
        .path("/")
        .secure(https)
        .build();
    let mut response = see_other(next);
    if let Ok(value) = HeaderValue::from_str(&cookie.to_string()) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The posted sign-out form.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct SignOutForm {
    #[serde(rename = "_csrf")]
    csrf: String,
}

/// `POST /sign-out`: ends the session and clears the cookie.
pub(crate) async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<SignOutForm>,
) -> Response {
    let shared = &state.0;
    if let Some(id) = session_cookie(&headers) {
        if !shared.sessions.csrf_matches(&id, &form.csrf) {
            return plain(
                StatusCode::FORBIDDEN,
                "403 Forbidden: the form's anti-CSRF token is missing or stale",
            );
        }
        shared.sessions.end(&id);
    }
    let cookie = Cookie::build((SESSION_COOKIE, ""))
        .http_only(true)
        .same_site(SameSite::Strict)
        .path("/")
        .max_age(cookie::time::Duration::ZERO)
        .build();
    let mut response = see_other(SIGN_IN_PATH);
    if let Ok(value) = HeaderValue::from_str(&cookie.to_string()) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}
