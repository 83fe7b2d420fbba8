//! What a check reads: the absolute pointers into the observation document (its `at`, and
//! those its matcher names), the template placeholders in its expected values, and the regular
//! expressions it compiles. The loader validates them before any host is touched; the judge
//! uses them to find the observations a check depends on.

use crate::suite::{Bound, Check, Condition, Matcher};

/// Everything one check reads.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reads<'c> {
    /// Absolute JSON pointers into the observation document, `at` first.
    pub pointers: Vec<&'c str>,
    /// `{{path}}` placeholders (dotted paths) in expected values.
    pub placeholders: Vec<String>,
    /// Regular expressions of `matches` matchers.
    pub patterns: Vec<&'c str>,
    /// Strings whose `{{…}}` syntax must be well formed.
    pub templates: Vec<&'c str>,
}

impl<'c> Reads<'c> {
    /// What `check` reads.
    pub fn of(check: &'c Check) -> Reads<'c> {
        let mut reads = Reads {
            pointers: vec![check.at.as_str()],
            ..Reads::default()
        };
        reads.matcher(&check.expect);
        reads
    }

    fn condition(&mut self, c: &'c Condition) {
        // A condition's own `at` is relative to the item it is applied to.
        self.matcher(&c.expect);
    }

    fn template_value(&mut self, v: &'c serde_json::Value) {
        match v {
            serde_json::Value::String(s) => self.template(s),
            serde_json::Value::Array(items) => items.iter().for_each(|i| self.template_value(i)),
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    self.template(k);
                    self.template_value(v);
                }
            }
            _ => {}
        }
    }

    fn template(&mut self, s: &'c str) {
        if !s.contains("{{") && !s.contains("}}") {
            return;
        }
        self.templates.push(s);
        let mut rest = s;
        while let Some(start) = rest.find("{{") {
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                return;
            };
            self.placeholders.push(after[..end].trim().to_string());
            rest = &after[end + 2..];
        }
    }

    fn matcher(&mut self, m: &'c Matcher) {
        match m {
            Matcher::Equals(v) => self.template_value(v),
            Matcher::NotContains(s) | Matcher::Contains(s) => self.template(s),
            Matcher::Matches(p) => self.patterns.push(p),
            Matcher::EqualsAt(p)
            | Matcher::JcsSha256Of(p)
            | Matcher::NotJcsSha256Of(p)
            | Matcher::MemberOf(p)
            | Matcher::SameIdAt(p) => self.pointers.push(p),
            Matcher::EqualsAtIgnoring(spec) => self.pointers.push(&spec.at),
            Matcher::SameSetAt(spec) => {
                self.pointers.push(&spec.at);
                if let Some(text) = &spec.containing {
                    self.template(text);
                }
            }
            Matcher::WithinDaysBefore(spec) => self.pointers.push(&spec.at),
            Matcher::DateNotAfter(p) => self.pointers.push(p),
            Matcher::Each(spec) => {
                // Its `at` (and its `where`'s) is relative to each item.
                self.matcher(&spec.expect);
                if let Some(only) = &spec.only {
                    self.condition(only);
                }
            }
            Matcher::AsJson(c) => self.condition(c),
            Matcher::Some(cs) | Matcher::None(cs) => cs.iter().for_each(|c| self.condition(c)),
            Matcher::IfPresent(inner)
            | Matcher::Not(inner)
            | Matcher::Length(inner)
            | Matcher::EntropyBits(inner) => self.matcher(inner),
            Matcher::AtLeast(Bound::Template(t)) | Matcher::AtMost(Bound::Template(t)) => {
                self.template(t)
            }
            Matcher::Absent(_)
            | Matcher::Present(_)
            | Matcher::OneOf(_)
            | Matcher::NotOneOf(_)
            | Matcher::RegisteredErrorCode(_)
            | Matcher::Type(_)
            | Matcher::AtLeast(_)
            | Matcher::AtMost(_)
            | Matcher::ErrorEnvelope(_)
            | Matcher::ConformsTo(_)
            | Matcher::Distinct(_)
            | Matcher::NoFalseFacets(_)
            | Matcher::RegisteredStatus(_)
            | Matcher::KeysIn(_)
            | Matcher::AllEqual(_)
            | Matcher::Schema(_)
            | Matcher::SortedBy(_)
            | Matcher::UniqueBy(_)
            | Matcher::NoKeyAnywhere(_)
            | Matcher::AnnotationsDerived(_) => {}
        }
    }

    /// The observation roots read, as pointers (`steps.x.runId` ⇒ `/steps/x`), pointers first.
    pub fn observation_pointers(&self) -> Vec<String> {
        let mut out: Vec<String> = self.pointers.iter().map(|p| p.to_string()).collect();
        for path in &self.placeholders {
            let mut parts = path.split('.');
            if let (Some(root), Some(name)) = (parts.next(), parts.next())
                && DOUBLE_ROOTS
                    .iter()
                    .chain(std::iter::once(&"steps"))
                    .any(|r| *r == root)
            {
                out.push(format!(
                    "/{root}/{}",
                    toolcert_base::canonical::pointer_token(name)
                ));
            }
        }
        out
    }
}

/// The `{{path}}` placeholders in a template value (strings and member names, at any depth).
pub fn placeholders_in(v: &serde_json::Value) -> Vec<String> {
    let mut reads = Reads::default();
    reads.template_value(v);
    reads.placeholders
}

/// Observation roots that hold what a toolcert double saw.
pub const DOUBLE_ROOTS: &[&str] = &["receivers", "providers", "mcpServers"];

/// Every root of the observation document.
pub const ROOTS: &[&str] = &[
    "vars",
    "roles",
    "scopes",
    "facts",
    "fixtures",
    "discovery",
    "receivers",
    "provider",
    "providers",
    "mcpServers",
    "steps",
];

/// The first two segments of a pointer (`/steps/x/body` ⇒ `("steps", Some("x"))`).
pub fn root_of(pointer: &str) -> (&str, Option<String>) {
    let mut segs = pointer.split('/').skip(1);
    let root = segs.next().unwrap_or("");
    let name = segs.next().map(|s| s.replace("~1", "/").replace("~0", "~"));
    (root, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_pointers_placeholders_and_patterns_at_every_depth() {
        let check: Check = serde_json::from_value(json!({
            "id": "c", "row": "R-1", "says": "s", "at": "/steps/a/body",
            "expect": {"some": [
                {"at": "/x", "expect": {"equals": "{{steps.b.runId}}-{{vars.nonce}}"}},
                {"at": "/y", "expect": {"ifPresent": {"matches": "^a+$"}}},
                {"at": "/z", "expect": {"equalsAt": "/receivers/r/count"}}
            ]}
        }))
        .unwrap();
        let reads = Reads::of(&check);
        assert_eq!(reads.pointers, vec!["/steps/a/body", "/receivers/r/count"]);
        assert_eq!(reads.placeholders, vec!["steps.b.runId", "vars.nonce"]);
        assert_eq!(reads.patterns, vec!["^a+$"]);
        assert_eq!(
            reads.observation_pointers(),
            vec!["/steps/a/body", "/receivers/r/count", "/steps/b"]
        );
        assert_eq!(root_of("/steps/a~1b/c"), ("steps", Some("a/b".into())));
    }
}
