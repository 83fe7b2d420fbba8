//! RFC 8785 canonical JSON, SHA-256 digests over it, a strict JSON parser, and the RFC 6901
//! escape of one JSON pointer token.
//!
//! `argsHash` (HOOKS-AUDIT-1) and the discovery digest in reports are SHA-256 over the
//! RFC 8785 (JCS) serialization. JCS assumes I-JSON, so every document toolcert loads or
//! captures is parsed with [`parse_strict`], which rejects duplicate object keys that
//! `serde_json` would otherwise silently collapse.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The RFC 8785 canonical bytes of a JSON value.
pub fn jcs_bytes(value: &Value) -> Vec<u8> {
    // serde_json_canonicalizer only fails on values that are not JSON (never for `Value`).
    serde_json_canonicalizer::to_vec(value).unwrap_or_default()
}

/// Lowercase hex SHA-256 over the RFC 8785 canonical form of `value`.
pub fn jcs_sha256_hex(value: &Value) -> String {
    hex::encode(Sha256::digest(jcs_bytes(value)))
}

/// Lowercase hex SHA-256 of raw bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Parse JSON text, rejecting duplicate object member names anywhere in the document.
pub fn parse_strict(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = StrictValue.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Why a JSON text is not I-JSON (RFC 7493).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IJsonError {
    /// Not strict JSON (a duplicate member name included).
    #[error("{0}")]
    Json(String),
    /// A number a double cannot hold exactly as written (RFC 7493 §2.2).
    #[error(
        "the number {number} is outside I-JSON (RFC 7493 §2.2): {why}; RFC 8785 would canonicalize it to another value, so a change of it could not be seen"
    )]
    Number {
        /// The number as written (cut to 40 characters).
        number: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The largest integer an IEEE 754 double holds with every smaller one (RFC 7493 §2.2).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// [`parse_strict`], and every number must be I-JSON: an integer (written without fraction or
/// exponent) within ±(2^53 − 1), any other number equal, as written, to the shortest decimal
/// of the double it parses to. RFC 8785 hashes the double, so two texts a double cannot tell
/// apart (`9007199254740993` and `9007199254740992`, `0.30000000000000001` and `0.3`) would
/// canonicalize to the same bytes: under this check two accepted numbers with different
/// values always canonicalize differently.
pub fn parse_ijson(text: &str) -> Result<Value, IJsonError> {
    let value = parse_strict(text).map_err(|e| IJsonError::Json(e.to_string()))?;
    check_ijson_numbers(text)?;
    Ok(value)
}

/// Check every number token of a JSON text that already parsed (see [`parse_ijson`]).
fn check_ijson_numbers(text: &str) -> Result<(), IJsonError> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string, escapes included.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                check_number(&text[start..i])?;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// One number token (valid JSON number syntax).
fn check_number(token: &str) -> Result<(), IJsonError> {
    let bad = |why| IJsonError::Number {
        number: token.chars().take(40).collect(),
        why,
    };
    if !token.contains(['.', 'e', 'E']) {
        let digits = token.trim_start_matches('-');
        let fits = digits.len() <= 16 && digits.parse::<u64>().is_ok_and(|n| n <= MAX_SAFE_INTEGER);
        return if fits {
            Ok(())
        } else {
            Err(bad("an integer beyond ±(2^53 − 1)"))
        };
    }
    let double: f64 = token.parse().map_err(|_| bad("not a number"))?;
    if !double.is_finite() {
        return Err(bad("beyond the range of a double"));
    }
    // The decimal RFC 8785 writes for that double (ECMAScript's Number::toString: the shortest
    // digits that round-trip, a tie going to the even digit, as Python's `repr` and ryu do;
    // Rust's own `{:e}` breaks such a tie upwards, 1124266100877775.25 ⇒ …775.3). Exactly one
    // text per double passes, so two accepted numbers of different value never share bytes.
    let canonical = jcs_bytes(&Value::from(double));
    match (
        decimal(token),
        decimal(&String::from_utf8_lossy(&canonical)),
    ) {
        (Some(written), Some(held)) if written == held => Ok(()),
        _ => Err(bad("more precision than a double holds")),
    }
}

/// A decimal number as (negative, significant digits, exponent): value = digits × 10^exponent,
/// digits without leading or trailing zeros; zero is `(false, "", 0)` whatever its sign.
fn decimal(text: &str) -> Option<(bool, String, i64)> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: String = int.chars().chain(frac.chars()).collect();
    let mut exponent = exponent.checked_sub(i64::try_from(frac.len()).ok()?)?;
    let trimmed = digits.trim_end_matches('0').len();
    exponent = exponent.checked_add(i64::try_from(digits.len() - trimmed).ok()?)?;
    digits.truncate(trimmed);
    let digits = digits.trim_start_matches('0').to_string();
    if digits.is_empty() {
        return Some((false, digits, 0));
    }
    Some((negative, digits, exponent))
}

/// A [`DeserializeSeed`] for one JSON value that rejects duplicate member names anywhere in it
/// (the seed [`parse_strict`] uses, for parsers that read part of a document their own way).
pub struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate object key \"{key}\"")));
            }
            let value = map.next_value_seed(StrictValue)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// One RFC 6901 reference token: a member name as it appears in a JSON pointer (`~` written
/// `~0`, `/` written `~1`).
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The JSON type of a value, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn jcs_matches_rfc8785_examples() {
        // Numbers take their ECMAScript shortest form; keys sort by UTF-16 code units.
        let v = parse_strict(r#"{"b": 10.0, "a": 1e21, "c": [1E2, -0, 0.000001]}"#).unwrap();
        assert_eq!(
            String::from_utf8(jcs_bytes(&v)).unwrap(),
            r#"{"a":1e+21,"b":10,"c":[100,0,0.000001]}"#
        );
        // U+1F600 (astral, UTF-16 0xD83D…) sorts before U+FB01 (BMP 0xFB01) in UTF-16 order.
        let v = json!({"\u{fb01}": 1, "\u{1f600}": 2});
        assert_eq!(
            String::from_utf8(jcs_bytes(&v)).unwrap(),
            "{\"\u{1f600}\":2,\"\u{fb01}\":1}"
        );
    }

    #[test]
    fn digest_is_lowercase_hex_of_canonical_bytes() {
        let v = json!({"b": 1, "a": "x"});
        assert_eq!(jcs_sha256_hex(&v), sha256_hex(br#"{"a":"x","b":1}"#));
        assert_eq!(jcs_sha256_hex(&v).len(), 64);
    }

    #[test]
    fn duplicate_keys_are_rejected_at_any_depth() {
        let err = parse_strict(r#"{"a": {"b": 1, "b": 2}}"#).unwrap_err();
        assert!(
            err.to_string().contains("duplicate object key \"b\""),
            "{err}"
        );
        assert!(parse_strict(r#"{"a": 1} trailing"#).is_err());
    }

    #[test]
    fn arbitrary_precision_is_off_build_wide() {
        // A feature leaking `arbitrary_precision` into serde_json would keep all 25 digits.
        let v: Value = serde_json::from_str("1234567890123456789012345").unwrap();
        assert_ne!(v.to_string(), "1234567890123456789012345");
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "\\PC{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn numbers_outside_i_json_are_refused() {
        for ok in [
            "0",
            "-0",
            "1",
            "9007199254740991",
            "-9007199254740991",
            "0.1",
            "1.10",
            "1E2",
            "1e-7",
            "-1.5e300",
            "0.000001",
            "1e21",
            "5e-324",
            "[1, 2.5, {\"a\": 3}]",
            "\"9007199254740993 in a string\"",
        ] {
            parse_ijson(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [
            "9007199254740992",
            "9007199254740993",
            "-9007199254740993",
            "12345678901234567890",
            "0.30000000000000001",
            "3.141592653589793238462643383279",
            "1e-400",
            "{\"maxLength\": 9007199254740993}",
        ] {
            let err = parse_ijson(bad).unwrap_err();
            assert!(matches!(err, IJsonError::Number { .. }), "{bad}: {err}");
        }
        assert!(matches!(
            parse_ijson("{\"a\":1,\"a\":2}"),
            Err(IJsonError::Json(_))
        ));
    }

    /// A JSON number token: an optional sign, digits, an optional fraction and exponent.
    fn arb_number_text() -> impl Strategy<Value = String> {
        (
            any::<bool>(),
            "[0-9]{1,20}",
            proptest::option::of("[0-9]{1,20}"),
            proptest::option::of(-330i32..330),
        )
            .prop_map(|(neg, int, frac, exp)| {
                let int = int.trim_start_matches('0');
                let int = if int.is_empty() { "0" } else { int };
                let mut t = format!("{}{int}", if neg { "-" } else { "" });
                if let Some(f) = frac {
                    t.push('.');
                    t.push_str(&f);
                }
                if let Some(e) = exp {
                    t.push_str(&format!("e{e}"));
                }
                t
            })
    }

    #[test]
    fn a_tie_between_two_shortest_decimals_is_read_as_rfc_8785_writes_it() {
        // The double nearest 1124266100877775.2 is exactly …775.25: RFC 8785 (ECMAScript), ryu
        // and Python's repr write …775.2, Rust's `{:e}` …775.3. The form JCS writes passes;
        // the other text of the same double does not, or the two would share bytes.
        assert!(parse_ijson("[1124266100877775.2]").is_ok());
        assert!(parse_ijson("[1124266100877775.3]").is_err());
        assert_eq!(
            jcs_bytes(&parse_ijson("1124266100877775.2").unwrap()),
            b"1124266100877775.2"
        );
    }

    proptest! {
        #[test]
        fn accepted_numbers_with_different_values_canonicalize_differently(
            a in arb_number_text(),
            b in arb_number_text(),
        ) {
            // The property the check exists for: no two I-JSON numbers of different value
            // share canonical bytes (so no drift between them is silent).
            if let (Ok(x), Ok(y)) = (parse_ijson(&a), parse_ijson(&b))
                && jcs_bytes(&x) == jcs_bytes(&y)
            {
                prop_assert_eq!(decimal(&a), decimal(&b), "{} and {}", a, b);
            }
        }

        #[test]
        fn every_double_and_safe_integer_serde_writes_is_i_json(
            f in any::<f64>().prop_filter("finite", |f| f.is_finite()),
            n in -(MAX_SAFE_INTEGER as i64)..=(MAX_SAFE_INTEGER as i64),
        ) {
            let text = serde_json::to_string(&json!([f, n])).unwrap();
            prop_assert!(parse_ijson(&text).is_ok(), "{}", text);
        }

        #[test]
        fn canonical_form_is_a_fixed_point(v in arb_json()) {
            // Canonicalizing the canonical text again yields the same bytes, and key order in
            // the input never changes the digest.
            let once = jcs_bytes(&v);
            let reparsed = parse_strict(std::str::from_utf8(&once).unwrap()).unwrap();
            prop_assert_eq!(jcs_bytes(&reparsed), once);
        }

        #[test]
        fn strict_parse_agrees_with_serde_json_without_duplicates(v in arb_json()) {
            let text = serde_json::to_string(&v).unwrap();
            prop_assert_eq!(parse_strict(&text).unwrap(), serde_json::from_str::<Value>(&text).unwrap());
        }
    }
}
