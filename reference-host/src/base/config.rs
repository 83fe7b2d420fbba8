//! Host configuration.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::base::mutant::Mutant;
use crate::base::principals::{self, Principal};

/// Token-bucket settings for per-tool rate limiting (RFC 0064 §D).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// Bucket size: calls allowed in a burst.
    pub capacity: u32,
    /// One token is added back every this long (continuous refill).
    pub refill_every: Duration,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            capacity: 5,
            refill_every: Duration::from_secs(30),
        }
    }
}

/// Everything [`crate::start`] needs to run a host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Listening address; default `127.0.0.1:0` (ephemeral port).
    pub bind: SocketAddr,
    /// The deliberately broken variant to run, if any.
    pub mutant: Option<Mutant>,
    /// Mount `/conformance/seams/...` (default off).
    pub seams_enabled: bool,
    /// Who may call the host; default [`principals::builtin`].
    pub principals: Vec<Principal>,
    /// Per-(principal, tool) token bucket settings.
    pub rate_limit: RateLimitConfig,
    /// Tool call timeout when the request gives no `timeoutMs`.
    pub default_tool_timeout: Duration,
    /// How long a tool call held for approval waits for its interrupt to be
    /// resolved before the run fails with `approval_expired` (default
    /// 120 s; tests shorten it). Every wait of the loop is bounded.
    pub approval_timeout: Duration,
    /// Directory of the durable store (`--data-dir`): the SQLite database
    /// lives in `DIR/reference-host.sqlite3` (WAL), and in-flight turn runs
    /// are recovered at start-up (TTC §D). `None` (the default) keeps
    /// everything in `:memory:`.
    pub data_dir: Option<PathBuf>,
    /// Largest serialized tool record kept whole (`--record-limit-bytes`,
    /// default 65536); a larger one is kept as a digest with a truncation
    /// marker and is a miss on replay and recovery (TURN-D10).
    pub record_limit_bytes: usize,
    /// Serve as a plain upstream OpenWOP v1 host (`--upstream-only`): the
    /// v1 discovery document, every API route under `/v1`, only the
    /// upstream fixtures and seams (see [`crate::surface::upstream`]). Default off:
    /// the v2 host.
    pub upstream_only: bool,
}

/// Default of [`HostConfig::record_limit_bytes`].
pub const DEFAULT_RECORD_LIMIT_BYTES: usize = 65_536;

/// Default of [`HostConfig::approval_timeout`].
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            mutant: None,
            seams_enabled: false,
            principals: principals::builtin(),
            rate_limit: RateLimitConfig::default(),
            default_tool_timeout: Duration::from_secs(2),
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            data_dir: None,
            record_limit_bytes: DEFAULT_RECORD_LIMIT_BYTES,
            upstream_only: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_values() {
        let config = HostConfig::default();
        assert_eq!(config.bind.to_string(), "127.0.0.1:0");
        assert_eq!(config.mutant, None);
        assert!(!config.seams_enabled);
        assert_eq!(config.principals, principals::builtin());
        assert_eq!(config.rate_limit.capacity, 5);
        assert_eq!(config.rate_limit.refill_every, Duration::from_secs(30));
        assert_eq!(config.default_tool_timeout, Duration::from_secs(2));
        assert_eq!(config.approval_timeout, Duration::from_secs(120));
        assert_eq!(config.data_dir, None);
        assert_eq!(config.record_limit_bytes, 65_536);
        assert!(!config.upstream_only);
    }
}
