//! `${name}` substitution (fragment arguments and scenario parameters), and a scenario
//! file's `params` list.
//!
//! `${name}` is resolved when the suite loads, so it never meets the run-time `{{path}}`
//! templates of [`crate::template`]: those stay in the expanded scenario untouched. The rules
//! mirror them: a string that is exactly one `${name}` becomes the argument's value, of any
//! JSON type; inside a longer string (or an object key) the argument is interpolated as text
//! and must be a string, number or boolean. `$${` writes a literal `${`.

use std::collections::BTreeSet;
use toolcert_base::canonical::pointer_token;

use serde_json::{Map, Value};

/// Why a `${name}` could not be substituted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubstError {
    /// The name is not an argument (or parameter) in scope.
    #[error("${{{name}}} names no argument in scope (in scope: {in_scope})")]
    Unknown {
        /// The name.
        name: String,
        /// The names that are in scope, comma-separated (or "none").
        in_scope: String,
    },
    /// An array or object placed inside a longer string.
    #[error(
        "${{{0}}} is an array or object, so it must be the whole string (\"${{{0}}}\"), not part of one"
    )]
    NotText(String),
    /// A `${` without its closing `}`.
    #[error("unterminated ${{…}} in \"{0}\" (write $${{ for a literal ${{)")]
    Unterminated(String),
}

/// Substitution over one JSON value: the arguments in scope, and the names used so far.
pub(crate) struct Subst<'a> {
    args: &'a Map<String, Value>,
    /// Every argument name a placeholder referred to (to report unused parameters).
    pub(crate) used: BTreeSet<String>,
}

impl<'a> Subst<'a> {
    /// Substitute with these arguments in scope.
    pub(crate) fn new(args: &'a Map<String, Value>) -> Self {
        Subst {
            args,
            used: BTreeSet::new(),
        }
    }

    /// Substitute every string and object key in `v`. Returns the pointer (relative to `v`)
    /// of the offending string with the error.
    pub(crate) fn value(&mut self, v: &Value) -> Result<Value, (String, SubstError)> {
        Ok(match v {
            Value::String(s) => self.string(s).map_err(|e| (String::new(), e))?,
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| self.value(x).map_err(|(p, e)| (format!("/{i}{p}"), e)))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, x) in map {
                    let at = |p: &str| format!("/{}{p}", pointer_token(k));
                    let key = self.text(k).map_err(|e| (at(""), e))?;
                    out.insert(key, self.value(x).map_err(|(p, e)| (at(&p), e))?);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }

    /// A string: one whole `${name}` becomes the value itself; otherwise interpolate text.
    fn string(&mut self, s: &str) -> Result<Value, SubstError> {
        if let Some(name) = s
            .strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .filter(|n| is_name(n))
        {
            return self.lookup(name).cloned();
        }
        self.text(s).map(Value::String)
    }

    fn lookup(&mut self, name: &str) -> Result<&'a Value, SubstError> {
        let v = self.args.get(name).ok_or_else(|| SubstError::Unknown {
            name: name.to_string(),
            in_scope: if self.args.is_empty() {
                "none".into()
            } else {
                self.args.keys().cloned().collect::<Vec<_>>().join(", ")
            },
        })?;
        self.used.insert(name.to_string());
        Ok(v)
    }

    /// Interpolate every `${name}` in `s` as text; `$${` is a literal `${`.
    fn text(&mut self, s: &str) -> Result<String, SubstError> {
        if !s.contains("${") {
            return Ok(s.to_string());
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(start) = rest.find("${") {
            if rest[..start].ends_with('$') {
                // `$${`: drop the escaping `$`, keep `${` literally.
                out.push_str(&rest[..start - 1]);
                out.push_str("${");
                rest = &rest[start + 2..];
                continue;
            }
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| SubstError::Unterminated(s.to_string()))?;
            let name = &after[..end];
            match self.lookup(name)? {
                Value::String(v) => out.push_str(v),
                v @ (Value::Number(_) | Value::Bool(_) | Value::Null) => {
                    out.push_str(&v.to_string())
                }
                _ => return Err(SubstError::NotText(name.to_string())),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// Whether `s` is a valid argument or parameter name.
pub(crate) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

/// Every `${name}` in `v` (strings and keys), escapes excluded.
pub(crate) fn placeholders(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => scan(s, out),
        Value::Array(items) => items.iter().for_each(|x| placeholders(x, out)),
        Value::Object(map) => {
            for (k, x) in map {
                scan(k, out);
                placeholders(x, out);
            }
        }
        _ => {}
    }
}

fn scan(s: &str, out: &mut BTreeSet<String>) {
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let escaped = rest[..start].ends_with('$');
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        if !escaped {
            out.insert(after[..end].to_string());
        }
        rest = if escaped { after } else { &after[end + 1..] };
    }
}

/// A scenario file's `params`: one argument map per scenario it expands to, checked for shape.
/// `Err` holds the pointer and the message.
pub(crate) fn entries(params: &Value) -> Result<Vec<Map<String, Value>>, (String, String)> {
    let Some(list) = params.as_array().filter(|l| !l.is_empty()) else {
        return Err((
            "/params".into(),
            "params must be a non-empty array of objects, one per scenario".into(),
        ));
    };
    let mut out: Vec<Map<String, Value>> = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let at = format!("/params/{i}");
        let Some(map) = entry.as_object() else {
            return Err((
                at,
                "a params entry must be an object of parameter values".into(),
            ));
        };
        if !map.get("id").is_some_and(Value::is_string) {
            return Err((
                at,
                "each params entry names its scenario's id: add \"id\": \"family.slug\"".into(),
            ));
        }
        if let Some(bad) = map.keys().find(|k| !is_name(k)) {
            return Err((
                format!("{at}/{}", pointer_token(bad)),
                format!(
                    "parameter name \"{bad}\" must be letters and digits, starting with a letter"
                ),
            ));
        }
        if let Some(first) = out.first() {
            let mine: BTreeSet<&String> = map.keys().collect();
            let theirs: BTreeSet<&String> = first.keys().collect();
            if let Some(k) = theirs.difference(&mine).next() {
                return Err((
                    at,
                    format!(
                        "lacks parameter \"{k}\", which /params/0 sets; every entry sets the same parameters"
                    ),
                ));
            }
            if let Some(k) = mine.difference(&theirs).next() {
                return Err((
                    format!("{at}/{}", pointer_token(k)),
                    format!(
                        "parameter \"{k}\" is not set by /params/0; every entry sets the same parameters"
                    ),
                ));
            }
        }
        out.push(map.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn subst(v: Value, args: Value) -> Result<Value, (String, SubstError)> {
        let args = args.as_object().unwrap().clone();
        Subst::new(&args).value(&v)
    }

    #[test]
    fn whole_keeps_type_inline_interpolates_and_escapes() {
        let args = json!({"n": 3, "s": "x", "o": {"a": [1]}, "b": false});
        assert_eq!(
            subst(
                json!({"v": "${o}", "k-${s}": "a${s}-${n}-${b}", "e": "$${s} {{vars.s}}"}),
                args
            )
            .unwrap(),
            json!({"v": {"a": [1]}, "k-x": "ax-3-false", "e": "${s} {{vars.s}}"})
        );
    }

    #[test]
    fn errors_name_the_pointer() {
        let (p, e) = subst(json!({"a": [1, "${nope}"]}), json!({"x": 1})).unwrap_err();
        assert_eq!(p, "/a/1");
        assert!(
            e.to_string().contains("${nope}") && e.to_string().contains("x"),
            "{e}"
        );
        let (p, e) = subst(json!({"a/b": "id-${o}"}), json!({"o": {}})).unwrap_err();
        assert_eq!(p, "/a~1b");
        assert_eq!(e, SubstError::NotText("o".into()));
        let (_, e) = subst(json!("${x"), json!({"x": 1})).unwrap_err();
        assert!(matches!(e, SubstError::Unterminated(_)));
    }

    #[test]
    fn params_entries_must_agree() {
        assert!(entries(&json!([])).is_err());
        assert!(
            entries(&json!([{"wire": "a"}]))
                .unwrap_err()
                .1
                .contains("id")
        );
        let (p, m) = entries(&json!([{"id": "a.b", "w": 1}, {"id": "a.c"}])).unwrap_err();
        assert_eq!(p, "/params/1");
        assert!(m.contains("\"w\""), "{m}");
        let (p, _) = entries(&json!([{"id": "a.b"}, {"id": "a.c", "x": 1}])).unwrap_err();
        assert_eq!(p, "/params/1/x");
        let (p, _) = entries(&json!([{"id": "a.b", "9x": 1}])).unwrap_err();
        assert_eq!(p, "/params/0/9x");
    }

    fn json_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[ -~]{0,12}".prop_map(Value::String),
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        json_leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z{}$]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// A whole `${name}` is replaced by the argument exactly, whatever its type.
        #[test]
        fn a_whole_placeholder_is_the_value(v in json_value()) {
            let args = json!({"arg": v.clone()});
            prop_assert_eq!(subst(json!({"k": ["${arg}"]}), args).unwrap(), json!({"k": [v]}));
        }

        /// Text without `${` (run-time `{{…}}` templates included) passes unchanged.
        #[test]
        fn text_without_placeholders_is_unchanged(v in json_value()) {
            let mut names = BTreeSet::new();
            placeholders(&v, &mut names);
            prop_assume!(!v.to_string().contains("${"));
            prop_assert!(names.is_empty());
            prop_assert_eq!(subst(v.clone(), json!({})).unwrap(), v);
        }

        /// Interpolated text is the parts joined; an escaped `$${` stays literal.
        #[test]
        fn inline_text_joins(a in "[ -#%-~]{0,8}", b in "[ -#%-~]{0,8}", x in "[ -~]{0,8}") {
            let args = json!({"x": x.clone()});
            let got = subst(json!(format!("{a}${{x}}{b}$${{x}}")), args).unwrap();
            prop_assert_eq!(got, json!(format!("{a}{x}{b}${{x}}")));
        }
    }
}
