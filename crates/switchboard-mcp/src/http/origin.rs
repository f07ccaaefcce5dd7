//! DNS-rebinding protection: which `Host` and `Origin` headers the HTTP endpoint accepts.
//!
//! A web page on `evil.example` can make a browser send requests to a server on the user's
//! loopback interface by pointing its own name at `127.0.0.1` (DNS rebinding). Such requests
//! carry `Host: evil.example:PORT` and `Origin: http://evil.example:PORT`, so the endpoint
//! refuses, with `403`:
//!
//! - a `Host` that is not `localhost`, `127.0.0.1`, `::1` (any port), the bound address when
//!   it is a specific one, or an `--allow-host` entry;
//! - a present `Origin` that is not one of the loopback origins of the bound port
//!   (`http://localhost:PORT`, `http://127.0.0.1:PORT`, `http://[::1]:PORT`), the bound
//!   address's own origin, or an `--allow-origin` entry. A request without `Origin` (every
//!   non-browser client) passes; `Origin: null` (sandboxed frames, `file:` pages) never does.
//!
//! This check runs before authentication, so a rebinding page learns nothing, not even whether
//! a token would be needed. rmcp's own `Host` check (same list) still runs further in.

use std::{fmt, net::SocketAddr, str::FromStr};

use axum::http::{HeaderMap, StatusCode, Uri, header, uri::Authority};

use super::reject::Refusal;

/// An `--allow-origin` or `--allow-host` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllowListError {
    /// Not an origin.
    #[error(
        "`{value}` is not an origin ({reason}): write it as scheme://host[:port], for example \
         http://localhost:6274"
    )]
    Origin {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Not a host.
    #[error(
        "`{value}` is not a host ({reason}): write a host name or an IP address, optionally with \
         :port, for example mcp.example.com or 10.0.0.5:8080"
    )]
    Host {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// A browser origin allowed to call the endpoint: scheme, host and port (RFC 6454).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllowedOrigin {
    scheme: String,
    /// Lower case, IPv6 without brackets.
    host: String,
    /// The explicit port, else the scheme's default (80, 443); `None` for schemes without one.
    port: Option<u16>,
}

impl AllowedOrigin {
    /// Parses `scheme://host[:port]` (a trailing `/` is tolerated; a path, query, or user
    /// name is not).
    pub fn parse(text: &str) -> Result<Self, AllowListError> {
        let fail = |reason| AllowListError::Origin {
            value: text.to_owned(),
            reason,
        };
        let uri = Uri::try_from(text.trim()).map_err(|_| fail("not a URL"))?;
        let scheme = uri.scheme_str().ok_or_else(|| fail("no scheme"))?;
        let authority = uri.authority().ok_or_else(|| fail("no host"))?;
        if authority.as_str().contains('@') {
            return Err(fail("an origin has no user name"));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(fail("an origin has no path or query"));
        }
        let scheme = scheme.to_ascii_lowercase();
        let port = authority.port_u16().or(match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        });
        Ok(Self {
            scheme,
            host: normalize_host(authority.host()),
            port,
        })
    }

    /// `http://host:port`.
    fn http(host: &str, port: u16) -> Self {
        Self {
            scheme: "http".to_owned(),
            host: normalize_host(host),
            port: Some(port),
        }
    }
}

impl FromStr for AllowedOrigin {
    type Err = AllowListError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for AllowedOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme)?;
        write_host(f, &self.host)?;
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// A `Host` the endpoint answers to: a name or address, on any port unless one is given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllowedHost {
    /// Lower case, IPv6 without brackets.
    host: String,
    port: Option<u16>,
}

impl AllowedHost {
    /// Parses `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address.
    pub fn parse(text: &str) -> Result<Self, AllowListError> {
        let text = text.trim();
        let fail = |reason| AllowListError::Host {
            value: text.to_owned(),
            reason,
        };
        if text.is_empty() {
            return Err(fail("it is empty"));
        }
        if let Ok(address) = text.parse::<std::net::IpAddr>() {
            return Ok(Self::any_port(&address.to_string()));
        }
        let authority = Authority::from_str(text).map_err(|_| fail("not a host[:port]"))?;
        if authority.as_str().contains('@') {
            return Err(fail("a host has no user name"));
        }
        Ok(Self {
            host: normalize_host(authority.host()),
            port: authority.port_u16(),
        })
    }

    fn any_port(host: &str) -> Self {
        Self {
            host: normalize_host(host),
            port: None,
        }
    }

    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        self.host == host && self.port.is_none_or(|allowed| Some(allowed) == port)
    }
}

impl FromStr for AllowedHost {
    type Err = AllowListError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_host(f, &self.host)?;
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// The hosts and origins one endpoint accepts.
#[derive(Debug, Clone)]
pub(crate) struct RebindingGuard {
    hosts: Vec<AllowedHost>,
    origins: Vec<AllowedOrigin>,
}

impl RebindingGuard {
    /// The defaults for an endpoint bound to `bound` (with its real port), plus the extras.
    pub(crate) fn new(
        bound: SocketAddr,
        extra_hosts: &[AllowedHost],
        extra_origins: &[AllowedOrigin],
    ) -> Self {
        let port = bound.port();
        let mut hosts: Vec<AllowedHost> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(AllowedHost::any_port)
            .collect();
        let mut origins: Vec<AllowedOrigin> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(|host| AllowedOrigin::http(host, port))
            .collect();
        let ip = bound.ip().to_canonical();
        if !ip.is_unspecified() && !ip.is_loopback() {
            hosts.push(AllowedHost::any_port(&ip.to_string()));
            origins.push(AllowedOrigin::http(&ip.to_string(), port));
        }
        for host in extra_hosts {
            if !hosts.contains(host) {
                hosts.push(host.clone());
            }
        }
        for origin in extra_origins {
            if !origins.contains(origin) {
                origins.push(origin.clone());
            }
        }
        Self { hosts, origins }
    }

    /// The accepted hosts (also handed to rmcp's own check).
    pub(crate) fn hosts(&self) -> &[AllowedHost] {
        &self.hosts
    }

    /// Refuses (400 or 403) a request whose `Host` or `Origin` is not accepted.
    pub(crate) fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        self.check_host(uri, headers)?;
        self.check_origin(headers)
    }

    fn check_host(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let mut values = headers.get_all(header::HOST).iter();
        let first = values.next();
        if values.next().is_some() {
            // RFC 9112 §3.2: a request with more than one Host header is answered 400.
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "Bad Request: the request has more than one Host header",
            ));
        }
        let authority = match first {
            Some(value) => value
                .to_str()
                .ok()
                .and_then(|text| Authority::from_str(text).ok()),
            None => uri.authority().cloned(),
        };
        // A port that is not a number from 0 to 65535 makes the whole Host malformed, and a
        // user name has no place in it.
        let authority = authority.filter(|authority| {
            has_valid_port(authority.as_str()) && !authority.as_str().contains('@')
        });
        let Some(authority) = authority else {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "Bad Request: the Host header is missing or malformed",
            ));
        };
        let host = normalize_host(authority.host());
        if self
            .hosts
            .iter()
            .any(|allowed| allowed.matches(&host, authority.port_u16()))
        {
            return Ok(());
        }
        tracing::warn!(
            host = authority.as_str(),
            "refused an MCP request: Host not allowed (possible DNS rebinding)"
        );
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "Forbidden: Host `{}` is not allowed (DNS-rebinding protection); the server's \
                 operator can allow it with --allow-host",
                authority.as_str()
            ),
        ))
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(value) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let text = value.to_str().unwrap_or("");
        let origin = AllowedOrigin::parse(text).ok();
        if origin
            .as_ref()
            .is_some_and(|origin| self.origins.contains(origin))
        {
            return Ok(());
        }
        tracing::warn!(
            origin = text,
            "refused an MCP request: Origin not allowed (possible DNS rebinding)"
        );
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "Forbidden: Origin `{text}` is not allowed (DNS-rebinding protection); the \
                 server's operator can allow it with --allow-origin"
            ),
        ))
    }
}

/// Whether the port of `authority` (the text after the host), if any, is a number from 0 to
/// 65535 (`http` accepts any digits there and then reports no port).
fn has_valid_port(authority: &str) -> bool {
    let after_host = authority
        .rsplit_once(']')
        .map_or(authority, |(_, rest)| rest);
    match after_host.rsplit_once(':') {
        None | Some((_, "")) => true,
        Some((_, port)) => port.parse::<u16>().is_ok(),
    }
}

/// Lower case, without IPv6 brackets.
fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

fn write_host(f: &mut fmt::Formatter<'_>, host: &str) -> fmt::Result {
    if host.contains(':') {
        write!(f, "[{host}]")
    } else {
        f.write_str(host)
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn guard() -> RebindingGuard {
        RebindingGuard::new(
            "127.0.0.1:8080".parse().expect("an address"),
            &[AllowedHost::parse("mcp.example.com").expect("a host")],
            &[AllowedOrigin::parse("http://localhost:6274").expect("an origin")],
        )
    }

    fn status(host: Option<&str>, origin: Option<&str>) -> Option<StatusCode> {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, HeaderValue::from_str(host).expect("a value"));
        }
        if let Some(origin) = origin {
            headers.insert(
                header::ORIGIN,
                HeaderValue::from_str(origin).expect("a value"),
            );
        }
        let uri = Uri::from_static("/mcp");
        guard()
            .check(&uri, &headers)
            .err()
            .map(|refusal| refusal.status)
    }

    #[test]
    fn loopback_hosts_pass_on_any_port_and_strangers_are_forbidden() {
        assert_eq!(status(Some("127.0.0.1:8080"), None), None);
        assert_eq!(status(Some("localhost"), None), None);
        assert_eq!(status(Some("[::1]:9"), None), None);
        assert_eq!(status(Some("MCP.example.com:443"), None), None);
        assert_eq!(
            status(Some("evil.example.com:8080"), None),
            Some(StatusCode::FORBIDDEN)
        );
        assert_eq!(status(None, None), Some(StatusCode::BAD_REQUEST));
        for malformed in [
            "localhost:99999",
            "localhost:-1",
            "user@localhost",
            "localhost:8x",
        ] {
            assert_eq!(
                status(Some(malformed), None),
                Some(StatusCode::BAD_REQUEST),
                "{malformed}"
            );
        }
    }

    #[test]
    fn two_host_headers_are_a_bad_request() {
        let mut headers = HeaderMap::new();
        headers.append(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        headers.append(header::HOST, HeaderValue::from_static("evil.example.com"));
        let refusal = guard()
            .check(&Uri::from_static("/mcp"), &headers)
            .expect_err("refused");
        assert_eq!(refusal.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn origins_must_be_the_bound_ports_loopback_ones_or_allowed() {
        let host = Some("127.0.0.1:8080");
        assert_eq!(status(host, Some("http://127.0.0.1:8080")), None);
        assert_eq!(status(host, Some("http://LOCALHOST:8080")), None);
        assert_eq!(status(host, Some("http://[::1]:8080")), None);
        assert_eq!(status(host, Some("http://localhost:6274")), None);
        for refused in [
            "http://127.0.0.1:9999",
            "https://127.0.0.1:8080",
            "http://evil.example.com:8080",
            "null",
            "not an origin",
        ] {
            assert_eq!(
                status(host, Some(refused)),
                Some(StatusCode::FORBIDDEN),
                "{refused}"
            );
        }
    }

    #[test]
    fn allow_list_values_parse_strictly_and_print_back() {
        let origin = AllowedOrigin::parse("HTTPS://App.Example.com/").expect("an origin");
        assert_eq!(origin.to_string(), "https://app.example.com:443");
        assert_eq!(
            AllowedOrigin::parse("http://[::1]:6274")
                .expect("an origin")
                .to_string(),
            "http://[::1]:6274"
        );
        for bad in ["localhost:6274", "http://x/path", "http://u@x", ""] {
            assert!(AllowedOrigin::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            AllowedHost::parse("::1").expect("a host").to_string(),
            "[::1]"
        );
        assert_eq!(
            AllowedHost::parse("10.0.0.5:8080")
                .expect("a host")
                .to_string(),
            "10.0.0.5:8080"
        );
        assert!(AllowedHost::parse("").is_err());
        assert!(AllowedHost::parse("a b").is_err());
    }

    #[test]
    fn a_specific_bound_address_is_its_own_host_and_origin() {
        let guard = RebindingGuard::new("10.0.0.5:8080".parse().expect("an address"), &[], &[]);
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("10.0.0.5:8080"));
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://10.0.0.5:8080"),
        );
        assert!(guard.check(&Uri::from_static("/mcp"), &headers).is_ok());
    }
}
