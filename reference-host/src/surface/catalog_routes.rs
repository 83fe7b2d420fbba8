//! The tool catalog's routes: `GET /tools`, `GET /tools/{toolId}` and the
//! refused `DELETE /tools/{toolId}` (CAT-4).
//!
//! The v2 standard list is a bare `ToolDescriptor[]` and the compact list
//! `{tools: [...]}` (tool-catalog.md §The catalog, §Views); the v1 list
//! (`GET /v1/tools`, upstream-only v1 mode) is `{tools: [...]}` in both views
//! (v1 tool-catalog.md §B).
//!
//! A caller sees a tool only when it holds every scope the tool requires,
//! and an unknown tool and a hidden one get the same 404, so the catalog
//! never reveals what a caller may not invoke (RFC 0064 §C). The catalog
//! itself, and what a descriptor holds, are [`crate::domain::catalog`];
//! how a descriptor is shown is [`crate::domain::tool_view`].

use std::collections::HashMap;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::auth::authenticate;
use crate::domain::catalog::{SafetyTier, caller_scopes_of};
use crate::domain::error::ApiError;
use crate::domain::tool_view;

/// Who is asking the catalog: the tenant whose tools it sees and the
/// scopes that filter them.
#[derive(Debug, Clone)]
pub struct CatalogCaller {
    /// The caller's tenant (RFC 0074).
    pub tenant: String,
    /// The caller's resolved scopes (RFC 0049).
    pub scopes: Vec<String>,
}

impl CatalogCaller {
    /// The tenant the catalog is filtered by: the caller's, or none under
    /// the `catalog-cross-tenant` bug (every tenant's tools).
    fn tenant_filter(&self, mutant: Option<Mutant>) -> Option<&str> {
        (mutant != Some(Mutant::CatalogCrossTenant)).then_some(self.tenant.as_str())
    }
}

/// The authenticated caller of a catalog request, with its resolved
/// scopes; an unresolvable set fails closed (403).
pub fn catalog_caller(state: &Domain, headers: &HeaderMap) -> Result<CatalogCaller, ApiError> {
    let caller = authenticate(headers, state.principals())?;
    let scopes = caller_scopes_of(caller)?;
    Ok(CatalogCaller {
        tenant: caller.tenant.clone(),
        scopes,
    })
}

/// The caller's resolved scopes; an unresolvable set fails closed (403).
pub fn caller_scopes(state: &Domain, headers: &HeaderMap) -> Result<Vec<String>, ApiError> {
    caller_scopes_of(authenticate(headers, state.principals())?)
}

/// The catalog's query parameters: `source` narrows the list to one source
/// (CAT-8), `view=compact` asks for compact descriptors (CAT-9); any other
/// `view` is the standard view (CAT-12).
#[derive(Debug, Default)]
struct CatalogQuery {
    source: Option<String>,
    compact: bool,
}

impl CatalogQuery {
    fn parse(
        query: Result<Query<HashMap<String, String>>, QueryRejection>,
        mutant: Option<Mutant>,
    ) -> Result<Self, ApiError> {
        let Query(params) = query.map_err(|rejection| {
            ApiError::validation(format!(
                "query string could not be parsed ({}); use source and view",
                rejection.body_text()
            ))
        })?;
        let view = params.get("view").map(String::as_str);
        // Bug under `view-bogus-compact`: any view value selects compact.
        let compact =
            view == Some("compact") || (view.is_some() && mutant == Some(Mutant::ViewBogusCompact));
        Ok(Self {
            source: params.get("source").cloned(),
            compact,
        })
    }
}

/// Handler for `GET /tools` (v2): the standard list bare, the compact one
/// as `{tools}`.
pub async fn list_tools(
    State(state): State<Domain>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (listed, compact) = listed(&state, &headers, query)?;
    let mutant = state.mutant();
    // Bug under `compact-view-bare-array`: the compact list is a bare array.
    // Bug under `catalog-list-wrapped`: the standard list is `{tools}` (v1's).
    let bare = if compact {
        mutant == Some(Mutant::CompactViewBareArray)
    } else {
        mutant != Some(Mutant::CatalogListWrapped)
    };
    if bare {
        return Ok(Json(Value::Array(listed)).into_response());
    }
    Ok(Json(json!({ "tools": listed })).into_response())
}

/// Handler for `GET /v1/tools`: `{tools}` in both views.
pub async fn list_tools_v1(
    State(state): State<Domain>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (listed, compact) = listed(&state, &headers, query)?;
    if compact && state.mutant() == Some(Mutant::CompactViewBareArray) {
        return Ok(Json(Value::Array(listed)).into_response());
    }
    Ok(Json(json!({ "tools": listed })).into_response())
}

/// The descriptors the caller may list, in the view the query asks for,
/// and whether that view is the compact one.
fn listed(
    state: &Domain,
    headers: &HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<(Vec<Value>, bool), ApiError> {
    let caller = catalog_caller(state, headers)?;
    let mutant = state.mutant();
    let query = CatalogQuery::parse(query, mutant)?;
    // Bug under `catalog-cross-tenant`: every tenant's tools are listed.
    // Bug under `catalog-ignores-scopes`: the list is not filtered by the
    // caller's scopes (the item still is).
    let mut tools = state.catalog().visible(
        caller.tenant_filter(mutant),
        (mutant != Some(Mutant::CatalogIgnoresScopes)).then_some(caller.scopes.as_slice()),
    );
    // Bug under `catalog-unsorted`: newest id first instead of by tool id.
    if mutant == Some(Mutant::CatalogUnsorted) {
        tools.reverse();
    }
    // Bug under `catalog-duplicate-id`: the first tool is listed twice.
    if mutant == Some(Mutant::CatalogDuplicateId)
        && let Some(first) = tools.first().cloned()
    {
        tools.push(first);
    }
    // Bug under `compact-list-drops-tool`: the compact list leaves out the
    // exec tools.
    if query.compact && mutant == Some(Mutant::CompactListDropsTool) {
        tools.retain(|tool| tool.safety_tier != SafetyTier::Exec);
    }
    let mut listed: Vec<Value> = tools
        .iter()
        .map(|tool| {
            if query.compact {
                tool_view::compact(tool, mutant)
            } else {
                tool_view::standard(tool, mutant)
            }
        })
        .collect();
    // Bug under `source-filter-ignored`: `?source=` is not applied.
    if let Some(source) = &query.source
        && mutant != Some(Mutant::SourceFilterIgnored)
    {
        listed.retain(|d| d.get("source").and_then(Value::as_str) == Some(source.as_str()));
    }
    Ok((listed, query.compact))
}

/// Handler for `GET /tools/{toolId}`.
pub async fn get_tool(
    State(state): State<Domain>,
    Path(tool_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let caller = catalog_caller(&state, &headers)?;
    let mutant = state.mutant();
    let query = CatalogQuery::parse(query, mutant)?;
    // Unknown and not-visible are the same answer: the 404 reveals nothing.
    // Bug under `catalog-hidden-403`: a hidden tool answers 403, which
    // tells the caller it exists.
    let Some(tool) =
        state
            .catalog()
            .visible_tool(caller.tenant_filter(mutant), &tool_id, &caller.scopes)
    else {
        if mutant == Some(Mutant::CatalogHidden403) && state.catalog().exists(&tool_id) {
            return Err(ApiError::forbidden("you lack a scope this tool requires"));
        }
        return Err(ApiError::not_found(
            "no such tool for this caller; list the tools you may invoke with GET /tools",
        ));
    };
    let descriptor = if query.compact {
        tool_view::compact(&tool, mutant)
    } else {
        tool_view::standard(&tool, mutant)
    };
    // Bug under `catalog-item-wrapped`: the item is wrapped in `{tool}`.
    if mutant == Some(Mutant::CatalogItemWrapped) {
        return Ok(Json(json!({ "tool": descriptor })).into_response());
    }
    Ok(Json(descriptor).into_response())
}

/// Handler for `DELETE /tools/{toolId}`: the catalog is read-only (CAT-4),
/// so this is the same 404 as any route the host does not serve.
pub async fn delete_tool(
    State(state): State<Domain>,
    Path(tool_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    // Bug under `catalog-write-mutates`: DELETE removes the tool (204).
    if state.mutant() == Some(Mutant::CatalogWriteMutates) {
        let caller = catalog_caller(&state, &headers)?;
        if state
            .catalog()
            .visible_tool(Some(&caller.tenant), &tool_id, &caller.scopes)
            .is_some()
            && state.catalog().remove(&caller.tenant, &tool_id)
        {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
    }
    Err(ApiError::not_found(format!(
        "no route for DELETE /tools/{tool_id}: the tool catalog is read-only; see docs/reference/reference-host/README.md for the endpoints this host serves"
    )))
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::CatalogIgnoresScopes,
        name: "catalog-ignores-scopes",
        breaks: "GET /tools lists the caller's tenant's tools whatever scopes they require",
    },
    MutantInfo {
        mutant: Mutant::CatalogCrossTenant,
        name: "catalog-cross-tenant",
        breaks: "GET /tools lists (and GET /tools/{toolId} serves) tools another tenant's runs registered",
    },
    MutantInfo {
        mutant: Mutant::CatalogHidden403,
        name: "catalog-hidden-403",
        breaks: "GET /tools/{toolId} answers 403 for a tool the caller may not see (404 for unknown)",
    },
    MutantInfo {
        mutant: Mutant::CatalogWriteMutates,
        name: "catalog-write-mutates",
        breaks: "DELETE /tools/{toolId} removes the tool and answers 204",
    },
    MutantInfo {
        mutant: Mutant::CatalogUnsorted,
        name: "catalog-unsorted",
        breaks: "GET /tools lists tools in descending toolId order",
    },
    MutantInfo {
        mutant: Mutant::CatalogDuplicateId,
        name: "catalog-duplicate-id",
        breaks: "GET /tools lists its first tool twice",
    },
    MutantInfo {
        mutant: Mutant::SourceFilterIgnored,
        name: "source-filter-ignored",
        breaks: "GET /tools ignores ?source=",
    },
    MutantInfo {
        mutant: Mutant::CompactViewBareArray,
        name: "compact-view-bare-array",
        breaks: "GET /tools?view=compact answers a bare array instead of {tools}",
    },
    MutantInfo {
        mutant: Mutant::CatalogListWrapped,
        name: "catalog-list-wrapped",
        breaks: "GET /tools (v2) answers {tools: [...]} instead of a bare ToolDescriptor[]",
    },
    MutantInfo {
        mutant: Mutant::CompactListDropsTool,
        name: "compact-list-drops-tool",
        breaks: "GET /tools?view=compact leaves out the exec tools",
    },
    MutantInfo {
        mutant: Mutant::ViewBogusCompact,
        name: "view-bogus-compact",
        breaks: "any ?view= value (not only compact) selects the compact view",
    },
    MutantInfo {
        mutant: Mutant::CatalogItemWrapped,
        name: "catalog-item-wrapped",
        breaks: "GET /tools/{toolId} wraps the descriptor in {tool}",
    },
];
