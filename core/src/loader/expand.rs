//! From a scenario file to the scenarios it stands for: `params` first (one scenario per
//! entry, `${name}` substituted), then fragment uses, then the scenario-level `row` that
//! checks naming no row inherit. What comes out is what the loader validates and runs;
//! `toolcert suite --expanded` prints it.

use serde_json::Value;

use super::fragment::Fragments;
use super::params::{self, Subst};
use super::shorthand;
use crate::suite::SuiteError;

/// One expanded scenario document.
#[derive(Debug, Clone)]
pub(crate) struct Expanded {
    /// Where it came from: the file, and for a params entry `[params/N]` after it.
    pub(crate) label: String,
    /// The scenario, with no `params`, `${…}` or fragment use left.
    pub(crate) value: Value,
}

fn reference(file: &str, pointer: String, message: String) -> SuiteError {
    SuiteError::Reference {
        file: file.to_string(),
        pointer,
        message,
    }
}

/// Expand one scenario file.
pub(crate) fn scenario_file(
    file: &str,
    doc: Value,
    fragments: &Fragments,
) -> Result<Vec<Expanded>, SuiteError> {
    let Value::Object(mut body) = doc else {
        // Not an object: let the scenario schema say so.
        return Ok(vec![Expanded {
            label: file.to_string(),
            value: doc,
        }]);
    };
    let entries = match body.remove("params") {
        None => {
            super::derived::set_id(file, &mut body)?;
            vec![None]
        }
        Some(p) => {
            if body.contains_key("id") {
                return Err(reference(
                    file,
                    "/id".into(),
                    "with params, each entry names its scenario id (\"params\": [{\"id\": …}]); remove /id".into(),
                ));
            }
            params::entries(&p)
                .map_err(|(at, m)| reference(file, at, m))?
                .into_iter()
                .map(Some)
                .collect()
        }
    };
    let several = entries.len() > 1 || entries[0].is_some();
    let body = Value::Object(body);
    let mut out = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let label = if several {
            format!("{file} [params/{i}]")
        } else {
            file.to_string()
        };
        let args = entry.clone().unwrap_or_default();
        let mut subst = Subst::new(&args);
        let mut value = subst.value(&body).map_err(|(at, e)| {
            let hint = if several {
                "; parameters are the members of each /params entry"
            } else {
                "; a scenario without /params has none ($${ writes a literal ${)"
            };
            reference(&label, at, format!("{e}{hint}"))
        })?;
        if let Some(entry) = &entry {
            if let Some(unused) = entry
                .keys()
                .find(|k| *k != "id" && !subst.used.contains(*k))
            {
                return Err(reference(
                    file,
                    format!(
                        "/params/{i}/{}",
                        toolcert_base::canonical::pointer_token(unused)
                    ),
                    format!(
                        "parameter \"{unused}\" is used nowhere in the scenario (write ${{{unused}}} where it belongs, or remove it)"
                    ),
                ));
            }
            if let Value::Object(map) = &mut value {
                map.insert("id".into(), entry["id"].clone());
            }
        }
        let mut value = fragments.expand(&label, &value)?;
        shorthand::write_out(&label, &mut value)?;
        inherit_row(&label, &mut value)?;
        out.push(Expanded { label, value });
    }
    Ok(out)
}

/// Give every check without a `row` the scenario's `row` (then drop it, so the expanded
/// scenario is the one written out in full). A check that names its row keeps it; with no
/// scenario `row`, a check without one is left for the schema to reject.
fn inherit_row(file: &str, value: &mut Value) -> Result<(), SuiteError> {
    let Value::Object(map) = value else {
        return Ok(());
    };
    let Some(row) = map.remove("row") else {
        return Ok(());
    };
    if row.as_str().is_none_or(str::is_empty) {
        return Err(reference(
            file,
            "/row".into(),
            "the scenario's row (the one its checks inherit when they name none) is a row id string, e.g. \"row\": \"HOOKS-RL-1\"".into(),
        ));
    }
    if let Some(Value::Array(checks)) = map.get_mut("checks") {
        for check in checks.iter_mut() {
            if let Value::Object(c) = check {
                c.entry("row").or_insert_with(|| row.clone());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use crate::loader::load::embedded_with_file as with_file;

    /// Two scenarios from one file: ids from the entries, `${…}` substituted (typed when whole).
    const TWINS: &str = r#"{"params": [{"id": "x.p-a", "code": 304, "what": "a"}, {"id": "x.p-b", "code": 200, "what": "b"}],
        "title": "t ${what}", "rows": ["DISC-7"], "gate": null, "kills": [], "steps": [],
        "checks": [{"id": "c", "row": "DISC-7", "says": "s", "at": "/discovery", "expect": {"equals": "${code}"}}]}"#;

    #[test]
    fn params_make_one_scenario_per_entry() {
        let suite = with_file("scenarios/test/p.json", TWINS).unwrap();
        let b = suite.scenario("x.p-b").unwrap();
        assert_eq!(b.title, "t b");
        assert!(b.file.starts_with("scenarios/test/p.json [params/1]"));
        assert_eq!(
            suite.expanded["x.p-a"]["checks"][0]["expect"]["equals"],
            304
        );
    }

    #[test]
    fn checks_without_a_row_inherit_the_scenario_row() {
        let text = TWINS.replacen(r#""row": "DISC-7", "#, "", 1).replacen(
            r#""steps": []"#,
            r#""row": "DISC-7", "steps": []"#,
            1,
        );
        let suite = with_file("scenarios/test/p.json", &text).unwrap();
        let a = &suite.expanded["x.p-a"];
        assert_eq!(a["checks"][0]["row"], "DISC-7");
        assert!(a.get("row").is_none(), "{a}");
        // A check naming its row keeps it: the loader then says DISC-1 is not in /rows.
        let e = err(&text.replacen(r#""id": "c","#, r#""id": "c", "row": "DISC-1","#, 1));
        assert!(e.contains("DISC-1"), "{e}");
        let e = err(&text.replacen(r#""row": "DISC-7", "steps""#, r#""row": 7, "steps""#, 1));
        assert!(e.contains("\"/row\"") && e.contains("row id string"), "{e}");
        // Without a scenario row, a check without one is a schema error as before.
        assert!(
            with_file(
                "scenarios/test/p.json",
                &TWINS.replacen(r#""row": "DISC-7", "#, "", 1)
            )
            .is_err()
        );
    }

    fn err(text: &str) -> String {
        with_file("scenarios/test/p.json", text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn params_errors_name_file_pointer_and_fix() {
        let e = err(&TWINS.replacen("t ${what}", "t ${wat}", 1));
        assert!(
            e.starts_with("scenarios/test/p.json [params/0]: at JSON pointer \"/title\"")
                && e.contains("${wat}")
                && e.contains("code, id, what"),
            "{e}"
        );
        let e = err(&TWINS.replacen("t ${what}", "t", 1));
        assert!(
            e.contains("/params/0/what") && e.contains("used nowhere"),
            "{e}"
        );
        let e = err(&TWINS.replacen(r#""title""#, r#""id": "x.y", "title""#, 1));
        assert!(e.contains("\"/id\"") && e.contains("remove /id"), "{e}");
        let e = err(&TWINS.replacen("x.p-b", "x.p-a", 1));
        assert!(e.contains("x.p-a") && e.contains("already used"), "{e}");
        let e = err(&TWINS.replacen(r#", "what": "b""#, "", 1));
        assert!(e.contains("/params/1") && e.contains("\"what\""), "{e}");
    }

    #[test]
    fn a_scenario_without_params_has_no_placeholders_and_uses_fragments() {
        let text = TWINS
            .replacen(r#""params": [{"id": "x.p-a", "code": 304, "what": "a"}, {"id": "x.p-b", "code": 200, "what": "b"}],"#, r#""id": "test.p","#, 1)
            .replacen(r#""${code}""#, "304", 1);
        let e = err(&text);
        assert!(
            e.contains("${what}") && e.contains("(in scope: none)"),
            "{e}"
        );
        let text = text.replacen("t ${what}", "t $${what}", 1).replacen(
            r#""steps": []"#,
            r#""steps": [{"$fragment": "turn/nope"}]"#,
            1,
        );
        let e = err(&text);
        assert!(
            e.contains("\"/steps/0/$fragment\"") && e.contains("turn/provider"),
            "{e}"
        );
        let ok = text.replacen(r#"[{"$fragment": "turn/nope"}]"#, "[]", 1);
        let suite = with_file("scenarios/test/p.json", &ok).unwrap();
        assert_eq!(suite.scenario("test.p").unwrap().title, "t ${what}");
    }
}
