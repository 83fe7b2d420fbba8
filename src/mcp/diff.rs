//! Differences between JSON values (minimal: the deepest pointers that differ) and between
//! two snapshots, in words a reviewer can approve.
//!
//! Diffs explain a refusal; they never decide one. The gate decides on canonical bytes
//! (mcp-facts §4.10.7) and only then asks for a diff to show.

use crate::canonical::pointer_token;
use serde::Serialize;
use serde_json::Value;

use super::snapshot;

/// One difference: where, what the reviewed (old) side holds, what the live (new) side holds.
/// `None` means the member or element is absent on that side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// RFC 6901 pointer.
    pub pointer: String,
    /// The reviewed (old) value.
    pub reviewed: Option<Value>,
    /// The live (new) value.
    pub live: Option<Value>,
}

/// The minimal differences between `a` (reviewed) and `b` (live), at most `max` of them.
pub fn json_diff(a: &Value, b: &Value, max: usize) -> Vec<Change> {
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out, max);
    out
}

fn walk(a: &Value, b: &Value, at: String, out: &mut Vec<Change>, max: usize) {
    if out.len() >= max || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = format!("{at}/{}", pointer_token(k));
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => walk(u, v, p, out, max),
                    (u, v) => push(out, p, u.cloned(), v.cloned(), max),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let p = format!("{at}/{i}");
                match (x.get(i), y.get(i)) {
                    (Some(u), Some(v)) => walk(u, v, p, out, max),
                    (u, v) => push(out, p, u.cloned(), v.cloned(), max),
                }
            }
        }
        _ => push(out, at, Some(a.clone()), Some(b.clone()), max),
    }
}

fn push(
    out: &mut Vec<Change>,
    pointer: String,
    reviewed: Option<Value>,
    live: Option<Value>,
    max: usize,
) {
    if out.len() < max {
        out.push(Change {
            pointer,
            reviewed,
            live,
        });
    }
}

/// A value shown in one line, cut to `max` characters.
pub fn show(v: &Option<Value>, max: usize) -> String {
    match v {
        None => "(absent)".into(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > max {
                format!("{}…", s.chars().take(max).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// What part of a Tool a pointer touches, in a reviewer's words.
fn member(pointer: &str) -> &'static str {
    let first = pointer.split('/').nth(1).unwrap_or("");
    match first {
        "name" => "name",
        "title" => "title",
        "description" => "description",
        "inputSchema" => "input schema",
        "outputSchema" => "output schema",
        "annotations" => "annotation",
        "execution" => "execution metadata",
        "icons" => "icons",
        "_meta" => "_meta",
        _ => "other member",
    }
}

/// The drift between two snapshots as sentences, one per finding; empty when the two
/// documents are canonically equal.
pub fn snapshot_diff(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if snapshot::digest(old) == snapshot::digest(new) {
        return out;
    }
    for key in ["protocolVersion", "capturedAt", "expiresAt", "profile"] {
        if old.get(key) != new.get(key) {
            out.push(format!(
                "{key} changed: {} → {}",
                show(&old.get(key).cloned(), 80),
                show(&new.get(key).cloned(), 80)
            ));
        }
    }
    let empty = serde_json::Map::new();
    let os = old
        .get("servers")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let ns = new
        .get("servers")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (k, _) in os.iter().filter(|(k, _)| !ns.contains_key(*k)) {
        out.push(format!("server `{k}` removed"));
    }
    for (k, _) in ns.iter().filter(|(k, _)| !os.contains_key(*k)) {
        out.push(format!("server `{k}` added"));
    }
    for (k, o) in os {
        let Some(n) = ns.get(k) else { continue };
        for part in [
            "serverInfo",
            "capabilities",
            "instructions",
            "clientCapabilities",
        ] {
            for c in json_diff(
                o.get(part).unwrap_or(&Value::Null),
                n.get(part).unwrap_or(&Value::Null),
                20,
            ) {
                out.push(format!(
                    "server `{k}`: {part}{} changed: {} → {}",
                    c.pointer,
                    show(&c.reviewed, 80),
                    show(&c.live, 80)
                ));
            }
        }
        tools_diff(k, o, n, &mut out);
        reviews_diff(k, o, n, &mut out);
    }
    if out.is_empty() {
        out.push("the documents differ only in evidence (captureEvidence)".into());
    }
    out
}

/// `(page, index, name, tool)` of every tool.
fn listed(server: &Value) -> Vec<(usize, usize, String, &Value)> {
    let mut v = Vec::new();
    for (p, page) in server
        .get("toolPages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (i, t) in page
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let name = t
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            v.push((p, i, name, t));
        }
    }
    v
}

fn tools_diff(k: &str, o: &Value, n: &Value, out: &mut Vec<String>) {
    let (ol, nl) = (listed(o), listed(n));
    let pages = |s: &Value| {
        s.get("toolPages")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    if pages(o) != pages(n) {
        out.push(format!(
            "server `{k}`: {} pages → {} pages",
            pages(o),
            pages(n)
        ));
    }
    let names =
        |l: &[(usize, usize, String, &Value)]| l.iter().map(|t| t.2.clone()).collect::<Vec<_>>();
    let (on, nn) = (names(&ol), names(&nl));
    for name in on.iter().filter(|x| !nn.contains(x)) {
        out.push(format!("server `{k}`: tool `{name}` removed"));
    }
    for name in nn.iter().filter(|x| !on.contains(x)) {
        out.push(format!("server `{k}`: tool `{name}` added"));
    }
    for name in nn.iter().collect::<std::collections::BTreeSet<_>>() {
        let count = nn.iter().filter(|x| *x == name).count();
        if count > 1 {
            out.push(format!(
                "server `{k}`: tool `{name}` is listed {count} times"
            ));
        }
    }
    let common: Vec<&String> = on.iter().filter(|x| nn.contains(x)).collect();
    let order_new: Vec<&String> = nn.iter().filter(|x| on.contains(x)).collect();
    if common != order_new {
        out.push(format!("server `{k}`: the tools' order changed"));
    }
    for (p, i, name, t) in &ol {
        let Some((np, ni, _, nt)) = nl.iter().find(|x| &x.2 == name) else {
            continue;
        };
        if (p, i) != (np, ni) {
            out.push(format!(
                "server `{k}`: tool `{name}` moved from page {p} #{i} to page {np} #{ni}"
            ));
        }
        for c in json_diff(t, nt, 20) {
            out.push(format!(
                "server `{k}`: tool `{name}`: {} changed at {}: {} → {}",
                member(&c.pointer),
                c.pointer,
                show(&c.reviewed, 80),
                show(&c.live, 80)
            ));
        }
    }
}

fn reviews_diff(k: &str, o: &Value, n: &Value, out: &mut Vec<String>) {
    let empty = serde_json::Map::new();
    let or = o
        .get("reviews")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let nr = n
        .get("reviews")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (t, r) in or {
        match nr.get(t) {
            None => out.push(format!("server `{k}`: the review of `{t}` was removed")),
            Some(nrev) if nrev != r => {
                for c in json_diff(r, nrev, 20) {
                    out.push(format!(
                        "server `{k}`: the review of `{t}` changed at {}: {} → {}",
                        c.pointer,
                        show(&c.reviewed, 80),
                        show(&c.live, 80)
                    ));
                }
            }
            Some(_) => {}
        }
    }
    for t in nr.keys().filter(|t| !or.contains_key(*t)) {
        out.push(format!("server `{k}`: `{t}` was reviewed"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_diff_names_the_deepest_changed_pointers() {
        let a = json!({"a": {"b": [1, 2], "c": "x"}, "d": 1});
        let b = json!({"a": {"b": [1, 3, 4], "c": "x"}, "e": 1});
        let d = json_diff(&a, &b, 10);
        let ptrs: Vec<&str> = d.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(ptrs, ["/a/b/1", "/a/b/2", "/d", "/e"]);
        assert_eq!(d[0].reviewed, Some(json!(2)));
        assert_eq!(d[2].live, None);
        assert!(json_diff(&a, &a, 10).is_empty());
    }

    #[test]
    fn tool_drift_is_described_by_member() {
        let t = crate::mcp::double::echo_tool();
        let mut t2 = t.clone();
        t2["description"] = json!("Echoes, and also deletes files.");
        let snap = |tool: &Value| json!({"servers": {"s": {"toolPages": [{"tools": [tool]}], "reviews": {}}}});
        let words = snapshot_diff(&snap(&t), &snap(&t2));
        assert_eq!(words.len(), 1, "{words:?}");
        assert!(
            words[0].contains("tool `echo`: description changed at /description"),
            "{words:?}"
        );
    }
}
