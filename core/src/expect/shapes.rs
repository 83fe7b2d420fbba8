//! toolcert's embedded shape schemas (`schemas/error-envelope.schema.json`,
//! `schemas/event-error.schema.json`), compiled once and judged with the `jsonschema` crate.

use std::sync::OnceLock;

use serde_json::Value;

use crate::suite::Shape;

const ERROR_ENVELOPE: &str = include_str!("../../../schemas/error-envelope.schema.json");
const EVENT_ERROR: &str = include_str!("../../../schemas/event-error.schema.json");

/// The compiled validator of a shape, or why it did not compile (a toolcert bug, reported as
/// the check's failure text rather than a panic).
fn validator(shape: Shape) -> Result<&'static jsonschema::Validator, String> {
    static ENVELOPE: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
    static EVENT: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
    let (cell, text) = match shape {
        Shape::ErrorEnvelope => (&ENVELOPE, ERROR_ENVELOPE),
        Shape::EventError => (&EVENT, EVENT_ERROR),
    };
    cell.get_or_init(|| {
        let schema: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        jsonschema::options()
            .build(&schema)
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| {
        format!(
            "toolcert's embedded {} schema does not compile: {e}",
            name(shape)
        )
    })
}

/// The schema file's stem.
fn name(shape: Shape) -> &'static str {
    match shape {
        Shape::ErrorEnvelope => "error-envelope",
        Shape::EventError => "event-error",
    }
}

/// `Ok` when `value` is valid against the shape; else the first violations (at most three),
/// each with the JSON pointer into the value.
pub fn conforms(shape: Shape, value: &Value) -> Result<(), String> {
    let v = validator(shape)?;
    let errors: Vec<String> = v
        .iter_errors(value)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("at {}: {e}", if at.is_empty() { "the root" } else { &at })
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "not a valid {} (schemas/{}.schema.json): {}",
            name(shape),
            name(shape),
            errors.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_error_envelope_is_closed_and_typed() {
        let ok = [
            json!({"error": "not_found", "message": "no such run"}),
            json!({"error": "acme.x_y", "message": "m", "details": {"correlationId": "c1"}}),
        ];
        for v in ok {
            assert!(conforms(Shape::ErrorEnvelope, &v).is_ok(), "{v}");
        }
        let bad = [
            json!({"error": "not_found", "message": "m", "status": 404}),
            json!({"error": "not_found", "message": ""}),
            json!({"error": "not_found"}),
            json!({"error": "openwop.x", "message": "m"}),
            json!({"error": "Not Found", "message": "m"}),
            json!({"error": "x", "message": "m", "details": []}),
            json!({"error": "x", "message": "m", "details": {"correlationId": ""}}),
            json!({"error": "rate_limited", "message": "m", "details": {"retryAfterSeconds": 1}}),
            json!("not_found"),
        ];
        for v in bad {
            assert!(conforms(Shape::ErrorEnvelope, &v).is_err(), "{v}");
        }
    }

    #[test]
    fn the_event_error_object_needs_code_and_message() {
        assert!(conforms(Shape::EventError, &json!({"code": "c", "message": "m"})).is_ok());
        assert!(
            conforms(
                Shape::EventError,
                &json!({"code": "c", "message": "m", "details": {}, "retryable": true})
            )
            .is_ok()
        );
        for v in [
            json!({"code": "", "message": "m"}),
            json!({"code": "c"}),
            json!({"code": "c", "message": "m", "retryable": "yes"}),
            json!({"code": "c", "message": "m", "details": "x"}),
        ] {
            assert!(conforms(Shape::EventError, &v).is_err(), "{v}");
        }
    }
}
