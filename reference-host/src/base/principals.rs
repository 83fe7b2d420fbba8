//! Principals: who may call the host (bearer tokens) and what scopes they hold.
//!
//! A principal's scopes are always resolved by the host (never taken from a
//! request). A principal whose resolver is [`ScopeResolver::Unavailable`]
//! models a scope-resolver outage: resolving its scopes returns an error, and
//! callers must fail closed on it (RFC 0064 §C).

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// How a principal's scopes are resolved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeResolver {
    /// The scopes listed on the principal are returned as they are.
    #[default]
    Static,
    /// Resolution fails with a resolver error (the "scope resolver error" case).
    Unavailable,
}

/// A caller or tool-call subject known to the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Principal {
    /// Stable principal id (e.g. `alice`).
    pub id: String,
    /// Bearer token that authenticates as this principal; `None` means the
    /// principal can be named as a tool-call subject but cannot log in.
    #[serde(default)]
    pub token: Option<String>,
    /// The scopes the principal holds (when its resolver is static).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// How the scopes are resolved.
    #[serde(default)]
    pub resolver: ScopeResolver,
    /// The tenant the principal belongs to. Runs, effect records and
    /// Layer-1 idempotency records are scoped by it: another tenant's run is
    /// indistinguishable from an unknown one (404), and an Idempotency-Key
    /// is scoped by `(authenticated tenant, endpoint, key)` (v2 idempotency
    /// §Layer 1). Defaults to [`DEFAULT_TENANT`] so older principals files
    /// keep working.
    #[serde(default = "default_tenant")]
    pub tenant: String,
}

/// The tenant of every principal that does not name one (and of every
/// built-in principal except `erin`).
pub const DEFAULT_TENANT: &str = "tenant-a";

/// The tenant of the built-in principal `erin`, the only one outside
/// [`DEFAULT_TENANT`] (it exists to show tenant isolation).
pub const SECOND_TENANT: &str = "tenant-b";

/// Serde default of [`Principal::tenant`].
fn default_tenant() -> String {
    DEFAULT_TENANT.to_owned()
}

/// The scope resolver failed; the principal's scopes are unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the scope resolver for principal `{principal}` is unavailable")]
pub struct ScopeResolutionError {
    /// The principal whose scopes could not be resolved.
    pub principal: String,
}

impl Principal {
    /// Builds a principal with a static resolver in [`DEFAULT_TENANT`].
    pub fn new(id: &str, token: Option<&str>, scopes: &[&str]) -> Self {
        Self {
            id: id.to_owned(),
            token: token.map(str::to_owned),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            resolver: ScopeResolver::Static,
            tenant: default_tenant(),
        }
    }

    /// The same principal in `tenant`.
    pub fn in_tenant(mut self, tenant: &str) -> Self {
        tenant.clone_into(&mut self.tenant);
        self
    }

    /// Resolves this principal's scopes through its resolver.
    pub fn resolve_scopes(&self) -> Result<&[String], ScopeResolutionError> {
        match self.resolver {
            ScopeResolver::Static => Ok(&self.scopes),
            ScopeResolver::Unavailable => Err(ScopeResolutionError {
                principal: self.id.clone(),
            }),
        }
    }
}

/// The built-in principals (toolcert's default profile relies on these exact values).
pub fn builtin() -> Vec<Principal> {
    vec![
        Principal::new(
            "toolcert-operator",
            Some("refhost-operator-token"),
            &["conformance:seams", "runs:read"],
        ),
        Principal::new(
            "alice",
            Some("refhost-alice-token"),
            &["tools:read", "tools:write", "runs:read", "runs:write"],
        ),
        Principal::new(
            "bob",
            Some("refhost-bob-token"),
            &["tools:read", "tools:write", "runs:read", "runs:write"],
        ),
        Principal::new(
            "carol",
            Some("refhost-carol-token"),
            &["tools:read", "runs:read", "runs:write"],
        ),
        Principal {
            resolver: ScopeResolver::Unavailable,
            ..Principal::new("dave", Some("refhost-dave-token"), &[])
        },
        // The one principal of a second tenant: alice's scopes, none of
        // alice's runs (tenant isolation is observable through it).
        Principal::new(
            "erin",
            Some("refhost-erin-token"),
            &["tools:read", "tools:write", "runs:read", "runs:write"],
        )
        .in_tenant(SECOND_TENANT),
    ]
}

/// Why a principals list was rejected.
#[derive(Debug, thiserror::Error)]
pub enum PrincipalsError {
    /// The file could not be read.
    #[error("cannot read principals file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The JSON is malformed or does not have the principals shape.
    #[error("{origin}: not a JSON array of principals: {source}")]
    Parse {
        /// Where the JSON came from (a file path or `<inline>`).
        origin: String,
        /// The parser's message (with line and column).
        source: serde_json::Error,
    },
    /// A principal is invalid or conflicts with another.
    #[error("{origin}: principal #{index}: {problem}")]
    Invalid {
        /// Where the JSON came from.
        origin: String,
        /// Zero-based index in the array.
        index: usize,
        /// What is wrong.
        problem: String,
    },
}

/// Parses a JSON array of principals and checks it is usable.
///
/// `origin` names the source in error messages (e.g. the file path).
pub fn parse_principals(json: &str, origin: &str) -> Result<Vec<Principal>, PrincipalsError> {
    let principals: Vec<Principal> =
        serde_json::from_str(json).map_err(|source| PrincipalsError::Parse {
            origin: origin.to_owned(),
            source,
        })?;
    validate(&principals, origin)?;
    Ok(principals)
}

/// Reads and parses a principals file (see [`parse_principals`]).
pub fn load_principals_file(path: &Path) -> Result<Vec<Principal>, PrincipalsError> {
    let shown = path.display().to_string();
    let json = std::fs::read_to_string(path).map_err(|source| PrincipalsError::Read {
        path: shown.clone(),
        source,
    })?;
    parse_principals(&json, &shown)
}

/// Rejects empty ids, duplicate ids and shared or empty tokens: each would make
/// authentication or attribution ambiguous.
fn validate(principals: &[Principal], origin: &str) -> Result<(), PrincipalsError> {
    let invalid = |index: usize, problem: String| PrincipalsError::Invalid {
        origin: origin.to_owned(),
        index,
        problem,
    };
    let mut ids = HashMap::new();
    let mut tokens = HashMap::new();
    for (index, principal) in principals.iter().enumerate() {
        if principal.id.trim().is_empty() {
            return Err(invalid(index, "`id` must be a non-empty string".into()));
        }
        if principal.tenant.trim().is_empty() {
            // An empty tenant would merge with nothing and scope nothing.
            return Err(invalid(index, "`tenant` must be a non-empty string".into()));
        }
        if let Some(first) = ids.insert(principal.id.as_str(), index) {
            return Err(invalid(
                index,
                format!("duplicate id `{}` (first used by #{first})", principal.id),
            ));
        }
        if let Some(token) = &principal.token {
            if token.is_empty() {
                return Err(invalid(
                    index,
                    "`token` must not be empty; omit it or use null".into(),
                ));
            }
            // The token itself is not echoed: it is a credential.
            if let Some(first) = tokens.insert(token.as_str(), index) {
                return Err(invalid(
                    index,
                    format!("its token is already used by principal #{first}"),
                ));
            }
        }
    }
    Ok(())
}

/// Lookup of principals by id and by bearer token.
#[derive(Debug, Clone, Default)]
pub struct PrincipalDirectory {
    by_id: HashMap<String, Principal>,
    id_by_token: HashMap<String, String>,
}

impl PrincipalDirectory {
    /// Builds the directory, rejecting ambiguous lists (see [`parse_principals`]).
    pub fn new(principals: Vec<Principal>) -> Result<Self, PrincipalsError> {
        validate(&principals, "<config>")?;
        let mut directory = Self::default();
        for principal in principals {
            if let Some(token) = &principal.token {
                directory
                    .id_by_token
                    .insert(token.clone(), principal.id.clone());
            }
            directory.by_id.insert(principal.id.clone(), principal);
        }
        Ok(directory)
    }

    /// The principal with this id, if any.
    pub fn get(&self, id: &str) -> Option<&Principal> {
        self.by_id.get(id)
    }

    /// The tenant of the principal with this id, if it is known.
    pub fn tenant_of(&self, id: &str) -> Option<&str> {
        self.by_id
            .get(id)
            .map(|principal| principal.tenant.as_str())
    }

    /// The principal a bearer token authenticates, if any.
    pub fn by_token(&self, token: &str) -> Option<&Principal> {
        self.id_by_token
            .get(token)
            .and_then(|id| self.by_id.get(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_have_the_documented_values() {
        let all = builtin();
        let dir = PrincipalDirectory::new(all).expect("builtins are valid");
        let op = dir.by_token("refhost-operator-token").expect("operator");
        assert_eq!(op.id, "toolcert-operator");
        assert_eq!(op.scopes, ["conformance:seams", "runs:read"]);
        let carol = dir.get("carol").expect("carol");
        assert!(!carol.scopes.iter().any(|s| s == "tools:write"));
        let dave = dir.get("dave").expect("dave");
        assert_eq!(dave.resolver, ScopeResolver::Unavailable);
        assert!(dave.resolve_scopes().is_err());
        assert!(dir.get("alice").expect("alice").resolve_scopes().is_ok());
        let erin = dir.by_token("refhost-erin-token").expect("erin");
        assert_eq!(erin.tenant, SECOND_TENANT);
        assert_eq!(erin.scopes, dir.get("alice").expect("alice").scopes);
        for id in ["toolcert-operator", "alice", "bob", "carol", "dave"] {
            assert_eq!(dir.tenant_of(id), Some(DEFAULT_TENANT), "{id}");
        }
        for id in ["alice", "bob", "carol", "erin"] {
            let scopes = &dir.get(id).expect("builtin").scopes;
            assert!(scopes.iter().any(|s| s == "runs:write"), "{id}");
        }
        assert!(dir.get("dave").expect("dave").scopes.is_empty());
        assert_eq!(dir.tenant_of("mallory"), None);
    }

    #[test]
    fn tenant_defaults_and_can_be_given() {
        let json = r#"[{"id": "a"}, {"id": "b", "tenant": "tenant-z"}]"#;
        let principals = parse_principals(json, "p.json").expect("valid");
        assert_eq!(principals[0].tenant, DEFAULT_TENANT);
        assert_eq!(principals[1].tenant, "tenant-z");
    }

    #[test]
    fn parses_the_documented_shape_with_defaults() {
        let json = r#"[
            {"id": "alice", "token": "t1", "scopes": ["tools:read"], "resolver": "static"},
            {"id": "zed", "resolver": "unavailable"}
        ]"#;
        let principals = parse_principals(json, "p.json").expect("valid");
        assert_eq!(principals[0].resolver, ScopeResolver::Static);
        assert_eq!(principals[1].token, None);
        assert!(principals[1].scopes.is_empty());
        assert_eq!(principals[1].resolver, ScopeResolver::Unavailable);
    }

    #[test]
    fn unknown_field_is_rejected_with_origin_and_field() {
        let err = parse_principals(r#"[{"id": "a", "role": "x"}]"#, "p.json").unwrap_err();
        let message = err.to_string();
        assert!(message.contains("p.json"), "{message}");
        assert!(message.contains("role"), "{message}");
    }

    #[test]
    fn bad_resolver_and_non_array_are_rejected() {
        let err = parse_principals(r#"[{"id": "a", "resolver": "ldap"}]"#, "f").unwrap_err();
        assert!(err.to_string().contains("ldap"), "{err}");
        let err = parse_principals(r#"{"id": "a"}"#, "f").unwrap_err();
        assert!(matches!(err, PrincipalsError::Parse { .. }), "{err}");
        let err = parse_principals("[", "f").unwrap_err();
        assert!(err.to_string().contains("line"), "{err}");
    }

    #[test]
    fn duplicates_and_empty_values_are_rejected() {
        let dup_id = r#"[{"id": "a"}, {"id": "a"}]"#;
        let err = parse_principals(dup_id, "f").unwrap_err();
        assert!(err.to_string().contains("duplicate id `a`"), "{err}");

        let dup_token = r#"[{"id": "a", "token": "s3cret"}, {"id": "b", "token": "s3cret"}]"#;
        let err = parse_principals(dup_token, "f").unwrap_err();
        let message = err.to_string();
        assert!(message.contains("#1"), "{message}");
        assert!(
            !message.contains("s3cret"),
            "token must not be echoed: {message}"
        );

        let err = parse_principals(r#"[{"id": ""}]"#, "f").unwrap_err();
        assert!(err.to_string().contains("id"), "{err}");
        let err = parse_principals(r#"[{"id": "a", "token": ""}]"#, "f").unwrap_err();
        assert!(err.to_string().contains("token"), "{err}");
    }

    #[test]
    fn missing_file_names_the_file() {
        let err = load_principals_file(Path::new("/nonexistent/principals.json")).unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/principals.json"),
            "{err}"
        );
    }
}
