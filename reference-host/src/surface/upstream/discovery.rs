//! The v1 discovery document of upstream-only mode.
//!
//! Served at `GET /.well-known/openwop` whatever `OpenWOP-Version` the
//! request names (the host speaks v1 only in this mode), with the same
//! strong ETag and conditional GET as the v2 document. It carries
//! `protocolVersion: "1.0"` and no `protocolVersions`/`preferredVersion`
//! (those are v2). Each capability family is a block with `supported: true`
//! at the root, mirrored under the deprecated `capabilities` wrapper; the
//! families this mode has no upstream surface for are named in
//! `refusedCapabilities`; `fixtures` lists the upstream fixture workflows.
//! `toolCatalog` is served (`GET /v1/tools`, the host's own tools).
//! There is no `metadata.conformance.seamsProfile` (v2) whether or not the
//! seams are on.
//!
//! The facets the discovery mutants break come from the same functions as
//! the v2 document's ([`crate::surface::discovery`]), so those mutants alter this
//! document the same way where v1 has the facet.

use serde_json::{Value, json};

use crate::base::mutant::Mutant;
use crate::domain::catalog::SOURCE_HOST_EXTENSION;
use crate::domain::effects::sweeper::EFFECT_RETENTION_SECS;
use crate::surface::discovery::{
    DiscoveryDoc, cross_region_facet, fail_closed_facet, layer1_retention_facet,
    per_tool_rate_limit_facet,
};
use crate::surface::upstream::MODE;
use crate::surface::upstream::workflows::FIXTURES;

/// The v1 protocol version.
pub const PROTOCOL_VERSION: &str = "1.0";

/// `implementation.name`.
pub const IMPLEMENTATION_NAME: &str = "toolcert-reference-host";

/// Capability families this mode does not serve: the host has them in v2,
/// but they have no upstream surface here.
pub const REFUSED_CAPABILITIES: &[&str] = &["replay", "mcp", "a2a", "httpClient", "aiProviders"];

/// Renders the v1 document for `mutant` (a [`crate::surface::discovery::Render`]). v1 has no
/// `seamsProfile`; with the seams on, the one seam v1 advertises by a capability flag,
/// `observability.testSeams.otelScrape` (RFC 0034 §B), is claimed.
pub fn render(seams_enabled: bool, mutant: Option<Mutant>) -> DiscoveryDoc {
    DiscoveryDoc::from_document(&document(seams_enabled, mutant))
}

/// The v1 document as JSON.
pub fn document(seams_enabled: bool, mutant: Option<Mutant>) -> Value {
    let mut families = json!({
        "toolHooks": {
            "supported": true,
            "prePostEvents": true,
            "perToolAuthorization": true,
            "perToolRateLimit": per_tool_rate_limit_facet(mutant),
        },
        "idempotency": {
            "supported": true,
            "layer1RetentionSeconds": layer1_retention_facet(mutant),
            "layer2RetentionSeconds": EFFECT_RETENTION_SECS,
            "crossRegion": cross_region_facet(mutant),
        },
        "authorization": {
            "supported": true,
            "failClosed": fail_closed_facet(mutant),
        },
        // v1 tool-catalog.md §A: the host's own tools, in both views.
        "toolCatalog": {
            "supported": true,
            "sources": [SOURCE_HOST_EXTENSION],
            "compactView": true,
        },
    });
    if seams_enabled {
        families["observability"] = json!({"testSeams": {"otelScrape": true}});
    }
    let mut root = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "implementation": {
            "name": IMPLEMENTATION_NAME,
            "version": env!("CARGO_PKG_VERSION"),
            "mode": MODE,
        },
        "refusedCapabilities": REFUSED_CAPABILITIES,
        "fixtures": FIXTURES,
    });
    if let (Some(object), Some(blocks)) = (root.as_object_mut(), families.as_object()) {
        for (family, block) in blocks {
            object.insert(family.clone(), block.clone());
        }
        // Deprecated v1 wrapper: the same blocks again.
        object.insert("capabilities".to_owned(), families.clone());
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(doc: &DiscoveryDoc) -> Value {
        serde_json::from_slice(doc.body()).expect("json")
    }

    #[test]
    fn the_v1_document() {
        let value = parsed(&render(true, None));
        assert_eq!(
            value,
            json!({
                "protocolVersion": "1.0",
                "implementation": {"name": "toolcert-reference-host",
                                   "version": env!("CARGO_PKG_VERSION"), "mode": "upstream-only"},
                "toolHooks": {"supported": true, "prePostEvents": true,
                              "perToolAuthorization": true, "perToolRateLimit": true},
                "idempotency": {"supported": true, "layer1RetentionSeconds": 86400,
                                "layer2RetentionSeconds": 1209600, "crossRegion": "single-region"},
                "authorization": {"supported": true, "failClosed": true},
                "observability": {"testSeams": {"otelScrape": true}},
                "toolCatalog": {"supported": true, "sources": ["host-extension"],
                                "compactView": true},
                "refusedCapabilities": ["replay", "mcp", "a2a", "httpClient", "aiProviders"],
                "fixtures": ["conformance-noop", "conformance-idempotent", "conformance-delay"],
                "capabilities": {
                    "toolHooks": {"supported": true, "prePostEvents": true,
                                  "perToolAuthorization": true, "perToolRateLimit": true},
                    "idempotency": {"supported": true, "layer1RetentionSeconds": 86400,
                                    "layer2RetentionSeconds": 1209600,
                                    "crossRegion": "single-region"},
                    "authorization": {"supported": true, "failClosed": true},
                    "observability": {"testSeams": {"otelScrape": true}},
                    "toolCatalog": {"supported": true, "sources": ["host-extension"],
                                    "compactView": true},
                },
            })
        );
        let without_seams = parsed(&render(false, None));
        assert!(
            without_seams.get("observability").is_none(),
            "{without_seams}"
        );
    }

    #[test]
    fn discovery_mutants_alter_root_and_wrapper_alike() {
        let cases = [
            (
                Mutant::ToolhooksFacetNotBoolean,
                "toolHooks",
                "perToolRateLimit",
                json!("yes"),
            ),
            (
                Mutant::AuthorizationFailclosedFalse,
                "authorization",
                "failClosed",
                json!(false),
            ),
            (
                Mutant::L1RetentionShort,
                "idempotency",
                "layer1RetentionSeconds",
                json!(3600),
            ),
            (
                Mutant::CrossRegionUnknown,
                "idempotency",
                "crossRegion",
                json!("multi-master"),
            ),
        ];
        for (mutant, family, facet, expected) in cases {
            let value = parsed(&render(true, Some(mutant)));
            assert_eq!(value[family][facet], expected, "{mutant}");
            assert_eq!(value["capabilities"][family][facet], expected, "{mutant}");
            assert!(value.get("protocolVersions").is_none());
        }
    }
}
