//! The tool-hooks seam: `POST /conformance/seams/sample/toolhooks/invoke`.
//!
//! One request drives one non-agent tool call through the host's hooks, in
//! the order RFC 0064 fixes: argsHash and the `agent.tool-called` event
//! (§B, §E), argument validation before any gate (tool-turn contract §B),
//! fail-closed authorization (§C), the per-(principal, tool) rate limit (§D),
//! the invocation itself, and the content-free `agent.tool-returned` event
//! (§F). Every arm writes both tool events, so the log always pairs a call
//! with its return.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::base::args_hash::args_hash;
use crate::base::args_schema::ArgsSchema;
use crate::base::events::{RunEventDoc, TOOL_CALLED, TOOL_RETURNED};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::redaction::{ResolvedArgs, Scrubber, resolve_credentials};
use crate::base::tool_events::{
    CallPayload, ReturnPayload, SYSTEM_AGENT_ID, ToolErrorCode, ToolReturn, ToolStatus,
};
use crate::domain::Domain;
use crate::domain::error::{ApiError, ErrorCode, json_response};
use crate::domain::gates::{self, Bucket, Gate, Grant, Pipeline, Refusal};
use crate::domain::invoker::InvokeResult;
use crate::domain::workflows::new_run_id;
use crate::store::storage::RunStatus;
use crate::surface::seams::extract::SeamRequest;
use crate::surface::seams::request::InvokeRequest;

/// The agent id the `seam-agentid-not-system` mutant uses instead of `core.system`.
const WRONG_SEAM_AGENT_ID: &str = "refhost.agent";

/// Handler for the seam.
pub async fn invoke(State(state): State<Domain>, seam: SeamRequest) -> Response {
    match handle(&state, seam).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

/// The request after every check that can still answer 400 has passed.
struct Prepared {
    request: InvokeRequest,
    args: ResolvedArgs,
    schema: Option<ArgsSchema>,
    scrubber: Scrubber,
}

/// How the call ended: its return, and the gate that refused it (`None`:
/// the tool ran or was simulated). A policy refusal answers 403 or 429,
/// anything else (a failed argument check included) 200.
struct Ended {
    ret: ToolReturn,
    refusal: Option<Refusal<String>>,
}

async fn handle(state: &Domain, seam: SeamRequest) -> Result<Response, ApiError> {
    // The caller was checked before the body was read ([`SeamRequest`]): an
    // unauthenticated or unscoped caller learns nothing about its request body.
    let caller = &seam.caller;
    let prepared = prepare(InvokeRequest::parse(&seam.body)?)?;
    let tenant = state.run_tenant(&prepared.request.principal, caller);
    let call = ToolCall::begin(state, &prepared, &tenant)?;
    let mut ended = call.run_gates_and_invoke(&prepared).await?;
    let returned = call.finish(&mut ended)?;
    Ok(call.respond(&prepared.request, ended, &returned))
}

/// Step 1 (the 400 part): everything that can reject the request is checked
/// before a run exists, so a rejected request leaves no half-made run.
fn prepare(request: InvokeRequest) -> Result<Prepared, ApiError> {
    let schema = request
        .input_schema
        .as_ref()
        .map(ArgsSchema::compile)
        .transpose()
        .map_err(|err| ApiError::validation(format!("{err}; send a schema that compiles")))?;
    // RFC 0064 §E: a reference with no credential is a caller error, named
    // by its ref (the ref name is not secret; the value would be).
    let args = resolve_credentials(&request.args, &request.credentials)
        .map_err(|err| ApiError::validation(err.to_string()))?;
    let scrubber = Scrubber::new(&request.credentials);
    Ok(Prepared {
        request,
        args,
        schema,
        scrubber,
    })
}

/// One tool call in flight: its run, ids and the recorded call event.
struct ToolCall<'s> {
    state: &'s Domain,
    run_id: String,
    agent_id: &'static str,
    call_payload: CallPayload,
    call_event: RunEventDoc,
}

impl<'s> ToolCall<'s> {
    /// Steps 1–3: create the run, mint the call id, hash the args and append
    /// `agent.tool-called`.
    fn begin(state: &'s Domain, prepared: &Prepared, tenant: &str) -> Result<Self, ApiError> {
        let request = &prepared.request;
        let run_id = new_run_id();
        state
            .storage()
            .create_run_in(&run_id, &request.principal, tenant)?;
        let call_id = format!("call_{}", uuid::Uuid::new_v4().simple());

        // RFC 0064 §B/§E, SR-1: hash the redacted args in RFC 8785 form.
        let args_hash = args_hash(
            &prepared.args.redacted,
            &prepared.args.resolved,
            state.mutant(),
        )
        .map_err(|_| ApiError::internal("the args could not be hashed; retry the request"))?;

        // RFC 0064 ruling 3: a seam call has no agent, so it is attributed to
        // the reserved system agent.
        let agent_id = if state.mutant_is(Mutant::SeamAgentidNotSystem) {
            WRONG_SEAM_AGENT_ID
        } else {
            SYSTEM_AGENT_ID
        };

        // RFC 0064 §B: the call event is content-free (argsHash, no inputs)
        // and names the principal the call is attributed to.
        // Bug under `call-event-carries-inputs`: RFC 0002's full `inputs` ride
        // along, resolved credentials included.
        let inputs = state
            .mutant_is(Mutant::CallEventCarriesInputs)
            .then(|| prepared.args.resolved.clone());
        let principal = (!state.mutant_is(Mutant::CallEventMissingPrincipal))
            .then(|| request.principal.clone());
        let call_payload = CallPayload {
            agent_id: Some(agent_id.to_owned()),
            tool_name: request.tool_name.clone(),
            call_id,
            args_hash,
            principal,
            transport: request.transport,
            inputs,
        };
        let call_event = append_tool_event(state, &run_id, TOOL_CALLED, &call_payload, None)?;
        Ok(Self {
            state,
            run_id,
            agent_id,
            call_payload,
            call_event,
        })
    }

    /// Steps 4–7: argument validation, authorization, rate limit (the gate
    /// pipeline), invocation. The tool never runs after a refusal (except
    /// under `invoke-then-check`).
    async fn run_gates_and_invoke(&self, prepared: &Prepared) -> Result<Ended, ApiError> {
        let (state, request) = (self.state, &prepared.request);
        // Step 4, tool-turn contract §B: arguments before any gate. Step 5,
        // RFC 0064 §C: fail-closed authorization of the attributed principal
        // against the grant the caller states (`grantedScopes`, the upstream
        // seam contract), else against the scopes the host resolves. Step 6,
        // §D: the per-(principal, tool) token bucket.
        let pipeline = Pipeline {
            gates: &[Gate::Own(()), Gate::Authorize, Gate::RateLimit],
            principal: &request.principal,
            tool: &request.tool_name,
            required_scopes: &request.required_scopes,
            grant: request
                .granted_scopes
                .as_deref()
                .map_or(Grant::Resolved, |granted| Grant::Stated(Some(granted))),
            bucket: Bucket::Seam {
                simulate_exhausted: request.simulate_rate_limit_exhausted,
            },
        };
        let args = &prepared.args.resolved;
        let schema_check = |()| match prepared.schema.as_ref().and_then(|s| s.first_error(args)) {
            Some(problem) => Err(prepared.scrubber.scrub(&problem)),
            None => Ok(()),
        };
        if let Err(refusal) = pipeline.run(state, schema_check) {
            let ret = match &refusal {
                Refusal::Own(problem) => {
                    // v2 closes `status`: a validation failure is `error`, with
                    // the registered code `validation_error` (HOOKS-FAIL-7).
                    let status = if state.mutant_is(Mutant::StatusInvalidArgs) {
                        ToolStatus::InvalidArgs
                    } else {
                        ToolStatus::Error
                    };
                    let code = ToolErrorCode::invalid_args(state.mutant());
                    ToolReturn::failed(status, code, problem.clone(), None)
                }
                Refusal::Forbidden { reason, message } => {
                    if state.mutant_is(Mutant::InvokeThenCheck) {
                        // Bug: the side effect happens before the decision is honoured.
                        let _ = self.invoke(prepared).await;
                    }
                    // HOOKS-AUTH: every deny is recorded, before the return event.
                    // Bug under `denial-unlogged`: the denial lives only in the
                    // seam's own answer; neither this event nor the return
                    // reaches the log ([`Self::finish`]).
                    if !state.mutant_is(Mutant::DenialUnlogged) {
                        let (principal, tool) = (&request.principal, &request.tool_name);
                        gates::record_denial(state, &self.run_id, principal, tool, *reason)?;
                    }
                    // The tool did not run, so there is no duration to report.
                    let duration_ms = state.mutant_is(Mutant::ForbiddenWithDuration).then_some(0);
                    let code = ToolErrorCode::Forbidden;
                    ToolReturn::failed(ToolStatus::Forbidden, code, message.clone(), duration_ms)
                }
                Refusal::RateLimited { message, .. } => {
                    let code = ToolErrorCode::RateLimited;
                    ToolReturn::failed(ToolStatus::RateLimited, code, message.clone(), None)
                }
            };
            let refusal = Some(refusal);
            return Ok(Ended { ret, refusal });
        }
        // Step 7: the tool runs.
        let mut ret = self.invoke(prepared).await;
        if state.mutant_is(Mutant::FailureBareSuccess) && !ret.status.is_ok() {
            // Bug: the failure is hidden behind a bare success.
            ret = ToolReturn::ok(ret.duration_ms.unwrap_or(0));
        }
        Ok(Ended { ret, refusal: None })
    }

    /// Runs the tool (or its simulation) with the resolved args.
    async fn invoke(&self, prepared: &Prepared) -> ToolReturn {
        let request = &prepared.request;
        if request.simulate_tool_error {
            // RFC 0064 §F ran-and-threw arm (upstream compatibility): the
            // receiver is not called.
            return ToolReturn::failed(
                ToolStatus::Error,
                ToolErrorCode::ToolExecutionFailed,
                "the tool raised an error (simulated by simulateToolError)",
                Some(0),
            );
        }
        let timeout = request.timeout.unwrap_or(self.state.default_tool_timeout());
        let invocation = self
            .state
            .invoker()
            .invoke(
                request.receiver_url.as_ref(),
                &prepared.args.resolved,
                timeout,
            )
            .await;
        match invocation.result {
            InvokeResult::Succeeded => ToolReturn::ok(invocation.duration_ms),
            // HOOKS-FAIL-7: the receiver's failure keeps its vendor code
            // (except under `event-codes-unregistered`).
            InvokeResult::Failed { code, message } => ToolReturn::failed(
                ToolStatus::Error,
                ToolErrorCode::from_receiver(code, self.state.mutant()),
                prepared.scrubber.scrub(&message),
                Some(invocation.duration_ms),
            ),
        }
    }

    /// Step 8: append `agent.tool-returned` (caused by the call event) and
    /// settle the run's status. Returns the payload as answered.
    fn finish(&self, ended: &mut Ended) -> Result<ReturnPayload, ApiError> {
        if self.state.mutant_is(Mutant::ErrorWithOutcome) && ended.ret.error.is_some() {
            // Bug: `error` and `outcome` are mutually exclusive (and the
            // return is content-free anyway).
            ended.ret.outcome = Some(json!({}));
        }
        let ret = &ended.ret;
        let payload = ReturnPayload {
            agent_id: Some(self.agent_id.to_owned()),
            tool_name: self.call_payload.tool_name.clone(),
            call_id: self.call_payload.call_id.clone(),
            status: ret.status,
            duration_ms: ret.duration_ms,
            error: ret.error.clone(),
            outcome: ret.outcome.clone(),
            // The call event of this seam carries both.
            transport: None,
            principal: None,
        };
        // The return is caused by the call: causationId links the pair.
        let causation = (!self.state.mutant_is(Mutant::ReturnCausationMissing))
            .then(|| self.call_event.event_id.clone());
        // Bug under `denial-unlogged`: a deny's return stays out of the log.
        let forbidden = matches!(ended.refusal, Some(Refusal::Forbidden { .. }));
        if !(forbidden && self.state.mutant_is(Mutant::DenialUnlogged)) {
            append_tool_event(self.state, &self.run_id, TOOL_RETURNED, &payload, causation)?;
        }
        let status = if ret.status.is_ok() {
            RunStatus::Completed
        } else {
            RunStatus::Failed
        };
        // A failed run says why (`GET /runs/{runId}` serves it): the tool
        // return's error, already content-free.
        let error = ret.error.as_ref().map(to_value).transpose()?;
        self.state
            .storage()
            .set_run_outcome(&self.run_id, status, error.as_ref())?;
        Ok(payload)
    }

    /// The HTTP answer: 403 and 429 carry the seam response in the error
    /// envelope's `details`.
    fn respond(&self, request: &InvokeRequest, ended: Ended, returned: &ReturnPayload) -> Response {
        let tool_called = to_value(&self.call_payload).unwrap_or(Value::Null);
        let tool_returned = to_value(returned).unwrap_or(Value::Null);
        let retry_after_secs = match ended.refusal {
            Some(Refusal::Forbidden { .. }) => None,
            Some(Refusal::RateLimited {
                retry_after_secs, ..
            }) => Some(retry_after_secs),
            Some(Refusal::Own(_)) | None => {
                let body = json!({
                    "runId": self.run_id,
                    "toolCalled": tool_called,
                    "toolReturned": tool_returned,
                });
                return json_response(StatusCode::OK, &body);
            }
        };
        let mut details = Map::new();
        details.insert("scope".into(), json!("tool"));
        details.insert("toolName".into(), json!(request.tool_name));
        details.insert("runId".into(), json!(self.run_id));
        details.insert("toolCalled".into(), tool_called);
        details.insert("toolReturned".into(), tool_returned);
        let message = ended.ret.error.map(|e| e.message).unwrap_or_default();
        match retry_after_secs {
            Some(retry_after_secs) => {
                self.rate_limited_response(message, details, retry_after_secs)
            }
            None => {
                details.insert("requiredScopes".into(), json!(request.required_scopes));
                ApiError::new(ErrorCode::Forbidden, message)
                    .with_details(details)
                    .into_response()
            }
        }
    }

    /// The 429 answer: the envelope plus a `Retry-After` header in whole
    /// seconds (never a retry hint inside `details`).
    fn rate_limited_response(
        &self,
        message: String,
        mut details: Map<String, Value>,
        retry_after_secs: u64,
    ) -> Response {
        if self.state.mutant_is(Mutant::RateLimitBareBody) {
            // Bug: not the v2 error envelope.
            let mut response = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                &json!({"status": "rate_limited"}),
            );
            let value = HeaderValue::from(retry_after_secs.max(1));
            response.headers_mut().insert(header::RETRY_AFTER, value);
            return response;
        }
        let err = ApiError::new(ErrorCode::RateLimited, message);
        if self.state.mutant_is(Mutant::RateLimitNoRetryAfter) {
            // Bug: the hint moves from the header into details.
            details.insert("retryAfterSeconds".into(), json!(retry_after_secs));
            return err.with_details(details).into_response();
        }
        err.with_details(details)
            .with_retry_after(retry_after_secs)
            .into_response()
    }
}

/// Serialises a payload (cannot fail for these types; mapped for safety).
fn to_value<P: Serialize>(payload: &P) -> Result<Value, ApiError> {
    serde_json::to_value(payload)
        .map_err(|_| ApiError::internal("an event payload could not be serialised; retry"))
}

/// Appends a tool event (`agent.tool-*`) to the run's log.
fn append_tool_event<P: Serialize>(
    state: &Domain,
    run_id: &str,
    event_type: &'static str,
    payload: &P,
    causation: Option<String>,
) -> Result<RunEventDoc, ApiError> {
    let mut payload = to_value(payload)?;
    if state.mutant_is(Mutant::EventAgentidMissing)
        && let Some(object) = payload.as_object_mut()
    {
        // Bug: the log loses the agent attribution (the seam response, built
        // from the unmodified payload, keeps it).
        object.remove("agentId");
    }
    Ok(gates::record(
        state, run_id, event_type, payload, causation,
    )?)
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::InvokeThenCheck,
        name: "invoke-then-check",
        breaks: "the tool is invoked first, then authorization is checked and `forbidden` reported",
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
];
