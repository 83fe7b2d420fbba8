//! Discovery: `GET /.well-known/openwop`, the wire major, and capability gates.
//!
//! toolcert asks for v2 first (`OpenWOP-Version: 2.0`, then `2`, C-19) and falls back to the
//! v1 document (no header). A v2 document lists a `2.x` in `protocolVersions`; a v1 document
//! carries `protocolVersion` (a string such as `"1.0"`) and/or a `protocolVersions` list without
//! a 2.x (the public example hosts carry only the string). A v2 capability is claimed by the
//! record's presence and a facet by its key being `true`; a v1 block is claimed by
//! `supported: true`, read at the root first, then under the deprecated `capabilities`
//! wrapper. A family named in `refusedCapabilities[]` is refused: its rows are inapplicable.

use serde_json::Value;

use super::client::{HostClient, HostRequest, TransportError};
use super::paths::WireMajor;
use toolcert_core::transcript::Exchange;

/// The captured discovery document.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The document as served.
    pub document: Value,
    /// The wire major it implies.
    pub wire: WireMajor,
    /// Why that major was chosen, in words (reports print it).
    pub wire_reason: String,
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

/// What a discovery document says about its major.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    V2(String),
    V1(String),
    Neither(String),
}

fn classify(doc: &Value) -> Kind {
    let listed: Option<Vec<&str>> = doc
        .get("protocolVersions")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().filter_map(Value::as_str).collect());
    let single = doc.get("protocolVersion").and_then(Value::as_str);
    if let Some(list) = &listed
        && let Some(v2) = list.iter().find(|v| v.starts_with("2."))
    {
        return Kind::V2(format!("protocolVersions lists {v2}"));
    }
    if let Some(v) = single.filter(|v| v.starts_with("2.") || *v == "2") {
        return Kind::V2(format!("protocolVersion is {v:?}"));
    }
    match (single, &listed) {
        (Some(v), _) if v.starts_with("1.") || v == "1" => {
            let also = match &listed {
                Some(list) => format!(" (protocolVersions {list:?})"),
                None => " and no protocolVersions list".to_string(),
            };
            Kind::V1(format!("protocolVersion is {v:?}{also}"))
        }
        (_, Some(list)) if list.iter().any(|v| v.starts_with("1.")) => {
            Kind::V1(format!("protocolVersions {list:?} lists no 2.x"))
        }
        (Some(v), _) => Kind::Neither(format!("protocolVersion {v:?} is neither 1.x nor 2.x")),
        (None, Some(list)) => Kind::Neither(format!(
            "protocolVersions {list:?} lists neither a 1.x nor a 2.x version"
        )),
        (None, None) => Kind::Neither(
            "the object has neither a protocolVersion string (v1) nor a protocolVersions list (v2)"
                .into(),
        ),
    }
}

/// v1 blocks whose schema has no `supported` member: they are claimed by their facets alone.
/// RFC 0034 §A adds `capabilities.observability.testSeams.{otelScrape, debugBundleExport}`
/// with no `supported` flag, and `spec/v1/host-sample-test-seams.md` §2 gates the span scrape
/// seam on `observability.testSeams.otelScrape: true` alone.
const V1_BLOCKS_WITHOUT_SUPPORTED: &[&str] = &["observability"];

/// Why a response is no discovery document at all, if it is not.
fn unusable(
    status: u16,
    headers: &std::collections::BTreeMap<String, String>,
    body: &Value,
) -> Option<String> {
    if (300..400).contains(&status) {
        return Some(match headers.get("location") {
            Some(to) => format!(
                "a redirect to {to:?}, which toolcert never follows; pass the URL it names as --host"
            ),
            None => "a redirect without a Location header, which toolcert never follows".into(),
        });
    }
    if status != 200 {
        return Some(format!("HTTP {status} instead of 200"));
    }
    // The non-JSON form is exactly the two members `parse_body` writes: a JSON root that
    // merely carries a `$nonJson` member among its own is the host's data, not that form.
    let non_json = body.as_object().is_some_and(|m| {
        m.len() == 2 && m.contains_key("$nonJson") && m.contains_key("$parseError")
    });
    if non_json || !body.is_object() {
        return Some("the body is not a JSON object".into());
    }
    None
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
        if let Some(why) = unusable(resp.status, &resp.headers, &resp.body) {
            last = (resp.status, why);
            continue;
        }
        let (wire, wire_reason) = match (classify(&resp.body), header) {
            (Kind::V2(why), Some(h)) => (
                WireMajor::V2,
                format!("asked with OpenWOP-Version: {h}, the document's {why}"),
            ),
            (Kind::V2(why), None) => (
                WireMajor::V2,
                format!("asked without a version header, the document's {why}"),
            ),
            (Kind::V1(why), None) => (
                WireMajor::V1,
                format!("no v2 document was served; the v1 document's {why}"),
            ),
            // A v1-only host may ignore the header; take its document on the plain request.
            (Kind::V1(why), Some(_)) => {
                last = (resp.status, format!("a v1 document ({why})"));
                continue;
            }
            (Kind::Neither(why), _) => {
                last = (resp.status, why);
                continue;
            }
        };
        return Ok(Discovery {
            sha256: toolcert_base::canonical::jcs_sha256_hex(&resp.body),
            etag: resp.headers.get("etag").cloned(),
            document: resp.body,
            wire,
            wire_reason,
            exchanges,
        });
    }
    Err(DiscoveryError::NoDocument {
        status: last.0,
        why: last.1,
    })
}

/// Whether a gate is met, and if not, why (a fact about the host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advertised {
    /// The capability (and facet) is advertised.
    Yes,
    /// It is not advertised.
    No,
    /// The family is listed in `refusedCapabilities[]`.
    Refused,
}

impl Discovery {
    /// The capability record of a family: the root first, then (v1) the deprecated
    /// `capabilities` wrapper.
    fn record(&self, family: &str) -> Option<&Value> {
        let record = match self.wire {
            WireMajor::V2 => self.document.get(family),
            WireMajor::V1 => self.document.get(family).or_else(|| {
                self.document
                    .get("capabilities")
                    .and_then(|c| c.get(family))
            }),
        };
        record.filter(|r| r.is_object())
    }

    /// Families the host says it refuses (`refusedCapabilities[]`, at the root or under the v1
    /// wrapper).
    pub fn refused(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let lists = [
            self.document.get("refusedCapabilities"),
            self.document
                .get("capabilities")
                .and_then(|c| c.get("refusedCapabilities")),
        ];
        for list in lists.into_iter().flatten() {
            for family in list
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !out.iter().any(|f| f == family) {
                    out.push(family.to_string());
                }
            }
        }
        out
    }

    /// Whether the dotted capability path is advertised: `toolHooks` (the family),
    /// `toolHooks.perToolAuthorization` (a facet that must be `true`), or
    /// `mcp.features.extensions` (a member a list facet must hold: a segment after an array
    /// names a string the array contains, MCP-14).
    pub fn advertises(&self, gate: &str) -> bool {
        self.advertisement(gate) == Advertised::Yes
    }

    /// Whether the dotted capability path is advertised, not advertised, or refused.
    pub fn advertisement(&self, gate: &str) -> Advertised {
        let mut parts = gate.split('.');
        let Some(family) = parts.next() else {
            return Advertised::No;
        };
        if self.refused().iter().any(|f| f == family) {
            return Advertised::Refused;
        }
        let Some(record) = self.record(family) else {
            return Advertised::No;
        };
        if self.wire == WireMajor::V1
            && !V1_BLOCKS_WITHOUT_SUPPORTED.contains(&family)
            && record.get("supported") != Some(&Value::Bool(true))
        {
            return Advertised::No;
        }
        let mut node = record;
        let mut parts = parts.peekable();
        while let Some(facet) = parts.next() {
            if let Value::Array(members) = node {
                // A list facet: the segment is a member it must hold, and nothing follows it.
                let listed = members.iter().any(|m| m.as_str() == Some(facet));
                return if listed && parts.peek().is_none() {
                    Advertised::Yes
                } else {
                    Advertised::No
                };
            }
            match node.get(facet) {
                Some(next) => node = next,
                None => return Advertised::No,
            }
        }
        // A facet is claimed when true; a nested object facet is claimed by presence.
        if node.as_bool().unwrap_or(node.is_object()) {
            Advertised::Yes
        } else {
            Advertised::No
        }
    }

    /// Why a scenario gate does not hold on this host (a fact about the host), or `None` when
    /// it does. A gate is alternatives joined with ` | `, each facets joined with ` & `
    /// (HOOKS-EVT-5 needs both `safeFetch` and `prePostEvents`); a facet written `!x` holds
    /// when `x` is not advertised (absent, not `true`, or its family refused), so a leg of
    /// DISC-4 runs only on a host that lacks the family it probes. The reason names, per
    /// alternative, the first facet that does not hold.
    pub fn unmet_gate(&self, gate: &str) -> Option<String> {
        let mut reasons = Vec::new();
        for alternative in gate.split(" | ") {
            let unmet = alternative.split(" & ").find_map(|facet| {
                match facet.strip_prefix('!') {
                    Some(absent) => (self.advertisement(absent) == Advertised::Yes).then(|| {
                        format!(
                            "the host advertises {absent} (this leg is witnessed on a capability the host does not advertise)"
                        )
                    }),
                    None => match self.advertisement(facet) {
                        Advertised::Yes => None,
                        Advertised::Refused => Some(format!(
                            "the host refuses the {} family (refusedCapabilities)",
                            facet.split('.').next().unwrap_or(facet)
                        )),
                        Advertised::No => Some(format!("the host does not advertise {facet}")),
                    },
                }
            });
            match unmet {
                None => return None,
                Some(reason) => reasons.push(reason),
            }
        }
        Some(reasons.join(", and "))
    }

    /// The fixture workflow ids the host advertises: `fixtures[]` at the root, in v1 and in
    /// v2 alike (a metadata key of the closed v2 root, capabilities.md §3.1; the v2 root has
    /// no `metadata` key to hold one).
    pub fn fixtures(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if let Some(list) = self.document.get("fixtures") {
            for id in list
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !out.iter().any(|f| f == id) {
                    out.push(id.to_string());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn disc(document: Value, wire: WireMajor) -> Discovery {
        Discovery {
            sha256: String::new(),
            wire_reason: String::new(),
            document,
            wire,
            etag: None,
            exchanges: vec![],
        }
    }

    /// A document root that carries toolcert's non-JSON member among its own is a JSON
    /// object (the host's data); only the exact form the body parser writes is not.
    #[test]
    fn a_planted_non_json_member_is_the_hosts_data() {
        let ok = std::collections::BTreeMap::new();
        let forged = json!({"protocolVersion": "1.0", "$nonJson": "x", "$blocked": "y"});
        assert_eq!(unusable(200, &ok, &forged), None);
        let parsed = crate::host::client::parse_body(b"<html>");
        assert!(unusable(200, &ok, &parsed).is_some());
    }

    #[test]
    fn a_v1_observability_facet_is_claimed_without_supported() {
        let d = disc(
            json!({"protocolVersion": "1.0", "observability": {"testSeams": {"otelScrape": true}},
                   "agents": {"subRunAttestation": true}}),
            WireMajor::V1,
        );
        assert!(d.advertises("observability.testSeams.otelScrape"));
        assert!(!d.advertises("observability.testSeams.debugBundleExport"));
        // Other v1 blocks still need `supported: true`.
        assert!(!d.advertises("agents.subRunAttestation"));
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
    fn a_segment_after_a_list_facet_is_a_member_it_must_hold() {
        let d = disc(
            json!({"protocolVersions": ["2.0"], "mcp": {"features": ["mrtr", "extensions"], "empty": []}}),
            WireMajor::V2,
        );
        assert!(d.advertises("mcp.features.extensions"));
        assert!(d.advertises("mcp.features.mrtr"));
        assert!(!d.advertises("mcp.features.tasks"));
        assert!(!d.advertises("mcp.features.extensions.more"));
        assert!(!d.advertises("mcp.empty.extensions"));
        // The list itself is not a facet that is claimed.
        assert!(!d.advertises("mcp.features"));
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

    #[test]
    fn every_real_document_is_classified() {
        // The public example hosts: a protocolVersion string and nothing else.
        assert!(matches!(
            classify(&json!({"protocolVersion": "1.0"})),
            Kind::V1(_)
        ));
        assert!(matches!(
            classify(&json!({"protocolVersion": "1.0", "protocolVersions": ["1.0", "1.1"]})),
            Kind::V1(_)
        ));
        assert!(matches!(
            classify(&json!({"protocolVersions": ["1.0"]})),
            Kind::V1(_)
        ));
        assert!(matches!(
            classify(&json!({"protocolVersions": ["1.1", "2.0"], "preferredVersion": "2.0"})),
            Kind::V2(_)
        ));
        let Kind::Neither(why) = classify(&json!({"name": "x"})) else {
            panic!("not a discovery document");
        };
        assert!(why.contains("protocolVersion"), "{why}");
        assert!(matches!(
            classify(&json!({"protocolVersion": "3.0"})),
            Kind::Neither(_)
        ));
    }

    #[test]
    fn refused_families_are_refused_wherever_they_are_listed() {
        let d = disc(
            json!({"protocolVersion": "1.0", "capabilities": {"refusedCapabilities": ["aiProviders"]}, "refusedCapabilities": ["mcp"], "toolHooks": {"supported": true}}),
            WireMajor::V1,
        );
        assert_eq!(
            d.refused(),
            vec!["mcp".to_string(), "aiProviders".to_string()]
        );
        assert_eq!(d.advertisement("aiProviders"), Advertised::Refused);
        assert_eq!(d.advertisement("mcp.client"), Advertised::Refused);
        assert_eq!(d.advertisement("toolHooks"), Advertised::Yes);
        assert_eq!(d.advertisement("replay"), Advertised::No);
    }

    #[test]
    fn gates_join_alternatives_and_facets_and_negate_with_a_bang() {
        let d = disc(
            json!({"protocolVersion": "1.0", "refusedCapabilities": ["mcp"],
                   "toolHooks": {"supported": true, "prePostEvents": true},
                   "agents": {"subRunAttestation": true}}),
            WireMajor::V1,
        );
        assert_eq!(d.unmet_gate("toolHooks.prePostEvents"), None);
        assert_eq!(d.unmet_gate("replay | toolHooks"), None);
        assert_eq!(
            d.unmet_gate("toolHooks & replay").as_deref(),
            Some("the host does not advertise replay")
        );
        assert_eq!(
            d.unmet_gate("mcp.client").as_deref(),
            Some("the host refuses the mcp family (refusedCapabilities)")
        );
        // `!x` holds for a family absent, refused, or present without `supported: true`.
        assert_eq!(d.unmet_gate("!toolCatalog"), None);
        assert_eq!(d.unmet_gate("!mcp"), None);
        assert_eq!(d.unmet_gate("!agents"), None);
        assert_eq!(d.unmet_gate("!toolHooks.perToolRateLimit"), None);
        let why = d.unmet_gate("!toolHooks").unwrap();
        assert!(why.starts_with("the host advertises toolHooks"), "{why}");
        assert_eq!(
            d.unmet_gate("!toolHooks | replay").as_deref(),
            Some(
                "the host advertises toolHooks (this leg is witnessed on a capability the host does not advertise), and the host does not advertise replay"
            )
        );
    }

    #[test]
    fn fixtures_come_from_the_root_on_both_majors() {
        let v1 = disc(json!({"fixtures": ["conformance-noop"]}), WireMajor::V1);
        assert_eq!(v1.fixtures(), vec!["conformance-noop".to_string()]);
        let v2 = disc(
            json!({"fixtures": ["conformance-effect", "conformance-effect"]}),
            WireMajor::V2,
        );
        assert_eq!(v2.fixtures(), vec!["conformance-effect".to_string()]);
        // A `metadata` object is no key of the closed v2 root: nothing is read from it.
        let misplaced = disc(
            json!({"metadata": {"conformance.fixtures": ["conformance-effect"]}}),
            WireMajor::V2,
        );
        assert!(misplaced.fixtures().is_empty());
    }

    #[test]
    fn a_redirect_is_named_as_one() {
        let headers =
            std::collections::BTreeMap::from([("location".to_string(), "https://x/".to_string())]);
        let why = unusable(302, &headers, &Value::Null).unwrap();
        assert!(
            why.contains("redirect") && why.contains("https://x/"),
            "{why}"
        );
    }
}
