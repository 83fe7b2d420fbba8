//! End-to-end: `toolcert run --bundle [--sign]`, `toolcert keygen` and `toolcert bundle
//! verify [--key]` against the embedded reference host. A bundle verifies signed and
//! unsigned; a tampered verdict, a tampered observation, a re-sealed edit, a wrong key and a
//! truncated file are each refused with the reason; no token reaches the bundle.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::common::{read, text, toolcert};

/// Made once per test process: a key pair, a signed bundle of the full suite and an unsigned
/// bundle of the `disc` family.
struct Fixture {
    dir: PathBuf,
    public: PathBuf,
    secret: PathBuf,
    signed: PathBuf,
    unsigned: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // Under cargo's per-target scratch directory, one per test process, so the bundles
        // (a few MB) do not pile up in the system's temp directory and processes running at
        // once (cargo nextest) never overwrite each other's keys.
        let dir = crate::support::scratch::process_scratch("gate-bundle", "fixture");
        let keys = dir.join("keys");
        let out = toolcert(&["keygen", "--out", keys.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out));
        let (secret, public) = (
            keys.join("toolcert-bundle.key"),
            keys.join("toolcert-bundle.pub"),
        );
        let signed = dir.join("signed.json");
        let out = toolcert(&[
            "run",
            "-q",
            "--bundle",
            signed.to_str().unwrap(),
            "--sign",
            secret.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let unsigned = dir.join("unsigned.json");
        let out = toolcert(&["run", "-q", "disc.", "--bundle", unsigned.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out));
        Fixture {
            dir,
            public,
            secret,
            signed,
            unsigned,
        }
    })
}

fn verify(bundle: &Path, key: Option<&Path>) -> std::process::Output {
    let mut args = vec!["bundle", "verify", bundle.to_str().unwrap()];
    if let Some(k) = key {
        args.extend(["--key", k.to_str().unwrap()]);
    }
    toolcert(&args)
}

/// A copy of `bundle` with `edit` applied, written next to the fixture as `name`.
fn edited(bundle: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut value = read(bundle);
    edit(&mut value);
    let path = fixture().dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    path
}

/// What someone who edits a bundle and recomputes every digest would write: the report's
/// digest, the section digests and the bundle's digest all match the edited content.
fn reseal(bundle: &mut Value) {
    let report = &mut bundle["report"];
    report.as_object_mut().unwrap().remove("digest");
    report["digest"] = json!(toolcert::recheck::digest_of(report));
    bundle["sections"] = json!(toolcert::bundle::sections_of(bundle));
    bundle["digest"] = json!(toolcert::bundle::digest_of(bundle));
}

fn first_pass_row(bundle: &Value) -> (usize, String) {
    bundle["report"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .find(|(_, r)| r["disposition"] == "pass")
        .map(|(i, r)| (i, r["requirementId"].as_str().unwrap().to_string()))
        .expect("a passing row")
}

#[test]
fn a_signed_bundle_verifies_with_its_key_and_says_unchecked_without() {
    let f = fixture();
    let bundle = read(&f.signed);
    // Valid against its schema, as written.
    let suite = toolcert::suite::Suite::embedded().unwrap();
    let violations = suite
        .schemas
        .violations(toolcert::bundle::BUNDLE_SCHEMA, &bundle)
        .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(bundle["suite"]["digest"], json!(suite.digest()));
    assert!(bundle["discovery"]["document"].is_object());
    assert!(
        bundle["discovery"]["exchanges"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
    );
    assert!(bundle["report"]["scenarios"][0]["transcript"].is_object());

    let out = verify(&f.signed, Some(&f.public));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("signature: verified (Ed25519, key "),
        "{shown}"
    );
    assert!(
        shown.contains("suite: the same as this toolcert's"),
        "{shown}"
    );
    assert!(
        shown.contains("toolcert bundle verify: verified: "),
        "{shown}"
    );
    assert!(shown.contains(" 0 differ;"), "{shown}");

    let out = verify(&f.signed, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("but NOT checked: pass --key PUBKEY to check it"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_unsigned_bundle_verifies_and_refuses_a_key() {
    let f = fixture();
    let out = verify(&f.unsigned, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("signature: none (the bundle is not signed)"),
        "{}",
        text(&out)
    );
    let out = verify(&f.unsigned, Some(&f.public));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out)
            .contains("the bundle is not signed (no \"signature\"), so --key cannot be checked"),
        "{}",
        text(&out)
    );
}

#[test]
fn no_token_or_secret_reaches_the_bundle() {
    let f = fixture();
    let raw = std::fs::read_to_string(&f.signed).unwrap();
    let secrets = toolcert::host::HostProfile::reference().secrets();
    assert!(secrets.len() >= 6, "{secrets:?}");
    for token in &secrets {
        assert!(
            !raw.contains(token.as_str()),
            "token {token} is in the bundle"
        );
    }
    // Scenario canaries and the signing key stay out too.
    assert!(!raw.contains("tc-canary-"), "a canary is in the bundle");
    let secret_key = std::fs::read_to_string(&f.secret).unwrap();
    let seed = secret_key
        .lines()
        .find_map(|l| l.strip_prefix("ed25519-secret:"))
        .unwrap();
    assert!(!raw.contains(seed), "the secret key is in the bundle");
    // The profile is there, with its principals and without tokens.
    let bundle: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        bundle["profile"]["roles"]["actor"],
        json!({"principal": "alice"})
    );
}

#[test]
fn a_tampered_verdict_is_refused_naming_the_row() {
    let f = fixture();
    let (i, row) = first_pass_row(&read(&f.signed));
    let path = edited(&f.signed, "verdict.json", |b| {
        b["report"]["rows"][i]["disposition"] = json!("fail");
    });
    let out = verify(&path, Some(&f.public));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("digest mismatch"), "{shown}");
    assert!(
        shown.contains(&format!("/report/rows/{i} (row {row}) changed")),
        "{shown}"
    );
    std::fs::remove_file(path).ok();
}

#[test]
fn a_tampered_observation_is_refused_naming_the_scenario() {
    let f = fixture();
    let bundle = read(&f.signed);
    let i = bundle["report"]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| s["scenarioId"] == "disc.etag")
        .unwrap();
    let path = edited(&f.signed, "observation.json", |b| {
        b["report"]["scenarios"][i]["observations"]["steps"]["probe"]["conditional"]["status"] =
            json!(200);
    });
    let out = verify(&path, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("digest mismatch"), "{shown}");
    assert!(
        shown.contains(&format!(
            "/report/scenarios/{i}/observations (scenario disc.etag) changed"
        )),
        "{shown}"
    );
    std::fs::remove_file(path).ok();
}

/// An edit with every digest recomputed: the signature refuses it; unsigned, the recheck of
/// the stored observations still shows the edited verdict.
#[test]
fn a_resealed_edit_fails_the_signature_or_the_recheck() {
    let f = fixture();
    let (i, row) = first_pass_row(&read(&f.signed));
    let _first = Remove(f.dir.join("resealed.json"));
    let _second = Remove(f.dir.join("resealed-unsigned.json"));
    let path = edited(&f.signed, "resealed.json", |b| {
        b["report"]["rows"][i]["disposition"] = json!("fail");
        reseal(b);
    });
    let out = verify(&path, Some(&f.public));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("/signature/value: the Ed25519 signature does not verify"),
        "{}",
        text(&out)
    );
    let path = edited(&f.signed, "resealed-unsigned.json", |b| {
        b.as_object_mut().unwrap().remove("signature");
        b["report"]["rows"][i]["disposition"] = json!("fail");
        reseal(b);
    });
    let out = verify(&path, None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{row} pass (DIFFERS: the report says fail)")),
        "{}",
        text(&out)
    );
}

#[test]
fn a_wrong_key_is_refused() {
    let f = fixture();
    let other = f.dir.join("other-keys");
    let out = toolcert(&["keygen", "--out", other.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let out = verify(&f.signed, Some(&other.join("toolcert-bundle.pub")));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out)
            .contains("/signature/publicKey: wrong key: the bundle is signed by the Ed25519 key"),
        "{}",
        text(&out)
    );
    // A secret key where the public one belongs is refused without being echoed.
    let out = verify(&f.signed, Some(&f.secret));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("this is a secret key file, not a public one"),
        "{}",
        text(&out)
    );
    // keygen never overwrites a key.
    let out = toolcert(&["keygen", "--out", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("already exists"), "{}", text(&out));
}

#[test]
fn a_truncated_file_is_refused() {
    let f = fixture();
    let bytes = std::fs::read(&f.signed).unwrap();
    let path = f.dir.join("truncated.json");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let _cleanup = Remove(path.clone());
    let out = verify(&path, Some(&f.public));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("truncated: the JSON ends early"), "{shown}");
    assert!(shown.contains("the file was cut short"), "{shown}");
}

/// Verified with a suite whose `disc.etag` changed: the verifier names the file and rechecks
/// under the current suite, where DISC-6 now fails.
#[test]
fn a_changed_suite_is_named_and_verdicts_are_rechecked_under_it() {
    let f = fixture();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = f.dir.join("suite");
    for sub in ["scenarios", "schemas"] {
        crate::support::tree::copy_tree(&root.join(sub), &copy.join(sub));
    }
    let etag = copy.join("scenarios/disc/etag.json");
    let changed = std::fs::read_to_string(&etag)
        .unwrap()
        .replace(r#""equals": 304"#, r#""equals": 200"#);
    std::fs::write(&etag, changed).unwrap();
    let _cleanup = Remove(copy.clone());
    let out = toolcert(&[
        "bundle",
        "verify",
        f.unsigned.to_str().unwrap(),
        "--suite",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("suite: DIFFERS: the bundle was judged with suite"),
        "{shown}"
    );
    assert!(
        shown.contains("files changed: scenarios/disc/etag.json; added: none; removed: none; every verdict is rechecked under the current suite"),
        "{shown}"
    );
    assert!(
        shown.contains("DISC-6 fail (DIFFERS: the report says pass)"),
        "{shown}"
    );
}

/// Removes a file or directory a test made, however the test ends.
struct Remove(PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        if self.0.is_dir() {
            std::fs::remove_dir_all(&self.0).ok();
        } else {
            std::fs::remove_file(&self.0).ok();
        }
    }
}

#[test]
fn a_filtered_run_s_bundle_verifies_as_partial_never_as_whole() {
    let f = fixture();
    let out = verify(&f.unsigned, None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("verified, PARTIAL"),
        "the disc-only bundle must say partial: {}",
        text(&out)
    );
    let bundle = read(&f.unsigned);
    assert_eq!(bundle["verdict"], "partial");
    assert_eq!(
        bundle["report"]["certification"]["selection"]["filters"],
        json!(["disc."])
    );
    // The whole run's bundle states its claimed profiles, each certified at its tier.
    let whole = read(&f.signed);
    assert_eq!(whole["verdict"], "certified");
    let profiles = whole["claimedProfiles"].as_array().unwrap();
    assert!(profiles.len() >= 5, "{profiles:?}");
    assert!(
        profiles
            .iter()
            .all(|p| p["certified"] == true && p["evidenceTier"].is_string())
    );
    // A bundle re-sealed to claim more than its report is refused.
    let forged = edited(&f.unsigned, "forged-verdict.json", |b| {
        b["verdict"] = json!("certified");
        reseal(b);
    });
    let out = verify(&forged, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("/verdict"), "{}", text(&out));
}
