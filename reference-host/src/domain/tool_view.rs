//! What `GET /tools` shows of a tool: the standard descriptor with its
//! derived `annotations` (RFC 0204 §D.12), and the compact view of RFC 0112
//! (`?view=compact`): identity, tier and a flat input schema, nothing heavy.

use serde_json::{Map, Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::catalog::{FixtureTool, SafetyTier, ToolDescriptor};

/// Schema keywords a compact `inputSchema` may not use anywhere (CAT-11).
const COMPACT_BANNED: &[&str] = &[
    "$ref",
    "oneOf",
    "allOf",
    "anyOf",
    "not",
    "patternProperties",
    "dependentSchemas",
];

/// Whether some object in `value` has a banned member.
fn uses_banned(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(key, child)| COMPACT_BANNED.contains(&key.as_str()) || uses_banned(child)),
        Value::Array(items) => items.iter().any(uses_banned),
        _ => false,
    }
}

/// The compact form of an input schema: a flat object schema with
/// `properties`, or nothing when the schema is not flat (a compact reader
/// then fetches the standard descriptor).
fn compact_input_schema(schema: &Value) -> Option<Value> {
    let map = schema.as_object()?;
    if map.get("type") != Some(&json!("object")) || uses_banned(schema) {
        return None;
    }
    let mut map = map.clone();
    map.entry("properties").or_insert_with(|| json!({}));
    Some(Value::Object(map))
}

/// The compact descriptor of `tool` (`{toolId, source, safetyTier,
/// description, inputSchema?}`).
pub fn compact(tool: &FixtureTool, mutant: Option<Mutant>) -> Value {
    // Bug under `compact-view-heavy-fields`: the standard descriptor is served.
    if mutant == Some(Mutant::CompactViewHeavyFields) {
        return standard(tool, mutant);
    }
    let full = tool.descriptor(mutant);
    let mut map = Map::new();
    map.insert("toolId".into(), json!(full.tool_id));
    map.insert("source".into(), json!(full.source));
    map.insert("safetyTier".into(), json!(full.safety_tier));
    map.insert("description".into(), json!(full.description));
    if let Some(schema) = compact_input_schema(&full.input_schema) {
        map.insert("inputSchema".into(), schema);
    }
    Value::Object(map)
}

/// The standard descriptor of `tool` as JSON, with the descriptor-level
/// mutants applied.
pub fn standard(tool: &FixtureTool, mutant: Option<Mutant>) -> Value {
    let descriptor: ToolDescriptor = tool.descriptor(mutant);
    let exec = descriptor.safety_tier == SafetyTier::Exec;
    let mut value = serde_json::to_value(descriptor).unwrap_or(Value::Null);
    let Some(map) = value.as_object_mut() else {
        return value;
    };
    // Bug under `exec-tool-protocol-source`: an exec tool is presented as a
    // workflow (protocol-tier) tool.
    if exec && mutant == Some(Mutant::ExecToolProtocolSource) {
        map.insert("source".into(), json!("workflow"));
    }
    // Bug under `descriptor-extra-key`: an internal field leaks into the
    // closed shape.
    if mutant == Some(Mutant::DescriptorExtraKey) {
        map.insert("internalRank".into(), json!(1));
    }
    // Bug under `descriptor-bad-enum`: approval outside its vocabulary.
    if mutant == Some(Mutant::DescriptorBadEnum) {
        map.insert("approval".into(), json!("on-request"));
    }
    // Bug under `credential-ref-value`: the credential reference carries a
    // value instead of a boolean.
    if mutant == Some(Mutant::CredentialRefValue)
        && let Some(Value::Object(auth)) = map.get_mut("auth")
    {
        auth.insert(
            "credentialRef".into(),
            json!(format!("Bearer tc-canary-{}", tool.tool_id)),
        );
    }
    value
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::CompactViewHeavyFields,
        name: "compact-view-heavy-fields",
        breaks: "?view=compact serves the standard descriptors (heavy fields, full input schema)",
    },
    MutantInfo {
        mutant: Mutant::ExecToolProtocolSource,
        name: "exec-tool-protocol-source",
        breaks: "an exec tool's descriptor says source: workflow",
    },
    MutantInfo {
        mutant: Mutant::DescriptorExtraKey,
        name: "descriptor-extra-key",
        breaks: "descriptors carry an undeclared member (internalRank)",
    },
    MutantInfo {
        mutant: Mutant::DescriptorBadEnum,
        name: "descriptor-bad-enum",
        breaks: "descriptors say approval: on-request (outside the enum)",
    },
    MutantInfo {
        mutant: Mutant::CredentialRefValue,
        name: "credential-ref-value",
        breaks: "auth.credentialRef carries a bearer credential string instead of a boolean",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_schemas_are_flat_or_absent() {
        assert_eq!(
            compact_input_schema(&json!({"type": "object"})),
            Some(json!({"type": "object", "properties": {}}))
        );
        assert_eq!(
            compact_input_schema(&json!({"type": "object", "properties": {"a": {"oneOf": []}}})),
            None
        );
        assert_eq!(compact_input_schema(&json!({"type": "string"})), None);
    }
}
