//! The host profile: base URL, and per role a bearer token and the principal id it acts as.
//!
//! Roles are toolcert's names for the principals a scenario needs:
//! `operator` (calls seams; authenticated, non-anonymous), `actor` (holds the granted scope),
//! `peer` (a second principal holding it too), `lacking` (lacks it), `unevaluable` (a principal
//! whose scopes the host cannot resolve), `foreign` (a principal of another tenant).
//! `scopes.granted` names the scope `actor` and `peer` hold and `lacking` does not. A scenario that needs a role the profile lacks is `blocked`.
//!
//! A profile file is validated against `schemas/profile.schema.json` (embedded at build time)
//! before it is deserialized, so a wrong value is reported at its JSON pointer; [`ROLES`] and
//! that schema name the same roles, and a test keeps the schema and [`HostProfile`] in step.

use std::collections::BTreeMap;
use std::path::Path;
use toolcert_base::canonical::pointer_token;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Every role a profile or `--token` may name, in the order the docs list them.
pub const ROLES: [&str; 6] = [
    "operator",
    "actor",
    "peer",
    "lacking",
    "unevaluable",
    "foreign",
];

/// The JSON Schema of a profile file, among the suite files embedded at build time.
pub const PROFILE_SCHEMA: &str = "schemas/profile.schema.json";

/// One role: the token toolcert sends and the principal id the host knows it by.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleProfile {
    /// Bearer token (never written to reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Principal id (RFC 0048) as the host names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// A host profile file (`--profile FILE`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostProfile {
    /// Base URL, e.g. `http://127.0.0.1:8080` (the `--host` flag wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Roles by name.
    #[serde(default)]
    pub roles: BTreeMap<String, RoleProfile>,
    /// Scope names by purpose (`granted`).
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
    /// Model-provider wire formats the host can be pointed at (default: both).
    #[serde(default = "all_provider_wires")]
    pub provider_wires: Vec<String>,
    /// What the host cannot advertise but a row needs, stated by its operator (templates read
    /// them as `{{facts.NAME}}`; a row needing an absent one is `blocked`): `recordLimitBytes`
    /// (TURN-D10), `clarificationTool` (TURN-E1), `mcpServerPath` (TURN-E4: the path of the
    /// host's MCP server mount, which the `mcp` facet cannot carry), `rateLimitCapacity`
    /// (HOOKS-RL-1: how many calls a fresh `(principal, tool)` bucket admits).
    #[serde(default)]
    pub facts: BTreeMap<String, Value>,
    /// Fixture ids mapped to the host's own workflow ids (`"conformance-effect":
    /// "my-effect-flow"`): a mapped fixture is used even when discovery does not list it.
    #[serde(default)]
    pub fixtures: BTreeMap<String, String>,
}

/// What is wrong with a token, if anything: a bearer token is one header value, so a control
/// character (a newline would end the header, a DEL hides in it) or a token only of spaces is
/// refused. The message never quotes the token.
pub fn token_problem(token: &str) -> Option<String> {
    if let Some(c) = token.chars().find(|c| c.is_control()) {
        return Some(format!(
            "the token holds the control character U+{:04X}; a bearer token is one line of visible characters",
            u32::from(c)
        ));
    }
    if token.trim().is_empty() {
        return Some("the token is empty or only spaces".to_string());
    }
    None
}

/// Every provider wire format toolcert's mock provider speaks.
pub fn all_provider_wires() -> Vec<String> {
    vec!["openai-chat".into(), "anthropic-messages".into()]
}

/// A profile file or flag that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The file could not be read. The cause is part of the message and deliberately not a
    /// `source`: `{:#}` would print it a second time.
    #[error("host profile {file}: cannot read: {cause}")]
    Io {
        /// The file.
        file: String,
        /// Cause.
        cause: std::io::Error,
    },
    /// The file is not JSON, or repeats an object key.
    #[error("host profile {file}: not valid JSON: {message}")]
    Json {
        /// The file.
        file: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// The file does not match `schemas/profile.schema.json`.
    #[error(
        "host profile {file}: at JSON pointer \"{pointer}\": {message} (schema {PROFILE_SCHEMA})"
    )]
    Invalid {
        /// The file.
        file: String,
        /// JSON pointer of the offending value (`""` is the whole document).
        pointer: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A `--token` flag is not `ROLE=TOKEN` (the token itself is never echoed).
    #[error("--token {0}: expected ROLE=TOKEN, e.g. --token operator=abc123")]
    TokenFlag(String),
    /// A `--token` flag names a role toolcert does not know.
    #[error("--token {role}=…: unknown role {role:?}; the roles are {}", ROLES.join(", "))]
    UnknownRole {
        /// The role named.
        role: String,
    },
}

impl Default for HostProfile {
    fn default() -> Self {
        HostProfile {
            base_url: None,
            roles: BTreeMap::new(),
            scopes: BTreeMap::new(),
            provider_wires: all_provider_wires(),
            facts: BTreeMap::new(),
            fixtures: BTreeMap::new(),
        }
    }
}

impl HostProfile {
    /// The profile of the embedded reference host (its built-in principals).
    pub fn reference() -> HostProfile {
        let role = |token: &str, principal: &str| RoleProfile {
            token: Some(token.to_string()),
            principal: Some(principal.to_string()),
        };
        HostProfile {
            base_url: None,
            roles: BTreeMap::from([
                (
                    "operator".into(),
                    role("refhost-operator-token", "toolcert-operator"),
                ),
                ("actor".into(), role("refhost-alice-token", "alice")),
                ("peer".into(), role("refhost-bob-token", "bob")),
                ("lacking".into(), role("refhost-carol-token", "carol")),
                ("unevaluable".into(), role("refhost-dave-token", "dave")),
                ("foreign".into(), role("refhost-erin-token", "erin")),
            ]),
            scopes: BTreeMap::from([("granted".into(), "tools:write".into())]),
            provider_wires: all_provider_wires(),
            facts: BTreeMap::from([
                ("recordLimitBytes".into(), json!(65536)),
                ("clarificationTool".into(), json!("ask_user")),
                ("mcpServerPath".into(), json!("/mcp")),
                ("rateLimitCapacity".into(), json!(5)),
            ]),
            fixtures: BTreeMap::new(),
        }
    }

    /// Load a profile file: strict JSON (duplicate keys rejected), validated against
    /// `schemas/profile.schema.json`, then deserialized.
    pub fn load(path: &Path) -> Result<HostProfile, ProfileError> {
        let file = path.display().to_string();
        let text = crate::input::read_to_string(path, crate::input::MAX_PROFILE_BYTES).map_err(
            |cause| ProfileError::Io {
                file: file.clone(),
                cause,
            },
        )?;
        let value =
            toolcert_base::canonical::parse_strict(&text).map_err(|e| ProfileError::Json {
                file: file.clone(),
                message: e.to_string(),
            })?;
        HostProfile::from_value(&file, value)
    }

    /// Validate and deserialize a parsed profile (`file` names it in errors).
    pub fn from_value(file: &str, value: Value) -> Result<HostProfile, ProfileError> {
        let invalid = |pointer: String, message: String| ProfileError::Invalid {
            file: file.to_string(),
            pointer,
            message,
        };
        // Unknown role names first, with the list of known ones: the schema's own message
        // ("Additional properties are not allowed") would not say what is allowed.
        if let Some(roles) = value.get("roles").and_then(Value::as_object)
            && let Some(role) = roles.keys().find(|r| !ROLES.contains(&r.as_str()))
        {
            return Err(invalid(
                format!("/roles/{}", pointer_token(role)),
                format!("unknown role {role:?}; the roles are {}", ROLES.join(", ")),
            ));
        }
        if let Some(v) = profile_schema()
            .violations(PROFILE_SCHEMA, &value)
            .ok()
            .and_then(|v| v.into_iter().next())
        {
            return Err(invalid(v.pointer, v.message));
        }
        let profile: HostProfile = serde_json::from_value(value).map_err(|e| {
            invalid(
                String::new(),
                format!(
                    "{e} (the profile schema and the HostProfile type disagree: a toolcert bug)"
                ),
            )
        })?;
        for (role, r) in &profile.roles {
            if let Some(why) = r.token.as_deref().and_then(token_problem) {
                return Err(invalid(
                    format!("/roles/{}/token", pointer_token(role)),
                    why,
                ));
            }
        }
        Ok(profile)
    }

    /// Apply a `--token ROLE=TOKEN` flag.
    pub fn set_token_flag(&mut self, flag: &str) -> Result<(), ProfileError> {
        let (role, token) = flag
            .split_once('=')
            .filter(|(r, t)| !r.is_empty() && !t.is_empty())
            .ok_or_else(|| {
                // Echo the role, never the token.
                ProfileError::TokenFlag(match flag.split_once('=') {
                    Some((role, _)) => format!("{role:?}=…"),
                    // No `=`: the value may be a token given without its role.
                    None => "(a value without `=`)".to_string(),
                })
            })?;
        if !ROLES.contains(&role) {
            return Err(ProfileError::UnknownRole {
                role: role.to_string(),
            });
        }
        if let Some(why) = token_problem(token) {
            return Err(ProfileError::TokenFlag(format!("{role:?}=…: {why}")));
        }
        self.roles.entry(role.to_string()).or_default().token = Some(token.to_string());
        Ok(())
    }

    /// The token of a role, if configured.
    pub fn token(&self, role: &str) -> Option<&str> {
        self.roles.get(role).and_then(|r| r.token.as_deref())
    }

    /// Every token, for redaction.
    pub fn secrets(&self) -> Vec<String> {
        self.roles
            .values()
            .filter_map(|r| r.token.clone())
            .collect()
    }

    /// What scenarios may template: `roles.<role>.principal` and `scopes.<name>` (no tokens).
    pub fn template_view(&self) -> (Value, Value) {
        let roles = self
            .roles
            .iter()
            .map(|(name, r)| {
                let mut v = json!({});
                if let Some(p) = &r.principal {
                    v["principal"] = json!(p);
                }
                (name.clone(), v)
            })
            .collect::<serde_json::Map<_, _>>();
        (Value::Object(roles), json!(self.scopes))
    }
}

/// The embedded profile schema, compiled once.
fn profile_schema() -> &'static crate::suite::SchemaSet {
    static SCHEMA: std::sync::OnceLock<crate::suite::SchemaSet> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| {
        let text = crate::suite::embedded::FILES
            .iter()
            .find(|(path, _)| *path == PROFILE_SCHEMA)
            .map(|(_, text)| *text)
            .expect("schemas/profile.schema.json is embedded by build.rs");
        let schema: Value = serde_json::from_str(text).expect("the profile schema is JSON");
        let mut set = crate::suite::SchemaSet::default();
        set.insert(PROFILE_SCHEMA, &schema)
            .expect("the profile schema compiles");
        set
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_flags_parse_and_reject_garbage() {
        let mut p = HostProfile::default();
        p.set_token_flag("operator=abc=def").unwrap();
        assert_eq!(p.token("operator"), Some("abc=def"));
        assert!(p.set_token_flag("operator").is_err());
        assert!(p.set_token_flag("=x").is_err());
    }

    #[test]
    fn template_view_never_carries_tokens() {
        let (roles, scopes) = HostProfile::reference().template_view();
        assert_eq!(roles["actor"]["principal"], "alice");
        assert!(!roles.to_string().contains("token"));
        assert_eq!(scopes["granted"], "tools:write");
    }

    #[test]
    fn bad_profile_file_names_the_file_and_shape() {
        let dir = std::env::temp_dir().join(format!("toolcert-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("p.json");
        std::fs::write(&f, r#"{"roles": {"actor": {"tokn": "x"}}}"#).unwrap();
        let err = HostProfile::load(&f).unwrap_err().to_string();
        assert!(err.contains("p.json") && err.contains("tokn"), "{err}");
        assert!(err.contains("\"/roles/actor\""), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Each wrong value is reported at its JSON pointer, saying what was expected there.
    #[test]
    fn a_wrong_value_is_reported_at_its_json_pointer() {
        let cases: &[(&str, &str, &str)] = &[
            (r#"[]"#, "", "\"object\""),
            (r#"{"bogus": 1}"#, "", "'bogus' was unexpected"),
            (r#"{"roles": []}"#, "/roles", "\"object\""),
            (r#"{"roles": {"actor": []}}"#, "/roles/actor", "\"object\""),
            (
                r#"{"roles": {"actor": {"token": 5}}}"#,
                "/roles/actor/token",
                "\"string\"",
            ),
            (
                r#"{"roles": {"actor": {"token": ""}}}"#,
                "/roles/actor/token",
                "shorter",
            ),
            (
                r#"{"roles": {"peer": {"principal": null}}}"#,
                "/roles/peer/principal",
                "\"string\"",
            ),
            (
                r#"{"roles": {"wizard": {"token": "x"}}}"#,
                "/roles/wizard",
                "unknown role \"wizard\"; the roles are operator, actor, peer, lacking, unevaluable, foreign",
            ),
            (
                r#"{"roles": {"a/b~c": {}}}"#,
                "/roles/a~1b~0c",
                "unknown role",
            ),
            (r#"{"baseUrl": "ftp://x"}"#, "/baseUrl", "does not match"),
            (r#"{"baseUrl": 8080}"#, "/baseUrl", "\"string\""),
            (
                r#"{"scopes": {"granted": 1}}"#,
                "/scopes/granted",
                "\"string\"",
            ),
            (
                r#"{"scopes": {"grantd": "x"}}"#,
                "/scopes",
                "'grantd' was unexpected",
            ),
            (
                r#"{"providerWires": "openai-chat"}"#,
                "/providerWires",
                "\"array\"",
            ),
            (
                r#"{"providerWires": ["gopher"]}"#,
                "/providerWires/0",
                "openai-chat",
            ),
            (r#"{"facts": []}"#, "/facts", "\"object\""),
            (
                r#"{"facts": {"rateLimitCapacity": "5"}}"#,
                "/facts/rateLimitCapacity",
                "\"integer\"",
            ),
            (
                r#"{"facts": {"recordLimitBytes": 0}}"#,
                "/facts/recordLimitBytes",
                "minimum",
            ),
            (
                r#"{"facts": {"mcpServerPath": "mcp"}}"#,
                "/facts/mcpServerPath",
                "does not match",
            ),
            (
                r#"{"fixtures": {"conformance-effect": 3}}"#,
                "/fixtures/conformance-effect",
                "\"string\"",
            ),
        ];
        for (text, pointer, needle) in cases {
            let value: Value = serde_json::from_str(text).unwrap();
            let err = HostProfile::from_value("p.json", value).unwrap_err();
            let ProfileError::Invalid {
                pointer: at,
                message,
                ..
            } = &err
            else {
                panic!("{text}: {err}");
            };
            assert_eq!(at, pointer, "{text}: {err}");
            assert!(
                message.contains(needle),
                "{text}: {err} should say {needle}"
            );
            let shown = err.to_string();
            assert!(
                shown.starts_with("host profile p.json: at JSON pointer")
                    && shown.contains(PROFILE_SCHEMA),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_missing_profile_names_the_file_and_the_os_error_once() {
        let err = HostProfile::load(Path::new("/nonexistent/profile.json")).unwrap_err();
        assert!(std::error::Error::source(&err).is_none());
        let chain = format!("{:#}", anyhow::Error::from(err));
        assert!(chain.contains("/nonexistent/profile.json"), "{chain}");
        assert_eq!(chain.matches("os error").count(), 1, "{chain}");
    }

    #[test]
    fn an_unknown_role_in_a_token_flag_lists_the_roles_and_hides_the_token() {
        let mut p = HostProfile::default();
        let err = p.set_token_flag("wizard=s3cret").unwrap_err().to_string();
        assert!(
            err.contains("\"wizard\"")
                && err.contains(&ROLES.join(", "))
                && !err.contains("s3cret"),
            "{err}"
        );
        let err = p.set_token_flag("=s3cret").unwrap_err().to_string();
        assert!(
            err.contains("ROLE=TOKEN") && !err.contains("s3cret"),
            "{err}"
        );
        for role in ROLES {
            p.set_token_flag(&format!("{role}=t")).unwrap();
        }
        assert_eq!(p.roles.len(), ROLES.len());
    }

    /// The schema and the Rust type agree: every profile toolcert builds validates, the schema
    /// names exactly the fields the type serializes, and its roles are [`ROLES`].
    #[test]
    fn the_profile_schema_and_the_type_agree() {
        let mut full = HostProfile::reference();
        full.base_url = Some("https://host.example:8443/base".into());
        full.fixtures
            .insert("conformance-effect".into(), "my-effect-flow".into());
        for profile in [
            HostProfile::default(),
            HostProfile::reference(),
            full.clone(),
        ] {
            let value = serde_json::to_value(&profile).unwrap();
            let violations = profile_schema().violations(PROFILE_SCHEMA, &value).unwrap();
            assert!(violations.is_empty(), "{violations:?}");
            assert_eq!(HostProfile::from_value("built", value).unwrap(), profile);
        }
        let schema: Value = serde_json::from_str(
            crate::suite::embedded::FILES
                .iter()
                .find(|(p, _)| *p == PROFILE_SCHEMA)
                .unwrap()
                .1,
        )
        .unwrap();
        let keys = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let value = serde_json::to_value(&full).unwrap();
        assert_eq!(keys(&schema["properties"]), keys(&value));
        let mut roles: Vec<String> = ROLES.iter().map(|r| r.to_string()).collect();
        roles.sort();
        assert_eq!(keys(&schema["properties"]["roles"]["properties"]), roles);
        assert_eq!(
            keys(&schema["$defs"]["role"]["properties"]),
            keys(&value["roles"]["actor"])
        );
        assert_eq!(
            keys(&schema["properties"]["facts"]["properties"]),
            keys(&value["facts"])
        );
        assert_eq!(
            keys(&schema["properties"]["scopes"]["properties"]),
            keys(&value["scopes"])
        );
        let wires: Vec<Value> = all_provider_wires().into_iter().map(Value::from).collect();
        assert_eq!(
            schema["properties"]["providerWires"]["items"]["enum"],
            Value::from(wires)
        );
    }
}

#[cfg(test)]
mod shipped_profile {
    use super::*;

    #[test]
    fn the_documented_reference_profile_matches_the_built_in_one() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference-host.profile.json");
        let mut shipped = HostProfile::load(&path).unwrap();
        assert_eq!(
            shipped.base_url.take().as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(shipped, HostProfile::reference());
    }

    #[test]
    fn the_documented_reference_profile_validates_against_the_schema() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference-host.profile.json");
        let value: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let violations = profile_schema().violations(PROFILE_SCHEMA, &value).unwrap();
        assert!(violations.is_empty(), "{violations:?}");
    }
}
