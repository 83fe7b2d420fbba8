//! Upstream-only mode, major 2 (`--upstream-only=v2`): the host as a plain
//! upstream OpenWOP v2 host.
//!
//! Only what upstream v2 defines is served, and everything toolcert adds is
//! refused the way a faithful host refuses it:
//!
//! - discovery is the closed v2 root ([`document`]): the default document
//!   without the records this mode has no upstream surface for (`mcp`,
//!   `a2a`, `agents`, `memory`, `httpClient`), without the facets and keys
//!   the closed records do not define (`toolHooks.turnReplay`) and without
//!   `toolCatalog.sessionLifecycle` (its seam is no part of the seams
//!   profile); `conformance.seamsProfile` when the seams are on, and
//!   `fixtures`;
//! - the API is `api/v2/openapi.yaml`'s for these families: `POST /runs`
//!   (the upstream fixtures only, [`super::workflows`]), run reads, the
//!   event stream and poll (`afterSequence`), `:cancel` and `:fork`, the
//!   effect ledger, the tool catalog and the effect-seam manifest;
//! - the seams are `api/seams-v2.yaml`'s (profile
//!   `openwop-conformance-seams-v2`) plus the v1 seams the v2 profile
//!   carries over (`toolhooks/invoke`, `test/idempotency/concurrent-claim`),
//!   each request body closed to its upstream members: a member the
//!   profile does not define (toolcert's `receiverUrl`, `businessKey`,
//!   `credentials`, …) is a 400 `validation_error` naming it;
//! - run ids are tenant-bound (`<tenant>/<opaque>`, identity.md §5): a path
//!   carries one projected (`tenant~2Fopaque`) or percent-encoded
//!   (`tenant%2Fopaque`), another tenant's id is `403 id_tenant_mismatch`,
//!   and the bare form is refused with `400 validation_error` (this host
//!   lists no `1.x` version).
//!
//! The handlers are the default mode's, so every mutant of the shared code
//! breaks this mode the same way.

use axum::Router;
use axum::extract::{FromRef, Request, State};
use axum::http::Uri;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::base::ids;
use crate::base::mutant::Mutant;
use crate::domain::Domain;
use crate::domain::auth::authenticate;
use crate::domain::catalog::{SOURCE_HOST_EXTENSION, SOURCE_MCP};
use crate::domain::error::{ApiError, ErrorCode};
use crate::domain::json_body::parse_object;
use crate::surface::discovery::{self, DiscoveryDoc};
use crate::surface::seams::{self, SeamRequest};
use crate::surface::upstream::{seams as upstream_seams, toolhooks, workflows};
use crate::turn::state::LoopState;

/// The families of the default document this mode has no upstream
/// surface for.
const WITHOUT_SURFACE: &[&str] = &["mcp", "a2a", "agents", "memory", "httpClient"];

/// Renders the v2 upstream-only document (a [`discovery::Render`]).
pub fn render(seams_enabled: bool, mutant: Option<Mutant>) -> DiscoveryDoc {
    DiscoveryDoc::from_document(&document(seams_enabled, mutant))
}

/// The v2 upstream-only document as JSON: the default document, cut down
/// to what this mode serves (the module docs list what goes). Discovery
/// mutants act on it as on the default document where they touch a key it
/// keeps.
pub fn document(seams_enabled: bool, mutant: Option<Mutant>) -> Value {
    let mut doc = discovery::document(seams_enabled, mutant);
    if let Some(root) = doc.as_object_mut() {
        for family in WITHOUT_SURFACE {
            root.remove(*family);
        }
        root.insert("fixtures".to_owned(), json!(workflows::FIXTURES));
    }
    if let Some(hooks) = doc["toolHooks"].as_object_mut() {
        hooks.remove("turnReplay");
    }
    if let Some(catalog) = doc["toolCatalog"].as_object_mut() {
        if catalog.get("sessionLifecycle") == Some(&json!(true)) {
            catalog.remove("sessionLifecycle");
        }
        // No MCP server is mounted here (its seam is toolcert's): the catalog
        // projects the host's own tools only.
        if catalog.get("sources") == Some(&json!([SOURCE_HOST_EXTENSION, SOURCE_MCP])) {
            catalog.insert("sources".to_owned(), json!([SOURCE_HOST_EXTENSION]));
        }
    }
    doc
}

/// The seams of this mode: the profile's, with closed bodies, for any
/// router state the handlers' own states come from.
pub fn seam_routes<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    Domain: FromRef<S>,
    LoopState: FromRef<S>,
{
    Router::new()
        .route(seams::TOOLHOOKS_INVOKE_PATH, post(toolhooks_invoke))
        .route(seams::CONCURRENT_CLAIM_PATH, post(concurrent_claim))
        .route(seams::HOLD_PATH, post(hold))
        .route(seams::EFFECT_RETRY_PATH, post(effect_retry))
        .route(
            seams::EFFECT_SEAMS_FIRE_PATH,
            post(seams::effect_fire::fire),
        )
}

/// Middleware before routing: undoes the projection of a tenant-bound id in
/// the path (`~XX` ⇒ the byte, read by the path extractors as part of the
/// one segment), and checks the run id of a `/runs/{runId}…` path: a bare
/// id is `400 validation_error`, another tenant's `403 id_tenant_mismatch`
/// (identity.md §5), for an authenticated caller; an unauthenticated
/// request goes on to its handler's 401.
pub async fn tenant_bound_paths(
    State(domain): State<Domain>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = ids::projection_as_percent(request.uri().path());
    // An unauthenticated request goes on to its handler's 401 first.
    if let (Some(run_id), Ok(caller)) = (
        run_id_of(&path),
        authenticate(request.headers(), domain.principals()),
    ) {
        let Some(tenant) = ids::tenant_of(&run_id) else {
            return ApiError::validation(format!(
                "run id `{run_id}` is bare; a v2 run id is tenant-bound (<tenant>/<opaque>) and travels as one path segment (tenant~2Fopaque or tenant%2Fopaque); this host lists no 1.x version, so it refuses the bare form (identity.md §5)"
            ))
            .into_response();
        };
        if caller.tenant != tenant {
            return ApiError::new(
                ErrorCode::IdTenantMismatch,
                format!(
                    "run id `{run_id}` belongs to another tenant than the caller's; ask for your own tenant's runs"
                ),
            )
            .into_response();
        }
    }
    let rewritten = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    if let Ok(uri) = rewritten.parse::<Uri>() {
        *request.uri_mut() = uri;
    }
    next.run(request).await
}

/// The run id of a `/runs/{runId}[/…]` or `/runs/{runId}:{action}` path,
/// percent-decoded; `None` for any other path (`/runs` itself among them).
fn run_id_of(path: &str) -> Option<String> {
    let segment = path.strip_prefix("/runs/")?.split('/').next()?;
    let decoded = percent_decode(segment);
    let id = match decoded.rsplit_once(':') {
        Some((id, "fork" | "cancel")) => id.to_owned(),
        _ => decoded,
    };
    (!id.is_empty()).then_some(id)
}

/// Percent-decodes a path segment (a bad escape stays as it is).
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A seam body closed to `known` (api/seams-v2.yaml: `additionalProperties:
/// false`): any other member is a 400 naming it. A body that is not a JSON
/// object is a 400 as well.
fn closed(seam: &SeamRequest, known: &[&str]) -> Result<(), ApiError> {
    let object = parse_object(&seam.body)?;
    match object
        .keys()
        .find(|member| !known.contains(&member.as_str()))
    {
        None => Ok(()),
        Some(member) => Err(ApiError::validation(format!(
            "member `{member}` is not part of this seam's request (openwop-conformance-seams-v2 closes it to {}); send only those",
            known.join(", ")
        ))),
    }
}

/// `POST /conformance/seams/sample/toolhooks/invoke`, closed. A gate's
/// refusal (403, 429) is the closed v2 error envelope, the seam's
/// `{toolCalled, toolReturned}` under `details` (`errors.md`; C-21).
async fn toolhooks_invoke(
    State(state): State<Domain>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    closed(&seam, toolhooks::FIELDS)?;
    let answer = toolhooks::invoke(State(state), seam).await.into_response();
    Ok(refusal_as_envelope(answer).await)
}

/// Largest seam answer [`refusal_as_envelope`] reads.
const MAX_SEAM_ANSWER: usize = 1 << 20;

/// A 403 or 429 seam answer as the v2 error envelope (`forbidden`,
/// `rate_limited`), the answer's members under `details` and its headers
/// (`Retry-After`) kept; any other answer as it is.
async fn refusal_as_envelope(answer: Response) -> Response {
    let code = match answer.status() {
        axum::http::StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        axum::http::StatusCode::TOO_MANY_REQUESTS => ErrorCode::RateLimited,
        _ => return answer,
    };
    let (mut parts, body) = answer.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_SEAM_ANSWER).await else {
        return ApiError::internal("the seam's answer could not be read; retry the request")
            .into_response();
    };
    let seam: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let message = seam["toolReturned"]["error"]["message"]
        .as_str()
        .filter(|m| !m.is_empty())
        .unwrap_or("the tool call was refused by a gate; see details.toolReturned")
        .to_owned();
    let envelope = json!({
        "error": code.as_str(),
        "message": message,
        "details": seam.as_object().cloned().unwrap_or_default(),
    });
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(
        parts,
        axum::body::Body::from(serde_json::to_vec(&envelope).unwrap_or_default()),
    )
}

/// `POST …/test/idempotency/concurrent-claim {executors}`, closed.
async fn concurrent_claim(
    State(state): State<Domain>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    closed(&seam, &["executors"])?;
    upstream_seams::concurrent_claim(State(state), seam).await
}

/// `POST …/test/idempotency/hold {key, holdMs}`, closed.
async fn hold(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    closed(&seam, &["key", "holdMs"])?;
    upstream_seams::hold(State(state), seam).await
}

/// `POST …/test/idempotency/effect-retry {providerUrl}`, closed.
async fn effect_retry(
    State(state): State<Domain>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    closed(&seam, &["providerUrl"])?;
    upstream_seams::effect_retry(State(state), seam).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_read_from_run_paths_only() {
        assert_eq!(run_id_of("/runs/acme%2Fr1"), Some("acme/r1".into()));
        assert_eq!(run_id_of("/runs/acme%2Fr1:fork"), Some("acme/r1".into()));
        assert_eq!(
            run_id_of("/runs/acme%2Fr1/events/poll"),
            Some("acme/r1".into())
        );
        assert_eq!(run_id_of("/runs/run_1"), Some("run_1".into()));
        assert_eq!(run_id_of("/runs"), None);
        assert_eq!(run_id_of("/runs/"), None);
        assert_eq!(run_id_of("/tools/x"), None);
    }

    #[test]
    fn the_document_is_the_closed_root_of_this_mode() {
        let doc = document(true, None);
        for gone in WITHOUT_SURFACE {
            assert!(doc.get(*gone).is_none(), "{gone}");
        }
        assert!(doc["toolHooks"].get("turnReplay").is_none());
        assert!(doc["toolCatalog"].get("sessionLifecycle").is_none());
        assert_eq!(doc["toolCatalog"]["sources"], json!(["host-extension"]));
        assert_eq!(doc["conformance"]["seamsProfile"], seams::SEAMS_PROFILE);
        assert_eq!(doc["fixtures"], json!(workflows::FIXTURES));
        assert_eq!(doc["replay"]["effectSeamsManifest"], "/host/effect-seams");
        assert!(doc.get("metadata").is_none());
        // A discovery mutant acts on it as on the default document.
        let falsy = document(true, Some(Mutant::DiscoveryFacetFalse));
        assert_eq!(falsy["toolCatalog"]["sessionLifecycle"], false);
    }
}
