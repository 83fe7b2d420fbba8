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

/// A [`DeserializeSeed`] for one JSON value that rejects duplicate member names anywhere in it
/// (the seed [`parse_strict`] uses, for parsers that read part of a document their own way).
pub(crate) struct StrictValue;

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

    proptest! {
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
