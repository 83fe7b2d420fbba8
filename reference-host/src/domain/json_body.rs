//! Strict JSON request bodies with messages that name the field at fault.
//!
//! Bodies are taken as bytes and parsed here rather than through axum's
//! `Json` extractor, whose rejections are plain text: every failure becomes a
//! 400 `validation_error` envelope. Field values are never echoed, because a
//! wrongly typed field may hold a secret (SR-1).

use std::collections::BTreeMap;
use std::net::IpAddr;

use axum::extract::rejection::BytesRejection;
use reqwest::Url;
use serde_json::{Map, Value};

use crate::domain::error::ApiError;

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
    /// Where this object sits in the body (`""` for the body itself,
    /// `provider`, `tools[0]`, …), so messages name nested members fully.
    path: String,
}

impl Fields {
    /// Wraps `map`, rejecting any member not in `allowed` (closed shapes).
    pub fn closed(map: Map<String, Value>, allowed: &[&str]) -> Result<Self, ApiError> {
        Self::closed_at("", map, allowed)
    }

    /// Like [`Fields::closed`] for an object nested at `path` (e.g.
    /// `tools[0]`); every message names members as `path.member`.
    pub fn closed_at(
        path: &str,
        map: Map<String, Value>,
        allowed: &[&str],
    ) -> Result<Self, ApiError> {
        let fields = Self {
            map,
            path: path.to_owned(),
        };
        if let Some(unknown) = fields
            .map
            .keys()
            .find(|key| !allowed.contains(&key.as_str()))
        {
            return Err(ApiError::validation(format!(
                "unknown field `{}`; allowed fields: {}",
                fields.name(unknown),
                allowed.join(", ")
            )));
        }
        Ok(fields)
    }

    /// The full name of member `field` for messages.
    pub fn name(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_owned()
        } else {
            format!("{}.{field}", self.path)
        }
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
        let value = self.take(name);
        let name = &self.name(name);
        match value {
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
        let value = self.take(name);
        let name = &self.name(name);
        match value {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(Self::wrong_type(name, "a string", &other)),
        }
    }

    /// An optional boolean.
    pub fn optional_bool(&mut self, name: &str) -> Result<Option<bool>, ApiError> {
        let value = self.take(name);
        let name = &self.name(name);
        match value {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(Self::wrong_type(name, "a boolean", &other)),
        }
    }

    /// An optional object.
    pub fn optional_object(&mut self, name: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        let value = self.take(name);
        let name = &self.name(name);
        match value {
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
        let value = self.take(name);
        let name = &self.name(name);
        match value {
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

    /// A required integer in `min..=max`.
    pub fn required_int_in(&mut self, name: &str, min: u64, max: u64) -> Result<u64, ApiError> {
        match self.optional_int_in(name, min, max)? {
            Some(value) => Ok(value),
            None => Err(ApiError::validation(format!(
                "field `{}` is required (an integer from {min} to {max})",
                self.name(name)
            ))),
        }
    }

    /// An optional array of strings.
    pub fn optional_string_array(&mut self, name: &str) -> Result<Option<Vec<String>>, ApiError> {
        let Some(value) = self.take(name) else {
            return Ok(None);
        };
        let name = &self.name(name);
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
        let name = &self.name(name);
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
    /// A required object.
    pub fn required_object(&mut self, name: &str) -> Result<Map<String, Value>, ApiError> {
        match self.optional_object(name)? {
            Some(map) => Ok(map),
            None => Err(ApiError::validation(format!(
                "field `{}` is required (an object)",
                self.name(name)
            ))),
        }
    }

    /// An optional member of any type, taken as it is (the caller checks
    /// it, e.g. to word its own messages). `null` is returned as `null`.
    pub fn optional_value(&mut self, name: &str) -> Option<Value> {
        self.take(name)
    }

    /// An optional array (of any items; the caller checks them by index).
    pub fn optional_array(&mut self, name: &str) -> Result<Option<Vec<Value>>, ApiError> {
        let value = self.take(name);
        let name = &self.name(name);
        match value {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(Self::wrong_type(name, "an array", &other)),
        }
    }

    /// An optional string that must be one of `allowed`.
    pub fn optional_enum(
        &mut self,
        name: &str,
        allowed: &[&'static str],
    ) -> Result<Option<&'static str>, ApiError> {
        let Some(value) = self.optional_string(name)? else {
            return Ok(None);
        };
        allowed
            .iter()
            .find(|candidate| **candidate == value)
            .copied()
            .map(Some)
            .ok_or_else(|| {
                // The given value is not echoed: only the allowed ones are.
                ApiError::validation(format!(
                    "field `{}` must be one of {}",
                    self.name(name),
                    allowed
                        .iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// A required string that must be one of `allowed`.
    pub fn required_enum(
        &mut self,
        name: &str,
        allowed: &[&'static str],
    ) -> Result<&'static str, ApiError> {
        match self.optional_enum(name, allowed)? {
            Some(value) => Ok(value),
            None => Err(ApiError::validation(format!(
                "field `{}` is required (one of {})",
                self.name(name),
                allowed.join(", ")
            ))),
        }
    }
}

/// Accepts only plain-HTTP loopback URLs: the host must never be turned
/// into a client of anything off this machine. `field` names the member in
/// the 400 message (the URL itself is not echoed).
pub fn require_loopback_http(field: &str, raw: &str) -> Result<Url, ApiError> {
    let refuse = || {
        ApiError::validation(format!(
            "field `{field}` must be a loopback http URL (http://127.0.0.1…, http://localhost… or http://[::1]…)"
        ))
    };
    let url = Url::parse(raw).map_err(|_| refuse())?;
    if url.scheme() != "http" {
        return Err(refuse());
    }
    // The URL parser normalises hosts (e.g. `127.1` ⇒ `127.0.0.1`) and keeps
    // IPv6 literals in brackets, so the host string is checked as parsed.
    let loopback = match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    };
    if loopback { Ok(url) } else { Err(refuse()) }
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
        let err = f.required_int_in("missing", 1, 10).unwrap_err();
        assert!(
            err.message.contains("`missing` is required"),
            "{}",
            err.message
        );
    }

    #[test]
    fn nested_objects_name_members_by_full_path() {
        let map = json!({"wire": "grpc", "zzz": 1})
            .as_object()
            .cloned()
            .expect("object");
        let err = Fields::closed_at("provider", map, &["wire"]).unwrap_err();
        assert!(err.message.contains("`provider.zzz`"), "{}", err.message);
        let map = json!({"wire": "grpc"})
            .as_object()
            .cloned()
            .expect("object");
        let mut f = Fields::closed_at("provider", map, &["wire", "stream"]).expect("ok");
        let err = f.required_enum("wire", &["openai-chat"]).unwrap_err();
        assert!(err.message.contains("`provider.wire`"), "{}", err.message);
        assert!(!err.message.contains("grpc"), "{}", err.message);
        let err = f.required_enum("stream", &["x"]).unwrap_err();
        assert!(err.message.contains("provider.stream"), "{}", err.message);
    }

    #[test]
    fn arrays_and_required_objects_are_typed() {
        let mut f = fields(json!({"a": {}, "b": [1], "c": 3}), &["a", "b", "c", "d"]).expect("ok");
        assert!(f.required_object("a").is_ok());
        assert_eq!(f.optional_array("b").expect("ok"), Some(vec![json!(1)]));
        assert!(f.optional_array("c").unwrap_err().message.contains("`c`"));
        assert!(
            f.required_object("d")
                .unwrap_err()
                .message
                .contains("required")
        );
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
