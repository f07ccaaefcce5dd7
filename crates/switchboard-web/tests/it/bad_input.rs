//! Traversal, unknown pages and another organisation's resources.

use reqwest::StatusCode;

use crate::server::{OPEN_SHIFT, Served};

#[tokio::test]
async fn traversal_and_encoded_tricks_are_refused() {
    let served = Served::as_operator().await;
    let overlong = format!("/roster/shifts/{}", "a".repeat(200));
    for path in [
        "/roster/../me",
        "/roster/%2e%2e/me",
        "/roster/%2E%2E",
        "/roster//shifts",
        "/roster/a%2fb",
        overlong.as_str(),
    ] {
        let (status, answer) = served.raw_get(path).await;
        assert_eq!(status, 400, "{path}: {answer}");
    }
}

#[tokio::test]
async fn an_unknown_page_is_404_with_the_nearest_routes() {
    let served = Served::as_operator().await;
    let response = served.get("/roster/shift/x", "text/html", None).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body = response.text().await.expect("a body");
    assert!(body.contains("No such page"), "{body}");
    assert!(
        body.contains("<code>/roster/shifts/{shift_id}</code>"),
        "{body}"
    );

    let response = served.get("/nowhere<script>", "text/html", None).await;
    let body = response.text().await.expect("a body");
    assert!(!body.contains("<script>"), "escaped: {body}");
}

#[tokio::test]
async fn another_organisations_shift_is_as_missing_as_one_that_does_not_exist() {
    let served = Served::with_tokens().await;
    let gina = served.sign_in("gina-token").await;
    let theirs = served.get(OPEN_SHIFT, "text/markdown", Some(&gina)).await;
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    let theirs = theirs.text().await.expect("a body");

    let missing_url = "/roster/shifts/acme-2026-11-24-xx";
    let missing = served.get(missing_url, "text/markdown", Some(&gina)).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let missing = missing.text().await.expect("a body");
    assert_eq!(
        theirs
            .replace(OPEN_SHIFT, "URL")
            .replace("acme-2026-11-24-pm", "ID"),
        missing
            .replace(missing_url, "URL")
            .replace("acme-2026-11-24-xx", "ID"),
    );
}
