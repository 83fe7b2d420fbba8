//! Matchers over tool catalogs (CAT, DESC rows): wire-schema validation, order, uniqueness and
//! set equality of a key across list items, banned keys anywhere in a tree, and the four
//! derived annotation hints.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// The wire schemas the `schema` matcher knows, by name: `(name, schema text)`.
pub const WIRE_SCHEMAS: &[(&str, &str)] = &[
    (
        "tool-descriptor",
        include_str!("../../../schemas/tool-descriptor.schema.json"),
    ),
    (
        "compact-tool-descriptor",
        include_str!("../../../schemas/compact-tool-descriptor.schema.json"),
    ),
];

/// A wire schema's name and its validator (`None`: the embedded schema does not compile).
type Compiled = (&'static str, Option<Arc<jsonschema::Validator>>);

/// The compiled validator of a named wire schema (`None`: unknown name or broken schema).
fn validator(name: &str) -> Option<Arc<jsonschema::Validator>> {
    static COMPILED: OnceLock<Vec<Compiled>> = OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        WIRE_SCHEMAS
            .iter()
            .map(|(name, text)| {
                let validator = serde_json::from_str::<Value>(text)
                    .ok()
                    .and_then(|schema| jsonschema::validator_for(&schema).ok())
                    .map(Arc::new);
                (*name, validator)
            })
            .collect()
    });
    compiled
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.clone())
}

/// `schema`: `value` is valid against the named wire schema; `Err` names the first
/// violation's instance path.
pub fn valid_against(name: &str, value: &Value) -> Result<(), String> {
    let Some(validator) = validator(name) else {
        return Err(format!(
            "toolcert has no wire schema named {name:?} (known: {})",
            WIRE_SCHEMAS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    match validator.iter_errors(value).next() {
        None => Ok(()),
        Some(error) => {
            let path = error.instance_path().to_string();
            Err(format!(
                "not a valid {name}: at {:?}: {error}",
                if path.is_empty() { "/" } else { &path }
            ))
        }
    }
}

/// The string at `pointer` in each item of an array, or why not.
fn keys<'v>(value: &'v Value, pointer: &str) -> Result<Vec<&'v str>, String> {
    let Value::Array(items) = value else {
        return Err(format!("expected an array, found {}", kind(value)));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.pointer(pointer)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("item {i} has no string at {pointer}"))
        })
        .collect()
}

/// `sortedBy`: the array's items are in ascending code-point order of the string at `pointer`.
pub fn sorted_by(value: &Value, pointer: &str) -> Result<(), String> {
    let keys = keys(value, pointer)?;
    match keys.windows(2).position(|pair| pair[0] > pair[1]) {
        None => Ok(()),
        Some(i) => Err(format!(
            "not sorted by {pointer}: item {i} ({:?}) comes before item {} ({:?})",
            keys[i],
            i + 1,
            keys[i + 1]
        )),
    }
}

/// `uniqueBy`: no two items of the array share the string at `pointer`.
pub fn unique_by(value: &Value, pointer: &str) -> Result<(), String> {
    let keys = keys(value, pointer)?;
    let mut seen = BTreeSet::new();
    match keys.iter().position(|key| !seen.insert(*key)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "item {i} repeats {pointer} {:?} of an earlier item",
            keys[i]
        )),
    }
}

/// `sameSetAt`: the set of strings at `by` in the items of `value` equals that of `other`
/// (only the strings containing `containing`, when given).
pub fn same_set(
    value: &Value,
    other: &Value,
    by: &str,
    other_at: &str,
    containing: Option<&str>,
) -> Result<(), String> {
    let kept = |key: &&str| containing.is_none_or(|text| key.contains(text));
    let mine: BTreeSet<&str> = keys(value, by)?.into_iter().filter(kept).collect();
    let theirs: BTreeSet<&str> = keys(other, by)
        .map_err(|e| format!("the list to compare with ({other_at}): {e}"))?
        .into_iter()
        .filter(kept)
        .collect();
    if mine == theirs {
        return Ok(());
    }
    let extra: Vec<_> = mine.difference(&theirs).collect();
    let missing: Vec<_> = theirs.difference(&mine).collect();
    Err(format!(
        "the {by} sets differ from {other_at}: here but not there {extra:?}, there but not here {missing:?}"
    ))
}

/// `noKeyAnywhere`: no object anywhere in `value` (itself included) has one of `banned` as a
/// member name; `Err` names the first hit's pointer.
pub fn no_key_anywhere(value: &Value, banned: &[String]) -> Result<(), String> {
    fn walk(value: &Value, banned: &[String], path: &str) -> Option<String> {
        match value {
            Value::Object(map) => map.iter().find_map(|(key, child)| {
                let here = format!("{path}/{}", toolcert_base::canonical::pointer_token(key));
                if banned.iter().any(|b| b == key) {
                    Some(here)
                } else {
                    walk(child, banned, &here)
                }
            }),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| walk(item, banned, &format!("{path}/{i}"))),
            _ => None,
        }
    }
    match walk(value, banned, "") {
        None => Ok(()),
        Some(hit) => Err(format!("found the banned key at {hit}")),
    }
}

/// The four hints a descriptor's fields imply (RFC 0204 §D.12).
fn derived_hints(descriptor: &Value) -> [(&'static str, bool); 4] {
    let tier = descriptor.get("safetyTier").and_then(Value::as_str);
    let replay = descriptor.get("replayPolicy").and_then(Value::as_str);
    let egress = descriptor.get("egress").and_then(Value::as_str);
    [
        ("readOnlyHint", matches!(tier, Some("pure" | "read"))),
        ("destructiveHint", matches!(tier, Some("write" | "exec"))),
        (
            "idempotentHint",
            matches!(replay, Some("deterministic" | "idempotent")),
        ),
        ("openWorldHint", egress != Some("none")),
    ]
}

/// `annotationsDerived`: a descriptor whose `annotations` (when present) hold exactly the
/// four hints, each equal to what its `safetyTier`, `replayPolicy` and `egress` imply, and no
/// `title`.
pub fn annotations_derived(descriptor: &Value) -> Result<(), String> {
    let Some(annotations) = descriptor.get("annotations") else {
        return Ok(());
    };
    let Value::Object(map) = annotations else {
        return Err(format!(
            "annotations is {}, not an object",
            kind(annotations)
        ));
    };
    if map.contains_key("title") {
        return Err("annotations carries title, which is not allowed".into());
    }
    for (hint, expected) in derived_hints(descriptor) {
        match map.get(hint) {
            None => return Err(format!("annotations lacks {hint}")),
            Some(Value::Bool(b)) if *b == expected => {}
            Some(other) => {
                return Err(format!(
                    "annotations.{hint} is {other}, but the descriptor implies {expected}"
                ));
            }
        }
    }
    Ok(())
}

use toolcert_base::canonical::kind;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn descriptor() -> Value {
        json!({"toolId": "t", "source": "host-extension", "safetyTier": "write",
               "replayPolicy": "idempotent", "approval": "never", "auth": {"scopes": []}})
    }

    #[test]
    fn the_descriptor_schema_is_closed_and_enumerated() {
        assert!(valid_against("tool-descriptor", &descriptor()).is_ok());
        let mut extra = descriptor();
        extra["internal"] = json!(1);
        assert!(valid_against("tool-descriptor", &extra).is_err());
        let mut bad_enum = descriptor();
        bad_enum["approval"] = json!("sometimes");
        assert!(valid_against("tool-descriptor", &bad_enum).is_err());
        let mut cred = descriptor();
        cred["auth"]["credentialRef"] = json!("sk-live");
        assert!(valid_against("tool-descriptor", &cred).is_err());
        let mut no_id = descriptor();
        no_id["toolId"] = json!("");
        assert!(valid_against("tool-descriptor", &no_id).is_err());
        assert!(valid_against("no-such-schema", &descriptor()).is_err());
    }

    #[test]
    fn the_compact_schema_leaves_out_heavy_fields() {
        let compact = json!({"toolId": "t", "source": "mcp", "safetyTier": "read",
            "inputSchema": {"type": "object", "properties": {}}});
        assert!(valid_against("compact-tool-descriptor", &compact).is_ok());
        assert!(valid_against("compact-tool-descriptor", &descriptor()).is_err());
        let flat = json!({"toolId": "t", "source": "mcp", "safetyTier": "read",
            "inputSchema": {"type": "object"}});
        assert!(valid_against("compact-tool-descriptor", &flat).is_err());
    }

    #[test]
    fn order_uniqueness_and_sets() {
        let list = json!([{"id": "a"}, {"id": "b"}, {"id": "c"}]);
        let shuffled = json!([{"id": "c"}, {"id": "a"}, {"id": "b"}]);
        assert!(sorted_by(&list, "/id").is_ok());
        assert!(sorted_by(&shuffled, "/id").is_err());
        assert!(unique_by(&list, "/id").is_ok());
        assert!(unique_by(&json!([{"id": "a"}, {"id": "a"}]), "/id").is_err());
        assert!(same_set(&list, &shuffled, "/id", "/x", None).is_ok());
        assert!(same_set(&list, &json!([{"id": "a"}]), "/id", "/x", None).is_err());
        let others = json!([{"id": "a"}, {"id": "zz"}]);
        assert!(same_set(&json!([{"id": "a"}]), &others, "/id", "/x", Some("a")).is_ok());
        assert!(same_set(&json!([{"id": "a"}]), &others, "/id", "/x", None).is_err());
        assert!(sorted_by(&json!([{"id": 1}]), "/id").is_err());
        assert!(unique_by(&json!({"id": "a"}), "/id").is_err());
    }

    #[test]
    fn banned_keys_are_found_at_any_depth() {
        let banned = vec!["oneOf".to_owned(), "$ref".to_owned()];
        let clean = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert!(no_key_anywhere(&clean, &banned).is_ok());
        let deep = json!({"properties": {"a": {"items": [{"oneOf": []}]}}});
        let err = no_key_anywhere(&deep, &banned).expect_err("found");
        assert!(err.contains("/properties/a/items/0/oneOf"), "{err}");
    }

    #[test]
    fn annotations_must_follow_the_descriptor() {
        assert!(annotations_derived(&descriptor()).is_ok());
        let mut good = descriptor();
        good["annotations"] = json!({"readOnlyHint": false, "destructiveHint": true,
            "idempotentHint": true, "openWorldHint": true});
        assert!(annotations_derived(&good).is_ok());
        let mut lying = good.clone();
        lying["annotations"]["readOnlyHint"] = json!(true);
        assert!(annotations_derived(&lying).is_err());
        let mut missing = good.clone();
        missing["annotations"]
            .as_object_mut()
            .expect("object")
            .remove("openWorldHint");
        assert!(annotations_derived(&missing).is_err());
        let mut closed = good.clone();
        closed["egress"] = json!("none");
        assert!(annotations_derived(&closed).is_err());
        closed["annotations"]["openWorldHint"] = json!(false);
        assert!(annotations_derived(&closed).is_ok());
        let mut titled = good;
        titled["annotations"]["title"] = json!("x");
        assert!(annotations_derived(&titled).is_err());
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            "[a-z$]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-zA-Z$]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The catalog matchers judge any input without panicking, and `noKeyAnywhere`
        /// agrees with a plain search of the serialized keys.
        #[test]
        fn judges_any_input(value in json_value()) {
            let _ = sorted_by(&value, "/id");
            let _ = unique_by(&value, "/id");
            let _ = same_set(&value, &value, "/id", "/x", None);
            let _ = annotations_derived(&value);
            let _ = valid_against("tool-descriptor", &value);
            let banned = vec!["oneOf".to_owned()];
            let found = no_key_anywhere(&value, &banned).is_err();
            fn has(value: &Value) -> bool {
                match value {
                    Value::Object(m) => m.contains_key("oneOf") || m.values().any(has),
                    Value::Array(a) => a.iter().any(has),
                    _ => false,
                }
            }
            prop_assert_eq!(found, has(&value));
        }

        /// A list judged sorted really is sorted, and sorting any list makes it pass.
        #[test]
        fn sorted_agrees_with_sort(ids in prop::collection::vec("[a-c]{0,3}", 0..6)) {
            let list = Value::Array(ids.iter().map(|id| serde_json::json!({"id": id})).collect());
            let mut sorted = ids.clone();
            sorted.sort();
            prop_assert_eq!(sorted_by(&list, "/id").is_ok(), sorted == ids);
        }
    }
}
