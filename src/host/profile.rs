//! The host profile: base URL, and per role a bearer token and the principal id it acts as.
//!
//! Roles are toolcert's names for the principals a scenario needs:
//! `operator` (calls seams; authenticated, non-anonymous), `actor` (holds the granted scope),
//! `peer` (a second principal holding it too), `lacking` (lacks it), `unevaluable` (a principal
//! whose scopes the host cannot resolve), `foreign` (a principal of another tenant).
//! `scopes.granted` names the scope `actor` and `peer` hold and `lacking` does not. A scenario that needs a role the profile lacks is `blocked`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One role: the token toolcert sends and the principal id the host knows it by.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleProfile {
    /// Bearer token (never written to reports).
    #[serde(default)]
    pub token: Option<String>,
    /// Principal id (RFC 0048) as the host names it.
    #[serde(default)]
    pub principal: Option<String>,
}

/// A host profile file (`--profile FILE`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostProfile {
    /// Base URL, e.g. `http://127.0.0.1:8080` (the `--host` flag wins).
    #[serde(default)]
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

/// Every provider wire format toolcert's mock provider speaks.
pub fn all_provider_wires() -> Vec<String> {
    vec!["openai-chat".into(), "anthropic-messages".into()]
}

/// A profile file or flag that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The file could not be read.
    #[error("host profile {file}: cannot read: {source}")]
    Io {
        /// The file.
        file: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is not a valid profile.
    #[error(
        "host profile {file}: {message} (expected {{\"baseUrl\"?, \"roles\": {{ROLE: {{\"token\"?, \"principal\"?}}}}, \"scopes\": {{\"granted\": SCOPE}}, \"providerWires\"?: [\"openai-chat\", \"anthropic-messages\"], \"facts\"?: {{NAME: VALUE}}, \"fixtures\"?: {{FIXTURE: WORKFLOW}}}})"
    )]
    Invalid {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A `--token` flag is not `ROLE=TOKEN`.
    #[error("--token {0:?}: expected ROLE=TOKEN, e.g. --token operator=abc123")]
    TokenFlag(String),
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

    /// Load a profile file (JSON; duplicate keys rejected).
    pub fn load(path: &Path) -> Result<HostProfile, ProfileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            file: file.clone(),
            source,
        })?;
        let value = crate::canonical::parse_strict(&text).map_err(|e| ProfileError::Invalid {
            file: file.clone(),
            message: e.to_string(),
        })?;
        serde_json::from_value(value).map_err(|e| ProfileError::Invalid {
            file,
            message: e.to_string(),
        })
    }

    /// Apply a `--token ROLE=TOKEN` flag.
    pub fn set_token_flag(&mut self, flag: &str) -> Result<(), ProfileError> {
        let (role, token) = flag
            .split_once('=')
            .filter(|(r, t)| !r.is_empty() && !t.is_empty())
            .ok_or_else(|| ProfileError::TokenFlag(flag.to_string()))?;
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
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[cfg(test)]
mod shipped_profile {
    use super::*;

    #[test]
    fn the_documented_reference_profile_matches_the_built_in_one() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference-host.profile.json");
        let mut shipped = HostProfile::load(&path).unwrap();
        assert_eq!(
            shipped.base_url.take().as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(shipped, HostProfile::reference());
    }
}
