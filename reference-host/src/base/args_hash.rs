//! `argsHash`: the content-free fingerprint of a tool call's arguments.
//!
//! RFC 0064 §B/§E: argsHash is the lowercase hex SHA-256 of the RFC 8785
//! (JCS) canonical JSON of the REDACTED args. Canonicalisation makes the hash
//! independent of key order and number spelling; hashing the redacted form
//! keeps raw key material out of the hash input (SR-1), so the hash cannot be
//! used to confirm a guessed secret.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::base::mutant::{Mutant, MutantInfo};

/// The args could not be serialised for hashing.
#[derive(Debug, thiserror::Error)]
#[error("cannot canonicalise args for argsHash: {0}")]
pub struct ArgsHashError(#[from] serde_json::Error);

/// Lowercase hex SHA-256 of the RFC 8785 canonical form of `value`.
pub fn jcs_sha256(value: &Value) -> Result<String, ArgsHashError> {
    let canonical = serde_json_canonicalizer::to_vec(value)?;
    Ok(sha256_hex(&canonical))
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The argsHash of a call, given both forms of its args.
///
/// The correct input is the redacted args in canonical form; the two
/// `args-hash-*` mutants break exactly this choice.
pub fn args_hash(
    redacted: &Value,
    resolved: &Value,
    mutant: Option<Mutant>,
) -> Result<String, ArgsHashError> {
    if mutant == Some(Mutant::ArgsHashRaw) {
        // Bug: the raw secret enters the hash input (violates SR-1).
        jcs_sha256(resolved)
    } else if mutant == Some(Mutant::ArgsHashNoncanonical) {
        // Bug: serde_json's spelling is not RFC 8785 (numbers, key order).
        Ok(sha256_hex(serde_json::to_string(redacted)?.as_bytes()))
    } else {
        jcs_sha256(redacted)
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::ArgsHashRaw,
        name: "args-hash-raw",
        breaks: "argsHash is computed over the resolved raw args (secret included)",
    },
    MutantInfo {
        mutant: Mutant::ArgsHashNoncanonical,
        name: "args-hash-noncanonical",
        breaks: "argsHash is computed over serde_json::to_string(args) (redacted, but not RFC 8785 canonical)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_object_hash_is_the_sha256_of_braces() {
        // sha256("{}")
        assert_eq!(
            jcs_sha256(&json!({})).expect("hash"),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn hash_is_over_the_canonical_bytes() {
        let args: Value =
            serde_json::from_str(r#"{"b": 10.0, "a": [1e21, "x"], "c": {"z": 1, "y": 2}}"#)
                .expect("json");
        let canonical = serde_json_canonicalizer::to_string(&args).expect("jcs");
        assert_eq!(canonical, r#"{"a":[1e+21,"x"],"b":10,"c":{"y":2,"z":1}}"#);
        assert_eq!(
            jcs_sha256(&args).expect("hash"),
            sha256_hex(canonical.as_bytes())
        );
    }

    #[test]
    fn large_exponents_use_the_ecmascript_spelling() {
        // RFC 8785 §3.2.2.3: numbers ≥ 1e21 use exponent form with a sign.
        let args: Value = serde_json::from_str(r#"{"n": 1e21}"#).expect("json");
        assert_eq!(
            serde_json_canonicalizer::to_string(&args).expect("jcs"),
            r#"{"n":1e+21}"#
        );
    }

    #[test]
    fn jcs_differs_from_serde_json_for_numbers() {
        // serde_json spells these `10.0`, `1e+20`, `1e-6`, `-0.0`; JCS
        // (ECMAScript Number::toString) spells them `10`,
        // `100000000000000000000`, `0.000001`, `0`.
        for text in [
            r#"{"n": 10.0}"#,
            r#"{"n": 1e20}"#,
            r#"{"n": 0.000001}"#,
            r#"{"n": -0.0}"#,
        ] {
            let args: Value = serde_json::from_str(text).expect("json");
            let plain = serde_json::to_string(&args).expect("to_string");
            let canonical = serde_json_canonicalizer::to_string(&args).expect("jcs");
            assert_ne!(plain, canonical, "{text}");
            let correct = args_hash(&args, &args, None).expect("hash");
            let noncanonical =
                args_hash(&args, &args, Some(Mutant::ArgsHashNoncanonical)).expect("hash");
            assert_eq!(correct, sha256_hex(canonical.as_bytes()));
            assert_eq!(noncanonical, sha256_hex(plain.as_bytes()));
            assert_ne!(correct, noncanonical, "{text}");
        }
    }

    #[test]
    fn key_order_does_not_change_the_hash() {
        let one: Value = serde_json::from_str(r#"{"a": 1, "b": 2}"#).expect("json");
        let two: Value = serde_json::from_str(r#"{"b": 2, "a": 1}"#).expect("json");
        assert_eq!(
            jcs_sha256(&one).expect("hash"),
            jcs_sha256(&two).expect("hash")
        );
    }

    #[test]
    fn hash_uses_redacted_args_unless_mutated() {
        let redacted = json!({"key": "[redacted]"});
        let resolved = json!({"key": "sk-live-123"});
        let correct = args_hash(&redacted, &resolved, None).expect("hash");
        assert_eq!(correct, jcs_sha256(&redacted).expect("hash"));
        let raw = args_hash(&redacted, &resolved, Some(Mutant::ArgsHashRaw)).expect("hash");
        assert_eq!(raw, jcs_sha256(&resolved).expect("hash"));
        assert_ne!(correct, raw);
        assert_eq!(correct.len(), 64);
        assert!(
            correct
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }
}
