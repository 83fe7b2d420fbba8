//! The tool catalog behind `GET /tools` and `GET /tools/{toolId}` (routes:
//! [`crate::surface::catalog_routes`]).
//!
//! Each tenant's catalog starts with the host's own tools ([`host_tools`],
//! source `host-extension`), so a host serving no seam at all still serves a
//! catalog with tools; the run-scoped fixture tools the turn seam registers
//! (and the tools of an MCP server mounted through the mount seam) join the
//! registering caller's tenant. A caller sees a tool only
//! when it holds every scope the tool requires (`auth.scopes` ⊆ the caller's
//! scopes), and an unknown tool and a hidden one get the same 404, so the
//! catalog never reveals what a caller may not invoke (RFC 0064 §C).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use reqwest::Url;
use serde::Serialize;
use serde_json::Value;

use crate::base::args_schema::ArgsSchema;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::error::ApiError;

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
    /// One of the host's own catalog tools ([`host_tools`]): listed and
    /// described, never offered to a model by a run of this host.
    Host,
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
            ToolEndpoint::Receiver(_) | ToolEndpoint::Memory(_) | ToolEndpoint::Host => None,
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

/// The host's own catalog tools, one set per tenant: what a host that
/// serves no seam lists (CAT, DESC on upstream surfaces alone). Between them
/// they cover every safety tier but `pure`, each replay policy, a tool whose
/// scope not every caller holds (`tools:write`, CAT-2, CAT-3), an `exec`
/// tool (`host-extension`, DESC-2) and an input schema that is not flat
/// (`oneOf`, which the compact view leaves out, CAT-11).
pub fn host_tools() -> Vec<Arc<FixtureTool>> {
    let tool = |id: &str,
                description: &str,
                input_schema: Value,
                safety_tier: SafetyTier,
                replay_policy: ReplayPolicy,
                scopes: &[&str],
                approval: Approval| {
        let input_validator = ArgsSchema::compile(&input_schema).ok()?;
        Some(Arc::new(FixtureTool {
            tool_id: id.to_owned(),
            description: description.to_owned(),
            input_validator,
            input_schema,
            output_schema: None,
            replay_policy,
            safety_tier,
            required_scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            approval,
            endpoint: ToolEndpoint::Host,
        }))
    };
    [
        tool(
            "x-host-refhost-balance-read",
            "Read an account balance.",
            serde_json::json!({"type": "object", "properties": {"account": {"type": "string"}},
                               "required": ["account"]}),
            SafetyTier::Read,
            ReplayPolicy::Deterministic,
            &[],
            Approval::Never,
        ),
        tool(
            "x-host-refhost-ledger-write",
            "Write one ledger entry.",
            serde_json::json!({"type": "object",
                               "properties": {"amount": {"type": "integer", "minimum": 1}},
                               "required": ["amount"]}),
            SafetyTier::Write,
            ReplayPolicy::Idempotent,
            &["tools:write"],
            Approval::Never,
        ),
        tool(
            "x-host-refhost-record-lookup",
            "Look a record up by id or by name.",
            serde_json::json!({"type": "object", "properties": {
                "key": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}}),
            SafetyTier::Read,
            ReplayPolicy::Deterministic,
            &[],
            Approval::Never,
        ),
        tool(
            "x-host-refhost-script-exec",
            "Run a maintenance script.",
            serde_json::json!({"type": "object", "properties": {"script": {"type": "string"}}}),
            SafetyTier::Exec,
            ReplayPolicy::NonDeterministic,
            &["tools:write"],
            Approval::Always,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
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

    /// A catalog holding the host's own tools ([`host_tools`]) in each of
    /// `tenants`.
    pub fn with_host_tools<'t>(tenants: impl IntoIterator<Item = &'t str>) -> Self {
        let catalog = Self::new();
        for tenant in tenants {
            catalog.register(tenant, &host_tools());
        }
        catalog
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
    pub(crate) fn remove(&self, tenant: &str, tool_id: &str) -> bool {
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

/// The four MCP-style hints, each derived from the descriptor's own fields
/// (never taken from a tool's self-description).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// `safetyTier` is `pure` or `read`.
    pub read_only_hint: bool,
    /// `safetyTier` is `write` or `exec`.
    pub destructive_hint: bool,
    /// `replayPolicy` is `deterministic` or `idempotent`.
    pub idempotent_hint: bool,
    /// `egress` is absent or not `none` (this host declares no egress, so
    /// every tool may reach the open world); absent only under
    /// `annotations-hint-missing`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    /// The hints `tier` and `replay` imply.
    pub fn derive(tier: SafetyTier, replay: ReplayPolicy, mutant: Option<Mutant>) -> Self {
        let read_only = matches!(tier, SafetyTier::Pure | SafetyTier::Read);
        Self {
            // Bug under `annotations-not-derived`: every tool claims to
            // be read-only, as a tool's own advertisement might.
            read_only_hint: read_only || mutant == Some(Mutant::AnnotationsNotDerived),
            destructive_hint: !read_only,
            idempotent_hint: matches!(
                replay,
                ReplayPolicy::Deterministic | ReplayPolicy::Idempotent
            ),
            // Bug under `annotations-hint-missing`: one hint is left out.
            open_world_hint: (mutant != Some(Mutant::AnnotationsHintMissing)).then_some(true),
        }
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::DescriptorWithoutReplayPolicy,
        name: "descriptor-without-replay-policy",
        breaks: "GET /tools descriptors omit replayPolicy",
    },
    MutantInfo {
        mutant: Mutant::AnnotationsNotDerived,
        name: "annotations-not-derived",
        breaks: "descriptor annotations claim readOnlyHint: true for every tool",
    },
    MutantInfo {
        mutant: Mutant::AnnotationsHintMissing,
        name: "annotations-hint-missing",
        breaks: "descriptor annotations leave out openWorldHint",
    },
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn annotations_follow_tier_and_replay() {
        let write = Annotations::derive(SafetyTier::Write, ReplayPolicy::Idempotent, None);
        assert_eq!(
            serde_json::to_value(&write).expect("ser"),
            json!({"readOnlyHint": false, "destructiveHint": true,
                   "idempotentHint": true, "openWorldHint": true})
        );
        let read = Annotations::derive(SafetyTier::Read, ReplayPolicy::NonDeterministic, None);
        assert!(read.read_only_hint && !read.destructive_hint && !read.idempotent_hint);
        let lying = Annotations::derive(
            SafetyTier::Exec,
            ReplayPolicy::Idempotent,
            Some(Mutant::AnnotationsNotDerived),
        );
        assert!(lying.read_only_hint);
    }

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
    fn every_tenant_starts_with_the_host_tools() {
        let catalog = Catalog::with_host_tools(["a", "b"]);
        let all = owned(&["tools:write"]);
        let ids = |tenant: &str, scopes: &[String]| -> Vec<String> {
            catalog
                .visible(Some(tenant), Some(scopes))
                .iter()
                .map(|t| t.tool_id.clone())
                .collect()
        };
        assert_eq!(ids("a", &all).len(), host_tools().len());
        assert_eq!(ids("a", &all), ids("b", &all));
        // The scoped ones are hidden from a caller without the scope.
        assert_eq!(
            ids("a", &[]),
            [
                "x-host-refhost-balance-read",
                "x-host-refhost-record-lookup"
            ]
        );
        let exec = catalog
            .visible_tool(Some("a"), "x-host-refhost-script-exec", &all)
            .expect("listed");
        assert_eq!(exec.safety_tier, SafetyTier::Exec);
        assert_eq!(exec.descriptor(None).source, SOURCE_HOST_EXTENSION);
        // A removal in one tenant leaves the other's tools alone.
        assert!(catalog.remove("a", "x-host-refhost-balance-read"));
        assert!(
            catalog
                .visible_tool(Some("b"), "x-host-refhost-balance-read", &all)
                .is_some()
        );
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
