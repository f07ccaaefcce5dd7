//! Host and Origin checks, in front of every page.
//!
//! Without sign-in (the operator's identity on a loopback address) a request carries no
//! credential at all, so a page of another site that gets its name resolved to 127.0.0.1
//! (DNS rebinding) could read pages and post forms. Such a request names the other site in
//! `Host`, so without sign-in only loopback hosts (and those allowed) are answered. A form post
//! must also come from the page's own origin (or an allowed one): `Origin`, when a browser
//! sends it, must match `Host`, and `Sec-Fetch-Site`, when sent, must be `same-origin` or
//! `none`. Requests that carry neither come from programs, which the anti-CSRF token checks.

use axum::http::{HeaderMap, header};

use crate::config::WebConfig;

/// Whether `Host` is a loopback name or address (any port), or allowed.
pub(crate) fn host_allowed(headers: &HeaderMap, config: &WebConfig) -> bool {
    let Some(host) = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
    else {
        return false;
    };
    let host = host.trim().to_ascii_lowercase();
    let name = host_name(&host);
    let loopback = name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.to_canonical().is_loopback());
    loopback
        || config
            .extra_hosts
            .iter()
            .any(|allowed| *allowed == host || *allowed == name)
}

/// `host[:port]` without its port (and IPv6 brackets).
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// Whether a form post comes from the page's own origin (or an allowed one).
pub(crate) fn same_origin(headers: &HeaderMap, config: &WebConfig, https: bool) -> bool {
    let text = |name| {
        headers
            .get(name)
            .and_then(|value: &header::HeaderValue| value.to_str().ok())
    };
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site"))
        && !matches!(site, "same-origin" | "none")
    {
        return false;
    }
    let Some(origin) = text(header::ORIGIN) else {
        return true;
    };
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let own = text(header::HOST).map(|host| {
        let scheme = if https { "https" } else { "http" };
        format!("{scheme}://{}", host.trim().to_ascii_lowercase())
    });
    own.as_deref() == Some(origin.as_str()) || config.extra_origins.contains(&origin)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;
    use crate::person::{Person, SignIn};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    header::HeaderName::from_static(name),
                    HeaderValue::from_static(value),
                )
            })
            .collect()
    }

    fn config() -> WebConfig {
        WebConfig::new(SignIn::Operator(Person::new("acme", "sam")))
            .allow_host("pages.example.com")
            .allow_origin("https://app.example.com/")
    }

    #[test]
    fn loopback_and_allowed_hosts_only() {
        for host in [
            "localhost",
            "127.0.0.1:8080",
            "[::1]:80",
            "pages.example.com",
        ] {
            let given = headers(&[("host", host)]);
            assert!(host_allowed(&given, &config()), "{host}");
        }
        for host in ["evil.example", "10.0.0.1:80"] {
            let given = headers(&[("host", host)]);
            assert!(!host_allowed(&given, &config()), "{host}");
        }
        assert!(!host_allowed(&HeaderMap::new(), &config()));
    }

    #[test]
    fn posts_come_from_the_own_or_an_allowed_origin() {
        let own = headers(&[("host", "127.0.0.1:9"), ("origin", "http://127.0.0.1:9")]);
        assert!(same_origin(&own, &config(), false));
        let allowed = headers(&[("host", "x"), ("origin", "https://app.example.com")]);
        assert!(same_origin(&allowed, &config(), false));
        let program = headers(&[("host", "127.0.0.1:9")]);
        assert!(same_origin(&program, &config(), false));
        let other = headers(&[("host", "127.0.0.1:9"), ("origin", "http://evil.example")]);
        assert!(!same_origin(&other, &config(), false));
        let cross = headers(&[("host", "127.0.0.1:9"), ("sec-fetch-site", "cross-site")]);
        assert!(!same_origin(&cross, &config(), false));
    }
}
