//! Run templates: turn-seam bodies registered as MCP tools (TURN-E4).
//!
//! `POST /conformance/seams/sample/turn/run` with `exposeAsMcpTool: NAME`
//! does not start a run: it checks the whole body as the seam always does,
//! except that `input` must be ABSENT (each MCP `tools/call` supplies it),
//! and registers the body as the template of the MCP tool `NAME` for
//! (the principal's tenant, `principal`). A later registration of the same
//! name for the same principal replaces the earlier one.
//!
//! Templates live in memory only: they are seam-made test fixtures, gone
//! when the process ends (a durable store keeps runs, not templates).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};

use crate::domain::error::ApiError;
use crate::domain::json_body::{kind, parse_object};
use crate::turn::request::{MAX_TOOL_ID_LEN, TurnRunRequest, is_provider_safe_name};

/// The member of a turn-seam body that registers it as an MCP tool.
pub const EXPOSE_FIELD: &str = "exposeAsMcpTool";

/// Most templates one principal may hold; registering another name beyond
/// it is a 400 (replacing an existing name always works).
pub const MAX_TEMPLATES_PER_PRINCIPAL: usize = 64;

/// The `input` used only to check a template body with the seam's parser;
/// never run.
const PLACEHOLDER_INPUT: &str = "(supplied by each MCP tools/call as arguments.input)";

/// One registered template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The MCP tool name (`exposeAsMcpTool`).
    pub name: String,
    /// The principal the template belongs to (the body's `principal`).
    pub principal: String,
    /// That principal's tenant.
    pub tenant: String,
    /// The seam body without `exposeAsMcpTool` and without `input`; a call
    /// adds `input` and starts a run from it exactly like the seam.
    pub body: Map<String, Value>,
}

impl Template {
    /// The turn-seam body of one call: the template with `input`.
    pub fn body_with_input(&self, input: &str) -> Vec<u8> {
        let mut body = self.body.clone();
        body.insert("input".to_owned(), Value::String(input.to_owned()));
        // Serialising a `Value` map cannot fail.
        serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
    }
}

/// A checked registration request (the tenant is decided by the caller).
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    /// `exposeAsMcpTool`.
    pub name: String,
    /// The body's `principal`.
    pub principal: String,
    /// The body without `exposeAsMcpTool` (and without `input`).
    pub body: Map<String, Value>,
}

/// Reads a turn-seam body: `Ok(None)` when it has no `exposeAsMcpTool`
/// (an ordinary run request, parsed by the seam as always), the checked
/// registration when it has, or the 400 naming the member at fault.
pub fn parse_registration(body: &[u8]) -> Result<Option<Registration>, ApiError> {
    let mut map = parse_object(body)?;
    let Some(name) = map.remove(EXPOSE_FIELD) else {
        return Ok(None);
    };
    let name = match name {
        Value::String(name) if is_provider_safe_name(&name) => name,
        Value::String(_) => {
            return Err(ApiError::validation(format!(
                "field `{EXPOSE_FIELD}` must match ^[A-Za-z0-9_-]{{1,{MAX_TOOL_ID_LEN}}}$ (the MCP tool name)"
            )));
        }
        other => {
            return Err(ApiError::validation(format!(
                "field `{EXPOSE_FIELD}` must be a string matching ^[A-Za-z0-9_-]{{1,{MAX_TOOL_ID_LEN}}}$, got {}",
                kind(&other)
            )));
        }
    };
    // TURN-E4: the input comes from each MCP call, never from the template.
    if map.contains_key("input") {
        return Err(ApiError::validation(format!(
            "field `input` must be absent with `{EXPOSE_FIELD}`: each MCP tools/call supplies it as arguments.input"
        )));
    }
    if map.contains_key("inbound") {
        return Err(ApiError::validation(format!(
            "field `inbound` must be absent with `{EXPOSE_FIELD}`: each MCP tools/call supplies the run's input as arguments.input"
        )));
    }
    // Everything else is checked exactly as for a run, so a call can start
    // its run without a 400.
    let mut checked = map.clone();
    checked.insert("input".to_owned(), Value::from(PLACEHOLDER_INPUT));
    let checked = serde_json::to_vec(&Value::Object(checked)).unwrap_or_default();
    let request = TurnRunRequest::parse(&checked)?;
    Ok(Some(Registration {
        name,
        principal: request.principal,
        body: map,
    }))
}

/// (tenant, principal, name).
type Key = (String, String, String);

/// The registered templates of this process.
#[derive(Debug, Default)]
pub struct Templates {
    by_key: Mutex<BTreeMap<Key, Arc<Template>>>,
}

impl Templates {
    /// Locks the map. A poisoned lock only means a thread panicked while
    /// holding it; each operation is one insert or lookup, so the map is
    /// still consistent and is reused as it is.
    fn lock(&self) -> MutexGuard<'_, BTreeMap<Key, Arc<Template>>> {
        self.by_key
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers `registration` for `tenant`, replacing an earlier template
    /// of that name for that principal.
    pub fn register(&self, tenant: &str, registration: Registration) -> Result<(), ApiError> {
        let key = (
            tenant.to_owned(),
            registration.principal.clone(),
            registration.name.clone(),
        );
        let mut map = self.lock();
        let held = map
            .keys()
            .filter(|(t, p, _)| t == tenant && *p == registration.principal)
            .count();
        if !map.contains_key(&key) && held >= MAX_TEMPLATES_PER_PRINCIPAL {
            return Err(ApiError::validation(format!(
                "field `{EXPOSE_FIELD}` would be principal `{}`'s {}th MCP tool; at most {MAX_TEMPLATES_PER_PRINCIPAL} are kept (re-register an existing name to replace it)",
                registration.principal,
                held + 1
            )));
        }
        map.insert(
            key,
            Arc::new(Template {
                name: registration.name,
                principal: registration.principal,
                tenant: tenant.to_owned(),
                body: registration.body,
            }),
        );
        Ok(())
    }

    /// The template `name` of (`tenant`, `principal`), if any.
    pub fn get(&self, tenant: &str, principal: &str, name: &str) -> Option<Arc<Template>> {
        self.lock()
            .get(&(tenant.to_owned(), principal.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Every template of (`tenant`, `principal`), sorted by name (the map
    /// is ordered by (tenant, principal, name)).
    pub fn list(&self, tenant: &str, principal: &str) -> Vec<Arc<Template>> {
        self.lock()
            .iter()
            .filter(|((t, p, _), _)| t == tenant && p == principal)
            .map(|(_, template)| Arc::clone(template))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body() -> Value {
        json!({
            "principal": "alice",
            "provider": {"wire": "openai-chat", "baseUrl": "http://127.0.0.1:9", "model": "tc-1"},
            "clarificationTool": "ask_user",
            "exposeAsMcpTool": "helper"
        })
    }

    fn parse(value: &Value) -> Result<Option<Registration>, ApiError> {
        parse_registration(value.to_string().as_bytes())
    }

    #[test]
    fn a_body_without_the_member_is_an_ordinary_run() {
        let mut plain = body();
        plain.as_object_mut().map(|o| o.remove(EXPOSE_FIELD));
        assert_eq!(parse(&plain).expect("no error"), None);
    }

    #[test]
    fn registrations_are_checked_like_runs_but_without_input() {
        let registration = parse(&body()).expect("valid").expect("a registration");
        assert_eq!(registration.name, "helper");
        assert_eq!(registration.principal, "alice");
        assert!(!registration.body.contains_key(EXPOSE_FIELD));
        assert!(!registration.body.contains_key("input"));
        type Edit = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|b| b["input"] = json!("hi")), "`input`"),
            (
                Box::new(|b| b["inbound"] = json!({"channel": "voice", "transcript": "t"})),
                "`inbound`",
            ),
            (
                Box::new(|b| b[EXPOSE_FIELD] = json!("a b")),
                "`exposeAsMcpTool`",
            ),
            (
                Box::new(|b| b[EXPOSE_FIELD] = json!("")),
                "`exposeAsMcpTool`",
            ),
            (
                Box::new(|b| b[EXPOSE_FIELD] = json!("x".repeat(65))),
                "`exposeAsMcpTool`",
            ),
            (
                Box::new(|b| b[EXPOSE_FIELD] = json!(null)),
                "`exposeAsMcpTool`",
            ),
            (
                Box::new(|b| b[EXPOSE_FIELD] = json!(7)),
                "`exposeAsMcpTool`",
            ),
            (Box::new(|b| b["extra"] = json!(1)), "`extra`"),
            (
                Box::new(|b| b["provider"]["baseUrl"] = json!("http://example.com")),
                "`provider.baseUrl`",
            ),
        ];
        for (edit, field) in cases {
            let mut bad = body();
            edit(&mut bad);
            let err = parse(&bad).expect_err("rejected");
            assert!(err.message.contains(field), "{field}: {}", err.message);
        }
    }

    #[test]
    fn templates_are_per_principal_sorted_and_replaced() {
        let templates = Templates::default();
        let registration = |name: &str, principal: &str| Registration {
            name: name.into(),
            principal: principal.into(),
            body: Map::new(),
        };
        for (name, principal) in [("b", "alice"), ("a", "alice"), ("a", "bob")] {
            templates
                .register("tenant-a", registration(name, principal))
                .expect("registered");
        }
        let names = |principal: &str| -> Vec<String> {
            templates
                .list("tenant-a", principal)
                .iter()
                .map(|t| t.name.clone())
                .collect()
        };
        assert_eq!(names("alice"), ["a", "b"]);
        assert_eq!(names("bob"), ["a"]);
        assert!(templates.list("tenant-b", "alice").is_empty());
        assert!(templates.get("tenant-b", "alice", "a").is_none());
        let mut replaced = registration("a", "alice");
        replaced.body.insert("marker".into(), json!(1));
        templates.register("tenant-a", replaced).expect("replaced");
        assert_eq!(names("alice"), ["a", "b"]);
        let template = templates.get("tenant-a", "alice", "a").expect("kept");
        assert_eq!(template.body.get("marker"), Some(&json!(1)));
        let call: Value = serde_json::from_slice(&template.body_with_input("go")).expect("json");
        assert_eq!(call["input"], "go");
    }

    #[test]
    fn a_principal_holds_a_bounded_number_of_templates() {
        let templates = Templates::default();
        for i in 0..MAX_TEMPLATES_PER_PRINCIPAL {
            templates
                .register(
                    "t",
                    Registration {
                        name: format!("n{i}"),
                        principal: "alice".into(),
                        body: Map::new(),
                    },
                )
                .expect("within the bound");
        }
        let over = Registration {
            name: "one-more".into(),
            principal: "alice".into(),
            body: Map::new(),
        };
        let err = templates.register("t", over).expect_err("over the bound");
        assert!(err.message.contains("`exposeAsMcpTool`"), "{}", err.message);
        let again = Registration {
            name: "n0".into(),
            principal: "alice".into(),
            body: Map::new(),
        };
        assert!(templates.register("t", again).is_ok());
    }
}
