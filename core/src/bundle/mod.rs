//! Certification bundles (`toolcert run --bundle FILE [--sign KEY]`, `toolcert bundle verify
//! FILE [--key PUB]`): one self-contained JSON file that someone who did not run toolcert can
//! check. The format is `schemas/bundle.schema.json`.
//!
//! A bundle holds the toolcert version, the suite's version and digest (with one digest per
//! suite data file, so a verifier can say which files differ), the captured discovery document
//! with the exchanges that fetched it, the host profile with every token removed, and the
//! sealed JSON report, whose scenarios carry their checks, observations and transcripts.
//!
//! Sealing, from the inside out:
//!
//! - the report keeps its own `digest` (see [`crate::recheck`]);
//! - `sections` maps JSON pointers (each top-level member, each report member, each report
//!   row, each member of each report scenario) to the digest of the value there: it does not
//!   add protection, it lets a verifier name the field an edit touched;
//! - `digest` is `sha256:` and the hex SHA-256 of the RFC 8785 form of the bundle without
//!   `digest` and `signature`;
//! - `signature`, when signed, is Ed25519 (RFC 8032) by the key in `signature.publicKey` over
//!   the UTF-8 bytes of [`SIGNATURE_CONTEXT`] followed by `digest`. The context string keeps a
//!   bundle signature from being valid for any other message the same key signs.
//!
//! A digest alone only detects edits by someone who did not recompute it; the signature is
//! what ties a bundle to its signer. `bundle verify` also re-judges every verdict from the
//! stored observations with the running toolcert's suite, so a verdict edited and re-sealed in
//! an unsigned bundle still shows up as a differing row.

pub mod keys;

use std::collections::BTreeMap;
use std::path::Path;
use toolcert_base::canonical::pointer_token;

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde_json::{Value, json};

use crate::profile::HostProfile;
use crate::recheck::{Recheck, RecheckError};
use crate::suite::Suite;
use toolcert_base::redact::Redactor;

/// The bundle's JSON Schema, among the embedded suite files.
pub const BUNDLE_SCHEMA: &str = "schemas/bundle.schema.json";

/// The format version this toolcert writes and reads.
pub const BUNDLE_VERSION: u64 = 1;

/// What precedes the digest in the signed message.
pub const SIGNATURE_CONTEXT: &str = "toolcert-bundle-v1:";

/// Members the digest leaves out (they are made from it).
const UNSEALED: [&str; 2] = ["digest", "signature"];

/// At most this many edited pointers are named in a refusal (the count says the rest).
const NAMED_EDITS: usize = 8;

/// A bundle that cannot be written, or that `bundle verify` refuses.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The file cannot be read.
    #[error("{path}: cannot read it: {cause}")]
    Io {
        /// The file.
        path: String,
        /// Cause (in the message, not a `source`: `{:#}` would print it twice).
        cause: std::io::Error,
    },
    /// The file cannot be written.
    #[error("{path}: cannot write the bundle: {cause}")]
    Write {
        /// The file.
        path: String,
        /// Cause (in the message, not a `source`: `{:#}` would print it twice).
        cause: std::io::Error,
    },
    /// The JSON ends early: the file was cut (an interrupted copy or upload).
    #[error(
        "{path}: truncated: the JSON ends early at line {line}, column {column} ({bytes} bytes read); the file was cut short (an interrupted copy or download), so it is refused; fetch the bundle again"
    )]
    Truncated {
        /// The file.
        path: String,
        /// Its size.
        bytes: usize,
        /// Where it ends.
        line: usize,
        /// Where it ends.
        column: usize,
    },
    /// The file is not JSON.
    #[error("{path}: not valid JSON: {message}")]
    Json {
        /// The file.
        path: String,
        /// What the parser said.
        message: String,
    },
    /// A bundle format this toolcert does not read.
    #[error(
        "{path}: bundleVersion {found}: this toolcert reads bundleVersion {BUNDLE_VERSION}; verify it with the toolcert that wrote it"
    )]
    Version {
        /// The file.
        path: String,
        /// The version found (as JSON).
        found: String,
    },
    /// The bundle does not match its schema.
    #[error("{path}: not a toolcert bundle: at {pointer}: {message} (schema {BUNDLE_SCHEMA})")]
    Invalid {
        /// The file.
        path: String,
        /// Where.
        pointer: String,
        /// What.
        message: String,
    },
    /// The content does not hash to the stored digest.
    #[error(
        "{path}: digest mismatch: the bundle says {stored} but its content hashes to {computed}; it was edited after toolcert wrote it: {edited}; refused"
    )]
    Tampered {
        /// The file.
        path: String,
        /// The stored digest.
        stored: String,
        /// The digest of the content.
        computed: String,
        /// Which fields changed, in words.
        edited: String,
    },
    /// The embedded report's own digest does not match: it was edited and the bundle sealed
    /// again around it.
    #[error(
        "{path}: /report: the report's own digest says {stored} but the report hashes to {computed}; the report was edited and the bundle sealed again, so it is refused"
    )]
    ReportTampered {
        /// The file.
        path: String,
        /// The report's stored digest.
        stored: String,
        /// Its content's digest.
        computed: String,
    },
    /// Two parts of the bundle disagree.
    #[error("{path}: {pointer}: {message}; refused")]
    Inconsistent {
        /// The file.
        path: String,
        /// The field.
        pointer: String,
        /// How.
        message: String,
    },
    /// `--key` was given for a bundle without a signature.
    #[error(
        "{path}: the bundle is not signed (no \"signature\"), so --key cannot be checked; refused. Drop --key to verify its digest and verdicts only, or write a signed bundle with `toolcert run --bundle FILE --sign KEYFILE`"
    )]
    NotSigned {
        /// The file.
        path: String,
    },
    /// The bundle was signed by another key than `--key`.
    #[error(
        "{path}: /signature/publicKey: wrong key: the bundle is signed by the Ed25519 key {signed_by}, not by the --key {key}; refused"
    )]
    WrongKey {
        /// The file.
        path: String,
        /// The key the bundle names.
        signed_by: String,
        /// The key given.
        key: String,
    },
    /// The signature does not verify under the key.
    #[error(
        "{path}: /signature/value: the Ed25519 signature does not verify for key {key} over the bundle's digest; the bundle was re-sealed or the signature edited, so it is refused"
    )]
    BadSignature {
        /// The file.
        path: String,
        /// The key.
        key: String,
    },
    /// A token would reach the bundle (a toolcert bug; nothing was written).
    #[error(
        "a bearer token would reach the bundle at {pointer}; nothing was written (this is a toolcert bug: please report it)"
    )]
    Secret {
        /// Where.
        pointer: String,
    },
    /// The embedded report cannot be rechecked.
    #[error(transparent)]
    Report(#[from] RecheckError),
}

/// What a bundle is made of (`toolcert run --bundle`).
pub struct BundleInput<'a> {
    /// The suite the run used.
    pub suite: &'a Suite,
    /// The sealed JSON report ([`crate::report::to_value`]).
    pub report: &'a Value,
    /// The discovery summary and the exchanges that fetched it, redacted by the caller: the
    /// summary exactly as the report carries it, since `bundle verify` compares the two.
    pub discovery: Value,
    /// The host profile (its tokens are removed here).
    pub profile: &'a HostProfile,
    /// The run's redactor (tokens and canaries), applied to the profile.
    pub redactor: &'a Redactor,
    /// Every bearer token of the run, to prove none reaches the bundle.
    pub secrets: Vec<String>,
    /// The signing key, for `--sign`.
    pub key: Option<&'a SigningKey>,
}

/// The digest of a bundle: `sha256:` and the hex SHA-256 of its RFC 8785 form without
/// `digest` and `signature`.
pub fn digest_of(bundle: &Value) -> String {
    let mut body = bundle.clone();
    if let Value::Object(map) = &mut body {
        for k in UNSEALED {
            map.remove(k);
        }
    }
    format!(
        "{}{}",
        crate::recheck::DIGEST_PREFIX,
        toolcert_base::canonical::jcs_sha256_hex(&body)
    )
}

fn value_digest(v: &Value) -> String {
    format!(
        "{}{}",
        crate::recheck::DIGEST_PREFIX,
        toolcert_base::canonical::jcs_sha256_hex(v)
    )
}

/// The section digests of a bundle: JSON pointer ⇒ digest of the value there.
pub fn sections_of(bundle: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Value::Object(map) = bundle else {
        return out;
    };
    for (key, value) in map {
        if UNSEALED.contains(&key.as_str()) || key == "sections" {
            continue;
        }
        let pointer = format!("/{}", pointer_token(key));
        match (key.as_str(), value) {
            ("report", Value::Object(report)) => {
                for (rk, rv) in report {
                    let rp = format!("{pointer}/{}", pointer_token(rk));
                    match (rk.as_str(), rv) {
                        ("rows", Value::Array(rows)) => {
                            for (i, row) in rows.iter().enumerate() {
                                out.insert(format!("{rp}/{i}"), value_digest(row));
                            }
                        }
                        ("scenarios", Value::Array(list)) => {
                            for (i, s) in list.iter().enumerate() {
                                match s {
                                    Value::Object(members) => {
                                        for (sk, sv) in members {
                                            out.insert(
                                                format!("{rp}/{i}/{}", pointer_token(sk)),
                                                value_digest(sv),
                                            );
                                        }
                                    }
                                    other => {
                                        out.insert(format!("{rp}/{i}"), value_digest(other));
                                    }
                                }
                            }
                        }
                        _ => {
                            out.insert(rp, value_digest(rv));
                        }
                    }
                }
            }
            _ => {
                out.insert(pointer, value_digest(value));
            }
        }
    }
    out
}

/// A pointer with what it names: `/report/rows/5 (row DISC-6)`.
fn labelled(bundle: &Value, pointer: &str) -> String {
    let mut parts = pointer.split('/').skip(1);
    let label = match (parts.next(), parts.next(), parts.next()) {
        (Some("report"), Some("rows"), Some(i)) => bundle
            .pointer(&format!("/report/rows/{i}/requirementId"))
            .and_then(Value::as_str)
            .map(|id| format!(" (row {id})")),
        (Some("report"), Some("scenarios"), Some(i)) => bundle
            .pointer(&format!("/report/scenarios/{i}/scenarioId"))
            .and_then(Value::as_str)
            .map(|id| format!(" (scenario {id})")),
        _ => None,
    };
    format!("{pointer}{}", label.unwrap_or_default())
}

/// The string members of a JSON object (a digest map); anything else is left out, so an
/// edited entry shows up as changed or missing rather than as a parse failure.
fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// In words, which sections of `bundle` differ from its stored `sections`.
fn edited_sections(bundle: &Value) -> String {
    let now = sections_of(bundle);
    let stored = string_map(&bundle["sections"]);
    let mut edits: Vec<String> = Vec::new();
    for (pointer, digest) in &now {
        match stored.get(pointer) {
            Some(d) if d == digest => {}
            Some(_) => edits.push(format!("{} changed", labelled(bundle, pointer))),
            None => edits.push(format!("{} added", labelled(bundle, pointer))),
        }
    }
    for pointer in stored.keys().filter(|p| !now.contains_key(*p)) {
        edits.push(format!("{pointer} removed"));
    }
    if edits.is_empty() {
        return "every section matches its digest in /sections, so /sections itself was edited"
            .into();
    }
    let more = edits.len().saturating_sub(NAMED_EDITS);
    edits.truncate(NAMED_EDITS);
    let mut text = edits.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// The embedded schemas, when `suite` (a `--suite DIR` of an older checkout) lacks the
/// bundle's: the format is this binary's, not the suite's.
fn bundle_schemas(suite: &Suite) -> Result<crate::suite::SchemaSet, BundleError> {
    if suite.schemas.has(BUNDLE_SCHEMA) {
        return Ok(suite.schemas.clone());
    }
    crate::suite::Suite::embedded()
        .map(|s| s.schemas)
        .map_err(|e| BundleError::Invalid {
            path: String::new(),
            pointer: String::new(),
            message: format!("the embedded suite does not load: {e}"),
        })
}

fn schema_violation(suite: &Suite, bundle: &Value, file: &str) -> Result<(), BundleError> {
    let schemas = bundle_schemas(suite)?;
    match schemas.violations(BUNDLE_SCHEMA, bundle) {
        Ok(v) => match v.into_iter().next() {
            None => Ok(()),
            Some(v) => Err(BundleError::Invalid {
                path: file.to_string(),
                pointer: if v.pointer.is_empty() {
                    "/".into()
                } else {
                    v.pointer
                },
                message: v.message,
            }),
        },
        Err(e) => Err(BundleError::Invalid {
            path: file.to_string(),
            pointer: String::new(),
            message: e.to_string(),
        }),
    }
}

/// Build a bundle: sealed, signed when a key is given, and validated against its schema.
pub fn build(input: BundleInput<'_>) -> Result<Value, BundleError> {
    let mut profile = input.profile.clone();
    for role in profile.roles.values_mut() {
        role.token = None;
    }
    let profile = serde_json::to_value(&profile).unwrap_or(Value::Null);
    let mut bundle = json!({
        "bundleVersion": BUNDLE_VERSION,
        "toolcertVersion": env!("CARGO_PKG_VERSION"),
        "suite": {
            "version": crate::SUITE_VERSION,
            "digest": input.suite.digest(),
            "files": input.suite.file_digests,
        },
        "generatedAt": input.report["generatedAt"],
        "discovery": input.discovery,
        "profile": input.redactor.value(&profile),
        "verdict": input.report["certification"]["verdict"],
        "claimedProfiles": claimed_profiles(input.report),
        "report": input.report,
    });
    bundle["sections"] = json!(sections_of(&bundle));
    let digest = digest_of(&bundle);
    bundle["digest"] = json!(digest);
    if let Some(key) = input.key {
        let message = format!("{SIGNATURE_CONTEXT}{digest}");
        let signature = key.sign(message.as_bytes());
        bundle["signature"] = json!({
            "algorithm": "ed25519",
            "publicKey": keys::public_hex(&key.verifying_key()),
            "value": hex::encode(signature.to_bytes()),
        });
    }
    // The report went through the redactor already and the rest just did; this proves it.
    if let Value::Object(map) = &bundle {
        for (k, v) in map {
            let text = v.to_string();
            if input
                .secrets
                .iter()
                .filter(|s| !s.is_empty())
                .any(|s| text.contains(s.as_str()))
            {
                return Err(BundleError::Secret {
                    pointer: format!("/{}", pointer_token(k)),
                });
            }
        }
    }
    schema_violation(input.suite, &bundle, "the bundle")?;
    Ok(bundle)
}

/// The claimed profiles of a sealed report's certification that decide its verdict (not the
/// tentative ones, nor those only toolcert's extensions could measure), as a bundle states them.
fn claimed_profiles(report: &Value) -> Value {
    let profiles = report["certification"]["profiles"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|p| {
                    p["claimed"].as_bool() == Some(true)
                        && p["tentative"].as_bool() != Some(true)
                        && p["extensionOnly"].as_bool() != Some(true)
                })
                .map(|p| {
                    json!({
                        "id": p["id"],
                        "certified": p["certified"],
                        "evidenceTier": p.get("tier").cloned().unwrap_or(Value::Null),
                        "witnessCount": p["witnesses"],
                    })
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    Value::Array(profiles)
}

/// Write a bundle (pretty JSON; the digest is over the canonical form, so layout is free).
pub fn write(path: &Path, bundle: &Value) -> Result<(), BundleError> {
    let text = crate::output::json_text(bundle);
    crate::output::write_atomic(path, &text, crate::output::Format::Json).map_err(|cause| {
        BundleError::Write {
            path: path.display().to_string(),
            cause,
        }
    })
}

/// Read and parse a bundle; a cut file is [`BundleError::Truncated`].
pub fn load(path: &Path) -> Result<Value, BundleError> {
    let shown = path.display().to_string();
    let bytes = crate::input::read(path, crate::input::MAX_REPORT_BYTES).map_err(|cause| {
        BundleError::Io {
            path: shown.clone(),
            cause,
        }
    })?;
    let text = std::str::from_utf8(&bytes).map_err(|e| BundleError::Json {
        path: shown.clone(),
        message: format!("not UTF-8 text ({e}); a bundle is JSON"),
    })?;
    if text.trim().is_empty() {
        return Err(BundleError::Json {
            path: shown,
            message: "the file is empty; expected a bundle written by `toolcert run --bundle`"
                .into(),
        });
    }
    toolcert_base::canonical::parse_strict(text).map_err(|e| {
        if e.classify() == serde_json::error::Category::Eof {
            BundleError::Truncated {
                path: shown.clone(),
                bytes: bytes.len(),
                line: e.line(),
                column: e.column(),
            }
        } else {
            BundleError::Json {
                path: shown.clone(),
                message: e.to_string(),
            }
        }
    })
}

/// How the signature was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureCheck {
    /// Verified under `--key` (hex public key).
    Verified(String),
    /// Signed by this key, but no `--key` was given, so not checked.
    NotChecked(String),
    /// The bundle is not signed.
    Unsigned,
}

/// How the bundle's suite compares with the running toolcert's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuiteCheck {
    /// The same digest.
    Same(String),
    /// Different suites: verdicts are rechecked under the current one.
    Differs {
        /// The bundle's suite version and digest.
        bundle: (String, String),
        /// The running suite's version and digest.
        current: (String, String),
        /// Data files whose content differs.
        changed: Vec<String>,
        /// Files the current suite has and the bundle's did not.
        added: Vec<String>,
        /// Files the bundle's suite had and the current one does not.
        removed: Vec<String>,
    },
}

/// A verified bundle: every check passed; `recheck` says whether any verdict differs.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The bundle's digest.
    pub digest: String,
    /// The toolcert version that wrote it.
    pub toolcert_version: String,
    /// The signature check.
    pub signature: SignatureCheck,
    /// The suite comparison.
    pub suite: SuiteCheck,
    /// Every verdict re-judged from the stored observations.
    pub recheck: Recheck,
}

/// Verify a parsed bundle: format, digest, signature (when `key`), the report's digest,
/// consistency, then recheck every verdict with `suite`. `file` names it in errors.
pub fn verify(
    suite: &Suite,
    bundle: &Value,
    file: &str,
    key: Option<&VerifyingKey>,
) -> Result<Verified, BundleError> {
    // The version first: a newer format would fail the schema with a less useful message.
    match bundle.get("bundleVersion") {
        Some(v) if v.as_u64() == Some(BUNDLE_VERSION) => {}
        Some(v) => {
            return Err(BundleError::Version {
                path: file.to_string(),
                found: v.to_string(),
            });
        }
        None => {}
    }
    schema_violation(suite, bundle, file)?;
    let stored = bundle["digest"].as_str().unwrap_or_default().to_string();
    let computed = digest_of(bundle);
    if stored != computed {
        return Err(BundleError::Tampered {
            path: file.to_string(),
            stored,
            computed,
            edited: edited_sections(bundle),
        });
    }
    let signature = check_signature(bundle, file, &stored, key)?;
    let report = &bundle["report"];
    crate::recheck::verify(report, &format!("{file}#/report")).map_err(|e| match e {
        RecheckError::Tampered {
            stored, computed, ..
        } => BundleError::ReportTampered {
            path: file.to_string(),
            stored,
            computed,
        },
        other => BundleError::Report(other),
    })?;
    check_consistency(bundle, file)?;
    let suite_check = compare_suites(suite, bundle);
    let recheck = crate::recheck::recheck(suite, report, &format!("{file}#/report"))?;
    Ok(Verified {
        digest: stored,
        toolcert_version: bundle["toolcertVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        signature,
        suite: suite_check,
        recheck,
    })
}

fn check_signature(
    bundle: &Value,
    file: &str,
    digest: &str,
    key: Option<&VerifyingKey>,
) -> Result<SignatureCheck, BundleError> {
    let signature = bundle.get("signature");
    let signed_by = signature
        .and_then(|s| s["publicKey"].as_str())
        .unwrap_or_default()
        .to_string();
    match (signature, key) {
        (None, None) => Ok(SignatureCheck::Unsigned),
        (None, Some(_)) => Err(BundleError::NotSigned {
            path: file.to_string(),
        }),
        (Some(_), None) => Ok(SignatureCheck::NotChecked(signed_by)),
        (Some(sig), Some(key)) => {
            let wanted = keys::public_hex(key);
            if signed_by != wanted {
                return Err(BundleError::WrongKey {
                    path: file.to_string(),
                    signed_by,
                    key: wanted,
                });
            }
            let bad = || BundleError::BadSignature {
                path: file.to_string(),
                key: wanted.clone(),
            };
            // The schema fixed the shape (128 hex digits), so a decode failure is an edit too.
            let bytes: [u8; 64] = sig["value"]
                .as_str()
                .and_then(|v| hex::decode(v).ok())
                .and_then(|b| b.try_into().ok())
                .ok_or_else(bad)?;
            let message = format!("{SIGNATURE_CONTEXT}{digest}");
            key.verify_strict(message.as_bytes(), &Signature::from_bytes(&bytes))
                .map_err(|_| bad())?;
            Ok(SignatureCheck::Verified(wanted))
        }
    }
}

/// The bundle's copies agree: its discovery document is the report's and hashes to its
/// recorded digest; its toolcert version is the report's.
fn check_consistency(bundle: &Value, file: &str) -> Result<(), BundleError> {
    let fail = |pointer: &str, message: String| BundleError::Inconsistent {
        path: file.to_string(),
        pointer: pointer.to_string(),
        message,
    };
    if bundle["toolcertVersion"] != bundle["report"]["toolcertVersion"] {
        return Err(fail(
            "/toolcertVersion",
            format!(
                "says {} but the report was written by toolcert {}",
                bundle["toolcertVersion"], bundle["report"]["toolcertVersion"]
            ),
        ));
    }
    // The verdict and profiles the bundle states are the report's own.
    if bundle.get("verdict").is_some()
        && bundle["verdict"] != bundle["report"]["certification"]["verdict"]
    {
        return Err(fail(
            "/verdict",
            format!(
                "says {} but the report's certification says {}",
                bundle["verdict"], bundle["report"]["certification"]["verdict"]
            ),
        ));
    }
    if bundle.get("claimedProfiles").is_some()
        && bundle["claimedProfiles"] != claimed_profiles(&bundle["report"])
    {
        return Err(fail(
            "/claimedProfiles",
            "differs from the report's certification profiles".into(),
        ));
    }
    let discovery = &bundle["discovery"];
    if discovery["document"] != bundle["report"]["host"]["discovery"]["document"] {
        return Err(fail(
            "/discovery/document",
            "differs from the report's /report/host/discovery/document".into(),
        ));
    }
    if let (Some(document), Some(sha)) = (discovery.get("document"), discovery["sha256"].as_str())
        && toolcert_base::canonical::jcs_sha256_hex(document) != sha
    {
        return Err(fail(
            "/discovery/sha256",
            "does not match the SHA-256 of the RFC 8785 form of /discovery/document".into(),
        ));
    }
    Ok(())
}

fn compare_suites(suite: &Suite, bundle: &Value) -> SuiteCheck {
    let current = suite.digest();
    let theirs = bundle["suite"]["digest"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if theirs == current {
        return SuiteCheck::Same(current);
    }
    let files = string_map(&bundle["suite"]["files"]);
    let changed = files
        .iter()
        .filter(|(k, v)| suite.file_digests.get(*k).is_some_and(|c| c != *v))
        .map(|(k, _)| k.clone())
        .collect();
    let added = suite
        .file_digests
        .keys()
        .filter(|k| !files.contains_key(*k))
        .cloned()
        .collect();
    let removed = files
        .keys()
        .filter(|k| !suite.file_digests.contains_key(*k))
        .cloned()
        .collect();
    SuiteCheck::Differs {
        bundle: (
            bundle["suite"]["version"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            theirs,
        ),
        current: (crate::SUITE_VERSION.to_string(), current),
        changed,
        added,
        removed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(mut bundle: Value) -> Value {
        bundle["sections"] = json!(sections_of(&bundle));
        bundle["digest"] = json!(digest_of(&bundle));
        bundle
    }

    #[test]
    fn an_edit_is_named_by_its_section() {
        let bundle = sealed(json!({
            "bundleVersion": 1,
            "report": {
                "rows": [{"requirementId": "DISC-6", "disposition": "pass"}],
                "scenarios": [{"scenarioId": "disc.etag", "observations": {"a": 1}}],
            },
        }));
        assert_eq!(
            edited_sections(&bundle),
            "every section matches its digest in /sections, so /sections itself was edited"
        );
        let mut edited = bundle.clone();
        edited["report"]["rows"][0]["disposition"] = json!("fail");
        assert_ne!(digest_of(&edited), digest_of(&bundle));
        assert_eq!(
            edited_sections(&edited),
            "/report/rows/0 (row DISC-6) changed"
        );
        let mut edited = bundle.clone();
        edited["report"]["scenarios"][0]["observations"]["a"] = json!(2);
        assert_eq!(
            edited_sections(&edited),
            "/report/scenarios/0/observations (scenario disc.etag) changed"
        );
        // The signature is outside the digest: adding one does not change it.
        let mut signed = bundle.clone();
        signed["signature"] = json!({"value": "x"});
        assert_eq!(digest_of(&signed), digest_of(&bundle));
    }

    /// The suite digest ignores layout and sees an edited rule, naming its file.
    #[test]
    fn the_suite_digest_ignores_layout_and_names_an_edited_file() {
        let embedded = Suite::embedded().unwrap();
        let dir = std::env::temp_dir().join(format!("toolcert-suite-{}", std::process::id()));
        for (path, text) in crate::suite::embedded::FILES {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            // Compact text with members reordered by serde_json, keyed checks written in their
            // array form (in file order, which is the order they are judged in): the same suite.
            let value: Value = if path.starts_with("scenarios/") {
                crate::loader::keyed::parse_scenario(text).unwrap()
            } else {
                serde_json::from_str(text).unwrap()
            };
            std::fs::write(&file, value.to_string()).unwrap();
        }
        let reformatted = Suite::from_dir(&dir).unwrap();
        assert_eq!(reformatted.digest(), embedded.digest());
        let etag = dir.join("scenarios/disc/etag.json");
        let edited = std::fs::read_to_string(&etag)
            .unwrap()
            .replace(r#""equals":304"#, r#""equals":200"#);
        std::fs::write(&etag, edited).unwrap();
        let changed = Suite::from_dir(&dir).unwrap();
        assert_ne!(changed.digest(), embedded.digest());
        let bundle = json!({"suite": {"version": "x", "digest": embedded.digest(), "files": embedded.file_digests}});
        match compare_suites(&changed, &bundle) {
            SuiteCheck::Differs {
                changed,
                added,
                removed,
                ..
            } => {
                assert_eq!(changed, vec!["scenarios/disc/etag.json".to_string()]);
                assert!(added.is_empty() && removed.is_empty());
            }
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(dir).ok();
    }

    /// The last line of defence: a token the redactor did not know about still stops the
    /// write, naming the member.
    #[test]
    fn a_token_that_slipped_past_the_redactor_stops_the_write() {
        let suite = Suite::embedded().unwrap();
        let report = json!({"generatedAt": "2026-01-01T00:00:00Z"});
        let err = build(BundleInput {
            suite: &suite,
            report: &report,
            discovery: json!({"document": {"note": "echoes tok-123456"}}),
            profile: &HostProfile::default(),
            redactor: &Redactor::default(),
            secrets: vec!["tok-123456".into()],
            key: None,
        })
        .unwrap_err();
        assert!(
            matches!(&err, BundleError::Secret { pointer } if pointer == "/discovery"),
            "{err}"
        );
    }

    #[test]
    fn a_cut_file_is_truncated_and_an_empty_one_says_so() {
        let dir = std::env::temp_dir().join(format!("toolcert-bundle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.json");
        std::fs::write(&path, r#"{"bundleVersion": 1, "report": {"rows": ["#).unwrap();
        let err = load(&path).unwrap_err();
        assert!(matches!(err, BundleError::Truncated { .. }), "{err}");
        assert!(err.to_string().contains("truncated"), "{err}");
        std::fs::write(&path, "").unwrap();
        assert!(load(&path).unwrap_err().to_string().contains("empty"));
        std::fs::write(&path, "{} x").unwrap();
        assert!(matches!(load(&path).unwrap_err(), BundleError::Json { .. }));
        std::fs::remove_dir_all(dir).ok();
    }
}
