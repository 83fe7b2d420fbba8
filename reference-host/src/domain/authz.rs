//! Per-tool authorization of the principal a tool call is attributed to
//! (RFC 0064 §C). Fail-closed: when the principal's scopes cannot be
//! evaluated (unknown principal, scope-resolver error) the call is denied.

use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::principals::PrincipalDirectory;

/// Why a call was denied (the `reason` of `authorization.decided`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyReason {
    /// The principal's scopes were resolved and lack a required scope.
    MissingScope,
    /// The principal's scopes could not be evaluated.
    Unevaluable,
}

impl DenyReason {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MissingScope => "missing-scope",
            Self::Unevaluable => "unevaluable",
        }
    }
}

/// The outcome of an authorization check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call may proceed.
    Allow,
    /// The call must not run.
    Deny {
        /// Why.
        reason: DenyReason,
        /// What is wrong and what would fix it.
        message: String,
    },
}

/// Decides whether `principal` may invoke `tool` given its required scopes.
pub fn decide(
    directory: &PrincipalDirectory,
    principal: &str,
    tool: &str,
    required_scopes: &[String],
    mutant: Option<Mutant>,
) -> Decision {
    if let Some(deny) = always_deny(principal, tool, mutant) {
        return deny;
    }
    let Some(subject) = directory.get(principal) else {
        // RFC 0064 §C fail-closed: an unknown subject cannot be evaluated.
        return Decision::Deny {
            reason: DenyReason::Unevaluable,
            message: format!(
                "principal `{principal}` is not known to this host, so its scopes cannot be evaluated and tool `{tool}` is denied (fail-closed); attribute the call to a configured principal"
            ),
        };
    };
    let held = match subject.resolve_scopes() {
        Ok(held) => held,
        Err(_) if fails_open(mutant) => return Decision::Allow,
        Err(err) => {
            // RFC 0064 §C fail-closed: a resolver error denies; it never allows.
            return Decision::Deny {
                reason: DenyReason::Unevaluable,
                message: format!(
                    "{err}, so tool `{tool}` is denied (fail-closed); retry when the scope resolver is available"
                ),
            };
        }
    };
    missing_scopes(principal, tool, required_scopes, held)
}

/// Decides a call whose grant the caller states (the upstream tool-hooks
/// seam, [`crate::surface::upstream::toolhooks`]): `granted` are the principal's
/// scopes as the request gives them; the host's own record of the principal
/// is not consulted. Fail-closed: required scopes with no stated grant
/// cannot be evaluated, so the call is denied.
pub fn decide_stated(
    principal: &str,
    tool: &str,
    required_scopes: &[String],
    granted: Option<&[String]>,
    mutant: Option<Mutant>,
) -> Decision {
    if let Some(deny) = always_deny(principal, tool, mutant) {
        return deny;
    }
    match granted {
        Some(granted) => missing_scopes(principal, tool, required_scopes, granted),
        None if required_scopes.is_empty() => Decision::Allow,
        None if fails_open(mutant) => Decision::Allow,
        // RFC 0064 §C fail-closed: no grant to check the requirement against.
        None => Decision::Deny {
            reason: DenyReason::Unevaluable,
            message: format!(
                "tool `{tool}` requires scope(s) {} and no grantedScopes were given for principal `{principal}`, so the call cannot be evaluated and is denied (fail-closed); state the grant",
                required_scopes.join(", ")
            ),
        },
    }
}

/// Under `authz-always-deny`, the deny every check answers.
fn always_deny(principal: &str, tool: &str, mutant: Option<Mutant>) -> Option<Decision> {
    // Bug: denies even when every required scope is held.
    (mutant == Some(Mutant::AuthzAlwaysDeny)).then(|| Decision::Deny {
        reason: DenyReason::MissingScope,
        message: format!("principal `{principal}` may not invoke tool `{tool}`"),
    })
}

/// Whether an unevaluable decision allows (the
/// `authz-fail-open-on-resolver-error` bug); correct hosts deny.
fn fails_open(mutant: Option<Mutant>) -> bool {
    // Bug: a resolver error is treated as "allowed" (fails open).
    mutant == Some(Mutant::AuthzFailOpenOnResolverError)
}

/// Allow when `held` has every required scope; deny naming the missing ones.
fn missing_scopes(principal: &str, tool: &str, required: &[String], held: &[String]) -> Decision {
    let missing: Vec<&str> = required
        .iter()
        .filter(|scope| !held.contains(scope))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        Decision::Allow
    } else {
        Decision::Deny {
            reason: DenyReason::MissingScope,
            message: format!(
                "principal `{principal}` lacks required scope(s) {} for tool `{tool}`; grant them or call as a principal that holds them",
                missing.join(", ")
            ),
        }
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::AuthzFailOpenOnResolverError,
        name: "authz-fail-open-on-resolver-error",
        breaks: "a scope-resolver error is treated as \"allowed\" (fails open)",
    },
    MutantInfo {
        mutant: Mutant::AuthzAlwaysDeny,
        name: "authz-always-deny",
        breaks: "every authorization check denies (even with all scopes held)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::principals::builtin;

    fn dir() -> PrincipalDirectory {
        PrincipalDirectory::new(builtin()).expect("valid")
    }

    fn scopes(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn reason(decision: Decision) -> Option<DenyReason> {
        match decision {
            Decision::Allow => None,
            Decision::Deny { reason, .. } => Some(reason),
        }
    }

    #[test]
    fn holders_are_allowed_and_others_denied() {
        let write = scopes(&["tools:write"]);
        assert_eq!(decide(&dir(), "alice", "t", &write, None), Decision::Allow);
        assert_eq!(
            reason(decide(&dir(), "carol", "t", &write, None)),
            Some(DenyReason::MissingScope)
        );
        assert_eq!(decide(&dir(), "carol", "t", &[], None), Decision::Allow);
    }

    #[test]
    fn unknown_principals_and_resolver_errors_fail_closed() {
        assert_eq!(
            reason(decide(&dir(), "mallory", "t", &[], None)),
            Some(DenyReason::Unevaluable)
        );
        assert_eq!(
            reason(decide(&dir(), "dave", "t", &[], None)),
            Some(DenyReason::Unevaluable)
        );
    }

    #[test]
    fn stated_grants_decide_and_fail_closed_without_one() {
        let write = scopes(&["tools:write"]);
        let both = scopes(&["tools:read", "tools:write"]);
        // The host's record of the principal is not consulted.
        assert_eq!(
            decide_stated("mallory", "t", &write, Some(&both), None),
            Decision::Allow
        );
        assert_eq!(
            reason(decide_stated("alice", "t", &write, Some(&[]), None)),
            Some(DenyReason::MissingScope)
        );
        assert_eq!(
            reason(decide_stated("alice", "t", &write, None, None)),
            Some(DenyReason::Unevaluable)
        );
        assert_eq!(
            decide_stated("alice", "t", &[], None, None),
            Decision::Allow
        );
        assert_eq!(
            decide_stated(
                "alice",
                "t",
                &write,
                None,
                Some(Mutant::AuthzFailOpenOnResolverError)
            ),
            Decision::Allow
        );
        assert_eq!(
            reason(decide_stated(
                "alice",
                "t",
                &[],
                Some(&both),
                Some(Mutant::AuthzAlwaysDeny)
            )),
            Some(DenyReason::MissingScope)
        );
    }

    #[test]
    fn mutants_break_the_decision() {
        assert_eq!(
            decide(
                &dir(),
                "dave",
                "t",
                &[],
                Some(Mutant::AuthzFailOpenOnResolverError)
            ),
            Decision::Allow
        );
        assert_eq!(
            reason(decide(
                &dir(),
                "alice",
                "t",
                &[],
                Some(Mutant::AuthzAlwaysDeny)
            )),
            Some(DenyReason::MissingScope)
        );
    }
}
