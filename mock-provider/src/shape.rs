//! Small helpers for checking request shapes by hand, shared by both endpoints.

use serde_json::{Map, Value};

/// The JSON type of `value` as providers' error messages name it.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a decimal",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The value at `key`, treating an explicit `null` like an absent key (as both APIs do for
/// optional fields).
pub(crate) fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|value| !value.is_null())
}

/// Whether `name` is a valid function/tool name: `^[a-zA-Z0-9_-]{1,max}$`, the pattern both
/// providers enforce on tool names.
pub(crate) fn is_tool_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_provider_pattern() {
        assert!(is_tool_name("get_weather-2", 64));
        assert!(!is_tool_name("", 64));
        assert!(!is_tool_name("has space", 64));
        assert!(!is_tool_name("dotted.name", 64));
        assert!(!is_tool_name(&"a".repeat(65), 64));
    }
}
