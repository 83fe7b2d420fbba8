//! Data mutants: known bugs written as data (`scenarios/mutants/<name>.json`), so a spec
//! editor who adds a row can prove its checks can fail without writing Rust.
//!
//! A data mutant rewrites what the clean reference host answers: its status, headers and
//! JSON body members, or the events it streams or lists. The mutation matrix runs the clean
//! host behind a proxy on 127.0.0.1 that applies the rewrites (the driver's `front` module),
//! and judges the column like a Rust mutant's: killed only by a check that fails or warns.
//! This module is the format and the pure parts of it (which requests a rewrite matches);
//! applying the edits needs the matchers, which sit above the suite.

use serde::{Deserialize, Serialize};

use super::matcher::Condition;

/// Where data mutant files live; `scenarios/mutants/<name>.json` is the mutant `<name>`.
pub const MUTANTS_DIR: &str = "scenarios/mutants/";

/// One data mutant.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DataMutant {
    /// Its name: the file's stem (scenarios name it in `kills`).
    #[serde(skip)]
    pub name: String,
    /// The file it was loaded from (relative to the suite root).
    #[serde(skip)]
    pub file: String,
    /// The schema the file names, for editors (not read).
    #[serde(default, rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// What it breaks, in one line (the matrix report shows it).
    pub breaks: String,
    /// The rewrites, applied in order to every exchange they match.
    pub rewrites: Vec<Rewrite>,
}

/// One rewrite: which exchanges it applies to, and what it changes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rewrite {
    /// The request method (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A pattern over the request path: `*` is one segment, `**` any number of them.
    pub path: String,
    /// Conditions over the exchange `{request, response}` that must all hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<Condition>,
    /// How the answer is rewritten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ResponseEdit>,
    /// How the answer's events are rewritten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EventsEdit>,
}

/// A member or item written at a JSON pointer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetValue {
    /// Where (`-` appends to an array).
    pub at: String,
    /// What.
    pub value: serde_json::Value,
}

/// How an answer is rewritten: status, headers, then body members (set, then remove).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResponseEdit {
    /// The new status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Header name (lowercase) ⇒ its new value; `null` removes it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub headers: std::collections::BTreeMap<String, Option<String>>,
    /// Body members to write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<SetValue>,
    /// Body members to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}

/// How the events of an answer are rewritten, one event at a time.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventsEdit {
    /// The array of events in a JSON answer (default `/events`); an event stream is
    /// rewritten event by event.
    #[serde(default = "default_events_at", rename = "in")]
    pub within: String,
    /// Only the events these conditions hold for (pointers relative to the event).
    #[serde(default, rename = "where", skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<Condition>,
    /// Drop the event.
    #[serde(default)]
    pub drop: bool,
    /// Members to write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<SetValue>,
    /// Members to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}

fn default_events_at() -> String {
    "/events".to_string()
}

impl Rewrite {
    /// Whether this rewrite's method and path match a request (its `when` is judged apart,
    /// once the answer is in).
    pub fn matches_request(&self, method: &str, path: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m == method) && path_matches(&self.path, path)
    }
}

/// Whether `path` (without its query) matches `pattern`: segments split on `/`, `*` matches
/// exactly one segment, `**` any number of them (none included), anything else itself.
pub fn path_matches(pattern: &str, path: &str) -> bool {
    fn go(pattern: &[&str], path: &[&str]) -> bool {
        match pattern.split_first() {
            None => path.is_empty(),
            Some((&"**", rest)) => (0..=path.len()).any(|skip| go(rest, &path[skip..])),
            Some((first, rest)) => path
                .split_first()
                .is_some_and(|(seg, tail)| (*first == "*" || first == seg) && go(rest, tail)),
        }
    }
    let segments = |s: &str| -> Vec<String> {
        s.split('/')
            .filter(|seg| !seg.is_empty())
            .map(str::to_string)
            .collect()
    };
    let pattern = segments(pattern);
    let path = segments(path);
    go(
        &pattern.iter().map(String::as_str).collect::<Vec<_>>(),
        &path.iter().map(String::as_str).collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_patterns_match_segments() {
        assert!(path_matches("/tools", "/tools"));
        assert!(!path_matches("/tools", "/v1/tools"));
        assert!(path_matches("/**/tools", "/tools"));
        assert!(path_matches("/**/tools", "/v1/tools"));
        assert!(path_matches("/**/runs/*/events", "/v1/runs/r-1/events"));
        assert!(!path_matches("/**/runs/*/events", "/v1/runs/r-1/x/events"));
        assert!(path_matches("/**", "/anything/at/all"));
        assert!(!path_matches("/tools/*", "/tools"));
        assert!(path_matches("/tools/", "/tools"));
    }

    #[test]
    fn a_method_narrows_a_rewrite() {
        let r = Rewrite {
            method: Some("GET".into()),
            path: "/**/tools".into(),
            when: Vec::new(),
            response: None,
            events: None,
        };
        assert!(r.matches_request("GET", "/v1/tools"));
        assert!(!r.matches_request("POST", "/v1/tools"));
    }
}
