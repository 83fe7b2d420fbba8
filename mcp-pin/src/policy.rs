//! The local policy of a deployment (mcp-facts §4.4.6, §4.6: "invoke only if all reviewer
//! assertions are acceptable to local policy"; "runtime policy may reject a reviewed tool even
//! when all assertions are present").
//!
//! The seed's requirements on a review (`headless` true, `modelBacked` stated, …) are checked
//! by [`super::review::check`] for every deployment. A policy file narrows what this deployment
//! accepts on top of them, and opts into pinning past the anchors:
//!
//! ```json
//! {
//!   "profile": "toolcert.mcp-local-policy.0.1",
//!   "reviewers": ["release-review@example.test", "@security.example.test"],
//!   "modelBacked": [false],
//!   "sideEffects": ["creates_render_artifacts"],
//!   "concurrency": ["safe", "serialize"],
//!   "inputChannels": ["data"],
//!   "maxExpiresIn": "7d",
//!   "pin": ["instructions", "catalog"]
//! }
//! ```
//!
//! Every member is optional; an absent one accepts whatever the seed accepts. `reviewers`
//! entries starting with `@` accept every identity ending in that domain. `sideEffects` lists
//! the classes accepted: a review that asserts any other is refused. `inputChannels` lists the
//! channel classes accepted (`["data"]` refuses a tool with an `instruction` or `authority`
//! channel). `maxExpiresIn` lowers the product maximum of a snapshot's window (30 days); it can
//! never raise it. Unknown members are an error, so a misspelt rule is never silently ignored.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::time as mcp_time;

/// The policy file's profile.
pub const PROFILE: &str = "toolcert.mcp-local-policy.0.1";

/// What is pinned beyond the seed's anchors (opt-in per deployment; the default pins the
/// selected Tool, `serverInfo` and the revision, as the seed does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pin {
    /// The server's `instructions` (they steer the model as much as a description does).
    pub instructions: bool,
    /// The whole catalog: every tool, in order, on every page (against tool shadowing: one
    /// tool's description steering another's use).
    pub catalog: bool,
}

impl Pin {
    /// Parse `instructions`, `catalog` (comma-separated or repeated).
    pub fn parse(items: &[String]) -> Result<Pin, PolicyError> {
        let mut pin = Pin::default();
        for item in items.iter().flat_map(|i| i.split(',')).map(str::trim) {
            match item {
                "instructions" => pin.instructions = true,
                "catalog" => pin.catalog = true,
                "" => {}
                other => {
                    return Err(PolicyError::Invalid(format!(
                        "`{other}` cannot be pinned: use instructions, catalog (or both)"
                    )));
                }
            }
        }
        Ok(pin)
    }

    /// Both sets of pins.
    pub fn union(self, other: Pin) -> Pin {
        Pin {
            instructions: self.instructions || other.instructions,
            catalog: self.catalog || other.catalog,
        }
    }
}

/// A deployment's local policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalPolicy {
    /// [`PROFILE`], when stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Accepted reviewer identities (`@domain` accepts a domain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewers: Option<Vec<String>>,
    /// Accepted `modelBacked` values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_backed: Option<Vec<bool>>,
    /// Accepted side-effect classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effects: Option<Vec<String>>,
    /// Accepted `concurrency` values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Vec<String>>,
    /// Accepted input-channel classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_channels: Option<Vec<String>>,
    /// The longest window (`expiresAt - capturedAt`) accepted, at most 30 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_expires_in: Option<String>,
    /// What to pin beyond the anchors: `instructions`, `catalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<Vec<String>>,
}

/// Why a policy file was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("the policy file {path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// The file is not a policy.
    #[error("the policy is not valid: {0}")]
    Invalid(String),
}

impl LocalPolicy {
    /// Read a policy file (strict JSON, no unknown members, at most 1 MiB).
    pub fn load(path: &Path) -> Result<LocalPolicy, PolicyError> {
        let io = |e: std::io::Error| PolicyError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        if std::fs::metadata(path).map_err(io)?.len() > 1024 * 1024 {
            return Err(PolicyError::Invalid(format!(
                "{} is larger than 1 MiB",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        let value = toolcert_base::canonical::parse_strict(&text)
            .map_err(|e| PolicyError::Invalid(format!("{}: {e}", path.display())))?;
        let policy: LocalPolicy = serde_json::from_value(value)
            .map_err(|e| PolicyError::Invalid(format!("{}: {e}", path.display())))?;
        policy.validate()?;
        Ok(policy)
    }

    fn validate(&self) -> Result<(), PolicyError> {
        if let Some(p) = &self.profile
            && p != PROFILE
        {
            return Err(PolicyError::Invalid(format!(
                "profile `{p}`: this toolcert reads `{PROFILE}`"
            )));
        }
        self.max_expires_in()?;
        self.pin()?;
        for (what, list, allowed) in [
            ("concurrency", &self.concurrency, &["safe", "serialize"][..]),
            (
                "inputChannels",
                &self.input_channels,
                super::review::CHANNEL_CLASSES,
            ),
        ] {
            for v in list.iter().flatten() {
                if !allowed.contains(&v.as_str()) {
                    return Err(PolicyError::Invalid(format!(
                        "{what}: `{v}` is not one of {}",
                        allowed.join(", ")
                    )));
                }
            }
        }
        Ok(())
    }

    /// The pins the policy asks for.
    pub fn pin(&self) -> Result<Pin, PolicyError> {
        Pin::parse(self.pin.as_deref().unwrap_or_default())
    }

    /// The window maximum in force: the product maximum, or the policy's lower one.
    pub fn max_expires_in(&self) -> Result<Duration, PolicyError> {
        let Some(text) = &self.max_expires_in else {
            return Ok(mcp_time::MAX_EXPIRES_IN);
        };
        let d = mcp_time::parse_duration(text)
            .map_err(|e| PolicyError::Invalid(format!("maxExpiresIn: {e}")))?;
        if d > mcp_time::MAX_EXPIRES_IN {
            return Err(PolicyError::Invalid(format!(
                "maxExpiresIn `{text}` exceeds the product maximum of 30d (a policy can lower it, never raise it)"
            )));
        }
        Ok(d)
    }

    /// Whether this deployment accepts a review the seed's rules already passed: `Err` names
    /// the assertion and what the policy accepts.
    pub fn accepts(&self, review: &Value) -> Result<(), String> {
        let a = review.get("assertions").cloned().unwrap_or(Value::Null);
        if let Some(ok) = &self.reviewers {
            let who = review.get("reviewer").and_then(Value::as_str).unwrap_or("");
            let accepted = ok.iter().any(|r| {
                r == who || (r.starts_with('@') && who.ends_with(r.as_str()) && who.len() > r.len())
            });
            if !accepted {
                return Err(format!(
                    "reviewer `{who}` is not one the local policy accepts ({})",
                    ok.join(", ")
                ));
            }
        }
        if let Some(ok) = &self.model_backed {
            let v = a.get("modelBacked").and_then(Value::as_bool);
            if !v.is_some_and(|v| ok.contains(&v)) {
                return Err(format!(
                    "modelBacked is {} and the local policy accepts only {:?}",
                    v.map_or("unstated".into(), |v| v.to_string()),
                    ok
                ));
            }
        }
        if let Some(ok) = &self.side_effects {
            for s in a
                .get("sideEffects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !ok.iter().any(|o| o == s) {
                    return Err(format!(
                        "side effect `{s}` is not one the local policy accepts ({})",
                        if ok.is_empty() {
                            "none".to_string()
                        } else {
                            ok.join(", ")
                        }
                    ));
                }
            }
        }
        if let Some(ok) = &self.concurrency {
            let v = a.get("concurrency").and_then(Value::as_str).unwrap_or("");
            if !ok.iter().any(|o| o == v) {
                return Err(format!(
                    "concurrency `{v}` is not one the local policy accepts ({})",
                    ok.join(", ")
                ));
            }
        }
        if let Some(ok) = &self.input_channels
            && let Some(channels) = review.get("inputChannels").and_then(Value::as_object)
        {
            for (pointer, class) in channels {
                let class = class.as_str().unwrap_or("");
                if !ok.iter().any(|o| o == class) {
                    return Err(format!(
                        "input channel {pointer} is classified `{class}`, which the local policy does not accept ({})",
                        ok.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(model_backed: bool) -> Value {
        json!({
            "reviewer": "alice@example.test",
            "assertions": {"modelBacked": model_backed, "sideEffects": ["sends_mail"], "concurrency": "serialize"},
            "inputChannels": {"/to": "authority", "/body": "data"}
        })
    }

    #[test]
    fn each_member_narrows_what_is_accepted() {
        LocalPolicy::default().accepts(&review(true)).unwrap();
        let cases: Vec<(LocalPolicy, &str)> = vec![
            (
                LocalPolicy {
                    model_backed: Some(vec![false]),
                    ..Default::default()
                },
                "modelBacked is true",
            ),
            (
                LocalPolicy {
                    reviewers: Some(vec!["@other.test".into()]),
                    ..Default::default()
                },
                "reviewer `alice@example.test`",
            ),
            (
                LocalPolicy {
                    side_effects: Some(vec![]),
                    ..Default::default()
                },
                "side effect `sends_mail`",
            ),
            (
                LocalPolicy {
                    concurrency: Some(vec!["safe".into()]),
                    ..Default::default()
                },
                "concurrency `serialize`",
            ),
            (
                LocalPolicy {
                    input_channels: Some(vec!["data".into()]),
                    ..Default::default()
                },
                "/to is classified `authority`",
            ),
        ];
        for (policy, says) in cases {
            let err = policy.accepts(&review(true)).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
        let domain = LocalPolicy {
            reviewers: Some(vec!["@example.test".into()]),
            model_backed: Some(vec![true, false]),
            ..Default::default()
        };
        domain.accepts(&review(true)).unwrap();
    }

    #[test]
    fn a_policy_file_is_strict() {
        let dir = std::env::temp_dir().join(format!("toolcert-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let ok = write(
            "ok.json",
            r#"{"profile": "toolcert.mcp-local-policy.0.1", "modelBacked": [false], "maxExpiresIn": "7d", "pin": ["catalog"]}"#,
        );
        let p = LocalPolicy::load(&ok).unwrap();
        assert_eq!(p.max_expires_in().unwrap(), Duration::from_secs(7 * 86_400));
        assert!(p.pin().unwrap().catalog && !p.pin().unwrap().instructions);
        for (name, text, says) in [
            ("typo.json", r#"{"modelbacked": [false]}"#, "unknown field"),
            (
                "long.json",
                r#"{"maxExpiresIn": "90d"}"#,
                "exceeds the product maximum",
            ),
            ("pin.json", r#"{"pin": ["everything"]}"#, "cannot be pinned"),
            ("dup.json", r#"{"pin": [], "pin": []}"#, "duplicate"),
            ("conc.json", r#"{"concurrency": ["maybe"]}"#, "not one of"),
        ] {
            let err = LocalPolicy::load(&write(name, text)).unwrap_err();
            assert!(err.to_string().contains(says), "{name}: {err}");
        }
    }
}
