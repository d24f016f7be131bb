//! `spec.gateway` problems with their places, and the HTTP caller check
//! (bearer keys, JWTs) the gateway runs before any MCP. The MCP behaviour
//! itself is tested with real clients in tests/gateway (make test-gateway).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use harnessweaver_core::Harness;
use harnessweaver_runtime::gateway::auth::Authenticator;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::json;
use std::path::PathBuf;

fn harness_dir(name: &str, gateway: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hw-gateway-config-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        format!("apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  gateway:\n{gateway}"),
    )
    .unwrap();
    std::fs::write(
        dir.join("tools/t.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: t }\nspec: { transport: code, sandbox: monty, description: T., input_schema: { type: object } }\n",
    )
    .unwrap();
    dir
}

#[test]
fn gateway_problems_carry_codes_and_places() {
    let dir = harness_dir(
        "bad",
        "    run: forever\n    stdio: { tenant: acme }\n    http:\n      keys:\n        - { token_sha256: \"abc\", principal: p }\n        - { principal: { id: q, colour: red } }\n      jwt: { algorithm: HS1024, secret_env: S }\n      extra: 1\n",
    );
    let err = Harness::load(dir.join("harness.yaml")).unwrap_err();
    let got: Vec<(String, String, Option<usize>)> = err.problems().iter().map(|p| (p.code.to_string(), p.path.clone(), p.line)).collect();
    let has = |code: &str, path: &str| got.iter().any(|(c, p, line)| c == code && p == path && line.is_some());
    assert!(has("missing_field", "spec.gateway.stdio.principal"), "{got:?}");
    assert!(has("invalid_value", "spec.gateway.http.keys[0].token_sha256"), "{got:?}");
    assert!(has("missing_field", "spec.gateway.http.keys[1].token_sha256"), "{got:?}");
    assert!(has("invalid_principal", "spec.gateway.http.keys[1].principal"), "{got:?}");
    assert!(has("invalid_value", "spec.gateway.http.jwt.algorithm"), "{got:?}");
    assert!(has("unknown_field", "spec.gateway.http.extra"), "{got:?}");
    assert!(has("invalid_value", "spec.gateway.run"), "{got:?}");
}

#[test]
fn bearer_keys_and_jwts_map_to_callers() {
    let token = "t0k3n-for-alice";
    let digest = harnessweaver_core::sha256_tagged(token.as_bytes());
    std::env::set_var("HW_TEST_GATEWAY_JWT_SECRET", "a-shared-secret-of-enough-length-000");
    let dir = harness_dir(
        "good",
        &format!(
            "    http:\n      keys:\n        - {{ token_sha256: \"{digest}\", principal: {{ id: alice, roles: [finance] }}, tenant: acme }}\n      jwt:\n        algorithm: HS256\n        secret_env: HW_TEST_GATEWAY_JWT_SECRET\n        audience: hw\n        claims: {{ principal: email, scopes: scp }}\n"
        ),
    );
    let harness = Harness::load(dir.join("harness.yaml")).unwrap();
    let auth = Authenticator::new(&harness.spec().gateway, harness.dir()).unwrap();

    assert_eq!(auth.check(None).unwrap_err().code, "missing_token");
    assert_eq!(auth.check(Some("Basic abc")).unwrap_err().code, "invalid_token");
    assert_eq!(auth.check(Some("Bearer nope")).unwrap_err().code, "invalid_token");
    let alice = auth.check(Some(&format!("Bearer {token}"))).unwrap();
    assert_eq!(
        (alice.principal.id.as_str(), alice.principal.roles.clone(), alice.tenant.as_deref()),
        ("alice", vec!["finance".to_string()], Some("acme"))
    );

    let key = EncodingKey::from_secret(b"a-shared-secret-of-enough-length-000");
    let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 600;
    let claims =
        json!({"email": "carol@example.com", "scp": ["a:read", "b:write"], "roles": "finance ops", "tenant": "globex", "aud": "hw", "exp": exp});
    let jwt = encode(&Header::default(), &claims, &key).unwrap();
    let carol = auth.check(Some(&format!("Bearer {jwt}"))).unwrap();
    assert_eq!(carol.principal.id, "carol@example.com");
    assert_eq!(carol.principal.scopes, vec!["a:read", "b:write"]);
    assert_eq!(carol.principal.roles, vec!["finance", "ops"]);
    assert_eq!(carol.tenant.as_deref(), Some("globex"));

    let wrong_aud = encode(&Header::default(), &json!({"email": "c", "aud": "other", "exp": exp}), &key).unwrap();
    assert_eq!(auth.check(Some(&format!("Bearer {wrong_aud}"))).unwrap_err().code, "invalid_token");
    let other_key = encode(&Header::default(), &claims, &EncodingKey::from_secret(b"another-secret-entirely-0000000000")).unwrap();
    assert_eq!(auth.check(Some(&format!("Bearer {other_key}"))).unwrap_err().code, "invalid_token");
    let expired = encode(&Header::default(), &json!({"email": "c", "aud": "hw", "exp": 1000}), &key).unwrap();
    assert_eq!(auth.check(Some(&format!("Bearer {expired}"))).unwrap_err().code, "invalid_token");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_token_variable_fails_the_start_naming_it() {
    let dir = harness_dir("env", "    http:\n      keys:\n        - { token_env: HW_TEST_GATEWAY_UNSET_TOKEN, principal: p }\n");
    let harness = Harness::load(dir.join("harness.yaml")).unwrap();
    let err = Authenticator::new(&harness.spec().gateway, harness.dir()).unwrap_err();
    assert!(err.contains("HW_TEST_GATEWAY_UNSET_TOKEN") && err.contains("token_env"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 17 item 2: with `issuer` and `audience` configured, a token must
/// carry both (and match); a token not valid before a day from now is refused;
/// `exp` stays required. The same token with the claims present is accepted.
#[test]
fn jwt_requires_configured_iss_and_aud_and_checks_nbf() {
    std::env::set_var("HW_TEST_GATEWAY_JWT_SECRET_2", "another-shared-secret-of-enough-len-0");
    let dir = harness_dir(
        "claims",
        "    http:\n      jwt:\n        algorithm: HS256\n        secret_env: HW_TEST_GATEWAY_JWT_SECRET_2\n        issuer: test-idp\n        audience: hw\n",
    );
    let harness = Harness::load(dir.join("harness.yaml")).unwrap();
    let auth = Authenticator::new(&harness.spec().gateway, harness.dir()).unwrap();
    let key = EncodingKey::from_secret(b"another-shared-secret-of-enough-len-0");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let full = json!({"sub": "carol", "iss": "test-idp", "aud": "hw", "iat": now, "exp": now + 600});
    let check = |claims: &serde_json::Value| auth.check(Some(&format!("Bearer {}", encode(&Header::default(), claims, &key).unwrap())));
    assert_eq!(check(&full).unwrap().principal.id, "carol");
    let without = |name: &str| {
        let mut c = full.clone();
        c.as_object_mut().unwrap().remove(name);
        c
    };
    for (why, claims) in [
        ("no iss", without("iss")),
        ("no aud", without("aud")),
        ("no exp", without("exp")),
        ("nbf a day ahead", json!({"sub": "carol", "iss": "test-idp", "aud": "hw", "iat": now, "exp": now + 2 * 86_400, "nbf": now + 86_400})),
    ] {
        let err = check(&claims).expect_err(why);
        assert_eq!(err.code, "invalid_token", "{why}: {err:?}");
    }
    // An nbf in the past is fine.
    let past = json!({"sub": "carol", "iss": "test-idp", "aud": "hw", "iat": now, "exp": now + 600, "nbf": now - 60});
    assert_eq!(check(&past).unwrap().principal.id, "carol");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 22 item 7: `spec.gateway.oauth`, `tls` and `console` problems with
/// their places; `oauth` needs a JWT key.
#[test]
fn oauth_tls_and_console_problems_carry_codes_and_places() {
    let dir = harness_dir(
        "oauth-bad",
        "    oauth:\n      authorization_servers: []\n      resource: ftp://gw/mcp\n      extra: 1\n    tls: { cert_file: c.pem }\n    console: sometimes\n",
    );
    let err = Harness::load(dir.join("harness.yaml")).unwrap_err();
    let got: Vec<(String, String)> = err.problems().iter().map(|p| (p.code.to_string(), p.path.clone())).collect();
    let has = |code: &str, path: &str| got.iter().any(|(c, p)| c == code && p == path);
    assert!(has("invalid_value", "spec.gateway.oauth.authorization_servers"), "{got:?}");
    assert!(has("invalid_value", "spec.gateway.oauth.resource"), "{got:?}");
    assert!(has("unknown_field", "spec.gateway.oauth.extra"), "{got:?}");
    assert!(has("missing_field", "spec.gateway.tls.key_file"), "{got:?}");
    assert!(got.iter().any(|(_, p)| p == "spec.gateway.console"), "{got:?}");
    assert!(has("missing_field", "spec.gateway.http.jwt"), "{got:?}");
    // Granted: a well-formed block loads.
    let ok = harness_dir(
        "oauth-good",
        "    http:\n      jwt: { algorithm: HS256, secret_env: S }\n    oauth:\n      authorization_servers: [https://idp.example]\n      resource: https://gw.example/mcp\n    tls: { cert_file: c.pem, key_file: k.pem }\n    console: true\n",
    );
    let spec = Harness::load(ok.join("harness.yaml")).unwrap().spec().gateway.clone();
    assert_eq!(spec.oauth.unwrap().resource.as_deref(), Some("https://gw.example/mcp"));
    assert_eq!(spec.tls.unwrap().key_file, "k.pem");
    assert!(spec.console);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&ok);
}

/// Issue 22 item 7: once bound to its resource (RFC 8707), the authenticator
/// accepts a JWT whose `aud` names the resource or the configured audience,
/// and refuses one for another resource or without `aud`; before binding,
/// with no audience configured, `aud` is not required.
#[test]
fn bound_audience_refuses_tokens_for_other_resources() {
    std::env::set_var("HW_TEST_GATEWAY_JWT_SECRET_3", "a-third-shared-secret-of-enough-len-0");
    let key = EncodingKey::from_secret(b"a-third-shared-secret-of-enough-len-0");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let token = |aud: Option<serde_json::Value>| {
        let mut c = json!({"sub": "carol", "iat": now, "exp": now + 600});
        if let Some(aud) = aud {
            c["aud"] = aud;
        }
        format!("Bearer {}", encode(&Header::default(), &c, &key).unwrap())
    };
    for (audience, also) in [("", None), ("        audience: hw\n", Some("hw"))] {
        let dir = harness_dir(
            "aud",
            &format!("    http:\n      jwt:\n        algorithm: HS256\n        secret_env: HW_TEST_GATEWAY_JWT_SECRET_3\n{audience}"),
        );
        let harness = Harness::load(dir.join("harness.yaml")).unwrap();
        let mut auth = Authenticator::new(&harness.spec().gateway, harness.dir()).unwrap();
        if also.is_none() {
            assert!(auth.check(Some(&token(None))).is_ok(), "no audience configured: aud not required");
        }
        auth.bind_audience("https://gw.example/mcp");
        assert!(auth.check(Some(&token(Some(json!("https://gw.example/mcp"))))).is_ok());
        assert!(auth.check(Some(&token(Some(json!(["https://other.example/mcp", "https://gw.example/mcp"]))))).is_ok());
        if let Some(a) = also {
            assert!(auth.check(Some(&token(Some(json!(a))))).is_ok(), "the configured audience stays accepted");
        }
        for (why, t) in [
            ("another resource", token(Some(json!("https://other.example/mcp")))),
            ("the http form", token(Some(json!("http://gw.example/mcp")))),
            ("no aud", token(None)),
        ] {
            assert_eq!(auth.check(Some(&t)).expect_err(why).code, "invalid_token", "{why}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A JWK Set server on 127.0.0.1 for the re-fetch test: serves what `body`
/// holds at the time and counts the requests.
struct JwksServer {
    url: String,
    body: std::sync::Arc<std::sync::Mutex<String>>,
    fetches: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl JwksServer {
    fn start(body: String) -> JwksServer {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let body = std::sync::Arc::new(std::sync::Mutex::new(body));
        let fetches = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (served, count) = (std::sync::Arc::clone(&body), std::sync::Arc::clone(&fetches));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let body = served.lock().unwrap().clone();
                let head =
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
            }
        });
        JwksServer { url, body, fetches }
    }

    fn serve(&self, body: String) {
        *self.body.lock().unwrap() = body;
    }

    fn fetches(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Two Ed25519 keys (private PEM, public `x`), made for this test only.
const ED_KEYS: [(&str, &str); 2] = [
    (
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIDl314grYGGV+WJgrxoOSpWZlCWrVdloxyt3R8WI4DwP\n-----END PRIVATE KEY-----\n",
        "T7IjIf8WVUy0XLDYB4AsyQPS1oQJupHQDeWkTzOT3AU",
    ),
    (
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIK1PMTNwLFgd1KqjgOZqLgtG3vlRedyZdjalUTyyyjuM\n-----END PRIVATE KEY-----\n",
        "FHzgcTH3YLaOxvOhdXwrQ2_M6IW8bRgycVugk3DuwdI",
    ),
];

fn jwks(keys: &[(usize, &str)]) -> String {
    let keys: Vec<serde_json::Value> =
        keys.iter().map(|(i, kid)| json!({"kty": "OKP", "crv": "Ed25519", "x": ED_KEYS[*i].1, "kid": kid, "alg": "EdDSA", "use": "sig"})).collect();
    json!({ "keys": keys }).to_string()
}

fn ed_token(key: usize, kid: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut header = Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(kid.to_string());
    let key = EncodingKey::from_ed_pem(ED_KEYS[key].0.as_bytes()).unwrap();
    format!("Bearer {}", encode(&header, &json!({"sub": "carol", "iat": now, "exp": now + 600}), &key).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_naming_an_unknown_kid_fetches_the_jwks_url_again_at_most_once_per_30_s() {
    use harnessweaver_core::ManualClock;
    use harnessweaver_runtime::gateway::auth::JWKS_REFETCH_INTERVAL_MS;
    let server = JwksServer::start(jwks(&[(0, "k1")]));
    let dir = harness_dir("jwks-refetch", &format!("    http:\n      jwt:\n        algorithm: EdDSA\n        jwks_url: {}\n", server.url));
    let harness = Harness::load(dir.join("harness.yaml")).unwrap();
    let mut auth = tokio::task::block_in_place(|| Authenticator::new(&harness.spec().gateway, harness.dir())).unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    auth.set_clock(std::sync::Arc::new(clock.clone()));
    assert_eq!((server.fetches(), auth.jwks_fetches()), (1, 1), "fetched once at start");
    assert_eq!(auth.authenticate(Some(&ed_token(0, "k1"))).await.unwrap().principal.id, "carol");
    assert_eq!(server.fetches(), 1, "a known kid fetches nothing");

    // Rotation: the server now serves k2; its first token fetches the set again.
    server.serve(jwks(&[(1, "k2")]));
    assert_eq!(auth.authenticate(Some(&ed_token(1, "k2"))).await.unwrap().principal.id, "carol");
    assert_eq!(server.fetches(), 2);
    // The check without re-fetching knows k2 now, and no longer k1.
    assert!(auth.check(Some(&ed_token(1, "k2"))).is_ok());
    assert_eq!(auth.authenticate(Some(&ed_token(0, "k1"))).await.unwrap_err().code, "invalid_token");

    // Made-up kids inside the window: refused, no fetch (concurrent ones too).
    let tokens: Vec<String> = (0..16).map(|i| ed_token(1, &format!("made-up-{i}"))).collect();
    let refused = futures_join(tokens.iter().map(|t| auth.authenticate(Some(t)))).await;
    assert!(refused.iter().all(|r| r.as_ref().unwrap_err().code == "invalid_token"));
    assert_eq!(server.fetches(), 2, "no fetch inside the window");

    // The window is measured on the clock: just before it ends, still none; then one.
    clock.advance_ms(JWKS_REFETCH_INTERVAL_MS - 1);
    assert!(auth.authenticate(Some(&ed_token(1, "made-up-x"))).await.is_err());
    assert_eq!(server.fetches(), 2);
    clock.advance_ms(1);
    assert!(auth.authenticate(Some(&ed_token(1, "made-up-y"))).await.is_err());
    assert_eq!(server.fetches(), 3, "one fetch when the window has passed");
    assert!(auth.authenticate(Some(&ed_token(1, "made-up-z"))).await.is_err());
    assert_eq!((server.fetches(), auth.jwks_fetches()), (3, 3));

    // A fetch that gives no usable set keeps the keys there were.
    server.serve("not json".into());
    clock.advance_ms(JWKS_REFETCH_INTERVAL_MS);
    assert!(auth.authenticate(Some(&ed_token(0, "k3"))).await.is_err());
    assert_eq!(server.fetches(), 4);
    assert!(auth.authenticate(Some(&ed_token(1, "k2"))).await.is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the futures concurrently on this task and collects their outputs in order.
async fn futures_join<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut set: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, fut) in out.iter_mut().zip(set.iter_mut()) {
            if slot.is_none() {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(Option::unwrap).collect()
}
