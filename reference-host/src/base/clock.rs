//! Wall-clock helpers for records that expire.
//!
//! Retention decisions (Layer-1 records ≥ 24 h, effect records ≥ 14 days)
//! compare whole Unix milliseconds, stored beside each record's RFC 3339
//! time, so a sweep is one indexed integer comparison and a sweeper can be
//! run "as if now were later" by adding an offset.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Milliseconds in one second.
pub const MS_PER_SEC: i64 = 1_000;

/// The current time as Unix milliseconds.
pub fn now_unix_ms() -> i64 {
    let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    // A clock beyond ±292 million years is not a clock; clamp rather than wrap.
    i64::try_from(nanos).unwrap_or(i64::MAX)
}

/// RFC 3339 UTC text of a Unix-milliseconds time.
pub fn rfc3339_at_ms(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    // Out-of-range times (years outside 0..=9999) cannot come from the
    // system clock; the epoch fallback keeps this panic-free.
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|at| at.format(&Rfc3339).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

/// Midnight UTC of the day this process first asked, as RFC 3339 text.
///
/// The `mcp` and `a2a` facets' `refreshedAt` (MCP-4, A2A-1): the host
/// evaluates its interop advertisement when it starts, so the date is the
/// start day. Fixed for the process's life, so the discovery document and its
/// ETag do not change under a running harness.
pub fn started_day_rfc3339() -> &'static str {
    static DAY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DAY.get_or_init(|| {
        let day = OffsetDateTime::now_utc().date();
        day.midnight()
            .assume_utc()
            .format(&Rfc3339)
            .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
    })
}

/// `secs` seconds as milliseconds, saturating.
pub fn secs_to_ms(secs: u64) -> i64 {
    i64::try_from(secs)
        .unwrap_or(i64::MAX)
        .saturating_mul(MS_PER_SEC)
}

/// Records with a timestamp strictly before this are older than `retention_secs`.
pub fn cutoff_ms(now_ms: i64, retention_secs: u64) -> i64 {
    now_ms.saturating_sub(secs_to_ms(retention_secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_through_the_parser() {
        let text = rfc3339_at_ms(1_700_000_000_123);
        assert_eq!(text, "2023-11-14T22:13:20.123Z");
        assert!(OffsetDateTime::parse(&text, &Rfc3339).is_ok());
        assert!(now_unix_ms() > 1_700_000_000_000);
    }

    #[test]
    fn conversions_saturate() {
        assert_eq!(secs_to_ms(2), 2_000);
        assert_eq!(secs_to_ms(u64::MAX), i64::MAX);
        assert_eq!(rfc3339_at_ms(i64::MAX), "1970-01-01T00:00:00Z");
    }
}
