//! `{{dotted.path}}` templates over a scenario's observation document.
//!
//! Scenario data refers to values produced at run time (the receiver's URL, a nonce, a role's
//! principal id, a previous step's `runId`) with `{{path}}`. A string that is exactly one
//! placeholder is replaced by the referenced JSON value of any type; placeholders inside a
//! longer string are interpolated as text.

use std::borrow::Cow;

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
/// numeric segments index arrays). The segment `$keys` turns an object into the array of its
/// member names, so a scenario can answer a member the host named itself (an MCP
/// `inputRequests` key: `{{steps.first.body.result.inputRequests.$keys.0}}`). A segment in
/// single quotes is one member name, dots and all (an MCP `_meta` key:
/// `{{steps.ask.body.result._meta.'org.openwop/runId'}}`).
pub fn lookup<'a>(doc: &'a Value, path: &str) -> Option<Cow<'a, Value>> {
    segments(path)?
        .into_iter()
        .try_fold(Cow::Borrowed(doc), |v, seg| match (v, seg) {
            (Cow::Borrowed(Value::Object(m)), "$keys") => Some(Cow::Owned(keys_of(m))),
            (Cow::Owned(Value::Object(m)), "$keys") => Some(Cow::Owned(keys_of(&m))),
            (Cow::Borrowed(v), seg) => step(v, seg).map(Cow::Borrowed),
            (Cow::Owned(v), seg) => step(&v, seg).cloned().map(Cow::Owned),
        })
}

/// The segments of a dotted path: split at dots, except inside a single-quoted segment (which
/// must be a whole segment, closed, and is taken without its quotes). `None` for a path that
/// breaks those rules.
fn segments(path: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut rest = path;
    loop {
        if let Some(quoted) = rest.strip_prefix('\'') {
            let end = quoted.find('\'')?;
            out.push(&quoted[..end]);
            rest = &quoted[end + 1..];
            if rest.is_empty() {
                return Some(out);
            }
            rest = rest.strip_prefix('.')?;
            continue;
        }
        match rest.split_once('.') {
            Some((seg, tail)) => {
                out.push(seg);
                rest = tail;
            }
            None => {
                out.push(rest);
                return Some(out);
            }
        }
    }
}

fn step<'a>(v: &'a Value, seg: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    }
}

fn keys_of(m: &serde_json::Map<String, Value>) -> Value {
    Value::Array(m.keys().map(|k| Value::String(k.clone())).collect())
}

/// The member of an observation document that lists the scenario `vars` kept as macros
/// (written by the runner only when there are any): the only values a placeholder expands.
pub const MACROS: &str = "$macros";

/// Whether `path` reads a scenario var kept as a macro (`vars.NAME…` with NAME in
/// [`MACROS`]): toolcert's own scenario text, never a host's value.
fn is_macro(doc: &Value, path: &str) -> bool {
    let mut segments = path.split('.');
    segments.next() == Some("vars")
        && segments.next().is_some_and(|name| {
            doc.get(MACROS)
                .and_then(Value::as_array)
                .is_some_and(|names| names.iter().any(|n| n == name))
        })
}

/// How deep a placeholder may expand into values that hold placeholders themselves (scenario
/// `vars` that refer to receivers or steps are kept as macros and expanded where used).
const MAX_DEPTH: usize = 8;

/// Render every string in `template` against `doc`.
pub fn render(template: &Value, doc: &Value) -> Result<Value, TemplateError> {
    render_at(template, doc, 0)
}

fn render_at(template: &Value, doc: &Value, depth: usize) -> Result<Value, TemplateError> {
    Ok(match template {
        Value::String(s) => render_str_at(s, doc, depth)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| render_at(v, doc, depth))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((render_text(k, doc)?, render_at(v, doc, depth)?)))
                .collect::<Result<_, TemplateError>>()?,
        ),
        other => other.clone(),
    })
}

/// Render a string, returning the referenced value itself when the string is one placeholder.
pub fn render_str(s: &str, doc: &Value) -> Result<Value, TemplateError> {
    render_str_at(s, doc, 0)
}

fn render_str_at(s: &str, doc: &Value, depth: usize) -> Result<Value, TemplateError> {
    let trimmed = s.trim();
    if let Some(inner) = trimmed
        .strip_prefix("{{")
        .and_then(|r| r.strip_suffix("}}"))
        .filter(|inner| !inner.contains("{{") && !inner.contains("}}"))
    {
        let path = inner.trim();
        let value = lookup(doc, path).ok_or_else(|| TemplateError::Missing(path.to_string()))?;
        // A scenario var kept as a macro (it refers to something made later) is expanded
        // here, boundedly. Nothing else is: a value a host supplied is data, whatever `{{` it
        // holds, so a host that echoes placeholders never gets them expanded.
        if depth < MAX_DEPTH && is_macro(doc, path) {
            return render_at(&value, doc, depth + 1);
        }
        return Ok(value.into_owned());
    }
    render_text(s, doc).map(Value::String)
}

/// Render a string as text, interpolating every placeholder.
pub fn render_text(s: &str, doc: &Value) -> Result<String, TemplateError> {
    interpolate(s, doc, &|_, text| text.to_owned())
}

/// Render a request path: a placeholder inside the path (after its first character, before
/// any `?`) renders through `segment`, so a value the host sent (a tenant-bound `runId`) stays
/// one path segment (identity.md §5); a placeholder that starts the path (a whole path a host
/// profile states, `{{facts.mcpServerPath}}`) or sits in the query renders as text.
pub fn render_path(
    s: &str,
    doc: &Value,
    segment: &dyn Fn(&str) -> String,
) -> Result<String, TemplateError> {
    let query_at = s.find('?').unwrap_or(s.len());
    interpolate(s, doc, &|at, text| {
        if at == 0 || at > query_at {
            text.to_owned()
        } else {
            segment(text)
        }
    })
}

/// Interpolate every placeholder of `s`, passing each value's text and the byte offset of
/// its `{{` in `s` through `place`.
fn interpolate(
    s: &str,
    doc: &Value,
    place: &dyn Fn(usize, &str) -> String,
) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let at = s.len() - rest.len() + start;
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| TemplateError::Unterminated(s.to_string()))?;
        let path = after[..end].trim();
        let value = lookup(doc, path).ok_or_else(|| TemplateError::Missing(path.to_string()))?;
        match value.as_ref() {
            Value::String(v) => out.push_str(&place(at, v)),
            other => out.push_str(&place(at, &other.to_string())),
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
    fn a_quoted_segment_is_one_member_name() {
        let doc = json!({"r": {"_meta": {"org.openwop/runId": "run_1", "a": {"b.c": [7]}}}});
        assert_eq!(
            render_str("{{r._meta.'org.openwop/runId'}}", &doc).unwrap(),
            json!("run_1")
        );
        assert_eq!(
            render_text("/runs/{{r._meta.'org.openwop/runId'}}/events", &doc).unwrap(),
            "/runs/run_1/events"
        );
        assert_eq!(render_str("{{r._meta.a.'b.c'.0}}", &doc).unwrap(), json!(7));
        for broken in ["r._meta.'org", "r._meta.'a'b", "r._meta.org.openwop/runId"] {
            assert!(
                render_str(&format!("{{{{{broken}}}}}"), &doc).is_err(),
                "{broken}"
            );
        }
    }

    #[test]
    fn path_placeholders_stay_one_segment() {
        let doc = json!({"r": {"runId": "acme/r-9f3c", "path": "/mcp/x"}, "q": "a/b"});
        let seg = |v: &str| v.replace('/', "~2F");
        assert_eq!(
            render_path("/runs/{{r.runId}}:fork", &doc, &seg).unwrap(),
            "/runs/acme~2Fr-9f3c:fork"
        );
        // A whole path from a profile, and a query value, render as text.
        assert_eq!(render_path("{{r.path}}/y", &doc, &seg).unwrap(), "/mcp/x/y");
        assert_eq!(
            render_path("/tools?source={{q}}", &doc, &seg).unwrap(),
            "/tools?source=a/b"
        );
    }

    #[test]
    fn keys_segment_lists_member_names() {
        let doc = json!({"r": {"inputRequests": {"k9": {"method": "m"}}}, "a": [{"x": 1}]});
        assert_eq!(
            render_str("{{r.inputRequests.$keys.0}}", &doc).unwrap(),
            json!("k9")
        );
        let obj = render(&json!({"{{r.inputRequests.$keys.0}}": {"ok": true}}), &doc).unwrap();
        assert_eq!(obj, json!({"k9": {"ok": true}}));
        assert_eq!(render_str("{{a.0.$keys}}", &doc).unwrap(), json!(["x"]));
        assert!(render_str("{{a.$keys}}", &doc).is_err());
        assert!(render_str("{{r.inputRequests.$keys.1}}", &doc).is_err());
    }

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

    #[test]
    fn a_hosts_placeholders_are_data_never_expanded() {
        // A host that echoes placeholders: each would double the value on every expansion.
        let echo = "{{steps.a.body}}{{steps.a.body}}";
        let doc =
            json!({"steps": {"a": {"body": {"x": echo, "runId": echo}}}, "vars": {"v": echo}});
        assert_eq!(
            render_str("{{steps.a.body.runId}}", &doc).unwrap(),
            json!(echo)
        );
        assert_eq!(
            render_str("{{steps.a.body}}", &doc).unwrap(),
            json!({"x": echo, "runId": echo})
        );
        // A var that is not listed as a macro (it rendered at the start) is data too.
        assert_eq!(render_str("{{vars.v}}", &doc).unwrap(), json!(echo));
        // A macro that reads a host value expands the macro, not the value.
        let mut doc = doc;
        doc["vars"]["m"] = json!("{{steps.a.body.runId}}");
        doc[MACROS] = json!(["m"]);
        assert_eq!(render_str("{{vars.m}}", &doc).unwrap(), json!(echo));
    }

    #[test]
    fn macros_expand_where_used_and_cycles_stop() {
        let doc = json!({"vars": {"tool": {"url": "{{receivers.t.url}}"}, "loop": "{{vars.loop}}"}, "receivers": {"t": {"url": "http://x"}}, "$macros": ["tool", "loop"]});
        assert_eq!(
            render_str("{{vars.tool}}", &doc).unwrap(),
            json!({"url": "http://x"})
        );
        assert_eq!(
            render_str("{{vars.loop}}", &doc).unwrap(),
            json!("{{vars.loop}}")
        );
    }
}
