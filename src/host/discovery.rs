//! Discovery: `GET /.well-known/openwop`, the wire major, and capability gates.
//!
//! toolcert asks for v2 first (`OpenWOP-Version: 2.0`, then `2`, C-19) and falls back to the
//! v1 document (no header). A v2 capability is claimed by the record's presence and a facet
//! by its key being `true`; a v1 block is claimed by `supported: true` (read at the root
//! first, then under the deprecated `capabilities` wrapper).

use serde_json::Value;

use super::{HostClient, HostRequest, TransportError, WireMajor};
use crate::transcript::Exchange;

/// The captured discovery document.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The document as served.
    pub document: Value,
    /// The wire major it implies.
    pub wire: WireMajor,
    /// The `ETag` header, if any.
    pub etag: Option<String>,
    /// Lowercase hex SHA-256 over the RFC 8785 form of the document.
    pub sha256: String,
    /// The exchanges made to get it.
    pub exchanges: Vec<Exchange>,
}

/// Discovery failed: the host could not be observed at all.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DiscoveryError {
    /// Transport failure.
    #[error("discovery GET /.well-known/openwop failed: {0}")]
    Transport(#[from] TransportError),
    /// The host answered, but with no usable document.
    #[error(
        "discovery GET /.well-known/openwop answered HTTP {status} with no usable OpenWOP document ({why}); is --host the host's base URL?"
    )]
    NoDocument {
        /// Last status seen.
        status: u16,
        /// Why the body was not usable.
        why: String,
    },
}

fn is_v2(doc: &Value) -> bool {
    doc.get("protocolVersions")
        .and_then(Value::as_array)
        .is_some_and(|vs| {
            vs.iter()
                .any(|v| v.as_str().is_some_and(|s| s.starts_with("2.")))
        })
}

/// Fetch and classify the discovery document.
pub async fn discover(client: &HostClient) -> Result<Discovery, DiscoveryError> {
    let mut exchanges = Vec::new();
    let mut last = (0u16, String::from("no answer"));
    for header in [Some("2.0"), Some("2"), None] {
        let mut req = HostRequest::get("/.well-known/openwop");
        if let Some(v) = header {
            req = req.header("OpenWOP-Version", v);
        }
        let (result, exchange) = client.send("discovery", &req).await;
        exchanges.push(exchange);
        let resp = result?;
        if resp.status != 200 || !resp.body.is_object() || resp.body.get("$nonJson").is_some() {
            last = (resp.status, "the body is not a JSON object".into());
            continue;
        }
        if !resp
            .body
            .get("protocolVersions")
            .is_some_and(Value::is_array)
        {
            last = (
                resp.status,
                "the object has no protocolVersions list".into(),
            );
            continue;
        }
        let wire = if is_v2(&resp.body) {
            WireMajor::V2
        } else if header.is_none() {
            WireMajor::V1
        } else {
            // A v1-only host may ignore the header; take its document on the plain request.
            last = (resp.status, "no 2.x in protocolVersions".into());
            continue;
        };
        return Ok(Discovery {
            sha256: crate::canonical::jcs_sha256_hex(&resp.body),
            etag: resp.headers.get("etag").cloned(),
            document: resp.body,
            wire,
            exchanges,
        });
    }
    Err(DiscoveryError::NoDocument {
        status: last.0,
        why: last.1,
    })
}

impl Discovery {
    /// Whether the dotted capability path is advertised: `toolHooks` (the family) or
    /// `toolHooks.perToolAuthorization` (a facet that must be `true`).
    pub fn advertises(&self, gate: &str) -> bool {
        let mut parts = gate.split('.');
        let Some(family) = parts.next() else {
            return false;
        };
        let record = match self.wire {
            WireMajor::V2 => self.document.get(family),
            WireMajor::V1 => self.document.get(family).or_else(|| {
                self.document
                    .get("capabilities")
                    .and_then(|c| c.get(family))
            }),
        };
        let Some(record) = record.filter(|r| r.is_object()) else {
            return false;
        };
        if self.wire == WireMajor::V1 && record.get("supported") != Some(&Value::Bool(true)) {
            return false;
        }
        let mut node = record;
        for facet in parts {
            match node.get(facet) {
                Some(next) => node = next,
                None => return false,
            }
        }
        // A facet is claimed when true; a nested object facet is claimed by presence.
        node.as_bool().unwrap_or(node.is_object())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn disc(document: Value, wire: WireMajor) -> Discovery {
        Discovery {
            sha256: String::new(),
            document,
            wire,
            etag: None,
            exchanges: vec![],
        }
    }

    #[test]
    fn v2_gates_by_presence_and_true_facets() {
        let d = disc(
            json!({"protocolVersions": ["2.0"], "toolHooks": {"status": "stable", "prePostEvents": true, "perToolRateLimit": false}}),
            WireMajor::V2,
        );
        assert!(d.advertises("toolHooks"));
        assert!(d.advertises("toolHooks.prePostEvents"));
        assert!(!d.advertises("toolHooks.perToolRateLimit"));
        assert!(!d.advertises("toolHooks.perToolAuthorization"));
        assert!(!d.advertises("replay"));
    }

    #[test]
    fn v1_needs_supported_true_and_reads_the_wrapper_second() {
        let d = disc(
            json!({"capabilities": {"toolHooks": {"supported": true, "prePostEvents": true}}, "mcp": {"supported": false}}),
            WireMajor::V1,
        );
        assert!(d.advertises("toolHooks.prePostEvents"));
        assert!(!d.advertises("mcp"));
    }
}
