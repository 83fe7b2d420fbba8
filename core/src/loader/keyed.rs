//! Keyed checks: a scenario may write `checks` as an object keyed by check id instead of an
//! array of checks that each carry an `id`. The id is then unique by construction and each
//! check is one level shallower.
//!
//! JSON objects are unordered and `serde_json`'s map sorts its keys, but a scenario's checks
//! are judged and reported in the order written. So a scenario file is parsed here: strictly
//! (duplicate member names rejected anywhere, as [`toolcert_base::canonical::parse_strict`]), with the
//! top-level `checks` object turned into the array form in file order as it is read. What
//! the rest of the loader sees is the array form only.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use toolcert_base::canonical::StrictValue;

/// Parse a scenario file: strict JSON, with a keyed top-level `checks` read in file order
/// into `[{"id": key, …}, …]`.
pub(crate) fn parse_scenario(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = de::Deserializer::deserialize_any(&mut de, Document)?;
    de.end()?;
    Ok(value)
}

/// The file's top level: an object whose `checks` member is read by [`Checks`].
struct Document;

impl<'de> Visitor<'de> for Document {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scenario object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate object key \"{key}\"")));
            }
            let value = if key == "checks" {
                map.next_value_seed(Checks)?
            } else {
                map.next_value_seed(StrictValue)?
            };
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// The `checks` member: an array is read as it is; an object becomes that array in file order.
struct Checks;

impl<'de> DeserializeSeed<'de> for Checks {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checks {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("checks: an object keyed by check id, or an array of checks")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        StrictValue.deserialize(de::value::SeqAccessDeserializer::new(seq))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut checks = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(id) = map.next_key::<String>()? {
            if !seen.insert(id.clone()) {
                return Err(de::Error::custom(format!(
                    "check \"{id}\" is written twice in checks; check ids are unique within a scenario"
                )));
            }
            let check = match map.next_value_seed(StrictValue)? {
                Value::Object(mut check) => {
                    if check.contains_key("id") {
                        return Err(de::Error::custom(format!(
                            "check \"{id}\" also has an \"id\" member; in keyed checks the key is the id, so remove it"
                        )));
                    }
                    if check.contains_key("$fragment") {
                        return Err(de::Error::custom(format!(
                            "check \"{id}\" is a fragment use; fragment uses go in the array form of checks (\"checks\": [{{\"$fragment\": …}}])"
                        )));
                    }
                    check.insert("id".into(), Value::String(id));
                    check
                }
                _ => {
                    return Err(de::Error::custom(format!(
                        "check \"{id}\" is not an object; write \"{id}\": {{\"says\": …, \"at\": …, \"equals\": …}}"
                    )));
                }
            };
            checks.push(Value::Object(check));
        }
        Ok(Value::Array(checks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keyed_checks_keep_file_order_and_gain_their_id() {
        let v = parse_scenario(
            r#"{"id": "x.y", "checks": {"zeta": {"says": "z"}, "alpha": {"says": "a"}, "mid": {"says": "m"}}}"#,
        )
        .unwrap();
        assert_eq!(
            v["checks"],
            json!([
                {"id": "zeta", "says": "z"},
                {"id": "alpha", "says": "a"},
                {"id": "mid", "says": "m"}
            ])
        );
    }

    #[test]
    fn the_array_form_reads_as_written() {
        let text = r#"{"checks": [{"id": "b"}, {"id": "a"}], "steps": []}"#;
        assert_eq!(
            parse_scenario(text).unwrap(),
            toolcert_base::canonical::parse_strict(text).unwrap()
        );
    }

    #[test]
    fn mistakes_say_what_to_write() {
        let err = |t: &str| parse_scenario(t).unwrap_err().to_string();
        assert!(err(r#"{"checks": {"a": {}, "a": {}}}"#).contains("written twice"));
        assert!(err(r#"{"checks": {"a": {"id": "a"}}}"#).contains("remove it"));
        assert!(err(r#"{"checks": {"a": 3}}"#).contains("not an object"));
        assert!(err(r#"{"checks": {"a": {"$fragment": "f"}}}"#).contains("array form"));
        assert!(err(r#"{"title": 1, "title": 2}"#).contains("duplicate"));
        // Duplicates inside a check are caught as anywhere else.
        assert!(err(r#"{"checks": {"a": {"says": "x", "says": "y"}}}"#).contains("duplicate"));
        // Neither a scenario object nor either form of checks: serde names what was expected.
        assert!(err("[1]").contains("expected a scenario object"));
        assert!(
            err(r#"{"checks": "all"}"#).contains("expected checks: an object keyed by check id")
        );
    }
}
