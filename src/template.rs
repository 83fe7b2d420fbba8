//! `{{dotted.path}}` templates over a scenario's observation document.
//!
//! Scenario data refers to values produced at run time (the receiver's URL, a nonce, a role's
//! principal id, a previous step's `runId`) with `{{path}}`. A string that is exactly one
//! placeholder is replaced by the referenced JSON value of any type; placeholders inside a
//! longer string are interpolated as text.

use serde_json::Value;

/// A placeholder that could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The path names nothing in the observation document.
    #[error(
        "template placeholder {{{{{0}}}}} names nothing that exists at this point of the scenario"
    )]
    Missing(String),
    /// A `{{` without a closing `}}`.
    #[error("unterminated template placeholder in \"{0}\"")]
    Unterminated(String),
}

impl TemplateError {
    /// The dotted path that failed, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            TemplateError::Missing(p) => Some(p),
            TemplateError::Unterminated(_) => None,
        }
    }
}

/// Look a dotted path up in `doc` (`steps.granted.runId` ⇒ `doc["steps"]["granted"]["runId"]`;
/// numeric segments index arrays).
pub fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, seg| match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// Render every string in `template` against `doc`.
pub fn render(template: &Value, doc: &Value) -> Result<Value, TemplateError> {
    Ok(match template {
        Value::String(s) => render_str(s, doc)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| render(v, doc))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((render_text(k, doc)?, render(v, doc)?)))
                .collect::<Result<_, TemplateError>>()?,
        ),
        other => other.clone(),
    })
}

/// Render a string, returning the referenced value itself when the string is one placeholder.
pub fn render_str(s: &str, doc: &Value) -> Result<Value, TemplateError> {
    let trimmed = s.trim();
    if let Some(inner) = trimmed
        .strip_prefix("{{")
        .and_then(|r| r.strip_suffix("}}"))
        .filter(|inner| !inner.contains("{{") && !inner.contains("}}"))
    {
        let path = inner.trim();
        return lookup(doc, path)
            .cloned()
            .ok_or_else(|| TemplateError::Missing(path.to_string()));
    }
    render_text(s, doc).map(Value::String)
}

/// Render a string as text, interpolating every placeholder.
pub fn render_text(s: &str, doc: &Value) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| TemplateError::Unterminated(s.to_string()))?;
        let path = after[..end].trim();
        let value = lookup(doc, path).ok_or_else(|| TemplateError::Missing(path.to_string()))?;
        match value {
            Value::String(v) => out.push_str(v),
            other => out.push_str(&other.to_string()),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_placeholder_keeps_type_and_inline_interpolates() {
        let doc = json!({"vars": {"n": "abc", "list": ["a", 1]}, "steps": {"s": {"runId": "r1"}}});
        assert_eq!(render_str("{{vars.list}}", &doc).unwrap(), json!(["a", 1]));
        assert_eq!(
            render(
                &json!({"tool-{{vars.n}}": "x/{{steps.s.runId}}/{{vars.list.1}}"}),
                &doc
            )
            .unwrap(),
            json!({"tool-abc": "x/r1/1"})
        );
        assert_eq!(
            render_str("{{roles.x.principal}}", &doc),
            Err(TemplateError::Missing("roles.x.principal".into()))
        );
        assert!(matches!(
            render_str("a {{b", &doc),
            Err(TemplateError::Unterminated(_))
        ));
    }
}
