//! The retry policy of one effect invocation, and the key the provider sees.
//!
//! EFF-2: retries of one logical invocation are attempts of ONE effect: the
//! identity is re-derived for every attempt and (correctly derived) comes
//! out the same, each attempt is its own ledger row, and the provider sees
//! the same `Idempotency-Key` on every attempt (EFF-5), so a retry of a
//! request the provider already applied is recognised there too.
//!
//! Policy: up to [`MAX_ATTEMPTS`] attempts; a 5xx answer, a timeout or a
//! transport failure is retried after a short bounded backoff; a 2xx ends
//! the effect `completed`; any other answer (a refusal, e.g. 4xx) is not
//! retried and ends it `escaped`, as does running out of attempts.

use std::time::Duration;

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::invoker::Delivery;

/// Most attempts of one effect invocation.
pub const MAX_ATTEMPTS: u32 = 3;

/// Backoff before attempt n+1 is `n × BACKOFF_STEP` (so at most 2 × this).
pub const BACKOFF_STEP: Duration = Duration::from_millis(25);

/// How one attempt's answer is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx: the provider applied (or had already applied) the effect.
    Accepted,
    /// 5xx, timeout, transport failure: worth another attempt.
    Retryable,
    /// Any other answer: the provider refused; retrying would not help.
    Refused,
}

/// Classifies a delivery.
pub fn classify(delivery: Delivery) -> Verdict {
    match delivery {
        Delivery::Answered(status) if (200..300).contains(&status) => Verdict::Accepted,
        Delivery::Answered(status) if status >= 500 => Verdict::Retryable,
        Delivery::Answered(_) => Verdict::Refused,
        Delivery::TimedOut | Delivery::Unreachable => Verdict::Retryable,
    }
}

/// The `Idempotency-Key` sent on `attempt` of the effect `effect_id`.
///
/// EFF-5: where the provider accepts an idempotency key the host injects
/// the effect identity or a documented deterministic derivative of it; the
/// derivative this host documents is the identity itself, and it is
/// identical on every attempt.
pub fn provider_key(effect_id: &str, attempt: u32, mutant: Option<Mutant>) -> Option<String> {
    if mutant == Some(Mutant::NoProviderKey) {
        // Bug: the provider cannot deduplicate what it cannot recognise.
        None
    } else if mutant == Some(Mutant::RetryKeyDiffers) {
        // Bug: a key per attempt makes every retry a new request upstream.
        Some(format!("{effect_id}-a{attempt}"))
    } else {
        Some(effect_id.to_owned())
    }
}

/// What the attempts of a won claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// How many attempts were made (1..=MAX_ATTEMPTS).
    pub made: u32,
    /// Whether the last one was accepted.
    pub accepted: bool,
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::NoProviderKey,
        name: "no-provider-key",
        breaks: "effect calls to the provider carry no Idempotency-Key header",
    },
    MutantInfo {
        mutant: Mutant::RetryKeyDiffers,
        name: "retry-key-differs",
        breaks: "the provider Idempotency-Key is <effectId>-a<attempt>, different on every retry",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_5xx_and_transport_failures_are_retried() {
        assert_eq!(classify(Delivery::Answered(200)), Verdict::Accepted);
        assert_eq!(classify(Delivery::Answered(204)), Verdict::Accepted);
        assert_eq!(classify(Delivery::Answered(503)), Verdict::Retryable);
        assert_eq!(classify(Delivery::Answered(500)), Verdict::Retryable);
        assert_eq!(classify(Delivery::TimedOut), Verdict::Retryable);
        assert_eq!(classify(Delivery::Unreachable), Verdict::Retryable);
        assert_eq!(classify(Delivery::Answered(409)), Verdict::Refused);
        assert_eq!(classify(Delivery::Answered(302)), Verdict::Refused);
    }

    #[test]
    fn the_key_is_the_identity_on_every_attempt() {
        for attempt in 1..=MAX_ATTEMPTS {
            assert_eq!(
                provider_key("eff_1", attempt, None).as_deref(),
                Some("eff_1")
            );
        }
        assert_eq!(provider_key("eff_1", 2, Some(Mutant::NoProviderKey)), None);
        assert_eq!(
            provider_key("eff_1", 2, Some(Mutant::RetryKeyDiffers)).as_deref(),
            Some("eff_1-a2")
        );
    }
}
