//! Strict JSON request bodies with messages that name the field at fault.
//!
//! Bodies are taken as bytes and parsed here rather than through axum's
//! `Json` extractor, whose rejections are plain text: every failure becomes a
//! 400 `validation_error` envelope. Field values are never echoed, because a
//! wrongly typed field may hold a secret (SR-1).

use std::collections::BTreeMap;

use axum::extract::rejection::BytesRejection;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// The JSON kind of a value, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Maps a body-read failure (e.g. over the size limit) to the envelope.
pub fn body_rejection(rejection: &BytesRejection) -> ApiError {
    ApiError::validation(format!(
        "request body could not be read ({}); send a JSON object of at most 2 MiB",
        rejection.body_text()
    ))
}

/// Parses a body that must be a JSON object.
pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::validation(
            "request body is empty; send a JSON object",
        ));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|err| {
        // serde_json's syntax messages give line/column, not content.
        ApiError::validation(format!("request body is not valid JSON: {err}"))
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(ApiError::validation(format!(
            "request body must be a JSON object, got {}",
            kind(&other)
        ))),
    }
}

/// Typed, one-time access to the members of a JSON object.
#[derive(Debug)]
pub struct Fields {
    map: Map<String, Value>,
}

impl Fields {
    /// Wraps `map`, rejecting any member not in `allowed` (closed shapes).
    pub fn closed(map: Map<String, Value>, allowed: &[&str]) -> Result<Self, ApiError> {
        if let Some(unknown) = map.keys().find(|key| !allowed.contains(&key.as_str())) {
            return Err(ApiError::validation(format!(
                "unknown field `{unknown}`; allowed fields: {}",
                allowed.join(", ")
            )));
        }
        Ok(Self { map })
    }

    /// Takes a member. `null` is not "absent": it is a wrong type like any
    /// other, so the accepted shape is exactly the published schema.
    fn take(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    fn wrong_type(name: &str, expected: &str, got: &Value) -> ApiError {
        ApiError::validation(format!(
            "field `{name}` must be {expected}, got {}",
            kind(got)
        ))
    }

    /// A required non-empty string.
    pub fn required_string(&mut self, name: &str) -> Result<String, ApiError> {
        match self.take(name) {
            None => Err(ApiError::validation(format!(
                "field `{name}` is required (a non-empty string)"
            ))),
            Some(Value::String(s)) if !s.is_empty() => Ok(s),
            Some(Value::String(_)) => Err(ApiError::validation(format!(
                "field `{name}` must not be empty"
            ))),
            Some(other) => Err(Self::wrong_type(name, "a non-empty string", &other)),
        }
    }

    /// An optional string.
    pub fn optional_string(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(Self::wrong_type(name, "a string", &other)),
        }
    }

    /// An optional boolean.
    pub fn optional_bool(&mut self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(Self::wrong_type(name, "a boolean", &other)),
        }
    }

    /// An optional object.
    pub fn optional_object(&mut self, name: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(other) => Err(Self::wrong_type(name, "an object", &other)),
        }
    }

    /// An optional integer in `min..=max`.
    pub fn optional_int_in(
        &mut self,
        name: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ApiError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if (min..=max).contains(&v) => Ok(Some(v)),
                _ => Err(ApiError::validation(format!(
                    "field `{name}` must be an integer from {min} to {max}"
                ))),
            },
            Some(other) => Err(Self::wrong_type(name, "an integer", &other)),
        }
    }

    /// An optional array of strings.
    pub fn optional_string_array(&mut self, name: &str) -> Result<Option<Vec<String>>, ApiError> {
        let Some(value) = self.take(name) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(Self::wrong_type(name, "an array of strings", &value));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(s) => Ok(s),
                other => Err(Self::wrong_type(
                    &format!("{name}[{index}]"),
                    "a string",
                    &other,
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An optional object whose values are all strings.
    pub fn optional_string_map(
        &mut self,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>, ApiError> {
        let Some(map) = self.optional_object(name)? else {
            return Ok(None);
        };
        map.into_iter()
            .map(|(key, value)| match value {
                Value::String(s) => Ok((key, s)),
                other => Err(Self::wrong_type(
                    &format!("{name}.{key}"),
                    "a string",
                    &other,
                )),
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(value: Value, allowed: &[&str]) -> Result<Fields, ApiError> {
        let Value::Object(map) = value else {
            panic!("test input must be an object")
        };
        Fields::closed(map, allowed)
    }

    #[test]
    fn body_must_be_a_json_object() {
        assert!(parse_object(b"").unwrap_err().message.contains("empty"));
        assert!(
            parse_object(b"{")
                .unwrap_err()
                .message
                .contains("not valid JSON")
        );
        assert!(
            parse_object(b"[1]")
                .unwrap_err()
                .message
                .contains("got array")
        );
        assert!(parse_object(br#"{"a": 1}"#).is_ok());
    }

    #[test]
    fn unknown_fields_are_named() {
        let err = fields(json!({"a": 1, "zzz": 2}), &["a"]).unwrap_err();
        assert!(err.message.contains("`zzz`"), "{}", err.message);
    }

    #[test]
    fn wrong_types_name_the_field_without_echoing_the_value() {
        let mut f = fields(json!({"n": "secret-value", "m": {"k": 5}}), &["n", "m"]).expect("ok");
        let err = f.optional_bool("n").unwrap_err();
        assert!(err.message.contains("`n`"), "{}", err.message);
        assert!(!err.message.contains("secret-value"));
        let err = f.optional_string_map("m").unwrap_err();
        assert!(err.message.contains("`m.k`"), "{}", err.message);
    }

    #[test]
    fn required_strings_must_be_present_and_non_empty() {
        let mut f = fields(json!({"a": "", "b": null}), &["a", "b", "c"]).expect("ok");
        assert!(
            f.required_string("a")
                .unwrap_err()
                .message
                .contains("empty")
        );
        assert!(
            f.required_string("b")
                .unwrap_err()
                .message
                .contains("got null")
        );
        assert!(
            f.required_string("c")
                .unwrap_err()
                .message
                .contains("required")
        );
    }

    #[test]
    fn null_is_a_wrong_type_not_absence() {
        let mut f = fields(json!({"s": null}), &["s"]).expect("ok");
        let err = f.optional_string("s").unwrap_err();
        assert!(err.message.contains("got null"), "{}", err.message);
    }

    #[test]
    fn integers_are_range_checked() {
        let mut f = fields(json!({"t": 0, "u": 5, "v": 1.5}), &["t", "u", "v"]).expect("ok");
        assert!(f.optional_int_in("t", 1, 10).is_err());
        assert_eq!(f.optional_int_in("u", 1, 10).expect("ok"), Some(5));
        assert!(f.optional_int_in("v", 1, 10).is_err());
        assert_eq!(f.optional_int_in("missing", 1, 10).expect("ok"), None);
    }

    #[test]
    fn string_arrays_name_the_bad_index() {
        let mut f = fields(json!({"s": ["a", 1]}), &["s"]).expect("ok");
        assert!(
            f.optional_string_array("s")
                .unwrap_err()
                .message
                .contains("`s[1]`")
        );
    }
}
