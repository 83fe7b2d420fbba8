//! Named, deliberately broken variants ("mutants") of the reference host.
//!
//! Each mutant is one known bug at one named place in the code. A correct
//! conformance harness must fail at least one check against every mutant and
//! pass every check against the unmutated host. The check for a mutant sits at
//! exactly the place where its bug lives (search for `Mutant::<Variant>`), so a
//! reader can see the correct behaviour and the broken one side by side.

use std::fmt;
use std::str::FromStr;

/// One deliberately broken variant of the host, switched on by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// Every mutant, in its canonical (documented) order.
pub const ALL: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::AuthzFailOpenOnResolverError,
        name: "authz-fail-open-on-resolver-error",
        breaks: "a scope-resolver error is treated as \"allowed\" (fails open)",
    },
    MutantInfo {
        mutant: Mutant::InvokeThenCheck,
        name: "invoke-then-check",
        breaks: "the tool is invoked first, then authorization is checked and `forbidden` reported",
    },
    MutantInfo {
        mutant: Mutant::ArgsHashRaw,
        name: "args-hash-raw",
        breaks: "argsHash is computed over the resolved raw args (secret included)",
    },
    MutantInfo {
        mutant: Mutant::ArgsHashNoncanonical,
        name: "args-hash-noncanonical",
        breaks: "argsHash is computed over serde_json::to_string(args) (redacted, but not RFC 8785 canonical)",
    },
    MutantInfo {
        mutant: Mutant::FailureBareSuccess,
        name: "failure-bare-success",
        breaks: "a failed tool call (non-2xx, timeout, unreachable) is reported as {status: \"ok\"} with no error",
    },
    MutantInfo {
        mutant: Mutant::ForbiddenWithDuration,
        name: "forbidden-with-duration",
        breaks: "a forbidden return carries durationMs: 0",
    },
    MutantInfo {
        mutant: Mutant::RateLimitKeyedByTool,
        name: "rate-limit-keyed-by-tool",
        breaks: "the token bucket is keyed by tool name only (one principal exhausts it for all)",
    },
    MutantInfo {
        mutant: Mutant::RateLimitAbsent,
        name: "rate-limit-absent",
        breaks: "no token bucket: calls are never rate limited (simulateRateLimitExhausted still honoured)",
    },
    MutantInfo {
        mutant: Mutant::RateLimitNoRetryAfter,
        name: "rate-limit-no-retry-after",
        breaks: "429 responses lack the Retry-After header and put retryAfterSeconds in details",
    },
    MutantInfo {
        mutant: Mutant::RateLimitBareBody,
        name: "rate-limit-bare-body",
        breaks: "the 429 body is {\"status\": \"rate_limited\"} instead of the error envelope",
    },
    MutantInfo {
        mutant: Mutant::AuthzAlwaysDeny,
        name: "authz-always-deny",
        breaks: "every authorization check denies (even with all scopes held)",
    },
    MutantInfo {
        mutant: Mutant::DenialUnlogged,
        name: "denial-unlogged",
        breaks: "a deny writes neither authorization.decided nor its forbidden return to the event log (only the seam answer reports it)",
    },
    MutantInfo {
        mutant: Mutant::CallEventCarriesInputs,
        name: "call-event-carries-inputs",
        breaks: "agent.tool-called also carries the full inputs, resolved secrets included",
    },
    MutantInfo {
        mutant: Mutant::CallEventMissingPrincipal,
        name: "call-event-missing-principal",
        breaks: "agent.tool-called omits principal",
    },
    MutantInfo {
        mutant: Mutant::ReturnCausationMissing,
        name: "return-causation-missing",
        breaks: "agent.tool-returned has no causationId",
    },
    MutantInfo {
        mutant: Mutant::EventAgentidMissing,
        name: "event-agentid-missing",
        breaks: "tool events omit agentId (in the events log only; the seam response unaffected)",
    },
    MutantInfo {
        mutant: Mutant::SeamAgentidNotSystem,
        name: "seam-agentid-not-system",
        breaks: "seam (non-agent) tool events use agentId refhost.agent instead of core.system",
    },
    MutantInfo {
        mutant: Mutant::ErrorWithOutcome,
        name: "error-with-outcome",
        breaks: "a failed return carries both error and outcome: {}",
    },
    MutantInfo {
        mutant: Mutant::StatusInvalidArgs,
        name: "status-invalid-args",
        breaks: "an argument-validation failure reports status: \"invalid_args\" (not in the closed enum)",
    },
    MutantInfo {
        mutant: Mutant::DiscoveryEtagIgnored,
        name: "discovery-etag-ignored",
        breaks: "discovery never answers 304 to a matching If-None-Match",
    },
    MutantInfo {
        mutant: Mutant::ToolhooksFacetNotBoolean,
        name: "toolhooks-facet-not-boolean",
        breaks: "the toolHooks record carries \"perToolRateLimit\": \"yes\"",
    },
    MutantInfo {
        mutant: Mutant::DiscoveryPreferredUnlisted,
        name: "discovery-preferred-unlisted",
        breaks: "preferredVersion is \"2.1\", not in protocolVersions",
    },
    MutantInfo {
        mutant: Mutant::DiscoveryRecordMissingWitness,
        name: "discovery-record-missing-witness",
        breaks: "the toolHooks record has no witness key",
    },
    MutantInfo {
        mutant: Mutant::AuthorizationFailclosedFalse,
        name: "authorization-failclosed-false",
        breaks: "the authorization record advertises failClosed: false",
    },
    MutantInfo {
        mutant: Mutant::TruncatedArgsExecuted,
        name: "truncated-args-executed",
        breaks: "a tool call in a truncated completion is dispatched with {} as its arguments",
    },
    MutantInfo {
        mutant: Mutant::PromptedOutputDispatched,
        name: "prompted-output-dispatched",
        breaks: "a prompted/structured JSON answer shaped {\"tool\": NAME, \"arguments\": {…}} naming a run tool is dispatched as a tool call",
    },
    MutantInfo {
        mutant: Mutant::InlineToolParser,
        name: "inline-tool-parser",
        breaks: "assistant text with <tool_call>{…}</tool_call> or a fenced json block with name/arguments is parsed and executed",
    },
    MutantInfo {
        mutant: Mutant::AuthzBeforeArgs,
        name: "authz-before-args",
        breaks: "authorization runs before argument validation",
    },
    MutantInfo {
        mutant: Mutant::LimitsBeforeAuthz,
        name: "limits-before-authz",
        breaks: "the rate limit (token consumed) is checked before authorization",
    },
    MutantInfo {
        mutant: Mutant::RefusalRetried,
        name: "refusal-retried",
        breaks: "a refused completion is retried once with the same request",
    },
    MutantInfo {
        mutant: Mutant::RepairEchoesModelText,
        name: "repair-echoes-model-text",
        breaks: "the invalid-arguments repair text quotes the model's raw arguments text instead of the validator output",
    },
    MutantInfo {
        mutant: Mutant::ToolErrorWithoutIserror,
        name: "tool-error-without-iserror",
        breaks: "a failed tool result is fed back as isError: false (Anthropic is_error false)",
    },
    MutantInfo {
        mutant: Mutant::UnknownToolBareSuccess,
        name: "unknown-tool-bare-success",
        breaks: "an unknown tool name returns status ok with no error",
    },
    MutantInfo {
        mutant: Mutant::DoubleReturn,
        name: "double-return",
        breaks: "an executed call gets two agent.tool-returned events",
    },
    MutantInfo {
        mutant: Mutant::RepeatNotSuppressed,
        name: "repeat-not-suppressed",
        breaks: "an identical repeated call is dispatched again",
    },
    MutantInfo {
        mutant: Mutant::StructuredNotEnforced,
        name: "structured-not-enforced",
        breaks: "output.mode structured on OpenAI sends no response_format (falls back to prompting)",
    },
    MutantInfo {
        mutant: Mutant::DescriptorWithoutReplayPolicy,
        name: "descriptor-without-replay-policy",
        breaks: "GET /tools descriptors omit replayPolicy",
    },
    MutantInfo {
        mutant: Mutant::ClaimReadThenWrite,
        name: "claim-read-then-write",
        breaks: "the effect claim is a SELECT, an await point, then INSERT OR REPLACE (read-then-write: two executors can both win)",
    },
    MutantInfo {
        mutant: Mutant::AttemptInIdentity,
        name: "attempt-in-identity",
        breaks: "the retry attempt counter is hashed into the effect id (each retry is a new effect)",
    },
    MutantInfo {
        mutant: Mutant::RunIdInKeying,
        name: "run-id-in-keying",
        breaks: "the runId is hashed into the effect id (each entry point is a new effect)",
    },
    MutantInfo {
        mutant: Mutant::NoProviderKey,
        name: "no-provider-key",
        breaks: "effect calls to the provider carry no Idempotency-Key header",
    },
    MutantInfo {
        mutant: Mutant::RetryKeyDiffers,
        name: "retry-key-differs",
        breaks: "the provider Idempotency-Key is <effectId>-a<attempt>, different on every retry",
    },
    MutantInfo {
        mutant: Mutant::L1KeyIgnored,
        name: "l1-key-ignored",
        breaks: "Idempotency-Key on POST /runs is ignored entirely",
    },
    MutantInfo {
        mutant: Mutant::L1ReplayHeaderMissing,
        name: "l1-replay-header-missing",
        breaks: "replayed POST /runs responses omit OpenWOP-Idempotent-Replay",
    },
    MutantInfo {
        mutant: Mutant::L1MismatchWrongCode,
        name: "l1-mismatch-wrong-code",
        breaks: "a reused key with a different body answers 409 idempotency_key_conflict instead of idempotency_key_mismatch",
    },
    MutantInfo {
        mutant: Mutant::L1InFlightProcessed,
        name: "l1-in-flight-processed",
        breaks: "a request whose key is in flight is processed as a new request instead of 409 idempotency_in_flight",
    },
    MutantInfo {
        mutant: Mutant::L1Caches5xx,
        name: "l1-caches-5xx",
        breaks: "a 503 answer to POST /runs is cached and replayed",
    },
    MutantInfo {
        mutant: Mutant::L1CachesValidationError,
        name: "l1-caches-validation-error",
        breaks: "a 400 validation_error answer to POST /runs is cached and replayed",
    },
    MutantInfo {
        mutant: Mutant::L1InvalidKeyAccepted,
        name: "l1-invalid-key-accepted",
        breaks: "Idempotency-Key values failing ^[A-Za-z0-9._~-]{22,128}$ are accepted",
    },
    MutantInfo {
        mutant: Mutant::L1KeyNotTenantScoped,
        name: "l1-key-not-tenant-scoped",
        breaks: "the Layer-1 key scope omits the tenant (one tenant's key replays to another)",
    },
    MutantInfo {
        mutant: Mutant::L1RetentionShort,
        name: "l1-retention-short",
        breaks: "discovery advertises idempotency.layer1RetentionSeconds 3600 (below 24 h)",
    },
    MutantInfo {
        mutant: Mutant::SweeperDropsYoung,
        name: "sweeper-drops-young",
        breaks: "the retention sweeper deletes effect records older than 1 day instead of 14 days",
    },
    MutantInfo {
        mutant: Mutant::EffectsCrossTenant,
        name: "effects-cross-tenant",
        breaks: "another tenant can read a run's effects (GET /runs/{runId}/effects skips the tenant check)",
    },
    MutantInfo {
        mutant: Mutant::LedgerLeaksArgs,
        name: "ledger-leaks-args",
        breaks: "effect ledger rows carry the business arguments in an extra args field",
    },
    MutantInfo {
        mutant: Mutant::DistinctEffectsCollide,
        name: "distinct-effects-collide",
        breaks: "the business key's #n suffix is dropped, so distinct effects of one run share an identity",
    },
    MutantInfo {
        mutant: Mutant::CrossRegionUnknown,
        name: "cross-region-unknown",
        breaks: "discovery advertises idempotency.crossRegion \"multi-master\"",
    },
    MutantInfo {
        mutant: Mutant::TrustFromModelOutput,
        name: "trust-from-model-output",
        breaks: "a model text or tool-call argument containing \"contentTrust\": \"trusted\" resets the turn to trusted",
    },
    MutantInfo {
        mutant: Mutant::ApprovalByAnyPrincipal,
        name: "approval-by-any-principal",
        breaks: "any authenticated principal may resolve an approval interrupt, not only the bound one",
    },
    MutantInfo {
        mutant: Mutant::ApprovalViaLinkUntrusted,
        name: "approval-via-link-untrusted",
        breaks: "the signed link token resolves interrupts of untrusted turns too",
    },
    MutantInfo {
        mutant: Mutant::ApprovalFromContent,
        name: "approval-from-content",
        breaks: "a tool result whose JSON has \"approved\": true resolves the open interrupt as accept",
    },
    MutantInfo {
        mutant: Mutant::UntrustedWriteRefused,
        name: "untrusted-write-refused",
        breaks: "an untrusted conditional write is refused outright with forbidden instead of held (the pre-TTC blanket refusal)",
    },
    MutantInfo {
        mutant: Mutant::ApprovedCallRunsTwice,
        name: "approved-call-runs-twice",
        breaks: "an accepted call is dispatched twice",
    },
    MutantInfo {
        mutant: Mutant::TrustNeverTainted,
        name: "trust-never-tainted",
        breaks: "tool results do not taint the turn: contentTrust stays trusted",
    },
    MutantInfo {
        mutant: Mutant::ReplayExecutesTool,
        name: "replay-executes-tool",
        breaks: "a replay fork dispatches each tool to its receiver and feeds back the live result (TURN-D5, RPL-2)",
    },
    MutantInfo {
        mutant: Mutant::ReplayMissEmptySuccess,
        name: "replay-miss-empty-success",
        breaks: "a replay miss is served as status ok with a null result and the fork completes (TURN-D6, RPL-3)",
    },
    MutantInfo {
        mutant: Mutant::ReplayDurationRecomputed,
        name: "replay-duration-recomputed",
        breaks: "a replayed return carries a freshly measured durationMs instead of the recorded one (HOOKS-AUDIT-4, RPL-6)",
    },
    MutantInfo {
        mutant: Mutant::ReplayErrorReworded,
        name: "replay-error-reworded",
        breaks: "a replayed return's recorded error message is re-rendered with a `replayed: ` prefix (HOOKS-FAIL-6, RPL-6)",
    },
    MutantInfo {
        mutant: Mutant::RecoveryRerunsInDoubt,
        name: "recovery-reruns-in-doubt",
        breaks: "after a restart the call in doubt is re-run even when its replayPolicy is non-deterministic (TURN-D8)",
    },
    MutantInfo {
        mutant: Mutant::RecoveryFromScratch,
        name: "recovery-from-scratch",
        breaks: "recovery ignores the records and restarts the loop from round 1, re-asking the provider and re-executing tools (TURN-D7)",
    },
    MutantInfo {
        mutant: Mutant::RetryServedRecords,
        name: "retry-served-records",
        breaks: "a new node attempt is served the earlier attempt's tool records, so a retry is handed the recorded transient failure (TURN-D9)",
    },
    MutantInfo {
        mutant: Mutant::RecordAfterNextRound,
        name: "record-after-next-round",
        breaks: "a round's tool records are written only after the next model response has arrived (TURN-D3)",
    },
    MutantInfo {
        mutant: Mutant::OversizedServedOnReplay,
        name: "oversized-served-on-replay",
        breaks: "a digest (oversized) record is served on replay or recovery, its digest object fed back as the result (TURN-D10)",
    },
    MutantInfo {
        mutant: Mutant::RecordFailureIgnored,
        name: "record-failure-ignored",
        breaks: "a record failure is ignored for every tool, so a write tool's node goes on unrecorded (TURN-D4)",
    },
    MutantInfo {
        mutant: Mutant::ClarificationUnbounded,
        name: "clarification-unbounded",
        breaks: "a clarification ask past limits.clarificationRounds raises another interrupt instead of the typed refusal (TURN-E1)",
    },
    MutantInfo {
        mutant: Mutant::AskDoesNotEndTurn,
        name: "ask-does-not-end-turn",
        breaks: "calls after a clarification ask in the same round are executed instead of ended-turn (TURN-E2)",
    },
    MutantInfo {
        mutant: Mutant::ToolSupportGuessed,
        name: "tool-support-guessed",
        breaks: "without tool support the tools are prompted in the system message and JSON in the answer text is dispatched (TURN-E3)",
    },
    MutantInfo {
        mutant: Mutant::ProviderToolOutputTrusted,
        name: "provider-tool-output-trusted",
        breaks: "a provider-executed tool's output leaves contentTrust unchanged, so a later conditional write is not held (TURN-F3)",
    },
    MutantInfo {
        mutant: Mutant::ProviderToolUnlisted,
        name: "provider-tool-unlisted",
        breaks: "the effect-seam manifest has no row for the provider-executed tool (TURN-F1)",
    },
    MutantInfo {
        mutant: Mutant::ProviderToolRefiredOnReplay,
        name: "provider-tool-refired-on-replay",
        breaks: "a replay fork asks the provider live for a provider-tool round, server tool definitions included (TURN-F2)",
    },
    MutantInfo {
        mutant: Mutant::ForkOverlayAccepted,
        name: "fork-overlay-accepted",
        breaks: "a replay fork with a non-empty runOptionsOverlay is accepted (RPL-9)",
    },
    MutantInfo {
        mutant: Mutant::EffectSeamsUnserved,
        name: "effect-seams-unserved",
        breaks: "GET /host/effect-seams answers 404 (RPL-1)",
    },
    MutantInfo {
        mutant: Mutant::ToolKeyPerRun,
        name: "tool-key-per-run",
        breaks: "every tool call of a run sends the same Idempotency-Key: the ordinal is left out (TURN-D2)",
    },
    MutantInfo {
        mutant: Mutant::ResultOnReturn,
        name: "result-on-return",
        breaks: "agent.tool-returned carries the tool's result (TURN-D12)",
    },
    MutantInfo {
        mutant: Mutant::ReplayModelFromRecord,
        name: "replay-model-from-record",
        breaks: "a replay fork serves every recorded model round instead of asking the model again (RPL-5)",
    },
    MutantInfo {
        mutant: Mutant::EventCodesUnregistered,
        name: "event-codes-unregistered",
        breaks: "event error codes are bare unregistered names (tool_execution_failed, invalid_args) (HOOKS-FAIL-7)",
    },
    MutantInfo {
        mutant: Mutant::ForbiddenAtLoadPlaceholderCall,
        name: "forbidden-at-load-placeholder-call",
        breaks: "forbidden-at-load mints a placeholder call event (HOOKS-AUTH-7)",
    },
    MutantInfo {
        mutant: Mutant::SafeFetchBlockedUnaudited,
        name: "safe-fetch-blocked-unaudited",
        breaks: "a blocked safeFetch emits no call/return pair (HOOKS-EVT-5)",
    },
    MutantInfo {
        mutant: Mutant::ServiceRefusalWithoutService,
        name: "service-refusal-without-service",
        breaks: "a host-service refusal omits details.service (HOOKS-AUTH-5)",
    },
    MutantInfo {
        mutant: Mutant::ServiceRefusalReasonSnake,
        name: "service-refusal-reason-snake",
        breaks: "a host-service refusal's details.reason is snake_case (private_address) (HOOKS-AUTH-5)",
    },
    MutantInfo {
        mutant: Mutant::ReplayDivergenceSilent,
        name: "replay-divergence-silent",
        breaks: "a diverging replay fork emits no replay.diverged (it continues silently) (RPL-7)",
    },
    MutantInfo {
        mutant: Mutant::RefusalDivergenceContinues,
        name: "refusal-divergence-continues",
        breaks: "a fork that refuses where the source answered is treated as a plain divergence (RPL-7)",
    },
    MutantInfo {
        mutant: Mutant::ForkEventsAnnotated,
        name: "fork-events-annotated",
        breaks: "a replay fork's served tool returns carry an extra replayed: true field (RPL-6)",
    },
    MutantInfo {
        mutant: Mutant::McpResultUnwrapped,
        name: "mcp-result-unwrapped",
        breaks: "an MCP tool result is fed back without the UNTRUSTED marker (TRUST-3)",
    },
    MutantInfo {
        mutant: Mutant::McpMetaGrantsScopes,
        name: "mcp-meta-grants-scopes",
        breaks: "an MCP result's _meta.scopes are added to the principal's scopes for the rest of the run (TRUST-5)",
    },
    MutantInfo {
        mutant: Mutant::MrtrRetryNewIdentity,
        name: "mrtr-retry-new-identity",
        breaks: "an MRTR retry carries a different Idempotency-Key than the request it continues (EFF-12)",
    },
    MutantInfo {
        mutant: Mutant::MrtrStateDropped,
        name: "mrtr-state-dropped",
        breaks: "an MRTR retry omits requestState (MCP-9)",
    },
    MutantInfo {
        mutant: Mutant::ReplayReissuesMrtr,
        name: "replay-reissues-mrtr",
        breaks: "a replay fork re-sends the recorded MRTR retry to the MCP server (RPL-10)",
    },
    MutantInfo {
        mutant: Mutant::McpDelegatedToProvider,
        name: "mcp-delegated-to-provider",
        breaks: "MCP tools are passed to the provider as an Anthropic mcp_servers connector (TURN-F4)",
    },
    MutantInfo {
        mutant: Mutant::FireSeamRefiresOnFork,
        name: "fire-seam-refires-on-fork",
        breaks: "a replay fork of a fired run delivers the tool-receiver effect again (RPL-11)",
    },
    MutantInfo {
        mutant: Mutant::ForkLedgerRestamped,
        name: "fork-ledger-restamped",
        breaks: "a fork's inherited effect rows get a fresh `at` (RPL-11)",
    },
    MutantInfo {
        mutant: Mutant::Layer2DedupSpansFork,
        name: "layer2-dedup-spans-fork",
        breaks: "a branch fork's Layer-2 claim is scoped without the run, so the parent's claim suppresses the branch's effect (EFF-10)",
    },
    MutantInfo {
        mutant: Mutant::TurnReplayFacetString,
        name: "turn-replay-facet-string",
        breaks: "discovery carries toolHooks.turnReplay as the string \"yes\" instead of a boolean (TURN-D11)",
    },
    MutantInfo {
        mutant: Mutant::ClarifyNameReserved,
        name: "clarify-name-reserved",
        breaks: "with no clarificationTool named, a run tool called openwop_clarify raises a clarification interrupt (TURN-E5)",
    },
    MutantInfo {
        mutant: Mutant::WebhookRefiresPrefix,
        name: "webhook-refires-prefix",
        breaks: "webhook fan-out re-delivers a replay fork's prefix events (RPL-8)",
    },
    MutantInfo {
        mutant: Mutant::PackRoleIgnored,
        name: "pack-role-ignored",
        breaks: "a pack's role: side-effect is ignored: the classifier alone decides, so a transform node with a hidden effect re-fires in a replay fork (RPL-4)",
    },
    MutantInfo {
        mutant: Mutant::PackPureRoleOverrides,
        name: "pack-pure-role-overrides",
        breaks: "a pack's role: pure overrides the classifier, so an http node re-fires in a replay fork (RPL-4: classifiers only add)",
    },
    MutantInfo {
        mutant: Mutant::RecalledKnowledgeTrusted,
        name: "recalled-knowledge-trusted",
        breaks: "recalled knowledge is trusted whatever trust it was stored with (TRUST-2)",
    },
    MutantInfo {
        mutant: Mutant::A2aUserRoleTrusted,
        name: "a2a-user-role-trusted",
        breaks: "an inbound A2A message with role USER is taken as the user's trusted input (TRUST-6)",
    },
    MutantInfo {
        mutant: Mutant::VoiceTranscriptTrusted,
        name: "voice-transcript-trusted",
        breaks: "voice.transcript says contentTrust trusted and the turn starts trusted (TRUST-6)",
    },
    MutantInfo {
        mutant: Mutant::McpAskAsToolError,
        name: "mcp-ask-as-tool-error",
        breaks: "the MCP server answers a clarification as a complete isError result \"input needed\" instead of input_required (TURN-E4)",
    },
    MutantInfo {
        mutant: Mutant::McpRequestStateUnbound,
        name: "mcp-request-state-unbound",
        breaks: "the MCP server accepts any well-formed requestState naming an open interrupt, unauthenticated, from any principal of the tenant (MCP-9)",
    },
    MutantInfo {
        mutant: Mutant::McpInputResponsesDropped,
        name: "mcp-input-responses-dropped",
        breaks: "the MCP server's MRTR retry resolves the clarification with {} instead of the inputResponses content (MCP-9)",
    },
];

// `Mutant::info` falls back to `ALL[0]`; this makes that index total.
const _: () = assert!(!ALL.is_empty());

impl Mutant {
    /// The entry of [`ALL`] describing this mutant.
    fn info(self) -> &'static MutantInfo {
        // Every variant has exactly one entry in ALL (checked by a unit test);
        // the fallback only keeps this total without a panic path.
        ALL.iter()
            .find(|info| info.mutant == self)
            .unwrap_or(&ALL[0])
    }

    /// The kebab-case name accepted by `--mutant`.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// One short line saying what this mutant breaks.
    pub fn breaks(self) -> &'static str {
        self.info().breaks
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a mutant name that is not in [`ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mutant `{given}`; valid names: {}", valid_names())]
pub struct UnknownMutant {
    /// The name that was given.
    pub given: String,
}

/// The valid mutant names, comma separated, in canonical order.
fn valid_names() -> String {
    ALL.iter()
        .map(|info| info.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Mutant {
    type Err = UnknownMutant;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL.iter()
            .find(|info| info.name == s)
            .map(|info| info.mutant)
            .ok_or_else(|| UnknownMutant {
                given: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_round_trip_through_from_str() {
        for info in ALL {
            let parsed: Mutant = info.name.parse().expect("listed name parses");
            assert_eq!(parsed, info.mutant);
            assert_eq!(parsed.name(), info.name);
            assert_eq!(parsed.breaks(), info.breaks);
            assert_eq!(parsed.to_string(), info.name);
        }
    }

    #[test]
    fn list_has_112_unique_entries_in_documented_order() {
        assert_eq!(ALL.len(), 112);
        let names: HashSet<_> = ALL.iter().map(|i| i.name).collect();
        let mutants: HashSet<_> = ALL.iter().map(|i| i.mutant).collect();
        assert_eq!(names.len(), ALL.len());
        assert_eq!(mutants.len(), ALL.len());
        assert_eq!(ALL[0].name, "authz-fail-open-on-resolver-error");
        assert_eq!(ALL[23].name, "authorization-failclosed-false");
        // The tool-turn mutants are appended after the tool-hooks ones, in
        // the order the harness's committed matrix lists them.
        let turn: Vec<&str> = ALL[24..37].iter().map(|i| i.name).collect();
        assert_eq!(
            turn,
            [
                "truncated-args-executed",
                "prompted-output-dispatched",
                "inline-tool-parser",
                "authz-before-args",
                "limits-before-authz",
                "refusal-retried",
                "repair-echoes-model-text",
                "tool-error-without-iserror",
                "unknown-tool-bare-success",
                "double-return",
                "repeat-not-suppressed",
                "structured-not-enforced",
                "descriptor-without-replay-policy",
            ]
        );
        // The idempotency mutants (effects, Layer 1, retention, discovery)
        // are appended after the turn ones, in the brief's order.
        let idempotency: Vec<&str> = ALL[37..56].iter().map(|i| i.name).collect();
        assert_eq!(
            idempotency,
            [
                "claim-read-then-write",
                "attempt-in-identity",
                "run-id-in-keying",
                "no-provider-key",
                "retry-key-differs",
                "l1-key-ignored",
                "l1-replay-header-missing",
                "l1-mismatch-wrong-code",
                "l1-in-flight-processed",
                "l1-caches-5xx",
                "l1-caches-validation-error",
                "l1-invalid-key-accepted",
                "l1-key-not-tenant-scoped",
                "l1-retention-short",
                "sweeper-drops-young",
                "effects-cross-tenant",
                "ledger-leaks-args",
                "distinct-effects-collide",
                "cross-region-unknown",
            ]
        );
        // The trust and approval mutants (TTC §C) follow, in the brief's
        // order.
        let trust: Vec<&str> = ALL[56..63].iter().map(|i| i.name).collect();
        assert_eq!(
            trust,
            [
                "trust-from-model-output",
                "approval-by-any-principal",
                "approval-via-link-untrusted",
                "approval-from-content",
                "untrusted-write-refused",
                "approved-call-runs-twice",
                "trust-never-tainted",
            ]
        );
        // The recovery and replay mutants (TTC §D) follow.
        let replay: Vec<&str> = ALL[63..73].iter().map(|i| i.name).collect();
        assert_eq!(
            replay,
            [
                "replay-executes-tool",
                "replay-miss-empty-success",
                "replay-duration-recomputed",
                "replay-error-reworded",
                "recovery-reruns-in-doubt",
                "recovery-from-scratch",
                "retry-served-records",
                "record-after-next-round",
                "oversized-served-on-replay",
                "record-failure-ignored",
            ]
        );
        // The human-input, provider-tool and replay-surface mutants (TTC §E,
        // §F, RPL) follow.
        let human_and_provider: Vec<&str> = ALL[73..84].iter().map(|i| i.name).collect();
        assert_eq!(
            human_and_provider,
            [
                "clarification-unbounded",
                "ask-does-not-end-turn",
                "tool-support-guessed",
                "provider-tool-output-trusted",
                "provider-tool-unlisted",
                "provider-tool-refired-on-replay",
                "fork-overlay-accepted",
                "effect-seams-unserved",
                "tool-key-per-run",
                "result-on-return",
                "replay-model-from-record",
            ]
        );
        // The event-code, forbidden-at-load and host-service mutants (issue
        // 2: HOOKS-FAIL-7, HOOKS-AUTH-7, HOOKS-EVT-5, HOOKS-AUTH-5) follow.
        let refusals: Vec<&str> = ALL[84..89].iter().map(|i| i.name).collect();
        assert_eq!(
            refusals,
            [
                "event-codes-unregistered",
                "forbidden-at-load-placeholder-call",
                "safe-fetch-blocked-unaudited",
                "service-refusal-without-service",
                "service-refusal-reason-snake",
            ]
        );
        // The replay divergence (RPL-7) and byte-equivalence (RPL-6)
        // mutants follow.
        let divergence: Vec<&str> = ALL[89..92].iter().map(|i| i.name).collect();
        assert_eq!(
            divergence,
            [
                "replay-divergence-silent",
                "refusal-divergence-continues",
                "fork-events-annotated",
            ]
        );
        // The MCP tool mutants (EFF-12, TRUST-3, TRUST-5, RPL-10, TURN-F4)
        // close it.
        let mcp: Vec<&str> = ALL[92..98].iter().map(|i| i.name).collect();
        assert_eq!(
            mcp,
            [
                "mcp-result-unwrapped",
                "mcp-meta-grants-scopes",
                "mrtr-retry-new-identity",
                "mrtr-state-dropped",
                "replay-reissues-mrtr",
                "mcp-delegated-to-provider",
            ]
        );
        // The effect-seam fire (RPL-11) and branch-fork (EFF-10) mutants
        // follow.
        let fire: Vec<&str> = ALL[98..101].iter().map(|i| i.name).collect();
        assert_eq!(
            fire,
            [
                "fire-seam-refires-on-fork",
                "fork-ledger-restamped",
                "layer2-dedup-spans-fork",
            ]
        );
        // The discovery-facet (TURN-D11) and reserved-name (TURN-E5) mutants
        // follow.
        let surface: Vec<&str> = ALL[101..103].iter().map(|i| i.name).collect();
        assert_eq!(
            surface,
            ["turn-replay-facet-string", "clarify-name-reserved"]
        );
        // The webhook fan-out mutant (RPL-8) follows.
        let webhooks: Vec<&str> = ALL[103..104].iter().map(|i| i.name).collect();
        assert_eq!(webhooks, ["webhook-refires-prefix"]);
        // The pack role mutants (RPL-4) follow.
        let packs: Vec<&str> = ALL[104..106].iter().map(|i| i.name).collect();
        assert_eq!(packs, ["pack-role-ignored", "pack-pure-role-overrides"]);
        // The store-then-recall (TRUST-2) and inbound-content (TRUST-6)
        // mutants follow.
        let inbound_trust: Vec<&str> = ALL[106..109].iter().map(|i| i.name).collect();
        assert_eq!(
            inbound_trust,
            [
                "recalled-knowledge-trusted",
                "a2a-user-role-trusted",
                "voice-transcript-trusted",
            ]
        );
        // The MCP server mount mutants (TURN-E4, MCP-9) close it.
        let mcp_server: Vec<&str> = ALL[109..].iter().map(|i| i.name).collect();
        assert_eq!(
            mcp_server,
            [
                "mcp-ask-as-tool-error",
                "mcp-request-state-unbound",
                "mcp-input-responses-dropped",
            ]
        );
    }

    #[test]
    fn breaks_lines_are_single_short_lines() {
        for info in ALL {
            assert!(!info.breaks.is_empty());
            assert!(!info.breaks.contains('\n'), "{}", info.name);
            assert!(!info.breaks.contains('\t'), "{}", info.name);
        }
    }

    #[test]
    fn unknown_name_lists_valid_names() {
        let err = "no-such-mutant".parse::<Mutant>().unwrap_err();
        let message = err.to_string();
        assert!(message.contains("no-such-mutant"));
        for info in ALL {
            assert!(message.contains(info.name), "missing {}", info.name);
        }
    }
}
