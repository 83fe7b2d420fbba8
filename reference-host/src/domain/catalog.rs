//! The tool catalog: `GET /tools` and `GET /tools/{toolId}`.
//!
//! The only tools this host knows are the run-scoped fixture tools that the
//! turn seam registers (source `host-extension`). A caller sees a tool only
//! when it holds every scope the tool requires (`auth.scopes` ⊆ the caller's
//! scopes), and an unknown tool and a hidden one get the same 404, so the
//! catalog never reveals what a caller may not invoke (RFC 0064 §C).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use reqwest::Url;
use serde::Serialize;
use serde_json::{Value, json};

use crate::base::args_schema::ArgsSchema;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::auth::authenticate;
use crate::domain::error::ApiError;
use crate::domain::tool_view::{self, Annotations};

/// The `source` of every descriptor this host serves.
pub const SOURCE_HOST_EXTENSION: &str = "host-extension";

/// The `source` of a tool of an MCP server the host mounted (DESC-6).
pub const SOURCE_MCP: &str = "mcp";

/// Whether running a tool twice with the same arguments is safe to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayPolicy {
    /// Same args, same result, no side effect.
    Deterministic,
    /// Repeating has no further effect.
    Idempotent,
    /// Each run may differ or act again.
    NonDeterministic,
}

impl ReplayPolicy {
    /// Every wire name, in documented order.
    pub const NAMES: &'static [&'static str] =
        &["deterministic", "idempotent", "non-deterministic"];

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "deterministic" => Some(Self::Deterministic),
            "idempotent" => Some(Self::Idempotent),
            "non-deterministic" => Some(Self::NonDeterministic),
            _ => None,
        }
    }
}

/// How dangerous a tool's effect is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SafetyTier {
    /// No effect outside the call.
    Pure,
    /// Reads state.
    Read,
    /// Changes state.
    Write,
    /// Runs code.
    Exec,
}

impl SafetyTier {
    /// Every wire name, in documented order.
    pub const NAMES: &'static [&'static str] = &["pure", "read", "write", "exec"];

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "pure" => Some(Self::Pure),
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            "exec" => Some(Self::Exec),
            _ => None,
        }
    }
}

/// When a call needs human approval (TTC §C; see
/// [`crate::turn::approval::needs_approval`]): a call that needs it is held
/// until the run's acting principal resolves its interrupt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// Never.
    #[default]
    Never,
    /// When the turn is untrusted and the tool's tier is `write` or `exec`.
    Conditional,
    /// Every call.
    Always,
}

impl Approval {
    /// Every wire name, in documented order.
    pub const NAMES: &'static [&'static str] = &["never", "conditional", "always"];

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "never" => Some(Self::Never),
            "conditional" => Some(Self::Conditional),
            "always" => Some(Self::Always),
            _ => None,
        }
    }
}

/// Where a run-scoped tool is played: exactly one of a receiver or an MCP
/// server (EFF-12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolEndpoint {
    /// A loopback HTTP receiver: the arguments are POSTed to it.
    Receiver(Url),
    /// A tool of a loopback MCP server, called with JSON-RPC `tools/call`
    /// (see [`crate::turn::mcp`]).
    Mcp(McpEndpoint),
    /// One of the host's own knowledge store tools of a turn run
    /// (`memory`, TRUST-2, see [`crate::turn::memory`]); never registered
    /// in the catalog.
    Memory(MemoryEndpoint),
}

/// Which of the two tools a call reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryOp {
    /// Writes a segment.
    Store,
    /// Reads a segment.
    Recall,
}

/// The [`ToolEndpoint::Memory`] of a knowledge store tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryEndpoint {
    /// Store or recall.
    pub op: MemoryOp,
    /// The namespace (the tenant is the run's).
    pub namespace: String,
}

/// The `mcp` member of a turn-seam tool: which server tool plays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpEndpoint {
    /// The server's endpoint (loopback `http` only).
    pub server_url: Url,
    /// The server's name for the tool (`params.name`), 1..=128 characters.
    pub name: String,
    /// Whether the host mounted the server and listed this tool itself
    /// (catalog `source: "mcp"`), rather than a turn seam naming it.
    pub mounted: bool,
}

/// A run-scoped tool played by a loopback HTTP receiver or MCP server.
#[derive(Debug)]
pub struct FixtureTool {
    /// Provider-safe name (`^[A-Za-z0-9_-]{1,64}$`), unique within its run.
    pub tool_id: String,
    /// What the tool does (sent to the model).
    pub description: String,
    /// The input JSON Schema as given.
    pub input_schema: Value,
    /// The compiled input schema (arguments are validated before any gate).
    pub input_validator: ArgsSchema,
    /// The output JSON Schema, if declared (advertised only).
    pub output_schema: Option<Value>,
    /// Replay safety.
    pub replay_policy: ReplayPolicy,
    /// Effect class.
    pub safety_tier: SafetyTier,
    /// Scopes the attributed principal must hold (RFC 0064 §C).
    pub required_scopes: Vec<String>,
    /// Approval policy (enforced by the tool loop, TTC §C).
    pub approval: Approval,
    /// Where the tool is played (a loopback `http` receiver or MCP server,
    /// or the host's knowledge store).
    pub endpoint: ToolEndpoint,
}

/// `auth` of a descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DescriptorAuth {
    /// Scopes required to invoke the tool.
    pub scopes: Vec<String>,
}

/// A tool as `GET /tools` describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    /// Tool id.
    pub tool_id: String,
    /// [`SOURCE_MCP`] for a mounted MCP server's tool, else
    /// [`SOURCE_HOST_EXTENSION`].
    pub source: &'static str,
    /// Description.
    pub description: String,
    /// Input schema.
    pub input_schema: Value,
    /// Output schema, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Safety tier.
    pub safety_tier: SafetyTier,
    /// Replay policy (absent only under `descriptor-without-replay-policy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_policy: Option<ReplayPolicy>,
    /// Approval policy.
    pub approval: Approval,
    /// Required scopes.
    pub auth: DescriptorAuth,
    /// The four hints, derived from the fields above (DESC-5).
    pub annotations: Annotations,
}

impl FixtureTool {
    /// The tool's descriptor.
    pub fn descriptor(&self, mutant: Option<Mutant>) -> ToolDescriptor {
        // A catalog reader decides whether a call may be replayed from
        // `replayPolicy`, so every descriptor carries it.
        // Bug under `descriptor-without-replay-policy`: it is left out.
        let replay_policy =
            (mutant != Some(Mutant::DescriptorWithoutReplayPolicy)).then_some(self.replay_policy);
        ToolDescriptor {
            tool_id: self.tool_id.clone(),
            source: if self.mcp().is_some_and(|m| m.mounted) {
                SOURCE_MCP
            } else {
                SOURCE_HOST_EXTENSION
            },
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            output_schema: self.output_schema.clone(),
            safety_tier: self.safety_tier,
            replay_policy,
            approval: self.approval,
            auth: DescriptorAuth {
                scopes: self.required_scopes.clone(),
            },
            annotations: Annotations::derive(self.safety_tier, self.replay_policy, mutant),
        }
    }

    /// The MCP server tool that plays this tool, if it is an MCP tool.
    pub fn mcp(&self) -> Option<&McpEndpoint> {
        match &self.endpoint {
            ToolEndpoint::Mcp(mcp) => Some(mcp),
            ToolEndpoint::Receiver(_) | ToolEndpoint::Memory(_) => None,
        }
    }

    /// Whether this is one of the host's own knowledge store tools.
    pub fn is_memory(&self) -> bool {
        matches!(self.endpoint, ToolEndpoint::Memory(_))
    }

    /// Whether a caller holding `scopes` may invoke this tool.
    pub fn visible_to(&self, scopes: &[String]) -> bool {
        self.required_scopes
            .iter()
            .all(|required| scopes.contains(required))
    }
}

/// Every fixture tool registered so far, by tenant and tool id.
///
/// The catalog is a projection of what each tenant's runs registered: a
/// caller sees only its own tenant's tools (CAT-2, RFC 0074), and a tool
/// of another tenant answers the same 404 as one that never existed
/// (CAT-3). Tool ids are unique within a run, not across runs: when a
/// later run of the same tenant registers an id again, the catalog shows
/// the later registration (each run's loop keeps using its own copy).
#[derive(Debug, Default)]
pub struct Catalog {
    tools: Mutex<BTreeMap<(String, String), Arc<FixtureTool>>>,
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Locks the map for one lookup or update (never across an await).
    fn tools(&self) -> MutexGuard<'_, BTreeMap<(String, String), Arc<FixtureTool>>> {
        // Each operation is a single insert or read, so a poisoned map is
        // still consistent.
        self.tools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers (or replaces) `tools` in `tenant`'s catalog.
    pub fn register(&self, tenant: &str, tools: &[Arc<FixtureTool>]) {
        let mut map = self.tools();
        for tool in tools {
            map.insert((tenant.to_owned(), tool.tool_id.clone()), Arc::clone(tool));
        }
    }

    /// The tools of `tenant` a caller holding `scopes` may invoke, sorted
    /// by tool id. `None` lifts that filter: only mutants pass it
    /// (`catalog-cross-tenant` lists every tenant's tools, each id once;
    /// `catalog-ignores-scopes` lists them whatever scopes they require).
    pub fn visible(
        &self,
        tenant: Option<&str>,
        scopes: Option<&[String]>,
    ) -> Vec<Arc<FixtureTool>> {
        let mut tools: Vec<Arc<FixtureTool>> = self
            .tools()
            .iter()
            .filter(|((owner, _), tool)| {
                tenant.is_none_or(|t| owner == t) && scopes.is_none_or(|s| tool.visible_to(s))
            })
            .map(|(_, tool)| Arc::clone(tool))
            .collect();
        if tenant.is_none() {
            // The map is ordered by (tenant, id); across tenants, sort again.
            tools.sort_by(|a, b| a.tool_id.cmp(&b.tool_id));
            tools.dedup_by(|a, b| a.tool_id == b.tool_id);
        }
        tools
    }

    /// Whether a tool of this id is registered in any tenant (whoever may
    /// see it).
    pub fn exists(&self, tool_id: &str) -> bool {
        self.tools().keys().any(|(_, id)| id == tool_id)
    }

    /// Removes one of `tenant`'s tools (only the `catalog-write-mutates`
    /// mutant does).
    fn remove(&self, tenant: &str, tool_id: &str) -> bool {
        self.tools()
            .remove(&(tenant.to_owned(), tool_id.to_owned()))
            .is_some()
    }

    /// One of `tenant`'s tools, if it exists and the caller may invoke it;
    /// `None` for the tenant is the `catalog-cross-tenant` bug (the id in
    /// any tenant).
    pub fn visible_tool(
        &self,
        tenant: Option<&str>,
        tool_id: &str,
        scopes: &[String],
    ) -> Option<Arc<FixtureTool>> {
        self.tools()
            .iter()
            .find(|((owner, id), _)| id == tool_id && tenant.is_none_or(|t| owner == t))
            .map(|(_, tool)| tool)
            .filter(|tool| tool.visible_to(scopes))
            .cloned()
    }
}

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

/// The resolved scopes of an authenticated caller; an unresolvable set
/// fails closed (403).
pub(crate) fn caller_scopes_of(
    caller: &crate::base::principals::Principal,
) -> Result<Vec<String>, ApiError> {
    caller
        .resolve_scopes()
        .map(<[String]>::to_vec)
        .map_err(|err| {
            // RFC 0064 §C: what cannot be evaluated is denied, never listed.
            ApiError::forbidden(format!(
                "{err}, so the catalog cannot be filtered and access is denied (fail-closed); retry when the resolver is available"
            ))
        })
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

/// Handler for `GET /tools`.
pub async fn list_tools(
    State(state): State<Domain>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let caller = catalog_caller(&state, &headers)?;
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
    // Bug under `compact-view-bare-array`: the compact list is a bare array.
    if query.compact && mutant == Some(Mutant::CompactViewBareArray) {
        return Ok(Json(Value::Array(listed)).into_response());
    }
    Ok(Json(json!({ "tools": listed })).into_response())
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
        "no route for DELETE /tools/{tool_id}: the tool catalog is read-only; see docs/reference-host.md for the endpoints this host serves"
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
        mutant: Mutant::DescriptorWithoutReplayPolicy,
        name: "descriptor-without-replay-policy",
        breaks: "GET /tools descriptors omit replayPolicy",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(id: &str, scopes: &[&str]) -> Arc<FixtureTool> {
        let input_schema = json!({"type": "object"});
        Arc::new(FixtureTool {
            tool_id: id.to_owned(),
            description: format!("tool {id}"),
            input_validator: ArgsSchema::compile(&input_schema).expect("compiles"),
            input_schema,
            output_schema: None,
            replay_policy: ReplayPolicy::Idempotent,
            safety_tier: SafetyTier::Write,
            required_scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            approval: Approval::Never,
            endpoint: crate::domain::catalog::ToolEndpoint::Receiver(
                Url::parse("http://127.0.0.1:9/t").expect("url"),
            ),
        })
    }

    fn owned(scopes: &[&str]) -> Vec<String> {
        scopes.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn visibility_is_scope_subset_and_order_is_by_id() {
        let catalog = Catalog::new();
        catalog.register(
            "a",
            &[
                tool("zeta", &[]),
                tool("alpha", &["tools:write"]),
                tool("mid", &["tools:read"]),
            ],
        );
        let ids = |scopes: &[&str]| -> Vec<String> {
            catalog
                .visible(Some("a"), Some(&owned(scopes)))
                .iter()
                .map(|t| t.tool_id.clone())
                .collect()
        };
        assert_eq!(
            ids(&["tools:read", "tools:write"]),
            ["alpha", "mid", "zeta"]
        );
        assert_eq!(ids(&["tools:read"]), ["mid", "zeta"]);
        assert_eq!(ids(&[]), ["zeta"]);
        let item = |id: &str, scopes: &[&str]| {
            catalog
                .visible_tool(Some("a"), id, &owned(scopes))
                .is_some()
        };
        assert!(!item("alpha", &["tools:read"]));
        assert!(!item("nope", &["tools:write"]));
        assert!(item("alpha", &["tools:write"]));
    }

    #[test]
    fn each_tenant_sees_only_its_own_tools() {
        let catalog = Catalog::new();
        catalog.register("a", &[tool("shared", &[]), tool("mine", &[])]);
        catalog.register("b", &[tool("shared", &[]), tool("theirs", &[])]);
        let ids = |tenant: Option<&str>| -> Vec<String> {
            catalog
                .visible(tenant, Some(&[]))
                .iter()
                .map(|t| t.tool_id.clone())
                .collect()
        };
        assert_eq!(ids(Some("a")), ["mine", "shared"]);
        assert_eq!(ids(Some("b")), ["shared", "theirs"]);
        assert!(ids(Some("c")).is_empty());
        assert!(catalog.visible_tool(Some("a"), "theirs", &[]).is_none());
        assert!(catalog.exists("theirs"));
        // The `catalog-cross-tenant` bug: every tenant's tools, each id once.
        assert_eq!(ids(None), ["mine", "shared", "theirs"]);
        assert!(catalog.visible_tool(None, "theirs", &[]).is_some());
        // The `catalog-ignores-scopes` bug: scoped tools listed to anyone.
        catalog.register("a", &[tool("locked", &["tools:admin"])]);
        assert_eq!(ids(Some("a")), ["mine", "shared"]);
        let unscoped: Vec<String> = catalog
            .visible(Some("a"), None)
            .iter()
            .map(|t| t.tool_id.clone())
            .collect();
        assert_eq!(unscoped, ["locked", "mine", "shared"]);
    }

    #[test]
    fn descriptor_shape_and_the_replay_policy_mutant() {
        let descriptor =
            serde_json::to_value(tool("t", &["tools:write"]).descriptor(None)).expect("serialises");
        assert_eq!(
            descriptor,
            json!({
                "toolId": "t", "source": "host-extension", "description": "tool t",
                "inputSchema": {"type": "object"}, "safetyTier": "write",
                "replayPolicy": "idempotent", "approval": "never",
                "auth": {"scopes": ["tools:write"]},
                "annotations": {"readOnlyHint": false, "destructiveHint": true,
                                "idempotentHint": true, "openWorldHint": true}
            })
        );
        let mutated = serde_json::to_value(
            tool("t", &[]).descriptor(Some(Mutant::DescriptorWithoutReplayPolicy)),
        )
        .expect("serialises");
        assert!(mutated.get("replayPolicy").is_none());
    }

    #[test]
    fn wire_names_parse() {
        for name in ReplayPolicy::NAMES {
            let parsed = ReplayPolicy::parse(name).expect("known");
            assert_eq!(serde_json::to_value(parsed).expect("ser"), json!(name));
        }
        for name in SafetyTier::NAMES {
            let parsed = SafetyTier::parse(name).expect("known");
            assert_eq!(serde_json::to_value(parsed).expect("ser"), json!(name));
        }
        for name in Approval::NAMES {
            let parsed = Approval::parse(name).expect("known");
            assert_eq!(serde_json::to_value(parsed).expect("ser"), json!(name));
        }
        assert_eq!(ReplayPolicy::parse("sometimes"), None);
    }
}
