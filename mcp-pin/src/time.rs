//! UTC instants as the snapshot writes them (`2026-08-30T12:00:00Z`) and durations as the
//! command line takes them (`7d`, `12h`, `90m`, `3600s`).

use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The longest `--expires-in` toolcert accepts: 30 days. Expiry is a reviewer's decision
/// under this product maximum; nothing (no MCP version, no annotation) extends it.
pub const MAX_EXPIRES_IN: Duration = Duration::from_secs(30 * 24 * 3600);

/// The shortest `--expires-in` toolcert accepts: 1 hour. The review must be made inside the
/// window, and a snapshot that expires before it can be reviewed, committed and used pins
/// nothing (`--expires-in 0s` wrote one already expired).
pub const MIN_EXPIRES_IN: Duration = Duration::from_secs(3600);

/// The expiry a capture gets when `--expires-in` is not given: 7 days.
pub const DEFAULT_EXPIRES_IN: Duration = Duration::from_secs(7 * 24 * 3600);

/// How far in the future a recorded instant may lie before it counts as wrong (clock skew).
pub const CLOCK_SKEW: Duration = Duration::from_secs(300);

/// Why an instant or a duration was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// Not an RFC 3339 UTC instant.
    #[error("`{0}` is not a UTC instant like 2026-08-30T12:00:00Z")]
    Instant(String),
    /// Not a duration like `7d`.
    #[error("`{0}` is not a duration: write a number and a unit, s, m, h or d (e.g. 7d, 12h)")]
    Duration(String),
}

/// The current instant, truncated to whole seconds.
pub fn now() -> OffsetDateTime {
    let now = OffsetDateTime::now_utc();
    now.replace_nanosecond(0).unwrap_or(now)
}

/// Format an instant as `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds).
pub fn format(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let t = t.replace_nanosecond(0).unwrap_or(t);
    t.format(&Rfc3339).unwrap_or_default()
}

/// Parse an RFC 3339 instant that ends in `Z`.
pub fn parse(text: &str) -> Result<OffsetDateTime, TimeError> {
    if !text.ends_with('Z') {
        return Err(TimeError::Instant(text.to_string()));
    }
    OffsetDateTime::parse(text, &Rfc3339).map_err(|_| TimeError::Instant(text.to_string()))
}

/// Parse `7d`, `12h`, `90m` or `3600s`.
pub fn parse_duration(text: &str) -> Result<Duration, TimeError> {
    let bad = || TimeError::Duration(text.to_string());
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        _ => None,
    }
    .ok_or_else(bad)?;
    Ok(Duration::from_secs(secs))
}

/// The shortest unit text that reads back as `d` (`7d`, `12h`, `90m`, `3600s`…).
pub fn describe_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        _ if s.is_multiple_of(86_400) && s > 0 => format!("{}d", s / 86_400),
        _ if s.is_multiple_of(3600) && s > 0 => format!("{}h", s / 3600),
        _ if s.is_multiple_of(60) && s > 0 => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

/// `t + d`, saturating at the largest instant `time` represents.
pub fn add(t: OffsetDateTime, d: Duration) -> OffsetDateTime {
    t.checked_add(time::Duration::try_from(d).unwrap_or(time::Duration::MAX))
        .unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_round_trip_in_utc_whole_seconds() {
        let t = parse("2026-08-30T12:00:00Z").unwrap();
        assert_eq!(format(t), "2026-08-30T12:00:00Z");
        assert_eq!(
            format(parse("2026-08-30T12:00:00.75Z").unwrap()),
            "2026-08-30T12:00:00Z"
        );
        assert!(parse("2026-08-30T12:00:00+02:00").is_err());
        assert!(parse("yesterday").is_err());
    }

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
        assert_eq!(parse_duration("90m").unwrap(), Duration::from_secs(5400));
        for bad in ["7", "d", "7w", "-1d", "", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
