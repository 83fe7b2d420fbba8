//! Paths per wire major: v1 prefixes `/v1` and mounts seams under `/v1/host/sample/`; v2 is
//! unprefixed and mounts seams under `/conformance/seams/sample/`.
//!
//! An id put into a path is one segment. A v2 tenant-bound id (`<tenant>/<opaque>`,
//! identity.md §5, RFC 0184 §A.1) travels projected: every byte outside `[A-Za-z0-9._-]`
//! becomes `~` and two uppercase hex digits (`acme/r-9f3c` ⇒ `acme~2Fr-9f3c`), which a v2 host
//! MUST accept on every tenant-bound parameter (it MUST also accept `%2F`). v1 has no
//! tenant-bound ids, so a v1 id holding a `/` is percent-encoded. Any other value is kept as
//! it is, except for the characters a path segment cannot hold, which are percent-encoded
//! (RFC 3986 §3.3).

use serde::{Deserialize, Serialize};

/// The protocol major a host speaks, decided from its discovery document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireMajor {
    /// Frozen v1 (`/v1/...`).
    #[serde(rename = "1")]
    V1,
    /// Current v2 (unprefixed).
    #[serde(rename = "2")]
    V2,
}

impl WireMajor {
    /// The number, for reports.
    pub fn number(self) -> u8 {
        match self {
            WireMajor::V1 => 1,
            WireMajor::V2 => 2,
        }
    }

    /// An API path for this major (`/runs/x` ⇒ `/v1/runs/x` on v1).
    pub fn api_path(self, path: &str) -> String {
        match self {
            WireMajor::V1 => format!("/v1{path}"),
            WireMajor::V2 => path.to_string(),
        }
    }

    /// A seam path for this major: a sample seam (`toolhooks/invoke`) or one of the
    /// `packs-test/…` family.
    pub fn seam_path(self, seam: &str) -> String {
        // The packs-test seams are a family of their own beside the sample seams.
        if let Some(rest) = seam.strip_prefix("packs-test/") {
            return match self {
                WireMajor::V1 => format!("/v1/packs-test/{rest}"),
                WireMajor::V2 => format!("/conformance/seams/packs-test/{rest}"),
            };
        }
        match self {
            WireMajor::V1 => format!("/v1/host/sample/{seam}"),
            WireMajor::V2 => format!("/conformance/seams/sample/{seam}"),
        }
    }
}

impl WireMajor {
    /// `value` as one path segment of this major (see the module docs): a value holding a `/`
    /// is a tenant-bound id, projected on v2 (percent-encoded on v1); any other value keeps
    /// its characters except those a segment cannot hold.
    pub fn id_segment(self, value: &str) -> String {
        match self {
            WireMajor::V2 if value.contains('/') => project_id(value),
            _ => percent_encode_segment(value),
        }
    }
}

/// identity.md §5's projection of a tenant-bound id into one path segment: every UTF-8 byte
/// outside `[A-Za-z0-9._-]` becomes `~` and two uppercase hex digits. The inverse is
/// [`toolcert_core::expect::ids::unproject`].
pub fn project_id(id: &str) -> String {
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

/// `value` with every byte a path segment cannot hold as is (RFC 3986 `pchar`: unreserved,
/// sub-delims, `:` and `@`) percent-encoded, `%` and `/` among them.
pub fn percent_encode_segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(
                byte,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
            );
        if keep {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tenant_bound_ids_travel_as_one_segment() {
        // identity.md §5's example, and the bytes a projection must escape.
        assert_eq!(WireMajor::V2.id_segment("acme/r-9f3c"), "acme~2Fr-9f3c");
        assert_eq!(
            WireMajor::V2.id_segment("anon:sess-3f9c/r_1.2"),
            "anon~3Asess-3f9c~2Fr_1.2"
        );
        assert_eq!(WireMajor::V2.id_segment("a~b/c"), "a~7Eb~2Fc");
        assert_eq!(WireMajor::V2.id_segment("café/r"), "caf~C3~A9~2Fr");
        // v1 has no tenant-bound ids: a slash is percent-encoded, never taken as a separator.
        assert_eq!(WireMajor::V1.id_segment("acme/r-9f3c"), "acme%2Fr-9f3c");
        // A bare id, or a toolId with its scope, is kept as it is.
        for major in [WireMajor::V1, WireMajor::V2] {
            assert_eq!(major.id_segment("run_0a1b"), "run_0a1b");
            assert_eq!(major.id_segment("openwop:search"), "openwop:search");
            assert_eq!(major.id_segment("a b?c#d%"), "a%20b%3Fc%23d%25");
        }
    }

    proptest! {
        /// The projection undoes exactly (identity.md §5: decode before matching the grammar)
        /// and yields one segment of the projection's alphabet.
        #[test]
        fn projection_round_trips(id in "\\PC{0,40}") {
            let projected = project_id(&id);
            prop_assert!(projected
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_~".contains(&b)));
            prop_assert_eq!(toolcert_core::expect::ids::unproject(&projected), id);
        }

        /// A percent-encoded segment holds no separator and decodes to the value.
        #[test]
        fn percent_encoding_keeps_one_segment(value in "\\PC{0,40}") {
            let encoded = percent_encode_segment(&value);
            prop_assert!(!encoded.contains(['/', '?', '#']));
            let bytes = encoded.as_bytes();
            let mut decoded = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'%' {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                    decoded.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 3;
                } else {
                    decoded.push(bytes[i]);
                    i += 1;
                }
            }
            prop_assert_eq!(String::from_utf8(decoded).unwrap(), value);
        }
    }

    #[test]
    fn paths_follow_the_major() {
        assert_eq!(WireMajor::V1.api_path("/runs/r"), "/v1/runs/r");
        assert_eq!(WireMajor::V2.api_path("/runs/r"), "/runs/r");
        assert_eq!(
            WireMajor::V1.seam_path("toolhooks/invoke"),
            "/v1/host/sample/toolhooks/invoke"
        );
        assert_eq!(
            WireMajor::V2.seam_path("toolhooks/invoke"),
            "/conformance/seams/sample/toolhooks/invoke"
        );
        assert_eq!(
            WireMajor::V1.seam_path("packs-test/run"),
            "/v1/packs-test/run"
        );
        assert_eq!(
            WireMajor::V2.seam_path("packs-test/run"),
            "/conformance/seams/packs-test/run"
        );
    }
}
