//! Matchers over one JSON value. Comparisons are exact and whole-value: no truthiness, no
//! substring stand-ins for equality.

use serde_json::Value;

use super::catalog;
use super::error_registry::{CodeStanding, standing};
use crate::canonical::jcs_sha256_hex;
use crate::suite::{Bound, IgnoringSpec, Matcher};
use crate::template;

/// Whether `actual` (the value at the check's pointer, `None` when absent) satisfies `m`.
/// Pointers inside the matcher and templates resolve against `doc`.
/// `Err` says what was expected and what was seen.
pub fn matches(m: &Matcher, actual: Option<&Value>, doc: &Value) -> Result<(), String> {
    let shown = || actual.map_or("nothing (absent)".to_string(), show);
    let need = |v: Option<&Value>| {
        v.cloned()
            .ok_or_else(|| "expected a value, found nothing (absent)".to_string())
    };
    match m {
        Matcher::Absent(_) => match actual {
            None => Ok(()),
            Some(v) => Err(format!("expected absent, found {}", show(v))),
        },
        Matcher::Present(_) => need(actual).map(|_| ()),
        Matcher::Equals(expected) => {
            let expected = template::render(expected, doc).map_err(|e| e.to_string())?;
            let v = need(actual)?;
            (v == expected)
                .then_some(())
                .ok_or_else(|| format!("expected {}, found {}", show(&expected), show(&v)))
        }
        Matcher::OneOf(options) => {
            let v = need(actual)?;
            options.contains(&v).then_some(()).ok_or_else(|| {
                format!(
                    "expected one of {}, found {}",
                    show(&Value::Array(options.clone())),
                    show(&v)
                )
            })
        }
        Matcher::NotOneOf(options) => {
            let v = need(actual)?;
            match options.iter().find(|o| **o == v) {
                None => Ok(()),
                Some(hit) => Err(format!(
                    "expected none of {}, found {}",
                    show(&Value::Array(options.clone())),
                    show(hit)
                )),
            }
        }
        Matcher::RegisteredErrorCode(_) => match need(actual)? {
            Value::String(code) => match standing(&code) {
                CodeStanding::Unregistered => Err(format!(
                    "error code {code:?} is neither a registered v2 code nor vendor-namespaced \
                     (`<org>.{code}`); register it or namespace it (C-12)"
                )),
                _ => Ok(()),
            },
            other => Err(format!(
                "expected an error code string, found {}",
                show(&other)
            )),
        },
        Matcher::Matches(pattern) => {
            let re =
                regex::Regex::new(pattern).map_err(|e| format!("bad pattern {pattern:?}: {e}"))?;
            match need(actual)? {
                Value::String(s) if re.is_match(&s) => Ok(()),
                other => Err(format!(
                    "expected a string matching /{pattern}/, found {}",
                    show(&other)
                )),
            }
        }
        Matcher::Type(ty) => {
            let v = need(actual)?;
            let ok = match ty.as_str() {
                "string" => v.is_string(),
                "number" => v.is_number(),
                "integer" => v.is_i64() || v.is_u64(),
                "boolean" => v.is_boolean(),
                "object" => v.is_object(),
                "array" => v.is_array(),
                "null" => v.is_null(),
                _ => false,
            };
            ok.then_some(())
                .ok_or_else(|| format!("expected type {ty}, found {}", show(&v)))
        }
        Matcher::AtLeast(bound) => {
            let bound = number(bound, doc)?;
            match need(actual)?.as_f64() {
                Some(n) if n >= bound => Ok(()),
                _ => Err(format!("expected a number ≥ {bound}, found {}", shown())),
            }
        }
        Matcher::AtMost(bound) => {
            let bound = number(bound, doc)?;
            match need(actual)?.as_f64() {
                Some(n) if n <= bound => Ok(()),
                _ => Err(format!("expected a number ≤ {bound}, found {}", shown())),
            }
        }
        Matcher::EqualsAtIgnoring(spec) => {
            let other = doc
                .pointer(&spec.at)
                .ok_or_else(|| format!("the value to compare with ({}) is absent", spec.at))?;
            equal_ignoring(&need(actual)?, other, spec)
        }
        Matcher::EqualsAt(pointer) => {
            let other = doc
                .pointer(pointer)
                .ok_or_else(|| format!("the value to compare with ({pointer}) is absent"))?;
            let v = need(actual)?;
            (&v == other).then_some(()).ok_or_else(|| {
                format!(
                    "expected {} (the value at {pointer}), found {}",
                    show(other),
                    show(&v)
                )
            })
        }
        Matcher::NotContains(needle) => {
            let needle = template::render_text(needle, doc).map_err(|e| e.to_string())?;
            if needle.is_empty() {
                return Err("the text to look for rendered empty".into());
            }
            let v = need(actual)?;
            let text = v.to_string();
            (!text.contains(&needle) && !contains_unescaped(&v, &needle))
                .then_some(())
                .ok_or_else(|| "found the forbidden text in the observed value".to_string())
        }
        Matcher::JcsSha256Of(pointer) | Matcher::NotJcsSha256Of(pointer) => {
            let source = doc
                .pointer(pointer)
                .ok_or_else(|| format!("the value to hash ({pointer}) is absent"))?;
            let expected = jcs_sha256_hex(source);
            let v = need(actual)?;
            let equal = v.as_str() == Some(expected.as_str());
            match (m, equal) {
                (Matcher::JcsSha256Of(_), true) | (Matcher::NotJcsSha256Of(_), false) => Ok(()),
                (Matcher::JcsSha256Of(_), false) => Err(format!(
                    "expected {expected} (lowercase hex SHA-256 of the RFC 8785 form of {pointer}), found {}",
                    show(&v)
                )),
                _ => Err(format!(
                    "found exactly the SHA-256 of the RFC 8785 form of {pointer}, which it must not be"
                )),
            }
        }
        Matcher::MemberOf(pointer) => {
            let list = doc
                .pointer(pointer)
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    format!("the list to look in ({pointer}) is absent or not an array")
                })?;
            let v = need(actual)?;
            list.contains(&v).then_some(()).ok_or_else(|| {
                format!(
                    "expected one of {} (the list at {pointer}), found {}",
                    show(&Value::Array(list.clone())),
                    show(&v)
                )
            })
        }
        Matcher::IfPresent(inner) => match actual {
            None => Ok(()),
            Some(_) => matches(inner, actual, doc),
        },
        Matcher::KeysIn(allowed) => match need(actual)? {
            Value::Object(map) => match map.keys().find(|k| !allowed.contains(k)) {
                None => Ok(()),
                // A host's key, quoted like any host value: escaped and bounded.
                Some(extra) => Err(format!(
                    "the object is closed to {allowed:?} but carries {}",
                    show(&Value::String(extra.clone()))
                )),
            },
            other => Err(format!("expected an object, found {}", show(&other))),
        },
        Matcher::Contains(needle) => {
            let needle = template::render_text(needle, doc).map_err(|e| e.to_string())?;
            match need(actual)? {
                Value::String(s) if s.contains(&needle) => Ok(()),
                other => Err(format!(
                    "expected a string containing {needle:?}, found {}",
                    show(&other)
                )),
            }
        }
        Matcher::AsJson(cond) => {
            let v = need(actual)?;
            let text = v
                .as_str()
                .ok_or_else(|| format!("expected JSON text, found {}", show(&v)))?;
            let parsed = crate::canonical::parse_strict(text).map_err(|e| {
                format!(
                    "expected JSON text, found text that does not parse ({e}): {}",
                    show(&v)
                )
            })?;
            matches(&cond.expect, parsed.pointer(&cond.at), doc)
                .map_err(|e| format!("in the parsed JSON at {}: {e}", cond.at))
        }
        Matcher::Some(conds) | Matcher::None(conds) => {
            let items = match need(actual)? {
                Value::Array(items) => items,
                other => return Err(format!("expected an array, found {}", show(&other))),
            };
            let hit = items.iter().position(|item| {
                conds
                    .iter()
                    .all(|c| matches(&c.expect, item.pointer(&c.at), doc).is_ok())
            });
            let want_hit = matches!(m, Matcher::Some(_));
            match (want_hit, hit) {
                (true, Some(_)) | (false, None) => Ok(()),
                (true, None) => Err(format!(
                    "no item of {} satisfies every condition",
                    show(&Value::Array(items))
                )),
                (false, Some(i)) => Err(format!(
                    "item {i} ({}) satisfies the conditions it must not",
                    show(&items[i])
                )),
            }
        }
        Matcher::AllEqual(_) => match need(actual)? {
            Value::Array(items) if !items.is_empty() => {
                match items.iter().position(|x| x != &items[0]) {
                    None => Ok(()),
                    Some(i) => Err(format!(
                        "item {i} ({}) differs from item 0 ({})",
                        show(&items[i]),
                        show(&items[0])
                    )),
                }
            }
            other => Err(format!(
                "expected a non-empty array, found {}",
                show(&other)
            )),
        },
        Matcher::Length(inner) => match need(actual)? {
            Value::Array(items) => matches(inner, Some(&Value::from(items.len())), doc)
                .map_err(|e| format!("array length {}: {e}", items.len())),
            other => Err(format!("expected an array, found {}", show(&other))),
        },
        Matcher::ErrorEnvelope(code) => error_envelope(&need(actual)?, code),
        Matcher::Schema(name) => catalog::valid_against(name, &need(actual)?),
        Matcher::SortedBy(pointer) => catalog::sorted_by(&need(actual)?, pointer),
        Matcher::UniqueBy(pointer) => catalog::unique_by(&need(actual)?, pointer),
        Matcher::SameSetAt(spec) => {
            let other = doc
                .pointer(&spec.at)
                .ok_or_else(|| format!("the list to compare with ({}) is absent", spec.at))?;
            let containing = match &spec.containing {
                Some(text) => Some(
                    template::render_str(text, doc)
                        .map_err(|e| e.to_string())?
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_default(),
                ),
                None => None,
            };
            catalog::same_set(
                &need(actual)?,
                other,
                &spec.by,
                &spec.at,
                containing.as_deref(),
            )
        }
        Matcher::NoKeyAnywhere(banned) => catalog::no_key_anywhere(&need(actual)?, banned),
        Matcher::AnnotationsDerived(_) => catalog::annotations_derived(&need(actual)?),
        Matcher::Each(cond) => match need(actual)? {
            Value::Array(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    matches(&cond.expect, item.pointer(&cond.at), doc)
                        .map_err(|e| format!("item {i} at {}: {e}", cond.at))?;
                }
                Ok(())
            }
            Value::Array(_) => {
                Err("expected a non-empty array, found [] (nothing to check)".into())
            }
            other => Err(format!("expected an array, found {}", show(&other))),
        },
    }
}

/// The value of a numeric bound (a placeholder renders through the observations).
fn number(bound: &Bound, doc: &Value) -> Result<f64, String> {
    match bound {
        Bound::Number(n) => Ok(*n),
        Bound::Template(t) => {
            let v = template::render_str(t, doc).map_err(|e| e.to_string())?;
            v.as_f64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .ok_or_else(|| format!("the bound {t} renders to {}, not a number", show(&v)))
        }
    }
}

/// `equalsAtIgnoring`: arrays compare item by item (naming the first differing index and
/// field); other values compare whole. Both sides lose the ignored pointers first.
fn equal_ignoring(actual: &Value, other: &Value, spec: &IgnoringSpec) -> Result<(), String> {
    let strip = |v: &Value| {
        let mut v = v.clone();
        for p in &spec.ignore {
            remove_pointer(&mut v, p);
        }
        v
    };
    match (actual, other) {
        (Value::Array(mine), Value::Array(theirs)) => {
            for (i, (a, b)) in mine.iter().zip(theirs).enumerate() {
                let (a, b) = (strip(a), strip(b));
                if let Some(path) = first_difference(&a, &b, String::new()) {
                    return Err(format!(
                        "item {i} differs from {}/{i} at {}: {} versus {}",
                        spec.at,
                        if path.is_empty() { "the root" } else { &path },
                        a.pointer(&path).map_or("nothing".into(), show),
                        b.pointer(&path).map_or("nothing".into(), show),
                    ));
                }
            }
            (mine.len() == theirs.len()).then_some(()).ok_or_else(|| {
                format!("{} items, but {} has {}", mine.len(), spec.at, theirs.len())
            })
        }
        _ => {
            let (a, b) = (strip(actual), strip(other));
            match first_difference(&a, &b, String::new()) {
                None => Ok(()),
                Some(path) => Err(format!(
                    "differs from {} at {}: {} versus {}",
                    spec.at,
                    if path.is_empty() { "the root" } else { &path },
                    a.pointer(&path).map_or("nothing".into(), show),
                    b.pointer(&path).map_or("nothing".into(), show),
                )),
            }
        }
    }
}

/// Remove the value a JSON pointer names, if any.
fn remove_pointer(v: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    match v.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&key);
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = key.parse::<usize>()
                && i < items.len()
            {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// The pointer of the first place two values differ (depth first, keys in order).
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => first_difference(p, q, path),
                    _ => Some(path),
                }
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}/{i}"))),
        _ => (a != b).then_some(at),
    }
}

/// Strings are also scanned unescaped, so a secret with characters JSON escapes is caught.
fn contains_unescaped(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(a) => a.iter().any(|x| contains_unescaped(x, needle)),
        Value::Object(m) => m
            .iter()
            .any(|(k, x)| k.contains(needle) || contains_unescaped(x, needle)),
        _ => false,
    }
}

/// The v2 error envelope (ERR-1): exactly `{error, message, details?}`, non-empty message,
/// object details, and the expected code.
fn error_envelope(v: &Value, code: &str) -> Result<(), String> {
    let Value::Object(map) = v else {
        return Err(format!(
            "expected an error envelope object, found {}",
            show(v)
        ));
    };
    if let Some(extra) = map
        .keys()
        .find(|k| !["error", "message", "details"].contains(&k.as_str()))
    {
        return Err(format!(
            "the envelope is closed but carries {}",
            show(&Value::String(extra.clone()))
        ));
    }
    if map.get("error").and_then(Value::as_str) != Some(code) {
        return Err(format!(
            "expected error code \"{code}\", found {}",
            map.get("error").map_or("nothing".into(), show)
        ));
    }
    if map
        .get("message")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err("expected a non-empty string message".into());
    }
    if map.get("details").is_some_and(|d| !d.is_object()) {
        return Err("details must be an object when present".into());
    }
    Ok(())
}

fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 300 {
        format!("{}…", s.chars().take(300).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn m(v: Value) -> Matcher {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn each_matcher_accepts_and_rejects() {
        let doc = json!({
            "args": {"b": 1, "a": "x"},
            "canary": "s3cret",
            "list": ["a", "b"],
            "events": [{"id": 1, "t": "a"}, {"id": 2, "t": "b"}]
        });
        let hash = jcs_sha256_hex(&doc["args"]);
        let cases: Vec<(Value, Option<Value>, bool)> = vec![
            (json!({"equals": 1}), Some(json!(1)), true),
            (json!({"equals": 1}), Some(json!(1.5)), false),
            (json!({"equals": 1}), None, false),
            (json!({"absent": true}), None, true),
            (json!({"absent": true}), Some(json!(null)), false),
            (json!({"present": true}), Some(json!(null)), true),
            (
                json!({"matches": "^[0-9a-f]{64}$"}),
                Some(json!(hash)),
                true,
            ),
            (
                json!({"matches": "^[0-9a-f]{64}$"}),
                Some(json!("sha256:00")),
                false,
            ),
            (json!({"oneOf": ["a", "b"]}), Some(json!("b")), true),
            (json!({"oneOf": ["a", "b"]}), Some(json!("c")), false),
            (json!({"type": "integer"}), Some(json!(3)), true),
            (json!({"type": "integer"}), Some(json!(3.5)), false),
            (json!({"atLeast": 1}), Some(json!(1)), true),
            (json!({"atLeast": 1}), Some(json!(0)), false),
            (json!({"atMost": 0}), Some(json!(0)), true),
            (json!({"atMost": 0}), Some(json!(2)), false),
            (json!({"equalsAt": "/canary"}), Some(json!("s3cret")), true),
            (json!({"equalsAt": "/canary"}), Some(json!("other")), false),
            (
                json!({"notContains": "{{canary}}"}),
                Some(json!({"k": "no secret here"})),
                true,
            ),
            (
                json!({"notContains": "{{canary}}"}),
                Some(json!({"k": "x s3cret y"})),
                false,
            ),
            (json!({"jcsSha256Of": "/args"}), Some(json!(hash)), true),
            (
                json!({"jcsSha256Of": "/args"}),
                Some(json!(hash.to_uppercase())),
                false,
            ),
            (json!({"notJcsSha256Of": "/args"}), Some(json!("00")), true),
            (json!({"notJcsSha256Of": "/args"}), Some(json!(hash)), false),
            (
                json!({"errorEnvelope": "forbidden"}),
                Some(json!({"error": "forbidden", "message": "m", "details": {}})),
                true,
            ),
            (
                json!({"errorEnvelope": "forbidden"}),
                Some(json!({"error": "forbidden", "message": "m", "retryAfter": 1})),
                false,
            ),
            (
                json!({"errorEnvelope": "forbidden"}),
                Some(json!({"error": "forbidden", "message": ""})),
                false,
            ),
            (
                json!({"each": {"at": "/t", "expect": {"equals": 1}}}),
                Some(json!([{"t": 1}, {"t": 1}])),
                true,
            ),
            (
                json!({"each": {"at": "/t", "expect": {"equals": 1}}}),
                Some(json!([{"t": 1}, {"t": 2}])),
                false,
            ),
            (
                json!({"each": {"at": "/t", "expect": {"equals": 1}}}),
                Some(json!([])),
                false,
            ),
            (json!({"memberOf": "/list"}), Some(json!("b")), true),
            (json!({"memberOf": "/list"}), Some(json!("z")), false),
            (json!({"ifPresent": {"type": "boolean"}}), None, true),
            (
                json!({"ifPresent": {"type": "boolean"}}),
                Some(json!(true)),
                true,
            ),
            (
                json!({"ifPresent": {"type": "boolean"}}),
                Some(json!("yes")),
                false,
            ),
            (json!({"keysIn": ["a", "b"]}), Some(json!({"a": 1})), true),
            (
                json!({"keysIn": ["a", "b"]}),
                Some(json!({"a": 1, "c": 2})),
                false,
            ),
            (
                json!({"contains": "/amount"}),
                Some(json!("bad at /amount: type")),
                true,
            ),
            (json!({"contains": "/amount"}), Some(json!("bad")), false),
            (
                json!({"asJson": {"at": "/isError", "expect": {"equals": true}}}),
                Some(json!("{\"isError\": true}")),
                true,
            ),
            (
                json!({"asJson": {"at": "/isError", "expect": {"equals": true}}}),
                Some(json!("{\"isError\": false}")),
                false,
            ),
            (
                json!({"asJson": {"at": "/isError", "expect": {"equals": true}}}),
                Some(json!("not json")),
                false,
            ),
            (
                json!({"some": [{"at": "/r", "expect": {"equals": "tool"}}, {"at": "/n", "expect": {"atLeast": 2}}]}),
                Some(json!([{"r": "tool", "n": 1}, {"r": "tool", "n": 3}])),
                true,
            ),
            (
                json!({"some": [{"at": "/r", "expect": {"equals": "tool"}}, {"at": "/n", "expect": {"atLeast": 2}}]}),
                Some(json!([{"r": "tool", "n": 1}, {"r": "user", "n": 3}])),
                false,
            ),
            (
                json!({"none": [{"at": "/r", "expect": {"equals": "tool"}}]}),
                Some(json!([])),
                true,
            ),
            (
                json!({"none": [{"at": "/r", "expect": {"equals": "tool"}}]}),
                Some(json!([{"r": "tool"}])),
                false,
            ),
            (json!({"allEqual": true}), Some(json!(["a", "a"])), true),
            (json!({"allEqual": true}), Some(json!(["a", "b"])), false),
            (json!({"allEqual": true}), Some(json!([])), false),
            (json!({"length": {"equals": 2}}), Some(json!([1, 2])), true),
            (json!({"length": {"equals": 2}}), Some(json!([1])), false),
            (
                json!({"equalsAtIgnoring": {"at": "/events", "ignore": ["/id"]}}),
                Some(json!([{"id": 9, "t": "a"}, {"id": 8, "t": "b"}])),
                true,
            ),
            (
                json!({"equalsAtIgnoring": {"at": "/events", "ignore": ["/id"]}}),
                Some(json!([{"id": 9, "t": "a"}, {"id": 8, "t": "c"}])),
                false,
            ),
            (
                json!({"equalsAtIgnoring": {"at": "/events", "ignore": ["/id"]}}),
                Some(json!([{"id": 9, "t": "a"}])),
                false,
            ),
            (
                json!({"equalsAtIgnoring": {"at": "/events", "ignore": ["/id"]}}),
                Some(json!([{"id": 9, "t": "a", "extra": true}, {"t": "b"}])),
                false,
            ),
            (
                json!({"notOneOf": ["internal_error"]}),
                Some(json!("acme.x")),
                true,
            ),
            (
                json!({"notOneOf": ["internal_error"]}),
                Some(json!("internal_error")),
                false,
            ),
            (json!({"notOneOf": ["internal_error"]}), None, false),
            (
                json!({"registeredErrorCode": true}),
                Some(json!("forbidden")),
                true,
            ),
            (
                json!({"registeredErrorCode": true}),
                Some(json!("acme.tool_failed")),
                true,
            ),
            (
                json!({"registeredErrorCode": true}),
                Some(json!("tool_outcome_unknown")),
                true,
            ),
            (
                json!({"registeredErrorCode": true}),
                Some(json!("tool_execution_failed")),
                false,
            ),
            (
                json!({"registeredErrorCode": true}),
                Some(json!("openwop.x")),
                false,
            ),
            (json!({"registeredErrorCode": true}), Some(json!(7)), false),
            (json!({"registeredErrorCode": true}), None, false),
        ];
        for (matcher, actual, ok) in cases {
            let r = matches(&m(matcher.clone()), actual.as_ref(), &doc);
            assert_eq!(r.is_ok(), ok, "{matcher} on {actual:?}: {r:?}");
        }
    }

    proptest! {
        #[test]
        fn equals_agrees_with_json_equality(a in any::<i32>(), b in any::<i32>()) {
            let doc = json!({});
            let r = matches(&m(json!({"equals": a})), Some(&json!(b)), &doc);
            prop_assert_eq!(r.is_ok(), a == b);
        }

        #[test]
        fn not_contains_finds_any_embedded_secret(prefix in "[a-z ]{0,10}", secret in "[A-Za-z0-9]{6,12}", suffix in "[a-z ]{0,10}") {
            let doc = json!({"s": secret.clone()});
            let observed = json!({"deep": [{"msg": format!("{prefix}{secret}{suffix}")}]});
            let not_contains = m(json!({"notContains": "{{s}}"}));
            let leaked = matches(&not_contains, Some(&observed), &doc);
            let clean = matches(&not_contains, Some(&json!({"msg": prefix})), &doc);
            prop_assert!(leaked.is_err());
            prop_assert!(clean.is_ok());
        }
    }
}
