//! Content trust of MCP-bound values (mcp-facts §4.9): the conservative contracts a resolver
//! hands to content-trust analysis, derived from the review and the reviewed Tool only.
//!
//! Deterministic and value-free: nothing here reads call arguments or results. Outputs of an
//! MCP tool are always of `untrusted` provenance (§4.9.2); each output location gets a value
//! capability from the reviewed `outputSchema` (§4.9.3): unconstrained strings `free_text`;
//! booleans, numbers, null and closed enums (or `const`) `constrained_scalar`; objects and
//! arrays `composite`; anything missing or ambiguous (no `type`, several types, `anyOf`,
//! `$ref`) `unknown`. Narrowing removes free-text injection risk, never the provenance.

use serde::Serialize;
use serde_json::{Value, json};

/// A value capability (§4.9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// An unconstrained string.
    FreeText,
    /// A boolean, number, null or closed-enum scalar.
    ConstrainedScalar,
    /// An object or array.
    Composite,
    /// Missing or ambiguous schema information.
    Unknown,
}

/// The capability of one schema location.
pub fn capability(schema: &Value) -> Capability {
    let Some(obj) = schema.as_object() else {
        return Capability::Unknown;
    };
    if ["anyOf", "oneOf", "allOf", "$ref", "not", "if"]
        .iter()
        .any(|k| obj.contains_key(*k))
    {
        return Capability::Unknown;
    }
    let closed = obj.contains_key("const") || obj.get("enum").is_some_and(Value::is_array);
    match obj.get("type").and_then(Value::as_str) {
        Some("string") if closed => Capability::ConstrainedScalar,
        Some("string") => Capability::FreeText,
        Some("boolean" | "number" | "integer" | "null") => Capability::ConstrainedScalar,
        Some("object" | "array") => Capability::Composite,
        _ if closed => Capability::ConstrainedScalar,
        _ => Capability::Unknown,
    }
}

/// Every output location of an `outputSchema` (`""` is the whole `structuredContent`,
/// `/a/b` its members through `properties`, `/a/*` array items) with its capability.
pub fn output_contracts(output_schema: Option<&Value>) -> Vec<(String, Capability)> {
    let mut out = Vec::new();
    match output_schema {
        None => out.push((String::new(), Capability::Unknown)),
        Some(s) => walk(s, String::new(), &mut out, 0),
    }
    out
}

fn walk(schema: &Value, at: String, out: &mut Vec<(String, Capability)>, depth: usize) {
    let cap = capability(schema);
    out.push((at.clone(), cap));
    // Bounded: a reviewed schema is finite, but depth and count are capped all the same.
    if depth >= 16 || out.len() >= 10_000 || cap != Capability::Composite {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            walk(
                v,
                format!("{at}/{}", toolcert_base::canonical::pointer_token(k)),
                out,
                depth + 1,
            );
        }
    }
    if let Some(items) = schema.get("items") {
        walk(items, format!("{at}/*"), out, depth + 1);
    }
}

/// The resolver's report for one reviewed tool: the reviewed input channels and the output
/// value contracts, all `untrusted`.
pub fn contracts(tool: &Value, review: &Value) -> Value {
    let outputs: Vec<Value> = output_contracts(tool.get("outputSchema"))
        .into_iter()
        .map(|(p, c)| json!({"pointer": p, "capability": c, "provenance": "untrusted"}))
        .collect();
    json!({
        "inputChannels": review.get("inputChannels").cloned().unwrap_or(json!({})),
        "outputs": outputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_follow_the_output_schema() {
        let schema = json!({"type": "object", "properties": {
            "text": {"type": "string"},
            "city": {"type": "string", "enum": ["a", "b"]},
            "n": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            "bare": {}
        }});
        let got = output_contracts(Some(&schema));
        let find = |p: &str| got.iter().find(|(q, _)| q == p).map(|(_, c)| *c);
        assert_eq!(find(""), Some(Capability::Composite));
        assert_eq!(find("/text"), Some(Capability::FreeText));
        assert_eq!(find("/city"), Some(Capability::ConstrainedScalar));
        assert_eq!(find("/n"), Some(Capability::ConstrainedScalar));
        assert_eq!(find("/tags"), Some(Capability::Composite));
        assert_eq!(find("/tags/*"), Some(Capability::FreeText));
        assert_eq!(find("/either"), Some(Capability::Unknown));
        assert_eq!(find("/bare"), Some(Capability::Unknown));
        assert_eq!(
            output_contracts(None),
            vec![(String::new(), Capability::Unknown)]
        );
    }
}
