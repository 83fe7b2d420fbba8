//! Per-tool rate limiting (RFC 0064 §D): a token bucket per
//! (principal, tool name).
//!
//! Refill is continuous: a bucket gains `1 / refill_every` tokens per second,
//! up to `capacity`. A call takes one whole token. When fewer than one token
//! remains, the call is refused and `Retry-After` is the whole number of
//! seconds (rounded up, at least 1) until one full token is back.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::base::config::RateLimitConfig;
use crate::base::mutant::{Mutant, MutantInfo};

/// The identity a bucket is kept for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketKey {
    /// The principal the call is attributed to (`None` only under a mutant).
    pub principal: Option<String>,
    /// The tool name.
    pub tool: String,
}

/// The result of asking for a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// A token was taken; the call may proceed.
    Granted,
    /// The bucket is empty; retry after this many whole seconds (≥ 1).
    Exhausted {
        /// Seconds until the next token.
        retry_after_secs: u64,
    },
}

/// One bucket's state.
#[derive(Debug, Clone, Copy, PartialEq)]
struct TokenBucket {
    tokens: f64,
    last_refill: Instant,
}

impl TokenBucket {
    fn full(config: &RateLimitConfig, now: Instant) -> Self {
        Self {
            tokens: f64::from(config.capacity),
            last_refill: now,
        }
    }

    /// Adds the tokens earned since the last refill, capped at capacity.
    fn refill(&mut self, config: &RateLimitConfig, now: Instant) {
        let capacity = f64::from(config.capacity);
        let elapsed = now.saturating_duration_since(self.last_refill);
        self.tokens = if config.refill_every.is_zero() {
            capacity
        } else {
            let earned = elapsed.as_secs_f64() / config.refill_every.as_secs_f64();
            (self.tokens + earned).min(capacity)
        };
        self.last_refill = now;
    }

    fn try_take(&mut self, config: &RateLimitConfig, now: Instant) -> Acquire {
        self.refill(config, now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Acquire::Granted;
        }
        let missing = 1.0 - self.tokens;
        let wait = config.refill_every.as_secs_f64() * missing;
        Acquire::Exhausted {
            retry_after_secs: whole_seconds_at_least_one(wait),
        }
    }
}

/// Rounds a wait up to whole seconds, never below 1 (a `Retry-After: 0`
/// would invite an immediate retry that fails again).
fn whole_seconds_at_least_one(secs: f64) -> u64 {
    // Snap to microseconds first so float noise (20.000000001 s) does not
    // round a whole wait up by an extra second.
    let snapped = (secs * 1e6).round() / 1e6;
    let rounded = Duration::try_from_secs_f64(snapped.ceil()).unwrap_or(Duration::MAX);
    rounded.as_secs().max(1)
}

/// All buckets of one host.
#[derive(Debug)]
pub struct RateLimiter {
    config: RateLimitConfig,
    mutant: Option<Mutant>,
    buckets: Mutex<HashMap<BucketKey, TokenBucket>>,
}

impl RateLimiter {
    /// A limiter with empty state.
    pub fn new(config: RateLimitConfig, mutant: Option<Mutant>) -> Self {
        Self {
            config,
            mutant,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// The bucket key for a call by `principal` to `tool`.
    pub fn key(&self, principal: &str, tool: &str) -> BucketKey {
        // RFC 0064 §D: limits are per (principal, tool), so one caller cannot
        // exhaust a tool for everyone else.
        let principal = if self.mutant == Some(Mutant::RateLimitKeyedByTool) {
            None
        } else {
            Some(principal.to_owned())
        };
        BucketKey {
            principal,
            tool: tool.to_owned(),
        }
    }

    /// Takes a token from `key`'s bucket at time `now`.
    pub fn try_acquire(&self, key: BucketKey, now: Instant) -> Acquire {
        // The lock guards only this in-memory update; it is never held across
        // an await (the caller is synchronous here).
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let config = self.config;
        buckets
            .entry(key)
            .or_insert_with(|| TokenBucket::full(&config, now))
            .try_take(&config, now)
    }

    /// The whole seconds until a bucket gains one token (≥ 1); used when a
    /// limit is forced without consulting a bucket.
    pub fn refill_interval_secs(&self) -> u64 {
        whole_seconds_at_least_one(self.config.refill_every.as_secs_f64())
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::RateLimitKeyedByTool,
    name: "rate-limit-keyed-by-tool",
    breaks: "the token bucket is keyed by tool name only (one principal exhausts it for all)",
}];

#[cfg(test)]
mod tests {
    use super::*;

    fn config(capacity: u32, secs: u64) -> RateLimitConfig {
        RateLimitConfig {
            capacity,
            refill_every: Duration::from_secs(secs),
        }
    }

    #[test]
    fn capacity_then_exhausted_with_retry_after() {
        let limiter = RateLimiter::new(config(2, 30), None);
        let now = Instant::now();
        let key = limiter.key("alice", "t");
        assert_eq!(limiter.try_acquire(key.clone(), now), Acquire::Granted);
        assert_eq!(limiter.try_acquire(key.clone(), now), Acquire::Granted);
        assert_eq!(
            limiter.try_acquire(key, now),
            Acquire::Exhausted {
                retry_after_secs: 30
            }
        );
    }

    #[test]
    fn buckets_are_per_principal_and_tool() {
        let limiter = RateLimiter::new(config(1, 30), None);
        let now = Instant::now();
        assert_eq!(
            limiter.try_acquire(limiter.key("alice", "t"), now),
            Acquire::Granted
        );
        assert!(matches!(
            limiter.try_acquire(limiter.key("alice", "t"), now),
            Acquire::Exhausted { .. }
        ));
        assert_eq!(
            limiter.try_acquire(limiter.key("bob", "t"), now),
            Acquire::Granted
        );
        assert_eq!(
            limiter.try_acquire(limiter.key("alice", "u"), now),
            Acquire::Granted
        );
    }

    #[test]
    fn keyed_by_tool_mutant_shares_one_bucket() {
        let limiter = RateLimiter::new(config(1, 30), Some(Mutant::RateLimitKeyedByTool));
        let now = Instant::now();
        assert_eq!(
            limiter.try_acquire(limiter.key("alice", "t"), now),
            Acquire::Granted
        );
        assert!(matches!(
            limiter.try_acquire(limiter.key("bob", "t"), now),
            Acquire::Exhausted { .. }
        ));
    }

    #[test]
    fn refill_is_continuous_and_capped() {
        let limiter = RateLimiter::new(config(1, 30), None);
        let start = Instant::now();
        let key = limiter.key("alice", "t");
        assert_eq!(limiter.try_acquire(key.clone(), start), Acquire::Granted);
        // 10 s later a third of a token is back: wait the remaining 20 s.
        assert_eq!(
            limiter.try_acquire(key.clone(), start + Duration::from_secs(10)),
            Acquire::Exhausted {
                retry_after_secs: 20
            }
        );
        assert_eq!(
            limiter.try_acquire(key.clone(), start + Duration::from_secs(30)),
            Acquire::Granted
        );
        // A long idle period refills to capacity (1), not beyond.
        let later = start + Duration::from_secs(3600);
        assert_eq!(limiter.try_acquire(key.clone(), later), Acquire::Granted);
        assert!(matches!(
            limiter.try_acquire(key, later),
            Acquire::Exhausted { .. }
        ));
    }

    #[test]
    fn retry_after_is_rounded_up_and_at_least_one() {
        assert_eq!(whole_seconds_at_least_one(0.0), 1);
        assert_eq!(whole_seconds_at_least_one(0.2), 1);
        assert_eq!(whole_seconds_at_least_one(1.01), 2);
        let limiter = RateLimiter::new(
            RateLimitConfig {
                capacity: 1,
                refill_every: Duration::from_millis(100),
            },
            None,
        );
        let now = Instant::now();
        let key = limiter.key("a", "t");
        assert_eq!(limiter.try_acquire(key.clone(), now), Acquire::Granted);
        assert_eq!(
            limiter.try_acquire(key, now),
            Acquire::Exhausted {
                retry_after_secs: 1
            }
        );
        assert_eq!(limiter.refill_interval_secs(), 1);
    }

    #[test]
    fn zero_capacity_always_refuses_and_zero_interval_never_does() {
        let never = RateLimiter::new(config(0, 5), None);
        assert_eq!(
            never.try_acquire(never.key("a", "t"), Instant::now()),
            Acquire::Exhausted {
                retry_after_secs: 5
            }
        );
        let always = RateLimiter::new(config(1, 0), None);
        let now = Instant::now();
        for _ in 0..10 {
            assert_eq!(
                always.try_acquire(always.key("a", "t"), now),
                Acquire::Granted
            );
        }
    }
}
