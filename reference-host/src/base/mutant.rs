//! The mutant vocabulary: which deliberately broken variant is planted.
//!
//! It imports nothing, so every layer may use it. Each mutant's name and the
//! line saying what it breaks are declared next to the code it breaks, in
//! that module's `MUTANTS` table; [`crate::surface::mutants`] gathers the tables into
//! [`crate::surface::mutants::ALL`].
//!
//! A mutant site tests `mutant == Some(Mutant::X)` (or `!=`, or
//! `mutant_is`), never a `match` pattern: the comparison is what tells a
//! probe host ([`Mutant::Probe`]) that the site was reached (see [`probe`]).

/// One deliberately broken variant of the host, switched on by name.
#[derive(Debug, Clone, Copy, Eq)]
pub enum Mutant {
    /// A scope-resolver error is treated as "allowed" (fails open).
    AuthzFailOpenOnResolverError,
    /// The tool is invoked first, then authorization is checked.
    InvokeThenCheck,
    /// argsHash is computed over the resolved raw args (secret included).
    ArgsHashRaw,
    /// argsHash is computed over non-canonical `serde_json::to_string` output.
    ArgsHashNoncanonical,
    /// A failed tool call is reported as `{status: "ok"}` with no error.
    FailureBareSuccess,
    /// A forbidden return carries `durationMs: 0`.
    ForbiddenWithDuration,
    /// The token bucket is keyed by tool name only.
    RateLimitKeyedByTool,
    /// No token bucket at all.
    RateLimitAbsent,
    /// 429 responses lack `Retry-After` and put `retryAfterSeconds` in details.
    RateLimitNoRetryAfter,
    /// The 429 body is `{"status": "rate_limited"}` instead of the envelope.
    RateLimitBareBody,
    /// Every authorization check denies.
    AuthzAlwaysDeny,
    /// No `authorization.decided` event is written on a deny.
    DenialUnlogged,
    /// `agent.tool-called` also carries the full redacted `inputs`.
    CallEventCarriesInputs,
    /// `agent.tool-called` omits `principal`.
    CallEventMissingPrincipal,
    /// `agent.tool-returned` has no `causationId`.
    ReturnCausationMissing,
    /// Tool events in the events log omit `agentId`.
    EventAgentidMissing,
    /// Seam (non-agent) tool events use agentId `refhost.agent`.
    SeamAgentidNotSystem,
    /// A failed return carries both `error` and `outcome: {}`.
    ErrorWithOutcome,
    /// An argument-validation failure reports `status: "invalid_args"`.
    StatusInvalidArgs,
    /// Discovery never answers 304 to a matching `If-None-Match`.
    DiscoveryEtagIgnored,
    /// The toolHooks record carries `"perToolRateLimit": "yes"`.
    ToolhooksFacetNotBoolean,
    /// `preferredVersion` is `"2.1"`, not in `protocolVersions`.
    DiscoveryPreferredUnlisted,
    /// The toolHooks record has no `witness` key.
    DiscoveryRecordMissingWitness,
    /// The authorization record advertises `failClosed: false`.
    AuthorizationFailclosedFalse,
    /// A tool call in a truncated completion is dispatched with `{}` as its arguments.
    TruncatedArgsExecuted,
    /// A prompted/structured JSON answer shaped like a tool call is dispatched.
    PromptedOutputDispatched,
    /// Tool calls written inline in assistant text are parsed and executed.
    InlineToolParser,
    /// Authorization runs before argument validation.
    AuthzBeforeArgs,
    /// The rate limit (a token consumed) is checked before authorization.
    LimitsBeforeAuthz,
    /// A refused completion is retried once with the same request.
    RefusalRetried,
    /// The invalid-arguments repair text quotes the model's raw arguments.
    RepairEchoesModelText,
    /// A failed tool result is fed back with `isError: false`.
    ToolErrorWithoutIserror,
    /// An unknown tool name returns status `ok` with no error.
    UnknownToolBareSuccess,
    /// An executed call gets two `agent.tool-returned` events.
    DoubleReturn,
    /// An identical repeated call is dispatched again.
    RepeatNotSuppressed,
    /// `output.mode: "structured"` on OpenAI sends no `response_format`.
    StructuredNotEnforced,
    /// `GET /tools` descriptors omit `replayPolicy`.
    DescriptorWithoutReplayPolicy,
    /// The effect claim reads, awaits, then writes with `INSERT OR REPLACE`.
    ClaimReadThenWrite,
    /// The retry attempt counter is hashed into the effect id.
    AttemptInIdentity,
    /// The runId is hashed into the effect id.
    RunIdInKeying,
    /// Effect calls carry no `Idempotency-Key` header.
    NoProviderKey,
    /// The provider `Idempotency-Key` is `<effectId>-a<attempt>`.
    RetryKeyDiffers,
    /// `Idempotency-Key` on `POST /runs` is ignored.
    L1KeyIgnored,
    /// Replays omit `OpenWOP-Idempotent-Replay`.
    L1ReplayHeaderMissing,
    /// A key reused with another body answers 409 `idempotency_key_conflict`.
    L1MismatchWrongCode,
    /// An in-flight duplicate is processed as a new request.
    L1InFlightProcessed,
    /// A 503 answer is cached and replayed.
    L1Caches5xx,
    /// A 400 `validation_error` is cached and replayed.
    L1CachesValidationError,
    /// Keys failing the grammar are accepted.
    L1InvalidKeyAccepted,
    /// The Layer-1 key scope omits the tenant.
    L1KeyNotTenantScoped,
    /// Discovery advertises `layer1RetentionSeconds: 3600`.
    L1RetentionShort,
    /// The run span of the OTel scrape seam carries the caller's `Idempotency-Key` in clear.
    SpansShowIdempotencyKey,
    /// The sweeper deletes effect records older than 1 day.
    SweeperDropsYoung,
    /// Another tenant can read a run's effects.
    EffectsCrossTenant,
    /// Ledger rows carry the business arguments in `args`.
    LedgerLeaksArgs,
    /// The business key's `#n` suffix is dropped from the identity.
    DistinctEffectsCollide,
    /// Discovery advertises `crossRegion: "multi-master"`.
    CrossRegionUnknown,
    /// Model output claiming `"contentTrust": "trusted"` resets the turn to trusted.
    TrustFromModelOutput,
    /// Any authenticated principal may resolve an approval interrupt.
    ApprovalByAnyPrincipal,
    /// The signed link token resolves interrupts of untrusted turns too.
    ApprovalViaLinkUntrusted,
    /// A tool result whose JSON has `"approved": true` resolves the open interrupt.
    ApprovalFromContent,
    /// An untrusted conditional write is refused outright instead of held.
    UntrustedWriteRefused,
    /// An accepted call is dispatched twice.
    ApprovedCallRunsTwice,
    /// Tool results do not taint the turn (contentTrust stays trusted).
    TrustNeverTainted,
    /// A replay fork dispatches each tool to its receiver.
    ReplayExecutesTool,
    /// A replay miss is served as `status: "ok"` with a null result.
    ReplayMissEmptySuccess,
    /// A replayed return carries a fresh `durationMs`, not the recorded one.
    ReplayDurationRecomputed,
    /// A replayed return's error message is prefixed `replayed: `.
    ReplayErrorReworded,
    /// The call in doubt is re-run whatever its replayPolicy.
    RecoveryRerunsInDoubt,
    /// Recovery ignores the records and restarts the loop from round 1.
    RecoveryFromScratch,
    /// A new node attempt is served the earlier attempt's tool records.
    RetryServedRecords,
    /// A round's tool records are written only after the next model response.
    RecordAfterNextRound,
    /// A digest record is served on replay and recovery instead of a miss.
    OversizedServedOnReplay,
    /// A simulated record failure is ignored for every tool.
    RecordFailureIgnored,
    /// A clarification ask past `limits.clarificationRounds` raises another
    /// interrupt instead of the typed refusal (TURN-E1).
    ClarificationUnbounded,
    /// Calls after a clarification ask in the same round are executed
    /// (TURN-E2 says the ask ends the turn).
    AskDoesNotEndTurn,
    /// Without tool support the tools are described in the system prompt
    /// and JSON in the answer text is dispatched (TURN-E3 says fail typed).
    ToolSupportGuessed,
    /// A provider-executed tool's output leaves the turn trusted (TURN-F3).
    ProviderToolOutputTrusted,
    /// The effect-seam manifest has no row for the provider-executed tool
    /// (TURN-F1).
    ProviderToolUnlisted,
    /// A replay fork asks the provider live for a round that ran a
    /// provider-executed tool, server tool definitions included (TURN-F2).
    ProviderToolRefiredOnReplay,
    /// A replay fork with a non-empty `runOptionsOverlay` is accepted (RPL-9).
    ForkOverlayAccepted,
    /// `GET /host/effect-seams` is not served (RPL-1).
    EffectSeamsUnserved,
    /// The tool identity leaves out the per-node ordinal: every call of a run
    /// sends the same `Idempotency-Key` (TURN-D2).
    ToolKeyPerRun,
    /// `agent.tool-returned` carries the tool's result (TURN-D12).
    ResultOnReturn,
    /// A replay fork serves every recorded model round instead of asking the
    /// model again (RPL-5).
    ReplayModelFromRecord,
    /// A receiver failure reports the bare `tool_execution_failed` and an
    /// argument-validation failure the bare `invalid_args` (HOOKS-FAIL-7).
    EventCodesUnregistered,
    /// Forbidden-at-load also writes a placeholder `agent.tool-called` for
    /// the unresolvable allowlist ref (HOOKS-AUTH-7).
    ForbiddenAtLoadPlaceholderCall,
    /// A blocked `ctx.http.safeFetch` writes no call/return pair
    /// (HOOKS-EVT-5).
    SafeFetchBlockedUnaudited,
    /// The blocked safeFetch refusal omits `details.service` (HOOKS-AUTH-5).
    ServiceRefusalWithoutService,
    /// The blocked safeFetch refusal's `details.reason` is snake_case
    /// (HOOKS-AUTH-5).
    ServiceRefusalReasonSnake,
    /// A replay fork whose live model round differs from the source's
    /// carries on without `replay.diverged` (RPL-7).
    ReplayDivergenceSilent,
    /// A fork that refuses where the source answered is treated as a plain
    /// divergence: `replay.diverged` and the ordinary refusal failure, not
    /// `replay.diverged-at-refusal` and `replay_diverged_at_refusal` (RPL-7).
    RefusalDivergenceContinues,
    /// A replay fork's served `agent.tool-returned` payloads carry an extra
    /// `replayed: true` (RPL-6 says inherited events are byte-equivalent).
    ForkEventsAnnotated,
    /// An MCP tool result is fed back without the UNTRUSTED marker
    /// (TRUST-3).
    McpResultUnwrapped,
    /// An MCP result's `_meta.scopes` count as the principal's scopes for
    /// the rest of the run (TRUST-5).
    McpMetaGrantsScopes,
    /// An MRTR retry carries a different `Idempotency-Key` than the request
    /// it continues (EFF-12).
    MrtrRetryNewIdentity,
    /// An MRTR retry omits `requestState` (MCP-9).
    MrtrStateDropped,
    /// A replay fork sends the recorded final MRTR retry to the MCP server
    /// again (RPL-10).
    ReplayReissuesMrtr,
    /// MCP tools are also declared to the provider as Anthropic
    /// `mcp_servers` connectors (TURN-F4).
    McpDelegatedToProvider,
    /// A replay fork of an effect-seam fire run dispatches the
    /// `tool-receiver` call again and writes a new ledger row (RPL-11).
    FireSeamRefiresOnFork,
    /// A fork's inherited effect ledger rows get the fork's creation time
    /// as their `at` (RPL-11).
    ForkLedgerRestamped,
    /// A branch fork's Layer-2 claim is scoped without the run, so the
    /// parent's claim suppresses the branch's effect (EFF-10).
    Layer2DedupSpansFork,
    /// Discovery carries `toolHooks.turnReplay` as a string, not the boolean
    /// facet TURN-D11 defines.
    TurnReplayFacetString,
    /// With no `clarificationTool` named, a run tool called `openwop_clarify`
    /// is taken as the clarification tool: a reserved name (TURN-E5).
    ClarifyNameReserved,
    /// The webhook fan-out ignores replay-ness and re-delivers a replay
    /// fork's prefix events (RPL-8).
    WebhookRefiresPrefix,
    /// A pack's `role: "side-effect"` is ignored: the classifier alone
    /// decides, so a `transform` node with a hidden effect re-fires in a
    /// replay fork (RPL-4).
    PackRoleIgnored,
    /// A pack's `role: "pure"` overrides the classifier, so an `http` node
    /// re-fires in a replay fork (RPL-4: classifiers only add).
    PackPureRoleOverrides,
    /// A recalled knowledge segment is trusted whatever trust it was stored
    /// with, so store-then-recall raises trust (TRUST-2).
    RecalledKnowledgeTrusted,
    /// An inbound A2A message with role USER starts the run trusted, as if
    /// it were the host user's input (TRUST-6).
    A2aUserRoleTrusted,
    /// `voice.transcript` says `contentTrust: "trusted"` and the run starts
    /// trusted (TRUST-6).
    VoiceTranscriptTrusted,
    /// The MCP server mount answers a clarification interrupt as a complete
    /// tool error ("input needed") instead of `input_required` (TURN-E4).
    McpAskAsToolError,
    /// The MCP server mount accepts any well-formed `requestState` naming
    /// an open interrupt, unauthenticated and from any principal of the
    /// tenant (MCP-9, TTC §C).
    McpRequestStateUnbound,
    /// The MCP server mount's retry resolves the clarification with `{}`
    /// instead of the `inputResponses` content (MCP-9).
    McpInputResponsesDropped,
    /// `GET /tools/{toolId}` answers 403 for a hidden tool (CAT-3).
    CatalogHidden403,
    /// `DELETE /tools/{toolId}` removes the tool (CAT-4).
    CatalogWriteMutates,
    /// The tool list is not ordered by `toolId` (CAT-7).
    CatalogUnsorted,
    /// The tool list repeats a `toolId` (CAT-5).
    CatalogDuplicateId,
    /// `?source=` is ignored (CAT-8).
    SourceFilterIgnored,
    /// The compact list is a bare array (CAT-9).
    CompactViewBareArray,
    /// The v2 standard list is wrapped in `{tools}` (CAT-1).
    CatalogListWrapped,
    /// The compact view keeps the heavy fields (CAT-9, CAT-11).
    CompactViewHeavyFields,
    /// The compact list drops a tool (CAT-10).
    CompactListDropsTool,
    /// A `view` other than `compact` selects the compact view (CAT-12).
    ViewBogusCompact,
    /// The item endpoint wraps its descriptor (CAT-1).
    CatalogItemWrapped,
    /// Descriptor annotations are not derived from the descriptor (DESC-5).
    AnnotationsNotDerived,
    /// Descriptor annotations lack a hint (DESC-5).
    AnnotationsHintMissing,
    /// An exec tool is presented with a protocol-tier source (DESC-2).
    ExecToolProtocolSource,
    /// Descriptors carry an undeclared member (DESC-1).
    DescriptorExtraKey,
    /// A descriptor enum takes an unlisted value (DESC-4).
    DescriptorBadEnum,
    /// `auth.credentialRef` carries a credential value (DESC-3).
    CredentialRefValue,
    /// Every error body also carries `status` (ERR-1: the envelope is closed).
    ErrorBodyExtraKey,
    /// `not_found` is sent with HTTP 400 (ERR-2).
    NotFoundAs400,
    /// `GET /prompts` is served although `prompts` is not advertised (DISC-4).
    UnadvertisedFamilyServed,
    /// A tool return's error object in the log has an empty `code` (ERR-4).
    EventErrorEmptyCode,
    /// Discovery carries a root `supportedTransports` list (DISC-5).
    DiscoverySupportedTransports,
    /// The closed v2 root carries a `metadata` object (DISC-1).
    DiscoveryMetadataKey,
    /// A replay fork of a fixture run rewrites its prefix (RPL-6).
    ForkPrefixRewritten,
    /// A facet is advertised as `false` (DISC-3).
    DiscoveryFacetFalse,
    /// `toolCatalog.sources[]` repeats a source (DISC-8).
    CatalogSourcesRepeated,
    /// The `mcp` record lists a `-legacy` profile (MCP-2).
    McpLegacyProfile,
    /// The `mcp` record's `refreshedAt` is over 90 days old (MCP-4).
    McpRefreshedStale,
    /// The `mcp` record's `preferredVersion` is not one of its `revisions` (MCP-3).
    McpPreferredUnlisted,
    /// The MCP mount answers `initialize` and hands out a session (MCP-10).
    McpInitializeServed,
    /// The MCP mount ignores routing headers that disagree with the body (MCP-10).
    McpHeaderMismatchIgnored,
    /// The MCP mount's per-principal `tools/list` says `cacheScope: "public"` (MCP-11).
    McpListPublic,
    /// The MCP mount serves unauthenticated requests (MCP-12).
    McpAnonymousServed,
    /// An `input_required` answer past `mcp.mrtr.maxRounds` is still
    /// retried once more before the call ends `mcp_mrtr_rounds_exceeded`
    /// (MCP-8: the server must never see that extra retry).
    MrtrExtraRound,
    /// An MCP revision below `mcp.minimumRevision` is served instead of
    /// refused (MCP-5, MCP-6).
    McpBelowFloorServed,
    /// An unauthenticated MCP exchange naming no revision is sent without
    /// `MCP-Protocol-Version`, so the server falls back below
    /// `preferredVersion` (MCP-6).
    McpUnauthenticatedDowngraded,
    /// A refused MCP negotiation writes no `negotiation.decided` (MCP-7).
    McpNegotiationUnlogged,
    /// `negotiation.decided` names the server's origin in clear (MCP-7).
    McpNegotiationLogsOrigin,
    /// The `a2a` facet lacks the required `minimumVersion` (A2A-1).
    A2aFacetNoFloor,
    /// A card request without `A2A-Version` gets the oldest card (A2A-2).
    A2aCardDefaultOldest,
    /// An `A2A-Version` below `minimumVersion` is served (A2A-3).
    A2aBelowFloorServed,
    /// The agent card lists an interface version the host does not
    /// advertise (A2A-5).
    A2aCardInterfacesMismatch,
    /// The catalog lists and serves tools another tenant registered (CAT-2).
    CatalogCrossTenant,
    /// A tool session is closed before its call (CAT-13).
    SessionEmptyBracket,
    /// A session close names an id no open carries (CAT-13).
    SessionCloseUnmatched,
    /// A session close carries arguments and the tool's answer (CAT-13).
    SessionCarriesContent,
    /// A session close has an outcome outside the schema's enum (CAT-13, C-24).
    SessionOutcomeOffEnum,
    /// A completed projected A2A task reports `TASK_STATE_AUTH_REQUIRED` (A2A-4).
    A2aTaskAuthRequired,
    /// `GetTask` of another tenant's task answers 403 (A2A-6).
    A2aForeignTask403,
    /// `ListTasks` lists every tenant's tasks (A2A-6).
    A2aListTasksCrossTenant,
    /// A `ListTasks` `contextId` filter replaces the caller's tenant (A2A-6).
    A2aContextSelectsTenant,
    /// A repeated `SendMessage` with the same `messageId` starts a second run (A2A-7).
    A2aSendNotIdempotent,
    /// A mounted MCP tool's tier is taken from the server's annotations
    /// (DESC-6).
    McpAnnotationsCopied,
    /// `ctx.mcp.callTool` drops parts of the `CallToolResult` (MCP-13).
    McpCallResultAltered,
    /// `ctx.mcp.callTool` rejects an `isError: true` result (MCP-13).
    McpIsErrorRejected,
    /// `ctx.mcp` calls some server for an unknown `serverId` (MCP-13).
    McpUnknownServerAccepted,
    /// `ctx.mcp` forwards no trace context (MCP-15).
    McpTraceDropped,
    /// `ctx.mcp.listTools` drops the page's `ttlMs` and `cacheScope` (MCP-13).
    McpListPageAltered,
    /// `ctx.mcp.listTools` does not pass the cursor on (MCP-13).
    McpCursorDropped,
    /// `ctx.mcp.serverHealth` is `reachable` whenever the server's port
    /// answered at all, whatever the probe said (MCP-13).
    McpHealthFromConnection,
    /// The catalog list ignores the caller's scopes (CAT-2).
    CatalogIgnoresScopes,
    /// The public agent card lacks `capabilities.extendedAgentCard` although
    /// the host advertises `a2a.agentCards` (A2A-8, RFC 0202 §A.1).
    AgentCardNoExtendedFlag,
    /// Every `GET /agents` mints a new routing value per entry (A2A-8,
    /// RFC 0202 §B.2).
    AgentCardRPerRequest,
    /// The routing value names the caller's principal (A2A-8, RFC 0202 §B.2).
    AgentCardRNamesPrincipal,
    /// `GetExtendedAgentCard` with an agent's routing value answers the host
    /// card unchanged (A2A-8, RFC 0202 §C.4).
    AgentCardHostCard,
    /// A routing value is resolved before the caller is authenticated (A2A-8,
    /// RFC 0202 §D.6).
    AgentCardResolveBeforeAuth,
    /// Another tenant's routing value is refused unlike a never-minted one
    /// (A2A-8, RFC 0202 §D.7).
    AgentCardForeignDistinct,
    /// The public agent card lists every agent's interfaces with their
    /// routing values (A2A-8, RFC 0202 §D.8).
    AgentCardPublicListsR,
    /// A message sent through a routing value starts its run in the tenant
    /// the agent was first installed in, not the caller's (A2A-8, RFC 0202
    /// §D.9).
    AgentCardRunInInstallTenant,
    /// `a2a.agentCards` is advertised without the `a2a-1.0` profile and
    /// without `agents.manifestRuntime` (A2A-8, RFC 0202 §A.1).
    AgentCardsUnbacked,
    /// A per-agent card declares capabilities of its own and no security
    /// instead of the host card's (A2A-8, RFC 0202 §C.4).
    AgentCardOwnCapabilities,
    /// A tasks-declaring `tools/call` on a run waiting for input is answered
    /// `InputRequiredResult` instead of `CreateTaskResult` (MCP-14).
    McpTaskInputRequired,
    /// The `taskId` is a task id of its own (`task-` + the run id), not the
    /// run's id (MCP-14).
    McpTaskIdNotRun,
    /// The runs the MCP mount starts get ids with 32 random bits (MCP-14).
    McpTaskIdShort,
    /// `tasks/get` appends a read-audit event to the run's log (MCP-14).
    McpTasksGetAppends,
    /// `tasks/get` serves any caller who knows the `taskId`, whatever its
    /// tenant: the id works as a credential (MCP-14).
    McpTaskIdCredential,
    /// `tasks/cancel` acknowledges and leaves the run running (MCP-14).
    McpTasksCancelIgnored,
    /// A client disconnect before the answer leaves the run running (MCP-14).
    McpDisconnectIgnored,
    /// A disconnect cancels the run with the reason `cancelled by <principal>`
    /// instead of `mcp-request-cancelled` (MCP-14).
    McpCancelWrongReason,
    /// A task's run stays bound to the request after `CreateTaskResult` was
    /// sent: the end of the exchange cancels it (MCP-14).
    McpDisconnectAfterResponseCancels,
    /// A task whose run waits for a clarification reads as `working`, without
    /// its `inputRequests` (MCP-14).
    McpTaskStatusWorking,
    /// Not a bug: a host that behaves as the clean one and records every
    /// mutant site its code reaches ([`probe`]). The mutation matrix runs
    /// each scenario once on a probe host and gives a mutant's column only
    /// the scenarios that reached its site: elsewhere the mutant cannot
    /// change what the host does. It is not in [`crate::surface::mutants::ALL`].
    ///
    /// There are [`PROBE_SLOTS`] probes, `Probe` and `Probe1`…`Probe15`,
    /// each recording into a slot of its own ([`Mutant::probe`]), so that
    /// several probe hosts can run at once in one process.
    Probe,
    /// Probe slot 1 (see [`Mutant::Probe`]).
    Probe1,
    /// Probe slot 2.
    Probe2,
    /// Probe slot 3.
    Probe3,
    /// Probe slot 4.
    Probe4,
    /// Probe slot 5.
    Probe5,
    /// Probe slot 6.
    Probe6,
    /// Probe slot 7.
    Probe7,
    /// Probe slot 8.
    Probe8,
    /// Probe slot 9.
    Probe9,
    /// Probe slot 10.
    Probe10,
    /// Probe slot 11.
    Probe11,
    /// Probe slot 12.
    Probe12,
    /// Probe slot 13.
    Probe13,
    /// Probe slot 14.
    Probe14,
    /// Probe slot 15.
    Probe15,
}

impl Mutant {
    /// How many mutants there are. [`crate::surface::mutants::ALL`] holds one entry
    /// per variant, in variant order; the last variant is `McpTaskStatusWorking`
    /// ([`Mutant::Probe`], after it, is not a mutant).
    pub const COUNT: usize = Mutant::McpTaskStatusWorking as usize + 1;

    /// Whether this is one of the probes (without recording a site).
    pub fn is_probe(self) -> bool {
        self.probe_slot().is_some()
    }

    /// The probe's slot (0 to [`PROBE_SLOTS`] - 1), if this is a probe.
    pub fn probe_slot(self) -> Option<usize> {
        (self as usize).checked_sub(Mutant::Probe as usize)
    }

    /// The probe recording into `slot` (0 to [`PROBE_SLOTS`] - 1); `None`
    /// past the last slot.
    pub fn probe(slot: usize) -> Option<Mutant> {
        PROBES.get(slot).copied()
    }
}

/// How many probe hosts can record at once in one process.
pub const PROBE_SLOTS: usize = 16;

/// The probes, slot order.
const PROBES: [Mutant; PROBE_SLOTS] = [
    Mutant::Probe,
    Mutant::Probe1,
    Mutant::Probe2,
    Mutant::Probe3,
    Mutant::Probe4,
    Mutant::Probe5,
    Mutant::Probe6,
    Mutant::Probe7,
    Mutant::Probe8,
    Mutant::Probe9,
    Mutant::Probe10,
    Mutant::Probe11,
    Mutant::Probe12,
    Mutant::Probe13,
    Mutant::Probe14,
    Mutant::Probe15,
];

// The probes are the last variants, in slot order, right after the mutants.
const _: () = {
    assert!(Mutant::Probe as usize == Mutant::COUNT);
    let mut i = 0;
    while i < PROBE_SLOTS {
        assert!(PROBES[i] as usize == Mutant::Probe as usize + i);
        i += 1;
    }
};

// `Mutant`'s equality is where a probe sees a site: it is implemented in `probe`, the
// module below this one that holds what each probe reached.

// Consistent with `eq`: equal variants hash alike.
impl std::hash::Hash for Mutant {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (*self as usize).hash(state);
    }
}

/// The mutant sites each probe host reached, one record per probe slot.
///
/// Sound by construction: a host that never compares its mutant with `X`
/// behaves the same with `X` switched on, so a scenario whose probe run
/// reached no `X` site cannot be told apart by `X`. Reaching more is safe
/// (the matrix just runs more), so leftovers of an earlier probe host only
/// widen a later window; the caller gives each probe host running at once a
/// slot of its own.
pub mod probe {
    use std::io::Write as _;
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use std::sync::atomic::{AtomicBool, Ordering};

    use super::{Mutant, PROBE_SLOTS};

    /// Equality is the variant's, and it is where a site is seen: comparing a
    /// probe with mutant `X` records in the probe's slot that `X`'s site was
    /// reached (and is false).
    impl PartialEq for Mutant {
        fn eq(&self, other: &Self) -> bool {
            let (a, b) = (*self as usize, *other as usize);
            if let Some(slot) = self.probe_slot() {
                reach(slot, b);
            } else if let Some(slot) = other.probe_slot() {
                reach(slot, a);
            }
            a == b
        }
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const UNSEEN: AtomicBool = AtomicBool::new(false);
    #[allow(clippy::declare_interior_mutable_const)]
    const SLOT: [AtomicBool; Mutant::COUNT] = [UNSEEN; Mutant::COUNT];
    static REACHED: [[AtomicBool; Mutant::COUNT]; PROBE_SLOTS] = [SLOT; PROBE_SLOTS];

    /// Where a probe host running as a child process appends each site it
    /// reaches ([`record_to`]).
    static SINK: OnceLock<PathBuf> = OnceLock::new();

    /// Records that probe slot `slot` reached the site of the variant at `index`.
    fn reach(slot: usize, index: usize) {
        if let Some(flag) = REACHED.get(slot).and_then(|sites| sites.get(index))
            && !flag.swap(true, Ordering::SeqCst)
            && let Some(path) = SINK.get()
        {
            append(path, index);
        }
    }

    /// Appends one reached site's index as a line. Written at once (not
    /// at exit): the matrix kills probe children with SIGKILL. A failed
    /// write is said on stderr: the matrix then sees too few sites.
    fn append(path: &PathBuf, index: usize) {
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| writeln!(file, "{index}"));
        if let Err(err) = written {
            eprintln!(
                "reference-host: cannot record a reached mutant site in {}: {err}",
                path.display()
            );
        }
    }

    /// Makes this process's probe also append every site it reaches (its
    /// index, once per process and slot) to `path`: how a probe host that
    /// runs as a child process (kill-and-restart scenarios) tells the
    /// matrix what it reached. Only the first call takes effect.
    pub fn record_to(path: PathBuf) {
        let _ = SINK.set(path);
    }

    /// Forget every site slot `slot` reached so far: a probe window starts.
    pub fn reset(slot: usize) {
        for flag in REACHED.get(slot).into_iter().flatten() {
            flag.store(false, Ordering::SeqCst);
        }
    }

    /// The indices (variant order) of the sites slot `slot` reached since
    /// [`reset`].
    pub fn reached(slot: usize) -> Vec<usize> {
        let Some(sites) = REACHED.get(slot) else {
            return Vec::new();
        };
        (0..Mutant::COUNT)
            .filter(|&i| sites[i].load(Ordering::SeqCst))
            .collect()
    }
}

/// A mutant with its command-line name and a one-line statement of what it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MutantInfo {
    /// The mutant itself.
    pub mutant: Mutant,
    /// Its kebab-case name, as accepted by `--mutant`.
    pub name: &'static str,
    /// One short line saying what it breaks.
    pub breaks: &'static str,
}
