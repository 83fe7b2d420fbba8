//! Credential references in tool arguments: resolution and redaction.
//!
//! A value that is exactly `{"$credential": "<ref>"}` anywhere in the args is
//! a credential reference. The tool receives the *resolved* args (each ref
//! replaced by its raw secret); everything the host records or answers uses
//! the *redacted* args (each ref replaced by `"[redacted]"`, and every
//! secret-shaped literal too: [`scrub_secret_shaped`]). SR-1: raw key
//! material never enters the args hash, any event, any error or any response.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The marker that replaces a credential in redacted args.
pub const REDACTED: &str = "[redacted]";

/// The key that marks a credential reference.
pub const CREDENTIAL_KEY: &str = "$credential";

/// Why credential references could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// A reference names a credential that was not supplied.
    #[error(
        "args{pointer}: credential reference `{reference}` has no entry in `credentials`; add it to `credentials` or remove the reference"
    )]
    Unknown {
        /// JSON pointer (within args) of the reference.
        pointer: String,
        /// The reference name.
        reference: String,
    },
    /// `{"$credential": …}` whose value is not a string.
    #[error("args{pointer}: `$credential` must be a string naming a credential")]
    Malformed {
        /// JSON pointer (within args) of the reference.
        pointer: String,
    },
}

/// Args in their two forms.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedArgs {
    /// Args with raw secrets in place: sent to the tool, never recorded.
    pub resolved: Value,
    /// Args with `"[redacted]"` in place: what is hashed and recorded.
    pub redacted: Value,
}

/// Resolves every credential reference in `args` against `credentials`.
pub fn resolve_credentials(
    args: &Value,
    credentials: &BTreeMap<String, String>,
) -> Result<ResolvedArgs, CredentialError> {
    let mut pointer = String::new();
    let (resolved, redacted) = walk(args, credentials, &mut pointer)?;
    Ok(ResolvedArgs { resolved, redacted })
}

/// The reference name if `value` is exactly `{"$credential": …}`.
fn credential_ref(value: &Value) -> Option<&Value> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get(CREDENTIAL_KEY),
        _ => None,
    }
}

fn walk(
    value: &Value,
    credentials: &BTreeMap<String, String>,
    pointer: &mut String,
) -> Result<(Value, Value), CredentialError> {
    if let Some(reference) = credential_ref(value) {
        let Value::String(reference) = reference else {
            return Err(CredentialError::Malformed {
                pointer: pointer.clone(),
            });
        };
        let secret = credentials
            .get(reference)
            .ok_or_else(|| CredentialError::Unknown {
                pointer: pointer.clone(),
                reference: reference.clone(),
            })?;
        return Ok((
            Value::String(secret.clone()),
            Value::String(REDACTED.to_owned()),
        ));
    }
    match value {
        Value::Object(map) => {
            let mut resolved = Map::new();
            let mut redacted = Map::new();
            for (key, child) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape_pointer_token(key));
                let (r, d) = walk(child, credentials, pointer)?;
                pointer.truncate(len);
                resolved.insert(key.clone(), r);
                redacted.insert(key.clone(), d);
            }
            Ok((Value::Object(resolved), Value::Object(redacted)))
        }
        Value::Array(items) => {
            let mut resolved = Vec::with_capacity(items.len());
            let mut redacted = Vec::with_capacity(items.len());
            for (index, child) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&index.to_string());
                let (r, d) = walk(child, credentials, pointer)?;
                pointer.truncate(len);
                resolved.push(r);
                redacted.push(d);
            }
            Ok((Value::Array(resolved), Value::Array(redacted)))
        }
        Value::String(text) => Ok((
            Value::String(text.clone()),
            Value::String(scrub_secret_shaped(text).into_owned()),
        )),
        other => Ok((other.clone(), other.clone())),
    }
}

/// A prefix, the bytes the rest of a key is made of, and how many of them make it a key.
type SecretShape = (&'static str, fn(u8) -> bool, usize);

/// The shapes of secret material a tool argument may carry literally (a provider key pasted
/// into args rather than referenced): a prefix, the characters the rest is made of, and how
/// many of them make it a key. They are the shapes the upstream reference hosts scrub (an
/// OpenAI-style `sk-…` key, AWS access key ids, Slack and GitHub tokens).
const SECRET_SHAPES: &[SecretShape] = &[
    (
        "sk-",
        |b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
        6,
    ),
    ("AKIA", |b| b.is_ascii_uppercase() || b.is_ascii_digit(), 12),
    ("ASIA", |b| b.is_ascii_uppercase() || b.is_ascii_digit(), 12),
    ("xoxb-", |b| b.is_ascii_alphanumeric() || b == b'-', 8),
    ("xoxa-", |b| b.is_ascii_alphanumeric() || b == b'-', 8),
    ("xoxp-", |b| b.is_ascii_alphanumeric() || b == b'-', 8),
    ("xoxr-", |b| b.is_ascii_alphanumeric() || b == b'-', 8),
    ("xoxs-", |b| b.is_ascii_alphanumeric() || b == b'-', 8),
    ("ghp_", |b| b.is_ascii_alphanumeric(), 16),
    ("gho_", |b| b.is_ascii_alphanumeric(), 16),
    ("ghu_", |b| b.is_ascii_alphanumeric(), 16),
    ("ghs_", |b| b.is_ascii_alphanumeric(), 16),
    ("ghr_", |b| b.is_ascii_alphanumeric(), 16),
];

/// `text` with every secret-shaped run replaced by [`REDACTED`] (SR-1 for literal secrets:
/// they never enter the args hash or anything recorded, and two different keys redact alike).
pub fn scrub_secret_shaped(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        // A key starts at a word boundary.
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let hit = boundary
            .then(|| {
                SECRET_SHAPES.iter().find_map(|(prefix, body, min)| {
                    let rest = bytes[i..].strip_prefix(prefix.as_bytes())?;
                    let run = rest.iter().take_while(|b| body(**b)).count();
                    (run >= *min).then_some(prefix.len() + run)
                })
            })
            .flatten();
        match hit {
            Some(len) => {
                out.push_str(&text[copied..i]);
                out.push_str(REDACTED);
                i += len;
                copied = i;
            }
            None => i += 1,
        }
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    std::borrow::Cow::Owned(out)
}

/// `args` with every secret-shaped string run redacted ([`scrub_secret_shaped`]), at any
/// depth: what an upstream tool-hooks call hashes, which names no credential.
pub fn redact_secret_shaped(args: &Value) -> Value {
    match args {
        Value::String(text) => Value::String(scrub_secret_shaped(text).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(redact_secret_shaped).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_secret_shaped(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// RFC 6901 escaping of one pointer token.
fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Removes known secret values from text that came from outside the host's
/// control (e.g. a validator message) before it is recorded or answered.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl Scrubber {
    /// A scrubber for every non-empty credential value.
    pub fn new(credentials: &BTreeMap<String, String>) -> Self {
        let mut secrets: Vec<String> = credentials
            .values()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        // Longest first, so a secret that contains another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self { secrets }
    }

    /// `text` with every secret replaced by `"[redacted]"`.
    pub fn scrub(&self, text: &str) -> String {
        self.secrets.iter().fold(text.to_owned(), |acc, secret| {
            acc.replace(secret.as_str(), REDACTED)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn creds(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn secret_shaped_literals_are_redacted_alike_and_other_text_kept() {
        let a = json!({"apiKey": "sk-canary-toolcert-0011aa-one", "q": "openwop", "n": 1});
        let b = json!({"apiKey": "sk-canary-toolcert-0011aa-two", "q": "openwop", "n": 1});
        let (ra, rb) = (redact_secret_shaped(&a), redact_secret_shaped(&b));
        assert_eq!(ra, rb);
        assert_eq!(ra["apiKey"], "[redacted]");
        assert_eq!(
            scrub_secret_shaped("Bearer sk-abcdef1 and AKIAABCDEFGHIJKL, then task-done"),
            "Bearer [redacted] and [redacted], then task-done"
        );
        for kept in [
            "sk-short",
            "desk-123456789",
            "ask-anything",
            "ghp_tooshort",
            "é sk-",
        ] {
            assert_eq!(scrub_secret_shaped(kept), kept);
        }
        let resolved = resolve_credentials(&a, &creds(&[])).expect("no refs");
        assert_eq!(resolved.resolved, a, "the tool gets what was sent");
        assert_eq!(
            resolved.redacted, ra,
            "what is hashed and recorded is redacted"
        );
    }

    #[test]
    fn nested_refs_are_resolved_and_redacted() {
        let args = json!({
            "q": "weather",
            "auth": {"$credential": "api-key"},
            "list": [1, {"$credential": "other"}, {"nested": {"$credential": "api-key"}}]
        });
        let out = resolve_credentials(&args, &creds(&[("api-key", "sk-1"), ("other", "pw")]))
            .expect("resolves");
        assert_eq!(
            out.resolved,
            json!({"q": "weather", "auth": "sk-1", "list": [1, "pw", {"nested": "sk-1"}]})
        );
        assert_eq!(
            out.redacted,
            json!({"q": "weather", "auth": "[redacted]", "list": [1, "[redacted]", {"nested": "[redacted]"}]})
        );
        assert!(!out.redacted.to_string().contains("sk-1"));
    }

    #[test]
    fn objects_that_are_not_exactly_a_ref_are_plain_data() {
        let args = json!({"x": {"$credential": "k", "extra": 1}});
        let out = resolve_credentials(&args, &creds(&[])).expect("plain data");
        assert_eq!(out.resolved, args);
        assert_eq!(out.redacted, args);
    }

    #[test]
    fn unknown_ref_names_the_ref_and_its_place() {
        let args = json!({"a/b": [{"$credential": "missing-key"}]});
        let err = resolve_credentials(&args, &creds(&[])).unwrap_err();
        assert_eq!(
            err,
            CredentialError::Unknown {
                pointer: "/a~1b/0".into(),
                reference: "missing-key".into()
            }
        );
        assert!(err.to_string().contains("missing-key"));
    }

    #[test]
    fn non_string_ref_is_malformed() {
        let err = resolve_credentials(&json!({"k": {"$credential": 7}}), &creds(&[])).unwrap_err();
        assert_eq!(
            err,
            CredentialError::Malformed {
                pointer: "/k".into()
            }
        );
    }

    proptest::proptest! {
        /// SR-1: whatever the args look like, the redacted form never holds
        /// the secret and the resolved form holds it once per reference.
        #[test]
        fn redacted_args_never_hold_the_secret(
            keys in proptest::collection::vec("[a-z]{1,6}", 1..6),
            plain in proptest::collection::vec("[a-z0-9 ]{0,12}", 1..6),
            ref_at in 0usize..6,
        ) {
            let secret = "SECRET-XYZ-123";
            let mut args = Map::new();
            for (key, value) in keys.iter().zip(plain.iter()) {
                args.insert(key.clone(), Value::String(value.clone()));
            }
            let ref_key = keys[ref_at % keys.len()].clone();
            args.insert(ref_key, serde_json::json!({"$credential": "k"}));
            let out = resolve_credentials(&Value::Object(args), &creds(&[("k", secret)]))
                .expect("resolves");
            proptest::prop_assert!(!out.redacted.to_string().contains(secret));
            proptest::prop_assert_eq!(out.resolved.to_string().matches(secret).count(), 1);
        }
    }

    #[test]
    fn scrubber_removes_secrets_longest_first() {
        let scrubber = Scrubber::new(&creds(&[("a", "abc"), ("b", "abcdef"), ("c", "")]));
        assert_eq!(
            scrubber.scrub("x abcdef y abc z"),
            "x [redacted] y [redacted] z"
        );
    }
}
