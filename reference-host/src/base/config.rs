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
    /// Serve as a plain upstream OpenWOP host of one major
    /// (`--upstream-only[=v1|v2]`, see [`crate::surface::upstream`]): only
    /// that major's upstream surfaces, fixtures and seams, none of toolcert's
    /// extensions. `None` (the default): the full v2 host.
    pub upstream_only: Option<UpstreamMajor>,
}

/// The major an upstream-only host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpstreamMajor {
    /// A plain v1 host: the v1 discovery document, every route under `/v1`,
    /// the v1 seams (`/v1/host/sample/…`), which ignore members they do not
    /// know.
    V1,
    /// A plain v2 host: the closed v2 root, unprefixed routes, the seams
    /// profile `openwop-conformance-seams-v2` under `/conformance/seams/…`
    /// with closed bodies (an unknown member is a 400 naming it), and
    /// tenant-bound ids (`<tenant>/<opaque>`, projected into one path
    /// segment, identity.md §5).
    V2,
}

impl UpstreamMajor {
    /// `v1` or `v2`, as `--upstream-only` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1 => "v1",
            Self::V2 => "v2",
        }
    }

    /// Parses `v1` or `v2` (also `1`, `2`).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "v1" | "1" => Some(Self::V1),
            "v2" | "2" => Some(Self::V2),
            _ => None,
        }
    }
}

impl std::fmt::Display for UpstreamMajor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
            upstream_only: None,
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
        assert_eq!(config.upstream_only, None);
        for major in [UpstreamMajor::V1, UpstreamMajor::V2] {
            assert_eq!(UpstreamMajor::parse(major.as_str()), Some(major));
        }
        assert_eq!(UpstreamMajor::parse("v3"), None);
    }
}
