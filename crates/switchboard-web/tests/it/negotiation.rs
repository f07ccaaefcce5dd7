//! One URL, two representations: HTML for browsers, markdown for `Accept: text/markdown`.

use reqwest::{StatusCode, header};

use crate::server::{OPEN_SHIFT, Served, hidden, offers};

#[tokio::test]
async fn html_by_default_and_markdown_when_asked() {
    let served = Served::as_operator().await;

    for accept in [
        "text/html",
        "*/*",
        "text/html,application/xhtml+xml,*/*;q=0.8",
    ] {
        let response = served.get(OPEN_SHIFT, accept, None).await;
        assert_eq!(response.status(), StatusCode::OK, "{accept}");
        assert_eq!(response.headers()[header::VARY], "Accept");
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
    }

    let response = served.get(OPEN_SHIFT, "text/markdown", None).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[header::VARY], "Accept");
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/markdown; charset=utf-8"
    );
    let markdown = response.text().await.expect("a body");
    assert!(markdown.contains("## Available actions"), "{markdown}");
    insta::assert_snapshot!("open_shift_markdown", markdown);

    let html = served.html(OPEN_SHIFT, None).await;
    assert!(offers(&html, "claim"), "{html}");
    assert!(!html.contains("<script"), "no JavaScript: {html}");
    let csrf = hidden(&html, "_csrf");
    // The content and forms; the frame and its stylesheet are left out.
    let main = &html[html.find("<main>").expect("main")..];
    insta::assert_snapshot!("open_shift_html", main.replace(&csrf, "[csrf]"));
}

#[tokio::test]
async fn what_cannot_be_served_is_not_acceptable() {
    let served = Served::as_operator().await;
    for accept in ["application/json", "image/png", "text/html;q=0"] {
        let response = served.get(OPEN_SHIFT, accept, None).await;
        assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE, "{accept}");
        assert_eq!(response.headers()[header::VARY], "Accept");
        let body = response.text().await.expect("a body");
        assert!(body.contains("text/markdown"), "{body}");
    }
}

#[tokio::test]
async fn mcp_keeps_its_own_guard() {
    let served = Served::with_tokens().await;
    let response = served
        .client
        .post(served.url("/mcp"))
        .header(header::CONTENT_TYPE, "application/json")
        .body("{}")
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}
