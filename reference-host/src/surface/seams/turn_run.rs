//! The turn seam: `POST /conformance/seams/sample/turn/run`.
//!
//! It only sets a run up: it checks the caller and the whole body (every
//! problem is a 400 before any run exists), creates the run attributed to
//! `principal`, registers the run-scoped fixture tools in the catalog,
//! writes `run.started`, spawns the tool loop and answers `201` at once.
//! It never admits a tool call itself: every call goes through the loop.
//!
//! With `exposeAsMcpTool: NAME` the seam starts no run: it registers the
//! body (which then must not carry `input`) as the template of the MCP tool
//! `NAME` of the host's MCP server mount, and each `tools/call` of it
//! starts a run through [`start_run`] exactly as the seam would (TURN-E4,
//! [`crate::surface::mcp_server`]).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use crate::base::principals::Principal;
use crate::domain::error::{ApiError, json_response};
use crate::domain::workflows::new_run_id;
use crate::surface::mcp_server::mount::McpServer;
use crate::surface::mcp_server::protocol::MCP_PATH;
use crate::surface::mcp_server::templates::parse_registration;
use crate::surface::seams::extract::SeamRequest;
use crate::turn::driver;
use crate::turn::plan::TurnPlan;
use crate::turn::records::{self, RunMode};
use crate::turn::request::TurnRunRequest;
use crate::turn::state::LoopState;

/// Handler for the seam.
pub async fn run(
    State(state): State<LoopState>,
    State(mcp_server): State<McpServer>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    // Caller checks first: an unauthenticated or unscoped caller learns
    // nothing about its request body.
    let caller = &seam.caller;
    let body = seam.body;
    // TURN-E4: a body naming `exposeAsMcpTool` registers a template for the
    // MCP server mount instead of starting a run.
    if let Some(registration) = parse_registration(&body)? {
        let tenant = state.run_tenant(&registration.principal, caller);
        let name = registration.name.clone();
        mcp_server.templates().register(&tenant, registration)?;
        return Ok(json_response(
            StatusCode::CREATED,
            &json!({"mcpTool": name, "mcpPath": MCP_PATH}),
        ));
    }
    let run_id = start_run(&state, caller, &body)?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({
            "runId": run_id,
            "eventsUrl": format!("/runs/{run_id}/events"),
        }),
    ))
}

/// Checks a turn-run body and starts its run (the seam's whole job). `caller`
/// decides the tenant only when the body's principal is unknown. Returns the
/// run id ([`new_run_id`]).
pub fn start_run(state: &LoopState, caller: &Principal, body: &[u8]) -> Result<String, ApiError> {
    start_run_as(state, caller, body, new_run_id())
}

/// [`start_run`] under a run id the caller minted (the MCP server mount
/// starts its runs through here).
pub fn start_run_as(
    state: &LoopState,
    caller: &Principal,
    body: &[u8],
    run_id: String,
) -> Result<String, ApiError> {
    let request = TurnRunRequest::parse(body)?;
    let tenant = state.run_tenant(&request.principal, caller);
    state
        .storage()
        .create_run_in(&run_id, &request.principal, &tenant)?;
    state.catalog().register(&tenant, &request.tools);
    // The plan is the raw body: it already parsed, so recovery and forks
    // can re-parse it (TTC §D).
    let raw = String::from_utf8_lossy(body);
    records::save_plan(state.storage(), &run_id, &raw, None, RunMode::Live)?;
    let plan = TurnPlan::new(run_id.clone(), request, state.mutant());
    driver::start(state.clone(), plan)?;
    Ok(run_id)
}
