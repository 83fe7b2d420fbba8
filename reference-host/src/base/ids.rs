//! Tenant-bound ids on the wire (identity.md §5, RFC 0184 §A.1).
//!
//! A v2 tenant-bound id (`runId`, `effectId`, …) is `<tenant>/<opaque>`. In
//! a path it is one segment, projected: every UTF-8 byte outside
//! `[A-Za-z0-9._-]` becomes `~` and two uppercase hex digits (`acme/r-9f3c`
//! ⇒ `acme~2Fr-9f3c`); a host MUST also accept `tenant%2Fopaque`, and
//! decodes either before it matches the grammar. This host mints no id with
//! a `~`, so every `~XX` in a path segment is a projection.

/// `id` projected into one path segment.
pub fn project(id: &str) -> String {
    let mut out = String::with_capacity(id.len() + 8);
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("~{byte:02X}"));
        }
    }
    out
}

/// A request path with every `~XX` projection escape turned into the
/// percent-encoding of the same byte, so a path extractor's percent-decoding
/// undoes the projection (`/runs/acme~2Fr:fork` ⇒ `/runs/acme%2Fr:fork`,
/// read as the one segment `acme/r:fork`).
pub fn projection_as_percent(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    for (i, &byte) in bytes.iter().enumerate() {
        let escape = byte == b'~'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        out.push(if escape { b'%' } else { byte });
    }
    String::from_utf8(out).unwrap_or_else(|_| path.to_owned())
}

/// The tenant segment of a tenant-bound id (`None` for a bare id).
pub fn tenant_of(id: &str) -> Option<&str> {
    id.split_once('/').map(|(tenant, _)| tenant)
}

/// A fresh run id: `run_` and 128 random bits from the OS in lowercase hex.
///
/// MCP-14: a run's id is its MCP `taskId`, whose opaque segment must carry at
/// least 128 bits of entropy (a v4 UUID has only 122). Should the OS source
/// fail, two v4 UUIDs (244 random bits) stand in.
pub fn new_run_id() -> String {
    let mut bytes = [0u8; 16];
    match getrandom::fill(&mut bytes) {
        Ok(()) => format!("run_{}", hex::encode(bytes)),
        Err(_) => format!(
            "run_{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_is_one_segment_and_maps_to_percent_encoding() {
        assert_eq!(project("acme/r-9f3c"), "acme~2Fr-9f3c");
        assert_eq!(project("anon:s/r_1.2"), "anon~3As~2Fr_1.2");
        assert_eq!(project("run_0a1b"), "run_0a1b");
        assert_eq!(
            projection_as_percent("/runs/acme~2Fr-9f3c:fork"),
            "/runs/acme%2Fr-9f3c:fork"
        );
        // A tilde that is no escape stays (it is an unreserved character).
        assert_eq!(projection_as_percent("/a~b/~2"), "/a~b/~2");
        assert_eq!(tenant_of("acme/r"), Some("acme"));
        assert_eq!(tenant_of("run_1"), None);
    }
}
