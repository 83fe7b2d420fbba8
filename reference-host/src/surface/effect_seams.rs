//! `GET /host/effect-seams`: the effect-seam manifest (RPL-1, RPL-11;
//! replay.md §The effect-seam manifest: `{manifestVersion: "1", host: {name,
//! build}, seams[]}`, each row `{seam, kind, guarded: true, guardedBy,
//! note?}`).
//!
//! Each row is a place where this host performs an effect and how a replay
//! fork suppresses it: the tool call to a receiver (kind `http`: a replay
//! fork serves its recorded outcome instead, TURN-D5), one `provider-sdk`
//! row per provider-executed tool the host supports (TURN-F1): the provider
//! runs it, and a replay fork serves the round that ran it from the record
//! instead of asking the provider again (TURN-F2), and the pack node
//! dispatch of the packs-test seam (kind `http`, a POST to the node's
//! receiver): a replay fork serves a side-effecting node its recorded
//! outcome instead (RPL-2, RPL-4).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::error::{ApiError, ErrorCode};
use crate::surface::catalog_routes::caller_scopes;
use crate::turn::provider_tools;

/// The manifest's `host.name`.
pub const HOST_NAME: &str = "toolcert-reference-host";

/// Discovery's `replay.effectSeamsManifest`.
pub const MANIFEST_PATH: &str = "/host/effect-seams";

/// The manifest document.
pub fn manifest(mutant: Option<Mutant>) -> Value {
    let mut seams = vec![json!({
        "seam": "tool-receiver",
        "kind": "http",
        "guarded": true,
        "guardedBy": "turn admission's replay source: a replay fork serves the call's recorded outcome",
        "note": "turn-run tool calls POST to the tool's receiverUrl; a replay fork serves the source run's recorded outcome and never dispatches",
    })];
    seams.extend(provider_tools::manifest_rows(mutant));
    seams.push(crate::surface::seams::packs::manifest_row());
    json!({
        "manifestVersion": "1",
        "host": {"name": HOST_NAME, "build": build()},
        "seams": seams,
    })
}

/// `host.build` (`{kind, id}`): this host has no image or artifact digest
/// at hand, so it names the digest of its package name and version.
fn build() -> Value {
    let name = format!("{HOST_NAME}@{}", env!("CARGO_PKG_VERSION"));
    json!({"kind": "artifact-sha256", "id": crate::base::args_hash::sha256_hex(name.as_bytes())})
}

/// The ids of the manifest's rows, in manifest order: the seams
/// `POST /conformance/seams/sample/effect-seams/fire` can drive (RPL-11).
pub fn seam_ids(mutant: Option<Mutant>) -> Vec<String> {
    manifest(mutant)["seams"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|row| row["seam"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Handler for `GET /host/effect-seams`, authenticated like `GET /tools`.
pub async fn get_effect_seams(
    State(state): State<Domain>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    caller_scopes(&state, &headers)?;
    if state.mutant() == Some(Mutant::EffectSeamsUnserved) {
        // Bug: the manifest discovery points at is not served (RPL-1).
        return Err(ApiError::new(
            ErrorCode::NotFound,
            "no route for GET /host/effect-seams",
        ));
    }
    Ok(Json(manifest(state.mutant())).into_response())
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::EffectSeamsUnserved,
    name: "effect-seams-unserved",
    breaks: "GET /host/effect-seams answers 404 (RPL-1)",
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_has_the_replay_md_shape_and_a_provider_row() {
        let doc = manifest(None);
        assert_eq!(doc["manifestVersion"], "1");
        assert_eq!(doc["host"]["name"], HOST_NAME);
        assert_eq!(doc["host"]["build"]["kind"], "artifact-sha256");
        assert_eq!(doc["seams"].as_array().map(Vec::len), Some(3));
        for row in doc["seams"].as_array().into_iter().flatten() {
            assert_eq!(row["guarded"], true, "{row}");
            assert!(
                row["guardedBy"].as_str().is_some_and(|g| !g.is_empty()),
                "{row}"
            );
        }
        assert_eq!(doc["seams"][0]["seam"], "tool-receiver");
        assert_eq!(doc["seams"][0]["kind"], "http");
        assert_eq!(doc["seams"][1]["seam"], "provider:web_search");
        assert_eq!(doc["seams"][1]["kind"], "provider-sdk");
        assert_eq!(doc["seams"][2]["seam"], "packs-test-node");
        assert_eq!(doc["seams"][2]["kind"], "http");
        let unlisted = manifest(Some(Mutant::ProviderToolUnlisted));
        assert_eq!(unlisted["seams"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            seam_ids(None),
            ["tool-receiver", "provider:web_search", "packs-test-node"]
        );
        assert_eq!(
            seam_ids(Some(Mutant::ProviderToolUnlisted)),
            ["tool-receiver", "packs-test-node"]
        );
    }
}
