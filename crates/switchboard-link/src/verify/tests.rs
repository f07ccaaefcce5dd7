//! Every refusal of the verification order, each against a statement that verifies but for
//! the one thing changed.

use std::{sync::Arc, time::Duration};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{EncodingKey, Header};
use serde_json::{Value, json};
use switchboard_core::{
    ActionId, ActionKey, CallContext, Caller, Category, IdempotencyKey, Initiator, TaskSupport,
    ToolDescriptor, ToolOrigin, digest_json,
};
use switchboard_registry::LinkedCall;

use super::*;
use crate::{Audience, SigningKeys, StatementSigner, generate_signing_key_pem};

const FRONT: &str = "node-a";
const SERVING: &str = "node-b";

fn descriptor(name: &str) -> ToolDescriptor {
    ToolDescriptor {
        name: name.to_owned().into(),
        title: None,
        domain: "roster".into(),
        category: Category::Execute,
        permission: "roster.write".into(),
        description: "Assigns a shift.".into(),
        intents: Vec::new(),
        tags: Vec::new(),
        timeout: Some(Duration::from_secs(10)),
        input_schema: Arc::new(json!({"type": "object"})),
        output_schema: None,
        tasks: TaskSupport::Forbidden,
        asks_before_task: false,
        origin: ToolOrigin::Runtime {
            source: "the test".to_owned(),
        },
    }
}

fn caller() -> Caller {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session("mcp-session-1")
        .correlation("mcp-corr-1")
        .roles(["scheduler", "admin"])
        .initiator(Initiator::Human)
        .confirmed(true)
        .agent_type("planner")
        .thread("thread-7")
        .project("project-3")
        .idempotency_key("assign-bob-monday")
        .build()
        .verify()
        .expect("a complete context")
}

fn params() -> Value {
    json!({"shift": "monday-early", "person": "bob"})
}

fn action() -> ActionKey {
    ActionKey {
        org_id: "acme".into(),
        key: IdempotencyKey::new("assign-bob-monday"),
        action_id: ActionId::new("act-1"),
    }
}

/// A ring of one fresh key.
fn ring() -> SigningKeys {
    let pem = generate_signing_key_pem().expect("a key");
    SigningKeys::from_pems(&[pem.as_bytes()]).expect("a ring")
}

struct Fixture {
    signer: StatementSigner,
    verifier: StatementVerifier,
}

fn fixture() -> Fixture {
    let keys = ring();
    let verifier = StatementVerifier::new(SERVING).peer(FRONT, keys.verifying_keys());
    Fixture {
        signer: StatementSigner::new(FRONT, keys),
        verifier,
    }
}

/// A statement for `tool` with `params`, to `audience`, signed by `signer`.
fn sign_call(signer: &StatementSigner, audience: &Audience, tool: &str, params: &Value) -> String {
    let descriptor = descriptor(tool);
    let caller = caller();
    let action = action();
    let call = LinkedCall::new(
        &descriptor,
        Arc::new(params.clone()),
        digest_json(params).expect("a digest"),
        &caller,
        Some(&action),
        tokio::time::Instant::now() + Duration::from_secs(12),
    );
    signer.sign(audience, &call).expect("signed")
}

fn to_roster() -> Audience {
    Audience::new(SERVING, "roster")
}

fn sign(signer: &StatementSigner) -> String {
    sign_call(signer, &to_roster(), "roster_assign_shift", &params())
}

fn expected(params: &Value) -> Expected<'_> {
    Expected {
        tool: "roster_assign_shift",
        domain: "roster",
        params,
    }
}

#[test]
fn a_statement_round_trips_to_the_caller_it_was_signed_for() {
    let fixture = fixture();
    let statement = sign(&fixture.signer);
    let params = params();
    let verified = fixture
        .verifier
        .verify(FRONT, &statement, expected(&params))
        .expect("verifies");
    let mut context = CallContext::from(&caller());
    context.trace_parent = None;
    assert_eq!(verified.context, context);
    assert_eq!(verified.action, Some(action()));
    assert_eq!(verified.statement_id.get_version_num(), 7);
    let header = jsonwebtoken::decode_header(&statement).expect("a header");
    assert_eq!(header.typ.as_deref(), Some(STATEMENT_TYPE));
    assert_eq!(header.alg, Algorithm::EdDSA);
}

#[test]
fn a_read_without_an_action_or_a_caller_key_keeps_them_absent() {
    let fixture = fixture();
    let descriptor = descriptor("roster_list_shifts");
    let mut context = CallContext::from(&caller());
    context.idempotency_key = None;
    let caller = context.verify().expect("complete");
    let params = json!({});
    let call = LinkedCall::new(
        &descriptor,
        Arc::new(params.clone()),
        digest_json(&params).expect("a digest"),
        &caller,
        None,
        tokio::time::Instant::now() + Duration::from_secs(5),
    );
    let statement = fixture.signer.sign(&to_roster(), &call).expect("signed");
    let expected = Expected {
        tool: "roster_list_shifts",
        domain: "roster",
        params: &params,
    };
    let verified = fixture
        .verifier
        .verify(FRONT, &statement, expected)
        .expect("verifies");
    assert_eq!(verified.action, None);
    assert_eq!(verified.context.idempotency_key, None);
}

#[test]
fn a_statement_lives_the_tool_timeout_plus_the_leeway() {
    let fixture = fixture();
    let claims: Claims =
        jsonwebtoken::dangerous::insecure_decode_claims(sign(&fixture.signer)).expect("claims");
    assert_eq!(claims.exp - claims.iat, 15, "10 s timeout + 5 s");
    assert_eq!(claims.nbf, claims.iat);
}

#[test]
fn an_altered_byte_breaks_the_signature() {
    let fixture = fixture();
    let statement = sign(&fixture.signer);
    let params = params();
    // A signature byte.
    let (signed, signature) = statement.rsplit_once('.').expect("three parts");
    let mut raw = URL_SAFE_NO_PAD.decode(signature).expect("base64url");
    raw[10] ^= 0x01;
    let altered = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(&raw));
    assert!(matches!(
        fixture.verifier.verify(FRONT, &altered, expected(&params)),
        Err(Refused::Signature { .. })
    ));
    // A claim: another user, with the original signature.
    let mut parts = statement.split('.');
    let (header, payload) = (
        parts.next().expect("header"),
        parts.next().expect("payload"),
    );
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64url")).expect("JSON");
    claims["user_id"] = json!("mallory");
    let forged_payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let forged = format!("{header}.{forged_payload}.{signature}");
    assert!(matches!(
        fixture.verifier.verify(FRONT, &forged, expected(&params)),
        Err(Refused::Signature { .. })
    ));
    // Untouched, it still verifies.
    assert!(
        fixture
            .verifier
            .verify(FRONT, &statement, expected(&params))
            .is_ok()
    );
}

#[test]
fn expired_and_not_yet_valid_statements_are_refused_outside_the_leeway() {
    let fixture = fixture();
    let params = params();
    let statement = sign(&fixture.signer);
    let claims: Claims =
        jsonwebtoken::dangerous::insecure_decode_claims(&statement).expect("claims");
    let at = |now| {
        fixture
            .verifier
            .verify_at(FRONT, &statement, expected(&params), now)
    };
    assert!(matches!(
        at(claims.exp + LEEWAY.as_secs()),
        Err(Refused::Expired { .. })
    ));
    assert!(matches!(
        at(claims.nbf - LEEWAY.as_secs() - 1),
        Err(Refused::NotYetValid { .. })
    ));
    // Within the leeway on both sides (the second check is the first acceptance).
    assert!(matches!(
        at(claims.nbf - LEEWAY.as_secs()),
        Ok(Verified { .. })
    ));
}

#[test]
fn a_statement_for_another_node_or_domain_is_refused() {
    let fixture = fixture();
    let params = params();
    let other_node = sign_call(
        &fixture.signer,
        &Audience::new("node-c", "roster"),
        "roster_assign_shift",
        &params,
    );
    let refused = fixture
        .verifier
        .verify(FRONT, &other_node, expected(&params))
        .expect_err("another node");
    assert!(matches!(refused, Refused::Audience { .. }), "{refused}");
    assert!(refused.to_string().contains("node-c/roster"), "{refused}");
    let other_domain = sign_call(
        &fixture.signer,
        &Audience::new(SERVING, "directory"),
        "roster_assign_shift",
        &params,
    );
    assert!(matches!(
        fixture
            .verifier
            .verify(FRONT, &other_domain, expected(&params)),
        Err(Refused::Audience { .. })
    ));
}

#[test]
fn a_statement_for_another_tool_or_other_params_is_refused() {
    let fixture = fixture();
    let params = params();
    let other_tool = sign_call(
        &fixture.signer,
        &to_roster(),
        "roster_remove_shift",
        &params,
    );
    assert!(matches!(
        fixture
            .verifier
            .verify(FRONT, &other_tool, expected(&params)),
        Err(Refused::Tool { .. })
    ));
    let statement = sign(&fixture.signer);
    let changed = json!({"shift": "monday-early", "person": "mallory"});
    assert!(matches!(
        fixture
            .verifier
            .verify(FRONT, &statement, expected(&changed)),
        Err(Refused::Input { .. })
    ));
    // Refusals do not use the id up: the same statement with its own params verifies.
    assert!(
        fixture
            .verifier
            .verify(FRONT, &statement, expected(&params))
            .is_ok()
    );
}

#[test]
fn a_statement_is_accepted_once() {
    let fixture = fixture();
    let params = params();
    let statement = sign(&fixture.signer);
    let first = fixture
        .verifier
        .verify(FRONT, &statement, expected(&params))
        .expect("verifies");
    let refused = fixture
        .verifier
        .verify(FRONT, &statement, expected(&params))
        .expect_err("a replay");
    assert_eq!(
        refused,
        Refused::Replayed {
            jti: first.statement_id
        }
    );
    assert_eq!(refused.statement_id(), Some(first.statement_id));
    // Each attempt is signed afresh, with its own id.
    assert!(
        fixture
            .verifier
            .verify(FRONT, &sign(&fixture.signer), expected(&params))
            .is_ok()
    );
}

#[test]
fn a_key_not_listed_for_the_peer_is_refused() {
    let fixture = fixture();
    let params = params();
    let stranger = StatementSigner::new(FRONT, ring());
    let refused = fixture
        .verifier
        .verify(FRONT, &sign(&stranger), expected(&params))
        .expect_err("an unknown key");
    assert!(matches!(refused, Refused::UnknownKey { .. }), "{refused}");
    assert_eq!(refused.statement_id(), None);
}

#[test]
fn only_eddsa_is_accepted_not_none_nor_hs256_keyed_with_the_public_key() {
    let fixture = fixture();
    let params = params();
    let genuine = sign(&fixture.signer);
    let payload = genuine.split('.').nth(1).expect("a payload");
    let header = jsonwebtoken::decode_header(&genuine).expect("a header");
    let kid = header.kid.clone().expect("a kid");

    // alg none, no signature.
    let none_header = URL_SAFE_NO_PAD
        .encode(json!({"alg": "none", "typ": STATEMENT_TYPE, "kid": kid}).to_string());
    let unsigned = format!("{none_header}.{payload}.");
    assert!(matches!(
        fixture.verifier.verify(FRONT, &unsigned, expected(&params)),
        Err(Refused::Malformed { .. })
    ));

    // HS256 with the public key (PEM and raw bytes) as the HMAC secret.
    let public_pem = fixture.signer_public_pem();
    let claims: Value = jsonwebtoken::dangerous::insecure_decode_claims(&genuine).expect("claims");
    let mut hs_header = Header::new(Algorithm::HS256);
    hs_header.typ = Some(STATEMENT_TYPE.to_owned());
    hs_header.kid = Some(kid);
    let forged = jsonwebtoken::encode(
        &hs_header,
        &claims,
        &EncodingKey::from_secret(public_pem.as_bytes()),
    )
    .expect("HS256 signs");
    let refused = fixture
        .verifier
        .verify(FRONT, &forged, expected(&params))
        .expect_err("HS256");
    assert_eq!(
        refused,
        Refused::Algorithm {
            alg: "HS256".to_owned()
        }
    );

    // EdDSA with another typ (a JWT of another purpose signed with the same key).
    let mut other_typ = Header::new(Algorithm::EdDSA);
    other_typ.kid = header.kid;
    let statement = jsonwebtoken::encode(
        &other_typ,
        &claims,
        &fixture.signer.keys_for_tests().signing().encoding,
    )
    .expect("signed");
    assert!(matches!(
        fixture
            .verifier
            .verify(FRONT, &statement, expected(&params)),
        Err(Refused::Header { .. })
    ));
}

#[test]
fn the_issuer_must_be_the_authenticated_peer() {
    let keys = ring();
    let public = keys.verifying_keys();
    // node-c holds node-a's key (or node-a signs as node-c): either way the name is wrong.
    let verifier = StatementVerifier::new(SERVING)
        .peer(FRONT, public.clone())
        .peer("node-c", public);
    let params = params();
    let statement = sign(&StatementSigner::new(FRONT, keys));
    let refused = verifier
        .verify("node-c", &statement, expected(&params))
        .expect_err("another peer");
    assert!(matches!(refused, Refused::Issuer { .. }), "{refused}");
    let refused = verifier
        .verify("node-d", &statement, expected(&params))
        .expect_err("no such peer");
    assert!(matches!(refused, Refused::UnknownPeer { .. }), "{refused}");
}

#[test]
fn rotation_old_statements_verify_while_the_old_key_is_listed() {
    let old_pem = generate_signing_key_pem().expect("a key");
    let new_pem = generate_signing_key_pem().expect("a key");
    let old = SigningKeys::from_pems(&[old_pem.as_bytes()]).expect("a ring");
    // Step 2 of a rotation: the new key signs, the old one is still in the ring.
    let rotated =
        SigningKeys::from_pems(&[new_pem.as_bytes(), old_pem.as_bytes()]).expect("a ring");
    let both = rotated.verifying_keys();
    let new_only_pem = both.to_pems().remove(0);
    let new_only = VerifyingKeys::from_pems(&[new_only_pem.as_bytes()]).expect("a ring");

    let params = params();
    let before = sign(&StatementSigner::new(FRONT, old));
    let after = sign(&StatementSigner::new(FRONT, rotated));
    let listing_both = StatementVerifier::new(SERVING).peer(FRONT, both);
    assert!(
        listing_both
            .verify(FRONT, &before, expected(&params))
            .is_ok()
    );
    assert!(
        listing_both
            .verify(FRONT, &after, expected(&params))
            .is_ok()
    );

    // Step 3: the old public key is removed.
    let listing_new = StatementVerifier::new(SERVING).peer(FRONT, new_only);
    let fresh_old = {
        let old = SigningKeys::from_pems(&[old_pem.as_bytes()]).expect("a ring");
        sign(&StatementSigner::new(FRONT, old))
    };
    assert!(matches!(
        listing_new.verify(FRONT, &fresh_old, expected(&params)),
        Err(Refused::UnknownKey { .. })
    ));
}

#[test]
fn oversized_and_garbage_statements_are_malformed() {
    let fixture = fixture();
    let params = params();
    for garbage in ["", "abc", "a.b", "a.b.c", &"x".repeat(20_000)] {
        assert!(
            matches!(
                fixture.verifier.verify(FRONT, garbage, expected(&params)),
                Err(Refused::Malformed { .. })
            ),
            "{garbage:.20}"
        );
    }
}

#[test]
fn refusals_never_repeat_the_statement() {
    let fixture = fixture();
    let statement = sign(&fixture.signer);
    let changed = json!({});
    let refused = fixture
        .verifier
        .verify(FRONT, &statement, expected(&changed))
        .expect_err("other params");
    let signature = statement.rsplit('.').next().expect("a signature");
    assert!(!refused.to_string().contains(signature));
    assert!(!format!("{refused:?}").contains(signature));
}

impl Fixture {
    fn signer_public_pem(&self) -> String {
        self.signer
            .keys_for_tests()
            .verifying_keys()
            .to_pems()
            .remove(0)
    }
}

#[test]
fn verified_by_key_a_statement_runs_as_the_owner_of_the_key_that_signed_it() {
    let fixture = fixture();
    let verifier = fixture.verifier.peer("node-c", ring().verifying_keys());
    let params = params();

    let verified = verifier
        .verify_by_key(&sign(&fixture.signer), expected(&params))
        .expect("the key names node-a, and node-a issued it");

    assert_eq!(verified.action, Some(action()));
}

#[test]
fn verified_by_key_a_statement_signed_with_one_peers_key_naming_another_as_issuer_is_refused() {
    let keys = ring();
    let verifier = StatementVerifier::new(SERVING)
        .peer("node-x", keys.verifying_keys())
        .peer(FRONT, ring().verifying_keys());
    // node-x's key, signing as if it were the front (`iss` = node-a).
    let forged = sign(&StatementSigner::new(FRONT, keys));
    let params = params();

    let refused = verifier
        .verify_by_key(&forged, expected(&params))
        .expect_err("node-x cannot speak for node-a");

    assert!(
        matches!(&refused, Refused::Issuer { iss, peer, .. } if iss == FRONT && peer == "node-x"),
        "{refused:?}"
    );
}

#[test]
fn verified_by_key_an_unlisted_key_or_one_listed_for_two_peers_is_refused() {
    let keys = ring();
    let shared = StatementVerifier::new(SERVING)
        .peer(FRONT, keys.verifying_keys())
        .peer("node-c", keys.verifying_keys());
    let statement = sign(&StatementSigner::new(FRONT, keys));
    let stranger = sign(&StatementSigner::new(FRONT, ring()));
    let params = params();

    let ambiguous = shared.verify_by_key(&statement, expected(&params));
    let unlisted = fixture()
        .verifier
        .verify_by_key(&stranger, expected(&params));

    assert!(
        matches!(ambiguous, Err(Refused::UnknownKey { .. })),
        "{ambiguous:?}"
    );
    assert!(
        matches!(unlisted, Err(Refused::UnknownKey { .. })),
        "{unlisted:?}"
    );
}
