//! What the loader derives instead of reading it from a scenario file: the scenario's `id`,
//! from the file's path (`scenarios/<family>/<name>.json` is `<family>.<name>`), and its
//! `surfaces`, from what its steps use (see `used_surfaces` in the loader).
//!
//! A file may still state either, and then must state what the loader derives: a stated `id`
//! that differs is an error naming the file to rename or the member to remove, and so is a
//! stated `surfaces` list that differs from the steps'. No scenario needs a surface its steps
//! cannot reveal: every surface kind is revealed by a step (a seam call, a member it adds to
//! an upstream seam, a `{{fixtures.…}}` or `{{facts.…}}` template, a `host` step), and the
//! loader refused a declared surface no step used before the list was derived. A file with
//! `params` names each scenario's id in its entries (one file, several scenarios), as before.
//!
//! The suite digest is taken over each scenario file with what the loader derives left out
//! ([`digest_form`]): a file that restates its `id` or `surfaces` and one that does not are
//! the same suite, and a renamed file (a new id) or an edited step (new surfaces) is not.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::suite::SuiteError;

/// Where scenario files live; a scenario's id is its path below this, dot-separated.
const SCENARIOS_DIR: &str = "scenarios/";

/// The id the file at `file` gives its scenario: its path below `scenarios/` without
/// `.json`, `/` read as `.` (`scenarios/idem/l1-replay.json` ⇒ `idem.l1-replay`). `None` for a
/// path outside `scenarios/`.
pub(crate) fn id_of_file(file: &str) -> Option<String> {
    let rel = file.strip_prefix(SCENARIOS_DIR)?.strip_suffix(".json")?;
    Some(rel.replace('/', "."))
}

/// Whether `id` is a scenario id (`schemas/scenario.schema.json`, `/properties/id`): two or
/// more dot-separated parts, each lowercase letters and digits in words joined by single `-`.
fn is_scenario_id(id: &str) -> bool {
    let word = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    let part = |p: &str| p.split('-').all(word);
    id.split('.').count() >= 2 && id.split('.').all(part)
}

/// Give the scenario document of `file` (one without `params`) the id its path gives; a
/// document that still states an `id` must state that one.
pub(crate) fn set_id(file: &str, doc: &mut Map<String, Value>) -> Result<(), SuiteError> {
    let Some(derived) = id_of_file(file) else {
        // Not a scenario file of a suite directory: the schema asks for an id.
        return Ok(());
    };
    let fail = |pointer: &str, message: String| SuiteError::Reference {
        file: file.to_string(),
        pointer: pointer.to_string(),
        message,
    };
    if !is_scenario_id(&derived) {
        return Err(fail(
            "",
            format!(
                "the file's path gives the scenario id \"{derived}\", which is not one (a family folder and a name, lowercase words joined by -: scenarios/<family>/<name>.json); rename the file"
            ),
        ));
    }
    match doc.get("id") {
        None => {
            doc.insert("id".into(), Value::String(derived));
            Ok(())
        }
        Some(Value::String(stated)) if *stated == derived => Ok(()),
        Some(stated) => Err(fail(
            "/id",
            format!(
                "states id {stated}, but the file's path gives \"{derived}\" (scenarios/<family>/<name>.json is <family>.<name>); remove /id (the loader derives it), or rename the file"
            ),
        )),
    }
}

/// The form of a suite data file its digest is taken over: a scenario file without the
/// members the loader derives (an `id` equal to the one its path gives, and `surfaces`, which
/// a file may state only as the steps derive it), every other file as it is.
pub(crate) fn digest_form<'v>(file: &str, value: &'v Value) -> Cow<'v, Value> {
    let derived = id_of_file(file);
    let Some(map) = value.as_object() else {
        return Cow::Borrowed(value);
    };
    let restates_id = derived.is_some_and(|id| map.get("id").and_then(Value::as_str) == Some(&id));
    if !restates_id && !map.contains_key("surfaces") {
        return Cow::Borrowed(value);
    }
    let mut map = map.clone();
    if restates_id {
        map.remove("id");
    }
    map.remove("surfaces");
    Cow::Owned(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::loader::load::embedded_with_file as with_file;

    /// A scenario that states neither its id nor its surfaces.
    const BARE: &str = r#"{"title": "t", "row": "HOOKS-AUTH-1", "kills": [],
        "steps": [{"step": "receiver", "name": "r"},
                  {"step": "seam", "name": "call", "seam": "toolhooks/invoke", "role": "operator",
                   "body": {"principal": "p", "toolName": "t", "receiverUrl": "{{receivers.r.url}}"}}],
        "checks": {
          "ok": {"says": "s", "at": "/steps/call/toolReturned/status", "equals": "ok", "control": true},
          "c": {"says": "s", "at": "/steps/call/http/status", "equals": 200}
        }}"#;

    #[test]
    fn the_id_is_the_file_s_path() {
        assert_eq!(
            id_of_file("scenarios/idem/l1-replay.json").as_deref(),
            Some("idem.l1-replay")
        );
        assert_eq!(id_of_file("schemas/x.json"), None);
        let suite = with_file("scenarios/hooks/derived-id.json", BARE).unwrap();
        let s = suite.scenario("hooks.derived-id").unwrap();
        assert_eq!(s.file, "scenarios/hooks/derived-id.json");
        // `toolcert suite --expanded` shows it.
        assert_eq!(
            suite.expanded["hooks.derived-id"]["id"],
            json!("hooks.derived-id")
        );
    }

    #[test]
    fn a_stated_id_must_be_the_derived_one() {
        let same = BARE.replacen('{', r#"{"id": "hooks.derived-id", "#, 1);
        with_file("scenarios/hooks/derived-id.json", &same).unwrap();
        let other = BARE.replacen('{', r#"{"id": "hooks.other", "#, 1);
        let err = with_file("scenarios/hooks/derived-id.json", &other)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("scenarios/hooks/derived-id.json: at JSON pointer \"/id\"")
                && err.contains("\"hooks.other\"")
                && err.contains("gives \"hooks.derived-id\"")
                && err.contains("remove /id")
                && err.contains("rename the file"),
            "{err}"
        );
        let err = with_file("scenarios/Hooks/derived_id.json", BARE)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"Hooks.derived_id\", which is not one")
                && err.contains("rename the file"),
            "{err}"
        );
        let err = with_file("scenarios/flat.json", BARE)
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"flat\", which is not one"), "{err}");
    }

    #[test]
    fn surfaces_are_derived_from_the_steps() {
        let suite = with_file("scenarios/hooks/derived-id.json", BARE).unwrap();
        let s = suite.scenario("hooks.derived-id").unwrap();
        assert_eq!(
            s.surfaces,
            [
                "field:toolhooks/invoke.receiverUrl",
                "seam:toolhooks/invoke"
            ]
        );
        assert_eq!(
            suite.expanded["hooks.derived-id"]["surfaces"],
            json!([
                "field:toolhooks/invoke.receiverUrl",
                "seam:toolhooks/invoke"
            ])
        );
        // Stated in any order, the same list loads; a different one names the fix.
        let stated = BARE.replacen(
            '{',
            r#"{"surfaces": ["seam:toolhooks/invoke", "field:toolhooks/invoke.receiverUrl"], "#,
            1,
        );
        with_file("scenarios/hooks/derived-id.json", &stated).unwrap();
        let short = BARE.replacen('{', r#"{"surfaces": ["seam:toolhooks/invoke"], "#, 1);
        let err = with_file("scenarios/hooks/derived-id.json", &short)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("field:toolhooks/invoke.receiverUrl") && err.contains("remove /surfaces"),
            "{err}"
        );
    }

    #[test]
    fn the_digest_leaves_out_what_the_loader_derives() {
        let bare = with_file("scenarios/hooks/derived-id.json", BARE).unwrap();
        let restated = BARE.replacen(
            '{',
            r#"{"id": "hooks.derived-id", "surfaces": ["seam:toolhooks/invoke", "field:toolhooks/invoke.receiverUrl"], "#,
            1,
        );
        let restated = with_file("scenarios/hooks/derived-id.json", &restated).unwrap();
        assert_eq!(bare.digest(), restated.digest());
        // A renamed file is another scenario, an edited step another rule: another digest.
        let renamed = with_file("scenarios/hooks/derived-other.json", BARE).unwrap();
        assert_ne!(bare.digest(), renamed.digest());
        let edited = with_file(
            "scenarios/hooks/derived-id.json",
            &BARE.replacen(r#""toolName": "t""#, r#""toolName": "u""#, 1),
        )
        .unwrap();
        assert_ne!(bare.digest(), edited.digest());
    }
}
