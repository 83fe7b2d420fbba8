//! Matchers over one JSON value. Comparisons are exact and whole-value: no truthiness, no
//! substring stand-ins for equality.

use serde_json::Value;

use super::catalog;
use super::error_registry::{CodeStanding, standing};
use crate::suite::{Bound, DaysSpec, IgnoringSpec, Matcher};
use crate::template;
use toolcert_base::canonical::jcs_sha256_hex;

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
            let options = rendered_options(options, doc)?;
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
            let options = rendered_options(options, doc)?;
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
        Matcher::Not(inner) => match matches(inner, actual, doc) {
            Ok(()) => Err(format!(
                "expected the inner expectation not to hold, found {}",
                shown()
            )),
            Err(_) => Ok(()),
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
            let parsed = toolcert_base::canonical::parse_strict(text).map_err(|e| {
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
        Matcher::EntropyBits(inner) => match need(actual)? {
            Value::String(id) => {
                let e = super::ids::estimate(&id);
                // Two decimals: the bound compared with is a whole number of bits.
                let bits = (e.bits * 100.0).round() / 100.0;
                matches(inner, Some(&Value::from(bits)), doc).map_err(|err| {
                    format!(
                        "the opaque segment {} reads as {} and carries at most {bits} bits of entropy: {err}",
                        show(&Value::String(e.random_part.clone())),
                        e.scheme
                    )
                })
            }
            other => Err(format!("expected an id (a string), found {}", show(&other))),
        },
        Matcher::SameIdAt(pointer) => {
            let other = doc
                .pointer(pointer)
                .ok_or_else(|| format!("the id to compare with ({pointer}) is absent"))?;
            let v = need(actual)?;
            match (v.as_str(), other.as_str()) {
                (Some(mine), Some(theirs))
                    if super::ids::unproject(mine) == super::ids::unproject(theirs) =>
                {
                    Ok(())
                }
                (Some(_), Some(_)) => Err(format!(
                    "expected the id at {pointer} ({}), projected or not, found {}",
                    show(other),
                    show(&v)
                )),
                _ => Err(format!(
                    "expected two ids (strings), found {} and {} (at {pointer})",
                    show(&v),
                    show(other)
                )),
            }
        }
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
        Matcher::ConformsTo(shape) => super::shapes::conforms(*shape, &need(actual)?),
        Matcher::RegisteredStatus(_) => registered_status(&need(actual)?),
        Matcher::Distinct(_) => match need(actual)? {
            Value::Array(items) => {
                match (1..items.len()).find(|&i| items[..i].contains(&items[i])) {
                    None => Ok(()),
                    Some(i) => Err(format!(
                        "item {i} ({}) repeats an earlier item",
                        show(&items[i])
                    )),
                }
            }
            other => Err(format!("expected an array, found {}", show(&other))),
        },
        Matcher::NoFalseFacets(_) => no_false_facets(&need(actual)?),
        Matcher::DateNotAfter(pointer) => {
            let date = |v: &Value| {
                v.as_str()
                    .filter(|s| {
                        s.len() == 10
                            && s.char_indices().all(|(i, c)| {
                                if i == 4 || i == 7 {
                                    c == '-'
                                } else {
                                    c.is_ascii_digit()
                                }
                            })
                    })
                    .map(str::to_owned)
            };
            let v = need(actual)?;
            let mine = date(&v)
                .ok_or_else(|| format!("expected a YYYY-MM-DD date, found {}", show(&v)))?;
            let bound = doc.pointer(pointer).and_then(date).ok_or_else(|| {
                format!("the date to compare with ({pointer}) is absent or not YYYY-MM-DD")
            })?;
            // Same fixed-width form, so text order is date order.
            (mine <= bound)
                .then_some(())
                .ok_or_else(|| format!("{mine} is after {bound} (the date at {pointer})"))
        }
        Matcher::WithinDaysBefore(spec) => within_days_before(&need(actual)?, spec, doc),
        Matcher::Each(spec) => match need(actual)? {
            Value::Array(items) if !items.is_empty() => {
                let mut checked = 0;
                for (i, item) in items.iter().enumerate() {
                    if let Some(only) = &spec.only
                        && matches(&only.expect, item.pointer(&only.at), doc).is_err()
                    {
                        continue;
                    }
                    checked += 1;
                    matches(&spec.expect, item.pointer(&spec.at), doc)
                        .map_err(|e| format!("item {i} at {}: {e}", spec.at))?;
                }
                match (&spec.only, checked) {
                    (Some(only), 0) => Err(format!(
                        "no item of {} has {} matching `where` (nothing to check)",
                        items.len(),
                        only.at
                    )),
                    _ => Ok(()),
                }
            }
            Value::Array(_) => {
                Err("expected a non-empty array, found [] (nothing to check)".into())
            }
            other => Err(format!("expected an array, found {}", show(&other))),
        },
    }
}

/// The value of a numeric bound (a placeholder renders through the observations).
/// The options of `oneOf`/`notOneOf`, their `{{…}}` placeholders rendered (an option may name
/// a value observed earlier, e.g. another run's effect id).
fn rendered_options(options: &[Value], doc: &Value) -> Result<Vec<Value>, String> {
    options
        .iter()
        .map(|o| template::render(o, doc).map_err(|e| e.to_string()))
        .collect()
}

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
                let path = format!("{at}/{}", toolcert_base::canonical::pointer_token(k));
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

/// ERR-2: the status an HTTP answer was sent with equals its code's registered status. Reads
/// `{status, body}` (an `http` step) or `{http: {status}, body}` (a `seam` step).
fn registered_status(v: &Value) -> Result<(), String> {
    let status = v
        .get("status")
        .or_else(|| v.pointer("/http/status"))
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("expected an HTTP answer with a status, found {}", show(v)))?;
    let code = v
        .pointer("/body/error")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the answer (HTTP {status}) has no string body.error to look up"))?;
    let entry = super::error_registry::REGISTERED
        .iter()
        .find(|r| r.code == code)
        .and_then(|r| r.status.map(|s| (r.code, s)));
    match entry {
        Some((_, registered)) if u64::from(registered) == status => Ok(()),
        Some((code, registered)) => Err(format!(
            "code {code} is registered with HTTP {registered}, but the answer was HTTP {status}"
        )),
        None => Err(format!(
            "code {} has no registered status in toolcert's table (src/expect/error_registry.rs)",
            show(&Value::String(code.to_string()))
        )),
    }
}

/// Facets whose `false` has a defined meaning, as `(record, facet)`. None of toolcert's sources
/// gives one yet (RFC 0237 §C even makes `false` invalid for `envelopeContracts.advertised`);
/// a spec editor who finds one adds it here.
const MEANINGFUL_FALSE: &[(&str, &str)] = &[];

/// DISC-3: no record of the document offers a facet as `false`.
fn no_false_facets(v: &Value) -> Result<(), String> {
    let Value::Object(records) = v else {
        return Err(format!(
            "expected a discovery document object, found {}",
            show(v)
        ));
    };
    let suspect: Vec<String> = records
        .iter()
        .filter_map(|(name, record)| Some((name, record.as_object()?)))
        .flat_map(|(name, record)| {
            record
                .iter()
                .filter(|(facet, value)| {
                    **value == Value::Bool(false)
                        && !MEANINGFUL_FALSE.contains(&(name.as_str(), facet.as_str()))
                })
                .map(move |(facet, _)| format!("{name}.{facet}"))
        })
        .collect();
    if suspect.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "facets set to false (a facet not offered is omitted): {}",
            show(&Value::from(suspect))
        ))
    }
}

/// MCP-4: a date (`YYYY-MM-DD`) or RFC 3339 instant no more than `days` days before the
/// instant at `spec.at`, and no more than a day after it (clock skew, time zones).
fn within_days_before(v: &Value, spec: &DaysSpec, doc: &Value) -> Result<(), String> {
    let parse = |text: &str| {
        let instant = if text.len() == 10 {
            format!("{text}T00:00:00Z")
        } else {
            text.to_string()
        };
        time::OffsetDateTime::parse(&instant, &time::format_description::well_known::Rfc3339)
    };
    let reference = doc
        .pointer(&spec.at)
        .and_then(Value::as_str)
        .and_then(|t| parse(t).ok())
        .ok_or_else(|| {
            format!(
                "the reference instant at {} is absent or not RFC 3339",
                spec.at
            )
        })?;
    let text = v
        .as_str()
        .ok_or_else(|| format!("expected a date or date-time string, found {}", show(v)))?;
    let at = parse(text)
        .map_err(|_| format!("expected an RFC 3339 date or date-time, found {}", show(v)))?;
    let age = reference - at;
    if age > time::Duration::days(i64::from(spec.days)) {
        Err(format!(
            "{} is {} days before {} (at most {} allowed)",
            show(v),
            age.whole_days(),
            spec.at,
            spec.days
        ))
    } else if age < -time::Duration::days(1) {
        Err(format!(
            "{} lies {} days after {} (toolcert's clock)",
            show(v),
            -age.whole_days(),
            spec.at
        ))
    } else {
        Ok(())
    }
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
    fn entropy_bits_and_same_ids() {
        let doc = json!({"run": {"runId": "acme/run_0123456789abcdef0123456789abcdef"}});
        let at_least = m(json!({"entropyBits": {"atLeast": 128}}));
        let long = json!("acme~2Frun_0123456789abcdef0123456789abcdef");
        assert_eq!(matches(&at_least, Some(&long), &doc), Ok(()));
        let err = matches(&at_least, Some(&json!("run_0123abcd")), &doc).unwrap_err();
        assert!(err.contains("32 bits") && err.contains("hex"), "{err}");
        assert!(matches(&at_least, Some(&json!(7)), &doc).is_err());
        assert!(matches(&at_least, None, &doc).is_err());

        let same = m(json!({"sameIdAt": "/run/runId"}));
        assert_eq!(matches(&same, Some(&long), &doc), Ok(()));
        assert_eq!(
            matches(
                &same,
                Some(&json!("acme/run_0123456789abcdef0123456789abcdef")),
                &doc
            ),
            Ok(())
        );
        let err = matches(&same, Some(&json!("task-run_1")), &doc).unwrap_err();
        assert!(err.contains("/run/runId"), "{err}");
        assert!(matches(&m(json!({"sameIdAt": "/nope"})), Some(&long), &doc).is_err());
    }

    #[test]
    fn registered_status_and_date_windows() {
        let doc = json!({"discovery": {"checkedAt": "2026-12-02T01:00:00Z"}, "d": "2026-07-28"});
        let cases: Vec<(Value, Value, bool)> = vec![
            (
                json!({"registeredStatus": true}),
                json!({"status": 404, "body": {"error": "not_found", "message": "m"}}),
                true,
            ),
            (
                json!({"registeredStatus": true}),
                json!({"status": 400, "body": {"error": "not_found", "message": "m"}}),
                false,
            ),
            (
                json!({"registeredStatus": true}),
                json!({"http": {"status": 429}, "body": {"error": "rate_limited"}}),
                true,
            ),
            (
                json!({"registeredStatus": true}),
                json!({"status": 500, "body": {"error": "internal_error"}}),
                false,
            ),
            (
                json!({"registeredStatus": true}),
                json!({"status": 404, "body": "x"}),
                false,
            ),
            (
                json!({"withinDaysBefore": {"at": "/discovery/checkedAt", "days": 90}}),
                json!("2026-11-30T00:00:00Z"),
                true,
            ),
            (
                json!({"withinDaysBefore": {"at": "/discovery/checkedAt", "days": 90}}),
                json!("2026-09-04"),
                true,
            ),
            (
                json!({"withinDaysBefore": {"at": "/discovery/checkedAt", "days": 90}}),
                json!("2026-09-01"),
                false,
            ),
            (
                json!({"withinDaysBefore": {"at": "/discovery/checkedAt", "days": 90}}),
                json!("2026-12-05"),
                false,
            ),
            (
                json!({"withinDaysBefore": {"at": "/discovery/checkedAt", "days": 90}}),
                json!("yesterday"),
                false,
            ),
            (
                json!({"withinDaysBefore": {"at": "/nowhere", "days": 90}}),
                json!("2026-11-30"),
                false,
            ),
            (json!({"distinct": true}), json!(["a", "b"]), true),
            (json!({"dateNotAfter": "/d"}), json!("2026-07-28"), true),
            (json!({"dateNotAfter": "/d"}), json!("2026-07-29"), false),
            (json!({"dateNotAfter": "/d"}), json!("2026-7-1"), false),
            (json!({"distinct": true}), json!(["a", "b", "a"]), false),
            (
                json!({"noFalseFacets": true}),
                json!({"protocolVersions": ["2.0"], "mcp": {"client": true}}),
                true,
            ),
            (
                json!({"noFalseFacets": true}),
                json!({"toolCatalog": {"compactView": false}}),
                false,
            ),
        ];
        for (matcher, value, ok) in cases {
            assert_eq!(
                matches(&m(matcher.clone()), Some(&value), &doc).is_ok(),
                ok,
                "{matcher} on {value}"
            );
        }
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
            // `where` keeps the items it holds for: others' entries are not judged.
            (
                json!({"each": {"at": "/t", "expect": {"equals": 1},
                    "where": {"at": "/id", "expect": {"contains": "_mine"}}}}),
                Some(json!([{"id": "a_mine", "t": 1}, {"id": "theirs", "t": 2}])),
                true,
            ),
            (
                json!({"each": {"at": "/t", "expect": {"equals": 1},
                    "where": {"at": "/id", "expect": {"contains": "_mine"}}}}),
                Some(json!([{"id": "a_mine", "t": 2}, {"id": "theirs", "t": 1}])),
                false,
            ),
            // Nothing kept is nothing checked: it does not hold.
            (
                json!({"each": {"at": "/t", "expect": {"equals": 1},
                    "where": {"at": "/id", "expect": {"contains": "_mine"}}}}),
                Some(json!([{"id": "theirs", "t": 1}])),
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
