//! Actions posted from a page's forms: they run as the person, behind the anti-CSRF token.

use reqwest::{StatusCode, header};

use crate::server::{OPEN_SHIFT, SEED_WEEK, Served, hidden, offers};

#[tokio::test]
async fn staff_claims_an_open_shift_through_its_form_and_claim_is_gone() {
    let served = Served::with_tokens().await;
    let cookie = served.sign_in("sam-token").await;
    let page = served.html(OPEN_SHIFT, Some(&cookie)).await;
    assert!(offers(&page, "claim"), "{page}");
    let csrf = hidden(&page, "_csrf");
    let version = hidden(&page, "_version");

    let response = served
        .post_form(
            OPEN_SHIFT,
            &[
                ("_action", "claim"),
                ("_version", &version),
                ("_csrf", &csrf),
            ],
            Some(&cookie),
        )
        .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[header::LOCATION], OPEN_SHIFT);

    let after = served.html(OPEN_SHIFT, Some(&cookie)).await;
    assert!(!offers(&after, "claim"), "{after}");

    // The form of the page as it was is now stale: refused, saying the page changed.
    let stale = served
        .post_form(
            OPEN_SHIFT,
            &[
                ("_action", "claim"),
                ("_version", &version),
                ("_csrf", &csrf),
            ],
            Some(&cookie),
        )
        .await;
    assert_eq!(stale.status(), StatusCode::CONFLICT);
    let body = stale.text().await.expect("a body");
    assert!(body.contains("changed since you saw it"), "{body}");
}

#[tokio::test]
async fn a_post_without_the_anti_csrf_token_runs_nothing() {
    let served = Served::with_tokens().await;
    let cookie = served.sign_in("sam-token").await;
    let page = served.html(OPEN_SHIFT, Some(&cookie)).await;
    let version = hidden(&page, "_version");

    for csrf in [None, Some("00"), Some(&*"0".repeat(64))] {
        let mut fields = vec![("_action", "claim"), ("_version", version.as_str())];
        if let Some(csrf) = csrf {
            fields.push(("_csrf", csrf));
        }
        let response = served.post_form(OPEN_SHIFT, &fields, Some(&cookie)).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{csrf:?}");
    }

    // Another person's token does not fit this session either.
    let other = served.sign_in("alice-token").await;
    let others_csrf = hidden(&served.html(OPEN_SHIFT, Some(&other)).await, "_csrf");
    let response = served
        .post_form(
            OPEN_SHIFT,
            &[("_action", "claim"), ("_csrf", &others_csrf)],
            Some(&cookie),
        )
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    // A post from another origin is refused even with the right token.
    let csrf = hidden(&page, "_csrf");
    let response = served
        .client
        .post(served.url(OPEN_SHIFT))
        .header(header::ORIGIN, "http://evil.example")
        .header(header::COOKIE, &cookie)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(format!("_action=claim&_csrf={csrf}"))
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    let after = served.html(OPEN_SHIFT, Some(&cookie)).await;
    assert!(offers(&after, "claim"), "nothing ran: {after}");
}

#[tokio::test]
async fn a_restricted_action_needs_its_confirmation() {
    let served = Served::with_tokens().await;
    let cookie = served.sign_in("alice-token").await;
    let page = served.html(SEED_WEEK, Some(&cookie)).await;
    assert!(offers(&page, "clear_week"), "{page}");
    assert!(page.contains("name=\"_confirm\""), "{page}");
    let csrf = hidden(&page, "_csrf");

    let refused = served
        .post_form(
            SEED_WEEK,
            &[("_action", "clear_week"), ("_csrf", &csrf)],
            Some(&cookie),
        )
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let body = refused.text().await.expect("a body");
    assert!(body.contains("confirmation"), "{body}");
    assert!(body.contains("class=\"error\""), "{body}");

    let confirmed = served
        .post_form(
            SEED_WEEK,
            &[
                ("_action", "clear_week"),
                ("_csrf", &csrf),
                ("_confirm", "yes"),
            ],
            Some(&cookie),
        )
        .await;
    assert_eq!(confirmed.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn a_manager_assigns_through_a_form_with_a_parameter_and_a_refusal_is_shown_escaped() {
    let served = Served::with_tokens().await;
    let cookie = served.sign_in("mark-token").await;
    let page = served.html(OPEN_SHIFT, Some(&cookie)).await;
    assert!(offers(&page, "assign"), "{page}");
    assert!(page.contains("name=\"param.user_id\""), "{page}");
    let csrf = hidden(&page, "_csrf");

    let refused = served
        .post_form(
            OPEN_SHIFT,
            &[
                ("_action", "assign"),
                ("_csrf", &csrf),
                ("param.user_id", "%3Cb%3Enobody%3C%2Fb%3E"),
            ],
            Some(&cookie),
        )
        .await;
    assert!(refused.status().is_client_error(), "{:?}", refused.status());
    let body = refused.text().await.expect("a body");
    assert!(body.contains("class=\"error\""), "{body}");
    assert!(!body.contains("<b>nobody"), "escaped: {body}");

    let assigned = served
        .post_form(
            OPEN_SHIFT,
            &[
                ("_action", "assign"),
                ("_csrf", &csrf),
                ("param.user_id", "sam"),
            ],
            Some(&cookie),
        )
        .await;
    assert_eq!(assigned.status(), StatusCode::SEE_OTHER);
    let after = served.html(OPEN_SHIFT, Some(&cookie)).await;
    assert!(!after.contains("nobody: the shift is open"), "{after}");
}
