//! Scenario fragments: named JSON blocks defined once under `scenarios/fragments/` and used
//! from scenario files, expanded when the suite loads.
//!
//! A fragment file (`schemas/fragments.schema.json`) holds named fragments; the fragment
//! `run` in `scenarios/fragments/turn.json` is `turn/run`. Each has a `value`, the
//! arguments it requires (`args`) and those with a default (`defaults`); `${name}` in the
//! value stands for an argument (see [`super::params`]). A scenario uses one with
//! `{"$fragment": "turn/run", "with": {…}}` in place of any value, or, as an array item,
//! `{"$splice": "turn/run-and-log", "with": {…}}` to insert the items of an array fragment.
//! An optional `patch` (RFC 7396 merge patch) adjusts the expanded value. Fragments may use
//! fragments; a cycle is an error. What runs is the expanded scenario, so steps, observations
//! and checks are exactly as if it had been written out.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::params::{self, Subst};
use crate::suite::{SchemaSet, SuiteError};
use toolcert_base::canonical::pointer_token;

/// Where fragment files live.
pub(crate) const FRAGMENTS_DIR: &str = "scenarios/fragments/";
/// Their schema.
pub(crate) const FRAGMENTS_SCHEMA: &str = "schemas/fragments.schema.json";
/// How deep fragments may use fragments (a guard beyond cycle detection).
const MAX_DEPTH: usize = 16;

/// One fragment definition.
#[derive(Debug, Clone)]
struct Fragment {
    /// The file defining it.
    file: String,
    /// Arguments a use must give.
    args: BTreeSet<String>,
    /// Arguments with a default.
    defaults: Map<String, Value>,
    /// The block, with `${arg}` placeholders.
    value: Value,
}

/// Every fragment of the suite, by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fragments {
    defs: BTreeMap<String, Fragment>,
}

fn reference(file: &str, pointer: String, message: String) -> SuiteError {
    SuiteError::Reference {
        file: file.to_string(),
        pointer,
        message,
    }
}

impl Fragments {
    /// Take the fragment files out of `data` (validated against their schema) and index them.
    pub(crate) fn take(
        data: &mut BTreeMap<String, Value>,
        schemas: &SchemaSet,
    ) -> Result<Fragments, SuiteError> {
        let files: Vec<String> = data
            .keys()
            .filter(|k| k.starts_with(FRAGMENTS_DIR))
            .cloned()
            .collect();
        let mut defs = BTreeMap::new();
        for file in files {
            let Some(doc) = data.remove(&file) else {
                continue;
            };
            schemas.validate(FRAGMENTS_SCHEMA, &file, &doc)?;
            let prefix = file
                .trim_start_matches(FRAGMENTS_DIR)
                .trim_end_matches(".json");
            let Some(Value::Object(map)) = doc.get("fragments") else {
                continue;
            };
            for (key, def) in map {
                let at = format!("/fragments/{}", pointer_token(key));
                let strings = |k: &str| -> BTreeSet<String> {
                    def.get(k)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                };
                let args = strings("args");
                let defaults = def
                    .get("defaults")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let value = def.get("value").cloned().unwrap_or(Value::Null);
                if let Some(both) = defaults.keys().find(|k| args.contains(*k)) {
                    return Err(reference(
                        &file,
                        format!("{at}/defaults/{}", pointer_token(both)),
                        format!("\"{both}\" is both required (args) and defaulted; keep one"),
                    ));
                }
                let mut used = BTreeSet::new();
                params::placeholders(&value, &mut used);
                if let Some(name) = used
                    .iter()
                    .find(|n| !args.contains(*n) && !defaults.contains_key(*n))
                {
                    return Err(reference(
                        &file,
                        format!("{at}/value"),
                        format!(
                            "uses ${{{name}}}, which is not declared; add \"{name}\" to {at}/args (or a default to {at}/defaults)"
                        ),
                    ));
                }
                if let Some(name) = args
                    .iter()
                    .chain(defaults.keys())
                    .find(|n| !used.contains(*n))
                {
                    return Err(reference(
                        &file,
                        at.clone(),
                        format!(
                            "declares argument \"{name}\", which its value never uses; remove it"
                        ),
                    ));
                }
                defs.insert(
                    format!("{prefix}/{key}"),
                    Fragment {
                        file: file.clone(),
                        args,
                        defaults,
                        value,
                    },
                );
            }
        }
        Ok(Fragments { defs })
    }

    /// Expand every use in `doc` (from `file`). Errors name `file`, the pointer of the use in
    /// it and, for a use inside a fragment, the chain of fragments that led there.
    pub(crate) fn expand(&self, file: &str, doc: &Value) -> Result<Value, SuiteError> {
        let mut stack = Vec::new();
        self.walk(doc, "", &mut stack)
            .map_err(|(pointer, message)| reference(file, pointer, message))
    }

    /// Expand `v` (at `at`); `stack` holds the fragments being expanded, outermost first.
    fn walk(
        &self,
        v: &Value,
        at: &str,
        stack: &mut Vec<String>,
    ) -> Result<Value, (String, String)> {
        Ok(match v {
            Value::Object(map) if map.contains_key("$fragment") => self.use_at(map, at, stack)?,
            Value::Object(map) if map.contains_key("$splice") => {
                return Err((
                    at.to_string(),
                    "$splice inserts the items of an array fragment, so it must be an array item; use $fragment for a single value".into(),
                ));
            }
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, x) in map {
                    let here = format!("{at}/{}", pointer_token(k));
                    out.insert(k.clone(), self.walk(x, &here, stack)?);
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, x) in items.iter().enumerate() {
                    let here = format!("{at}/{i}");
                    match x {
                        Value::Object(map) if map.contains_key("$splice") => {
                            match self.use_at(map, &here, stack)? {
                                Value::Array(spliced) => out.extend(spliced),
                                _ => {
                                    return Err((
                                        here,
                                        format!(
                                            "$splice needs a fragment whose value is an array, and \"{}\" is not; use $fragment for a single value",
                                            map["$splice"].as_str().unwrap_or_default()
                                        ),
                                    ));
                                }
                            }
                        }
                        _ => out.push(self.walk(x, &here, stack)?),
                    }
                }
                Value::Array(out)
            }
            other => other.clone(),
        })
    }

    /// One use (`$fragment` or `$splice`, `with`, `patch`), expanded.
    fn use_at(
        &self,
        map: &Map<String, Value>,
        at: &str,
        stack: &mut Vec<String>,
    ) -> Result<Value, (String, String)> {
        let kind = if map.contains_key("$fragment") {
            "$fragment"
        } else {
            "$splice"
        };
        if let Some(extra) = map
            .keys()
            .find(|k| !matches!(k.as_str(), "$fragment" | "$splice" | "with" | "patch"))
        {
            return Err((
                format!("{at}/{}", pointer_token(extra)),
                format!("a fragment use takes only {kind}, with and patch, not \"{extra}\""),
            ));
        }
        if map.contains_key("$fragment") && map.contains_key("$splice") {
            return Err((
                at.to_string(),
                "use either $fragment or $splice, not both".into(),
            ));
        }
        let Some(name) = map[kind].as_str() else {
            return Err((
                format!("{at}/{kind}"),
                format!("{kind} names a fragment: a string such as \"turn/run\""),
            ));
        };
        let Some(def) = self.defs.get(name) else {
            let near: Vec<&str> = self
                .defs
                .keys()
                .filter(|k| k.split('/').next() == name.split('/').next())
                .map(String::as_str)
                .collect();
            return Err((
                format!("{at}/{kind}"),
                format!(
                    "no fragment \"{name}\"; define it under {FRAGMENTS_DIR} (a fragment \"a/b\" is the key \"b\" of {FRAGMENTS_DIR}a.json){}",
                    if near.is_empty() {
                        String::new()
                    } else {
                        format!(", or use one of: {}", near.join(", "))
                    }
                ),
            ));
        };
        if stack.iter().any(|s| s == name) || stack.len() >= MAX_DEPTH {
            return Err((
                format!("{at}/{kind}"),
                format!(
                    "fragment \"{name}\" uses itself: {} -> {name}; break the cycle",
                    stack.join(" -> ")
                ),
            ));
        }
        let with = match map.get("with") {
            None => Map::new(),
            Some(Value::Object(w)) => w.clone(),
            Some(_) => {
                return Err((
                    format!("{at}/with"),
                    "with holds the arguments: an object".into(),
                ));
            }
        };
        if let Some(bad) = with
            .keys()
            .find(|k| !def.args.contains(*k) && !def.defaults.contains_key(*k))
        {
            return Err((
                format!("{at}/with/{}", pointer_token(bad)),
                format!(
                    "fragment \"{name}\" ({}) takes no argument \"{bad}\"; it takes: {}",
                    def.file,
                    arg_list(def)
                ),
            ));
        }
        if let Some(missing) = def.args.iter().find(|a| !with.contains_key(*a)) {
            return Err((
                format!("{at}/with"),
                format!(
                    "fragment \"{name}\" ({}) needs argument \"{missing}\"; add it to with (it takes: {})",
                    def.file,
                    arg_list(def)
                ),
            ));
        }
        // Arguments are expanded in the user's scope first: they may hold fragment uses.
        let mut args = def.defaults.clone();
        for (k, v) in with {
            let here = format!("{at}/with/{}", pointer_token(&k));
            args.insert(k, self.walk(&v, &here, stack)?);
        }
        let body = Subst::new(&args).value(&def.value).map_err(|(p, e)| {
            (
                at.to_string(),
                format!("fragment \"{name}\" at /value{p}: {e}"),
            )
        })?;
        stack.push(name.to_string());
        // An error inside the body is reported at this use, saying where in the fragment.
        let key = name.rsplit('/').next().unwrap_or(name);
        let expanded = self.walk(&body, at, stack).map_err(|(p, m)| {
            let within = p.strip_prefix(at).unwrap_or_default();
            (
                at.to_string(),
                format!(
                    "in fragment \"{name}\" ({} at /fragments/{}/value{within}): {m}",
                    def.file,
                    pointer_token(key)
                ),
            )
        });
        stack.pop();
        let mut expanded = expanded?;
        if let Some(patch) = map.get("patch") {
            merge_patch(&mut expanded, patch);
        }
        Ok(expanded)
    }
}

fn arg_list(def: &Fragment) -> String {
    let mut parts: Vec<String> = def.args.iter().cloned().collect();
    parts.extend(def.defaults.keys().map(|k| format!("{k} (optional)")));
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// RFC 7396: members of an object patch replace, `null` removes, anything else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn frags(defs: Value) -> Fragments {
        let mut set = SchemaSet::default();
        let schema: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../schemas/fragments.schema.json"
        )))
        .unwrap();
        set.insert(FRAGMENTS_SCHEMA, &schema).unwrap();
        let mut data = BTreeMap::new();
        data.insert(format!("{FRAGMENTS_DIR}t.json"), json!({"fragments": defs}));
        Fragments::take(&mut data, &set).unwrap()
    }

    fn sample() -> Fragments {
        frags(json!({
            "tool": {"args": ["name"], "defaults": {"tier": "write"}, "value": {"toolId": "${name}_{{vars.nonce}}", "safetyTier": "${tier}"}},
            "steps": {"args": ["tool"], "value": [{"step": "receiver", "name": "${tool}"}, {"step": "x", "tool": {"$fragment": "t/tool", "with": {"name": "${tool}"}}}]},
            "a": {"value": {"$fragment": "t/b"}},
            "b": {"value": [{"$splice": "t/a"}]},
            "one": {"value": 1}
        }))
    }

    #[test]
    fn uses_expand_with_defaults_patches_and_splices() {
        let f = sample();
        let doc = json!({"steps": [
            {"step": "first"},
            {"$splice": "t/steps", "with": {"tool": "ledger"}},
            {"$fragment": "t/tool", "with": {"name": "mail", "tier": "read"}, "patch": {"safetyTier": null, "extra": [1]}}
        ]});
        assert_eq!(
            f.expand("s.json", &doc).unwrap(),
            json!({"steps": [
                {"step": "first"},
                {"step": "receiver", "name": "ledger"},
                {"step": "x", "tool": {"toolId": "ledger_{{vars.nonce}}", "safetyTier": "write"}},
                {"toolId": "mail_{{vars.nonce}}", "extra": [1]}
            ]})
        );
    }

    fn err(f: &Fragments, doc: Value) -> String {
        f.expand("scenarios/x/s.json", &doc)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_missing_fragment_names_file_pointer_and_fix() {
        let e = err(&sample(), json!({"steps": [{"$fragment": "t/nope"}]}));
        assert!(
            e.starts_with("scenarios/x/s.json: at JSON pointer \"/steps/0/$fragment\"")
                && e.contains("no fragment \"t/nope\"")
                && e.contains("t/tool"),
            "{e}"
        );
    }

    #[test]
    fn a_cycle_is_an_error_naming_the_chain() {
        let e = err(&sample(), json!({"v": {"$fragment": "t/a"}}));
        assert!(
            e.contains("\"/v\"") && e.contains("t/a -> t/b -> t/a"),
            "{e}"
        );
    }

    #[test]
    fn bad_arguments_are_errors() {
        let f = sample();
        let e = err(&f, json!({"v": {"$fragment": "t/tool"}}));
        assert!(
            e.contains("\"/v/with\"") && e.contains("needs argument \"name\""),
            "{e}"
        );
        let e = err(
            &f,
            json!({"v": {"$fragment": "t/tool", "with": {"name": "a", "nmae": 1}}}),
        );
        assert!(
            e.contains("/v/with/nmae") && e.contains("tier (optional)"),
            "{e}"
        );
        let e = err(
            &f,
            json!({"v": {"$fragment": "t/tool", "with": {"name": {"o": 1}}}}),
        );
        assert!(e.contains("must be the whole string"), "{e}");
        let e = err(&f, json!({"v": {"$fragment": "t/one", "wth": {}}}));
        assert!(
            e.contains("/v/wth") && e.contains("only $fragment, with and patch"),
            "{e}"
        );
    }

    #[test]
    fn splice_must_be_an_array_item_of_an_array_fragment() {
        let f = sample();
        let e = err(
            &f,
            json!({"v": {"$splice": "t/steps", "with": {"tool": "a"}}}),
        );
        assert!(e.contains("must be an array item"), "{e}");
        let e = err(&f, json!({"v": [{"$splice": "t/one"}]}));
        assert!(e.contains("\"/v/0\"") && e.contains("is not"), "{e}");
    }

    #[test]
    fn definitions_must_declare_exactly_what_they_use() {
        let mut set = SchemaSet::default();
        let schema: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../schemas/fragments.schema.json"
        )))
        .unwrap();
        set.insert(FRAGMENTS_SCHEMA, &schema).unwrap();
        for (defs, want) in [
            (
                json!({"x": {"value": "${a}"}}),
                "uses ${a}, which is not declared",
            ),
            (json!({"x": {"args": ["a"], "value": 1}}), "never uses"),
            (
                json!({"x": {"args": ["a"], "defaults": {"a": 1}, "value": "${a}"}}),
                "both required",
            ),
        ] {
            let mut data = BTreeMap::new();
            data.insert(format!("{FRAGMENTS_DIR}t.json"), json!({"fragments": defs}));
            let e = Fragments::take(&mut data, &set).unwrap_err().to_string();
            assert!(
                e.starts_with("scenarios/fragments/t.json") && e.contains(want),
                "{e}"
            );
        }
    }

    proptest! {
        /// A document without uses expands to itself.
        #[test]
        fn no_uses_is_identity(keys in prop::collection::vec("[a-z]{1,5}", 0..6), n in 0i64..100) {
            let doc = Value::Object(keys.iter().map(|k| (k.clone(), json!([n, {"k": k}]))).collect());
            prop_assert_eq!(sample().expand("s", &doc).unwrap(), doc);
        }

        /// A fragment's argument comes out exactly as given, whatever the value.
        #[test]
        fn arguments_pass_through(s in "[ -~]{0,16}", n in any::<i64>()) {
            let f = frags(json!({"id": {"args": ["x"], "value": {"v": "${x}"}}}));
            for arg in [json!(s.clone()), json!(n), json!([s.clone(), {"n": n}])] {
                let doc = json!([{"$fragment": "t/id", "with": {"x": arg.clone()}}]);
                prop_assert_eq!(f.expand("s", &doc).unwrap(), json!([{"v": arg}]));
            }
        }
    }
}
