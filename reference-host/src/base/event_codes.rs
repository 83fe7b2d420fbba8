//! The error codes events may carry (HOOKS-FAIL-7, stance C-12).
//!
//! v2 requires every event `error.code` to be a registered v2 code or a
//! vendor-namespaced one (`vendor.code`, never under `openwop.`). This
//! host's own codes are namespaced `refhost.`; the registered ones it uses
//! are named here, once. The one bare exception is `tool_outcome_unknown`,
//! which the tool-turn contract names as it is (TURN-D8).
//!
//! The codes themselves live with their concept: tool returns in
//! [`crate::base::tool_events::ToolErrorCode`], run and node failures next to the
//! code that fails them (`crate::turn::driver`, `crate::turn::admission`,
//! `crate::domain::workflows`).

/// `validation_error` (registered).
pub const VALIDATION_ERROR: &str = "validation_error";
/// `forbidden` (registered).
pub const FORBIDDEN: &str = "forbidden";
/// `rate_limited` (registered).
pub const RATE_LIMITED: &str = "rate_limited";
/// `internal_error` (registered).
pub const INTERNAL_ERROR: &str = "internal_error";
/// `replay_source_missing` (registered).
pub const REPLAY_SOURCE_MISSING: &str = "replay_source_missing";
/// `capability_not_provided` (registered).
pub const CAPABILITY_NOT_PROVIDED: &str = "capability_not_provided";
/// `upstream_unavailable` (registered).
pub const UPSTREAM_UNAVAILABLE: &str = "upstream_unavailable";
/// `replay_diverged_at_refusal` (registered; C-27 status 409): a replay
/// fork refused where its source answered, or answered where it refused
/// (RPL-7).
pub const REPLAY_DIVERGED_AT_REFUSAL: &str = "replay_diverged_at_refusal";
/// `tool_outcome_unknown`: bare, because TURN-D8 requires this exact name.
pub const TOOL_OUTCOME_UNKNOWN: &str = "tool_outcome_unknown";

/// The namespace of this host's own codes.
pub const VENDOR_PREFIX: &str = "refhost.";

/// The registered v2 codes this host knows of.
pub const REGISTERED: &[&str] = &[
    FORBIDDEN,
    RATE_LIMITED,
    "not_found",
    VALIDATION_ERROR,
    "idempotency_key_invalid",
    "idempotency_key_mismatch",
    "idempotency_in_flight",
    "interop_version_unsupported",
    "mcp_mrtr_rounds_exceeded",
    REPLAY_SOURCE_MISSING,
    REPLAY_DIVERGED_AT_REFUSAL,
    "replay_memory_snapshot_unavailable",
    CAPABILITY_NOT_PROVIDED,
    "unauthenticated",
    "id_tenant_mismatch",
    "mcp_error",
    "credential_not_found",
    "credential_forbidden",
    INTERNAL_ERROR,
    "residency_unavailable",
    "pack_registry_unreachable",
    "runner_unavailable",
    "service_unavailable",
    UPSTREAM_UNAVAILABLE,
];

/// Whether `code` is a registered v2 code.
pub fn is_registered(code: &str) -> bool {
    REGISTERED.contains(&code)
}

/// Whether `code` matches the vendor pattern
/// `^(?!openwop\.)[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9_]*$`.
pub fn is_vendor_namespaced(code: &str) -> bool {
    let Some((vendor, name)) = code.split_once('.') else {
        return false;
    };
    if vendor == "openwop" {
        return false;
    }
    // vendor: [a-z][a-z0-9]* then (-[a-z0-9]+)*, i.e. kebab segments whose
    // first starts with a letter.
    let mut segments = vendor.split('-');
    let first_ok = segments.next().is_some_and(|first| {
        first.starts_with(|c: char| c.is_ascii_lowercase())
            && first
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    let rest_ok = segments.all(|segment| {
        !segment.is_empty()
            && segment
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    // name: [a-z][a-z0-9_]* (so no second dot).
    let name_ok = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    first_ok && rest_ok && name_ok
}

/// Whether an event may carry `code` (HOOKS-FAIL-7): registered, vendor
/// namespaced, or the TTC's bare `tool_outcome_unknown`.
pub fn is_conformant(code: &str) -> bool {
    is_registered(code) || is_vendor_namespaced(code) || code == TOOL_OUTCOME_UNKNOWN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_pattern_matches_the_spec_regex() {
        for good in [
            "refhost.tool_execution_failed",
            "acme.x",
            "my-vendor2.code_1",
            "a1-b-c3.z9",
        ] {
            assert!(is_vendor_namespaced(good), "{good}");
        }
        for bad in [
            "openwop.anything",
            "tool_execution_failed",
            "refhost.",
            ".code",
            "Refhost.code",
            "refhost.Code",
            "refhost.a.b",
            "re_fhost.code",
            "refhost-.code",
            "-refhost.code",
            "1refhost.code",
            "refhost.1code",
            "refhost.kebab-case",
        ] {
            assert!(!is_vendor_namespaced(bad), "{bad}");
        }
    }

    #[test]
    fn conformance_is_registered_or_vendor_or_the_ttc_exception() {
        assert!(is_conformant("forbidden"));
        assert!(is_conformant("capability_not_provided"));
        assert!(is_conformant("refhost.record_failed"));
        assert!(is_conformant("tool_outcome_unknown"));
        assert!(!is_conformant("invalid_args"));
        assert!(!is_conformant("provider_tools_unsupported"));
        assert!(!is_conformant("openwop.forbidden"));
    }
}
