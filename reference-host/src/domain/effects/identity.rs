//! The identity of an effect (v2 idempotency, Layer 2).
//!
//! EFF-1: an effect's identity is derived from the BUSINESS OPERATION —
//! tenant, operation and business key — so every entry point that performs
//! the same operation (a workflow run, a seam, a re-dispatched executor)
//! derives the same id. It contains no runId, nodeId or ordinal.
//! EFF-2: the retry counter never participates: retries of one logical
//! invocation collide on one identity, and each attempt is a ledger row.
//!
//! The business identity is `eff_` + the first 32 lowercase hex digits of
//! SHA-256 over the RFC 8785 (JCS) form of
//! `{"tenant", "operation", "businessKey"}`. Only when there is no business
//! key does the host fall back to the activity recipe
//! (`keying: "activity-recipe"`), which does name the run, node and ordinal.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::base::mutant::{Mutant, MutantInfo};

/// The one business operation this host performs as an effect: a charge
/// against a ledger played by a loopback receiver.
pub const OPERATION_CHARGE: &str = "ledger.charge";

/// Domain-separation prefix of the activity recipe (NUL-terminated).
pub const ACTIVITY_RECIPE_DOMAIN: &[u8] = b"openwop:activity:v2\0";

/// The provider key this host feeds into the activity recipe: the name of
/// the provider the operation is delivered to (not the Idempotency-Key).
pub const RECIPE_PROVIDER_KEY: &str = "refhost.ledger";

/// How an effect id was derived (the ledger's `keying`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Keying {
    /// From tenant + operation + business key (the rule, EFF-1).
    BusinessIdentity,
    /// From the activity recipe: the fallback when there is no business key.
    ActivityRecipe,
}

impl Keying {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BusinessIdentity => "business-identity",
            Self::ActivityRecipe => "activity-recipe",
        }
    }

    /// Parses a wire string.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "business-identity" => Some(Self::BusinessIdentity),
            "activity-recipe" => Some(Self::ActivityRecipe),
            _ => None,
        }
    }
}

/// WHAT an effect does: the inputs of its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusinessOperation<'a> {
    /// The tenant the operation is performed for.
    pub tenant: &'a str,
    /// The operation, e.g. [`OPERATION_CHARGE`].
    pub operation: &'a str,
    /// The caller's business key, if the operation has one.
    pub business_key: Option<&'a str>,
}

/// WHERE and HOW OFTEN one invocation of an operation happens. Only the
/// activity-recipe fallback reads the location; the correct business
/// identity reads none of it (the run id and attempt are carried here so
/// that the `run-id-in-keying` and `attempt-in-identity` mutants have a
/// named place to misuse them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activity<'a> {
    /// The run performing the operation.
    pub run_id: &'a str,
    /// The node performing it.
    pub node_id: &'a str,
    /// Which of the node's effects this is (1-based).
    pub ordinal: u32,
    /// The retry attempt (1-based) of the invocation.
    pub attempt: u32,
}

/// A derived effect identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EffectIdentity {
    /// `eff_…`.
    pub effect_id: String,
    /// How it was derived.
    pub keying: Keying,
}

/// The identity input could not be put in canonical form.
#[derive(Debug, thiserror::Error)]
#[error("cannot canonicalise the effect identity input: {0}")]
pub struct IdentityError(#[from] serde_json::Error);

/// Derives the effect identity of `operation` (EFF-1, EFF-2).
pub fn derive(
    operation: &BusinessOperation<'_>,
    activity: &Activity<'_>,
    mutant: Option<Mutant>,
) -> Result<EffectIdentity, IdentityError> {
    let Some(business_key) = operation.business_key else {
        // No business key: fall back to the activity recipe. The recipe
        // names the run, node and ordinal but never the attempt (EFF-2).
        let recipe = activity_recipe(
            operation.tenant,
            activity.run_id,
            activity.node_id,
            activity.ordinal,
            RECIPE_PROVIDER_KEY,
        );
        return Ok(EffectIdentity {
            effect_id: format!("eff_{recipe}"),
            keying: Keying::ActivityRecipe,
        });
    };
    let business_key = if mutant == Some(Mutant::DistinctEffectsCollide) {
        // Bug: `k#1` and `k#2` are two effects; dropping the suffix merges them.
        strip_ordinal_suffix(business_key)
    } else {
        business_key
    };
    let mut input = json!({
        "tenant": operation.tenant,
        "operation": operation.operation,
        "businessKey": business_key,
    });
    if mutant == Some(Mutant::RunIdInKeying)
        && let Some(object) = input.as_object_mut()
    {
        // Bug (EFF-1): the run is not part of the business operation; with
        // it, every entry point mints a different id for one operation.
        object.insert("runId".to_owned(), Value::from(activity.run_id));
    }
    if mutant == Some(Mutant::AttemptInIdentity)
        && let Some(object) = input.as_object_mut()
    {
        // Bug (EFF-2): retries of one invocation must collide; with the
        // attempt hashed in, every retry is a new effect.
        object.insert("attempt".to_owned(), Value::from(activity.attempt));
    }
    let canonical = serde_json_canonicalizer::to_vec(&input)?;
    let digest = hex::encode(Sha256::digest(&canonical));
    // 32 hex digits = 128 bits: collision-free for any realistic ledger.
    let short = digest.get(..32).unwrap_or(&digest);
    Ok(EffectIdentity {
        effect_id: format!("eff_{short}"),
        keying: Keying::BusinessIdentity,
    })
}

/// The activity recipe:
/// `base64url_nopad(sha256("openwop:activity:v2\0" ‖ tenantId ‖ "\0" ‖ runId
/// ‖ "\0" ‖ nodeId ‖ "\0" ‖ ordinal ‖ "\0" ‖ providerKey))`, the ordinal in
/// decimal.
pub fn activity_recipe(
    tenant: &str,
    run_id: &str,
    node_id: &str,
    ordinal: u32,
    provider_key: &str,
) -> String {
    let mut hasher = Sha256::new();
    hasher.update(ACTIVITY_RECIPE_DOMAIN);
    let ordinal = ordinal.to_string();
    let parts = [tenant, run_id, node_id, ordinal.as_str(), provider_key];
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            hasher.update(b"\0");
        }
        hasher.update(part.as_bytes());
    }
    base64url_nopad(&hasher.finalize())
}

/// The id of one logical invocation: `inv_` + the activity recipe of its
/// run, node and ordinal. Every executor of the same node activity (the
/// owner and a re-dispatched one alike) computes the same id; the attempt
/// never enters it.
pub fn logical_invocation_id(tenant: &str, activity: &Activity<'_>) -> String {
    let recipe = activity_recipe(
        tenant,
        activity.run_id,
        activity.node_id,
        activity.ordinal,
        RECIPE_PROVIDER_KEY,
    );
    format!("inv_{recipe}")
}

/// RFC 4648 §5 base64url without padding.
pub fn base64url_nopad(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = u32::from(chunk.first().copied().unwrap_or(0));
        let b1 = u32::from(chunk.get(1).copied().unwrap_or(0));
        let b2 = u32::from(chunk.get(2).copied().unwrap_or(0));
        let triple = (b0 << 16) | (b1 << 8) | b2;
        // A chunk of n bytes yields n + 1 significant sextets.
        for sextet in 0..=chunk.len() {
            let index = (triple >> (18 - 6 * sextet)) & 0x3f;
            if let Some(symbol) = usize::try_from(index).ok().and_then(|i| ALPHABET.get(i)) {
                out.push(char::from(*symbol));
            }
        }
    }
    out
}

/// `key` without a trailing `#<digits>` ordinal suffix (used only by the
/// `distinct-effects-collide` mutant).
fn strip_ordinal_suffix(key: &str) -> &str {
    match key.rsplit_once('#') {
        Some((base, digits))
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => key,
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::AttemptInIdentity,
        name: "attempt-in-identity",
        breaks: "the retry attempt counter is hashed into the effect id (each retry is a new effect)",
    },
    MutantInfo {
        mutant: Mutant::RunIdInKeying,
        name: "run-id-in-keying",
        breaks: "the runId is hashed into the effect id (each entry point is a new effect)",
    },
    MutantInfo {
        mutant: Mutant::DistinctEffectsCollide,
        name: "distinct-effects-collide",
        breaks: "the business key's #n suffix is dropped, so distinct effects of one run share an identity",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(key: Option<&str>) -> BusinessOperation<'_> {
        BusinessOperation {
            tenant: "tenant-a",
            operation: OPERATION_CHARGE,
            business_key: key,
        }
    }

    fn at(run_id: &str, attempt: u32) -> Activity<'_> {
        Activity {
            run_id,
            node_id: "effect",
            ordinal: 1,
            attempt,
        }
    }

    #[test]
    fn business_identity_is_jcs_sha256_truncated() {
        let id = derive(&charge(Some("order-42")), &at("run_1", 1), None).expect("derive");
        let canonical =
            r#"{"businessKey":"order-42","operation":"ledger.charge","tenant":"tenant-a"}"#;
        let full = hex::encode(Sha256::digest(canonical.as_bytes()));
        assert_eq!(id.effect_id, format!("eff_{}", &full[..32]));
        assert_eq!(id.keying, Keying::BusinessIdentity);
        assert_eq!(id.effect_id.len(), 36);
    }

    #[test]
    fn identity_is_stable_and_excludes_run_node_ordinal_and_attempt() {
        let op = charge(Some("order-42"));
        let base = derive(&op, &at("run_1", 1), None).expect("derive");
        for activity in [
            at("run_2", 1),
            at("run_1", 2),
            at("run_9", 3),
            Activity {
                run_id: "run_x",
                node_id: "other-node",
                ordinal: 7,
                attempt: 1,
            },
        ] {
            assert_eq!(derive(&op, &activity, None).expect("derive"), base);
        }
        // Tenant, operation and key each matter.
        let other_tenant = BusinessOperation {
            tenant: "tenant-b",
            ..op
        };
        let other_op = BusinessOperation {
            operation: "ledger.refund",
            ..op
        };
        for other in [other_tenant, other_op, charge(Some("order-43"))] {
            assert_ne!(derive(&other, &at("run_1", 1), None).expect("derive"), base);
        }
    }

    #[test]
    fn mutants_put_run_or_attempt_into_the_identity() {
        let op = charge(Some("k"));
        let run = |run_id, mutant| derive(&op, &at(run_id, 1), mutant).expect("derive");
        assert_ne!(
            run("run_1", Some(Mutant::RunIdInKeying)),
            run("run_2", Some(Mutant::RunIdInKeying))
        );
        let attempt = |n, mutant| derive(&op, &at("run_1", n), mutant).expect("derive");
        assert_ne!(
            attempt(1, Some(Mutant::AttemptInIdentity)),
            attempt(2, Some(Mutant::AttemptInIdentity))
        );
        let key = |k, mutant| derive(&charge(Some(k)), &at("r", 1), mutant).expect("derive");
        assert_ne!(key("k#1", None), key("k#2", None));
        assert_eq!(
            key("k#1", Some(Mutant::DistinctEffectsCollide)),
            key("k#2", Some(Mutant::DistinctEffectsCollide))
        );
        assert_eq!(strip_ordinal_suffix("a#b"), "a#b");
        assert_eq!(strip_ordinal_suffix("a#"), "a#");
        assert_eq!(strip_ordinal_suffix("a#12"), "a");
    }

    #[test]
    fn recipe_is_the_fallback_and_ignores_the_attempt() {
        let op = charge(None);
        let one = derive(&op, &at("run_1", 1), None).expect("derive");
        assert_eq!(one.keying, Keying::ActivityRecipe);
        assert_eq!(derive(&op, &at("run_1", 3), None).expect("derive"), one);
        assert_ne!(derive(&op, &at("run_2", 1), None).expect("derive"), one);
        let recipe = activity_recipe("tenant-a", "run_1", "effect", 1, RECIPE_PROVIDER_KEY);
        assert_eq!(one.effect_id, format!("eff_{recipe}"));
        let mut bytes = b"openwop:activity:v2\0tenant-a\0run_1\0effect\0".to_vec();
        bytes.extend_from_slice(b"1\0");
        bytes.extend_from_slice(RECIPE_PROVIDER_KEY.as_bytes());
        assert_eq!(recipe, base64url_nopad(&Sha256::digest(&bytes)));
        assert_eq!(recipe.len(), 43);
        assert_eq!(
            logical_invocation_id("tenant-a", &at("run_1", 2)),
            format!("inv_{recipe}")
        );
    }

    #[test]
    fn base64url_matches_rfc4648_vectors() {
        // RFC 4648 §10 vectors, without padding, in the URL-safe alphabet.
        for (input, output) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64url_nopad(input.as_bytes()), output);
        }
        assert_eq!(base64url_nopad(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn keying_round_trips() {
        for keying in [Keying::BusinessIdentity, Keying::ActivityRecipe] {
            assert_eq!(Keying::parse(keying.as_str()), Some(keying));
        }
        assert_eq!(Keying::parse("x"), None);
    }
}
