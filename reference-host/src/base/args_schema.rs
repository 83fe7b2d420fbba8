//! Validating tool args against the tool's input JSON Schema.
//!
//! Tool-turn contract §B: arguments are checked before any gate, so a
//! malformed call is reported as `invalid_args` without consulting
//! authorization or the rate limit, and the tool never runs.

use jsonschema::Validator;
use serde_json::Value;

/// A compiled input schema.
#[derive(Debug)]
pub struct ArgsSchema {
    validator: Validator,
}

/// One schema violation, reduced to what is safe to show anyone: where in
/// the instance it is and which keyword failed. Neither part quotes the
/// instance value (SR-1; TTC §G: repair text comes from the validator, not
/// from the model's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer (RFC 6901) into the instance; `""` is the whole value.
    pub pointer: String,
    /// The failing keyword (`type`, `required`, `minimum`, …).
    pub keyword: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.pointer, self.keyword)
    }
}

/// The schema does not compile.
#[derive(Debug, thiserror::Error)]
#[error("`inputSchema` is not a valid JSON Schema: {0}")]
pub struct SchemaCompileError(String);

impl ArgsSchema {
    /// Compiles `schema` (draft detected from `$schema`, default 2020-12).
    ///
    /// Remote `$ref`s cannot be fetched: jsonschema is built without its
    /// HTTP/file resolvers, so such a schema fails here instead of reaching
    /// out from the host.
    pub fn compile(schema: &Value) -> Result<Self, SchemaCompileError> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|err| SchemaCompileError(err.to_string()))
    }

    /// The first violation as `"<JSON pointer>: <message>"`, or `None` if valid.
    ///
    /// The message is the validator's masked form, which never quotes the
    /// instance value: args may hold resolved secrets (SR-1).
    pub fn first_error(&self, args: &Value) -> Option<String> {
        self.validator
            .iter_errors(args)
            .next()
            .map(|err| format!("{}: {}", err.instance_path().as_str(), err.masked()))
    }

    /// The first violation as pointer + keyword, or `None` if valid.
    pub fn first_violation(&self, instance: &Value) -> Option<Violation> {
        self.validator
            .iter_errors(instance)
            .next()
            .map(|err| Violation {
                pointer: err.instance_path().as_str().to_owned(),
                keyword: err.kind().keyword().to_owned(),
            })
    }

    /// Whether `instance` satisfies the schema.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_args_pass() {
        let schema = ArgsSchema::compile(&json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }))
        .expect("compiles");
        assert_eq!(schema.first_error(&json!({"city": "Oslo"})), None);
    }

    #[test]
    fn violations_report_pointer_and_hide_values() {
        let schema = ArgsSchema::compile(&json!({
            "type": "object",
            "properties": {"key": {"type": "integer"}}
        }))
        .expect("compiles");
        let message = schema
            .first_error(&json!({"key": "sk-very-secret"}))
            .expect("invalid");
        assert!(message.starts_with("/key: "), "{message}");
        assert!(!message.contains("sk-very-secret"), "{message}");
    }

    #[test]
    fn violations_are_pointer_and_keyword_only() {
        let schema = ArgsSchema::compile(&json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"]
        }))
        .expect("compiles");
        let violation = schema
            .first_violation(&json!({"count": "sk-very-secret"}))
            .expect("invalid");
        assert_eq!(violation.pointer, "/count");
        assert_eq!(violation.keyword, "type");
        assert_eq!(violation.to_string(), "/count: type");
        let missing = schema.first_violation(&json!({})).expect("invalid");
        assert_eq!(missing.to_string(), ": required");
        assert!(schema.is_valid(&json!({"count": 3})));
    }

    #[test]
    fn broken_schemas_do_not_compile() {
        let err = ArgsSchema::compile(&json!({"type": 12})).unwrap_err();
        assert!(err.to_string().contains("inputSchema"), "{err}");
    }
}
