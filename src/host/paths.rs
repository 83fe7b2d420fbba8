//! Paths per wire major: v1 prefixes `/v1` and mounts seams under `/v1/host/sample/`; v2 is
//! unprefixed and mounts seams under `/conformance/seams/sample/`.

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

#[cfg(test)]
mod tests {
    use super::*;

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
