//! A served runtime and the HTTP helpers the tests share.

use std::sync::Arc;

use reqwest::{Client, Response, StatusCode, header};
use switchboard::{Switchboard, ToolRegistry};
use switchboard_domains as _;
use switchboard_mcp::{HttpAuth, HttpConfig, HttpServer, Identity, TokenTable, token_sha256_hex};
use switchboard_navigation::Navigator;
use switchboard_web::{Person, SignIn, WebConfig};
use switchboard_workflows::{MemoryRunStore, RunStore};
use switchboard_workflows_engine::{Engine, EngineOptions};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

pub(crate) const OPEN_SHIFT: &str = "/roster/shifts/acme-2026-11-24-pm";
pub(crate) const SEED_WEEK: &str = "/roster/weeks/2026-11-23";

/// The tokens of the served token table: (token, org, user, role).
const TOKENS: [(&str, &str, &str, &str); 4] = [
    ("sam-token", "acme", "sam", "staff"),
    ("mark-token", "acme", "mark", "manager"),
    ("alice-token", "acme", "alice", "admin"),
    ("gina-token", "globex", "gina", "admin"),
];

/// A running runtime and its HTTP server.
pub(crate) struct Served {
    _runtime: Switchboard,
    /// The engine whose runs' events the pages serve.
    pub(crate) engine: Engine,
    pub(crate) registry: ToolRegistry,
    server: HttpServer,
    pub(crate) client: Client,
}

impl Served {
    /// Serves with the tokens of [`TOKENS`].
    pub(crate) async fn with_tokens() -> Self {
        let file: String = TOKENS
            .iter()
            .map(|(token, org, user, role)| {
                format!(
                    "[[token]]\nsha256 = \"{}\"\norg = \"{org}\"\nuser = \"{user}\"\nroles = [\"{role}\"]\n",
                    token_sha256_hex(token)
                )
            })
            .collect();
        let table = TokenTable::from_toml(&file, "tokens.toml").expect("a valid token table");
        let lookup = table.clone();
        let sign_in = SignIn::Tokens(Arc::new(move |token: &str| {
            lookup.identity(token).map(|identity| Person {
                org: identity.org.clone(),
                user: identity.user.clone(),
                roles: identity.roles.clone(),
            })
        }));
        Self::start(HttpAuth::Tokens(table), sign_in).await
    }

    /// Serves without sign-in, as `sam` (staff in acme).
    pub(crate) async fn as_operator() -> Self {
        let identity = Identity::agent("acme", "sam").with_role("staff");
        let person = Person::new("acme", "sam").with_role("staff");
        Self::start(HttpAuth::Operator(identity), SignIn::Operator(person)).await
    }

    async fn start(auth: HttpAuth, sign_in: SignIn) -> Self {
        let runtime = Switchboard::start(ToolRegistry::builder())
            .await
            .expect("the runtime boots with the sample domains");
        let navigator =
            Navigator::new(runtime.registry.clone()).expect("the sample pages are valid");
        let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let engine = Engine::new(runtime.registry.clone(), store, EngineOptions::default());
        let web = WebConfig::new(sign_in).workflows(engine.clone(), CancellationToken::new());
        let pages = switchboard_web::router(Arc::new(navigator), web);
        let config = HttpConfig::new("127.0.0.1:0".parse().expect("an address"), auth)
            .expect("a loopback address");
        let server =
            switchboard_mcp::serve_http_with_pages(runtime.registry.clone(), config, pages)
                .await
                .expect("the server starts");
        let client = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client");
        Self {
            registry: runtime.registry.clone(),
            _runtime: runtime,
            engine,
            server,
            client,
        }
    }

    /// The absolute URL of `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.server.local_addr())
    }

    /// `GET path` with `Accept: accept` and the session `cookie`, if any.
    pub(crate) async fn get(&self, path: &str, accept: &str, cookie: Option<&str>) -> Response {
        let mut request = self
            .client
            .get(self.url(path))
            .header(header::ACCEPT, accept);
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        request.send().await.expect("the server answers")
    }

    /// The HTML page at `path` for the holder of `cookie`, checked to be `200`.
    pub(crate) async fn html(&self, path: &str, cookie: Option<&str>) -> String {
        let response = self.get(path, "text/html", cookie).await;
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.text().await.expect("a body")
    }

    /// Signs in with `token`; the `Cookie` header value of the session.
    pub(crate) async fn sign_in(&self, token: &str) -> String {
        let response = self.post_sign_in(token).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let set_cookie = response
            .headers()
            .get(header::SET_COOKIE)
            .expect("a session cookie")
            .to_str()
            .expect("text");
        set_cookie.split(';').next().expect("name=value").to_owned()
    }

    /// `POST /sign-in` with `token`.
    pub(crate) async fn post_sign_in(&self, token: &str) -> Response {
        self.client
            .post(self.url("/sign-in"))
            .header(header::ORIGIN, self.url(""))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(format!("token={token}&next=%2Froster"))
            .send()
            .await
            .expect("the server answers")
    }

    /// Posts `fields` (already URL-encoded pairs) to `path` as a form, with `cookie`.
    pub(crate) async fn post_form(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        cookie: Option<&str>,
    ) -> Response {
        let body: Vec<String> = fields
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        let mut request = self
            .client
            .post(self.url(path))
            .header(header::ORIGIN, self.url(""))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body.join("&"));
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        request.send().await.expect("the server answers")
    }

    /// The status line and body of `GET raw_path`, sent byte for byte (a client library would
    /// normalise `..` and `%2e%2e` away).
    pub(crate) async fn raw_get(&self, raw_path: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(self.server.local_addr())
            .await
            .expect("connects");
        let request = format!(
            "GET {raw_path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/markdown\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.expect("writes");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("reads");
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .expect("a status line");
        (status, answer)
    }
}

/// The value of the first hidden input `name` in `html`.
pub(crate) fn hidden(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker).expect("the field is in the page") + marker.len();
    let end = html[start..].find('"').expect("a closing quote") + start;
    html[start..end].to_owned()
}

/// Whether `html` offers the action `name` as a form.
pub(crate) fn offers(html: &str, name: &str) -> bool {
    html.contains(&format!("name=\"_action\" value=\"{name}\""))
}
