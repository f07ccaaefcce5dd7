//! Signing in with a bearer token, and what an unauthenticated request gets.

use reqwest::{StatusCode, header};

use crate::server::{OPEN_SHIFT, Served};

#[tokio::test]
async fn without_a_session_a_browser_is_sent_to_sign_in_and_a_program_gets_401() {
    let served = Served::with_tokens().await;
    let response = served.get(OPEN_SHIFT, "text/html", None).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        response.headers()[header::LOCATION],
        "/sign-in?next=%2Froster%2Fshifts%2Facme%2D2026%2D11%2D24%2Dpm"
    );

    let response = served.get(OPEN_SHIFT, "text/markdown", None).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));

    let form = served.html("/sign-in?next=%2Froster", None).await;
    assert!(form.contains("name=\"token\""), "{form}");
    assert!(form.contains("value=\"/roster\""), "{form}");
}

#[tokio::test]
async fn a_valid_token_sets_a_strict_http_only_cookie_that_is_not_the_token() {
    let served = Served::with_tokens().await;

    let refused = served.post_sign_in("not-a-token").await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(!refused.headers().contains_key(header::SET_COOKIE));

    let response = served.post_sign_in("sam-token").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[header::LOCATION], "/roster");
    let set_cookie = response.headers()[header::SET_COOKIE]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(
        set_cookie.starts_with("switchboard_session="),
        "{set_cookie}"
    );
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(
            set_cookie.contains(attribute),
            "{attribute} in {set_cookie}"
        );
    }
    assert!(!set_cookie.contains("Secure"), "plain http: {set_cookie}");
    assert!(!set_cookie.contains("sam-token"), "{set_cookie}");

    let cookie = served.sign_in("sam-token").await;
    let page = served.html(OPEN_SHIFT, Some(&cookie)).await;
    assert!(page.contains("acme/sam"), "{page}");

    let bearer = served
        .client
        .get(served.url(OPEN_SHIFT))
        .header(header::ACCEPT, "text/markdown")
        .bearer_auth("sam-token")
        .send()
        .await
        .expect("answers");
    assert_eq!(bearer.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_sign_in_from_another_site_is_refused() {
    let served = Served::with_tokens().await;
    let response = served
        .client
        .post(served.url("/sign-in"))
        .header(header::ORIGIN, "http://evil.example")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("token=sam-token")
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(!response.headers().contains_key(header::SET_COOKIE));
}

#[tokio::test]
async fn the_cookie_is_secure_behind_https_and_signing_out_ends_the_session() {
    let served = Served::with_tokens().await;
    // Behind a proxy that ends TLS: the browser's origin is https.
    let origin = served.url("").replacen("http://", "https://", 1);
    let response = served
        .client
        .post(served.url("/sign-in"))
        .header("x-forwarded-proto", "https")
        .header(header::ORIGIN, origin)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("token=sam-token")
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let set_cookie = response.headers()[header::SET_COOKIE]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(set_cookie.contains("Secure"), "{set_cookie}");

    let cookie = served.sign_in("sam-token").await;
    let page = served.html(OPEN_SHIFT, Some(&cookie)).await;
    let csrf = crate::server::hidden(&page, "_csrf");
    let signed_out = served
        .post_form("/sign-out", &[("_csrf", &csrf)], Some(&cookie))
        .await;
    assert_eq!(signed_out.status(), StatusCode::SEE_OTHER);
    let after = served.get(OPEN_SHIFT, "text/markdown", Some(&cookie)).await;
    assert_eq!(after.status(), StatusCode::UNAUTHORIZED);
}
