//! The v2 error-code registry as far as toolcert's sources name it, and the vendor form.
//!
//! v2 (`v2 err §The registry`) has about 120 registered codes; the wire document names the ones
//! below, with the HTTP status where it gives one (ERR-2). A code missing here is not proof of a
//! host defect, so the row that reads this table (HOOKS-FAIL-7) is `warnUnlessStrict` (stance
//! C-12) and its detail names the code: a spec editor who finds a registered code missing adds
//! it to [`REGISTERED`].

/// One registered v2 error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisteredCode {
    /// The code.
    pub code: &'static str,
    /// Its registered HTTP status, where the sources give one.
    pub status: Option<u16>,
}

const fn code(code: &'static str, status: u16) -> RegisteredCode {
    RegisteredCode {
        code,
        status: Some(status),
    }
}

const fn unknown_status(code: &'static str) -> RegisteredCode {
    RegisteredCode { code, status: None }
}

/// Registered v2 codes named by the wire document (ERR-2, ERR-3, HOOKS-AUTH-5).
pub const REGISTERED: &[RegisteredCode] = &[
    code("forbidden", 403),
    code("rate_limited", 429),
    code("not_found", 404),
    code("validation_error", 400),
    code("idempotency_key_invalid", 400),
    code("idempotency_key_mismatch", 409),
    code("idempotency_in_flight", 409),
    code("interop_version_unsupported", 400),
    code("mcp_mrtr_rounds_exceeded", 422),
    code("replay_source_missing", 404),
    code("replay_diverged_at_refusal", 409),
    code("replay_memory_snapshot_unavailable", 409),
    code("capability_not_provided", 422),
    code("unauthenticated", 401),
    code("id_tenant_mismatch", 403),
    code("mcp_error", 502),
    unknown_status("credential_not_found"),
    unknown_status("credential_forbidden"),
    unknown_status("internal_error"),
    unknown_status("residency_unavailable"),
    unknown_status("pack_registry_unreachable"),
    unknown_status("runner_unavailable"),
    unknown_status("service_unavailable"),
    unknown_status("upstream_unavailable"),
];

/// Codes the tool-turn contract requires although v2 does not register them (C-12: the TTC
/// wins for TURN-D8, so these are accepted).
pub const TTC_REQUIRED: &[&str] = &["tool_outcome_unknown"];

/// How a code stands against the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeStanding {
    /// A registered v2 code.
    Registered,
    /// Unregistered, but required by the tool-turn contract (C-12).
    TtcRequired,
    /// `<org>.<code>`, with an org other than `openwop`.
    Vendor,
    /// None of the above.
    Unregistered,
}

/// Classify one error code.
pub fn standing(code: &str) -> CodeStanding {
    if REGISTERED.iter().any(|r| r.code == code) {
        CodeStanding::Registered
    } else if TTC_REQUIRED.contains(&code) {
        CodeStanding::TtcRequired
    } else if is_vendor(code) {
        CodeStanding::Vendor
    } else {
        CodeStanding::Unregistered
    }
}

/// The vendor form `^(?!openwop\.)[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9_]*$` (ERR-1),
/// written out by hand because the `regex` crate has no look-ahead.
pub fn is_vendor(code: &str) -> bool {
    let Some((org, name)) = code.split_once('.') else {
        return false;
    };
    let org_ok = org != "openwop"
        && org.split('-').enumerate().all(|(i, part)| {
            let mut chars = part.chars();
            match chars.next() {
                Some(c) if c.is_ascii_lowercase() => {}
                Some(c) if i > 0 && c.is_ascii_digit() => {}
                _ => return false,
            }
            chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    let mut chars = name.chars();
    let name_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    org_ok && name_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn standing_of_known_codes() {
        assert_eq!(standing("forbidden"), CodeStanding::Registered);
        assert_eq!(standing("tool_outcome_unknown"), CodeStanding::TtcRequired);
        assert_eq!(standing("acme.tool_failed"), CodeStanding::Vendor);
        assert_eq!(standing("acme-corp.x1"), CodeStanding::Vendor);
        assert_eq!(
            standing("tool_execution_failed"),
            CodeStanding::Unregistered
        );
        assert_eq!(standing("invalid_args"), CodeStanding::Unregistered);
    }

    #[test]
    fn vendor_form_edges() {
        for bad in [
            "openwop.thing",
            "Acme.x",
            "acme.",
            ".x",
            "acme.X",
            "acme.1x",
            "acme-.x",
            "-acme.x",
            "acme..x",
            "acme.x-y",
            "acme.x.y",
            "",
        ] {
            assert!(!is_vendor(bad), "{bad:?} must not be vendor");
        }
        for good in [
            "a.b",
            "acme.tool_failed",
            "a1-b2.c_3",
            "refhost.record_failed",
        ] {
            assert!(is_vendor(good), "{good:?} must be vendor");
        }
    }

    #[test]
    fn registered_codes_are_unique() {
        let mut codes: Vec<_> = REGISTERED.iter().map(|r| r.code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), REGISTERED.len());
    }

    proptest! {
        /// The hand-written check agrees with the ERR-1 pattern minus its look-ahead.
        #[test]
        fn vendor_agrees_with_the_pattern(code in "[a-z0-9._-]{0,12}") {
            let re = regex::Regex::new(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9_]*$").unwrap();
            let expected = re.is_match(&code) && !code.starts_with("openwop.");
            prop_assert_eq!(is_vendor(&code), expected);
        }
    }
}
