//! Approval and clarification interrupts (tool-turn contract §C, §E).
//!
//! Two kinds share one registry: an `approval` interrupt holds a tool call
//! (TTC §C, the run `waiting-approval`), a `clarification` interrupt is the
//! question the model asked through the run's clarification tool (TTC §E,
//! TURN-E1, the run `waiting-input`); the latter is answered with
//! `answers`, never through a link.
//!
//! When the loop holds a tool call for approval it opens ONE interrupt for
//! its run at the loop's node: [`Interrupts::open`] registers it, writes
//! `interrupt.requested` and moves the run to `waiting-approval` (one
//! transaction), and hands the loop a [`Pending`] to wait on. The
//! interrupt is resolved at most once: [`Interrupts::resolve`] takes it out
//! of the registry under the registry lock, writes `interrupt.resolved` with
//! the run back at `running`, and only then wakes the loop, so the log
//! always reads requested ⇒ resolved ⇒ the call's return.
//!
//! Who may resolve is decided by the HTTP handlers ([`crate::surface::interrupt_routes`]): only the
//! acting authenticated principal bound to the interrupt, or the signed
//! link token ([`token`]) when the turn was trusted. Tool results and model
//! text never reach this module.
//!
//! Every wait is bounded: [`Pending::wait`] gives up after the host's
//! approval timeout, and an interrupt whose waiter is gone (the run ended,
//! the host shut down) is withdrawn when the [`Pending`] is dropped.

pub mod token;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::base::content_trust::ContentTrust;
use crate::base::events::{INTERRUPT_REQUESTED, INTERRUPT_RESOLVED, NewEvent, RunEventDoc};
use crate::store::storage::{RunStatus, Storage, StorageError};
use token::{Binding, LinkKey};

/// `interrupt.requested.kind` of a held tool call.
pub const KIND_APPROVAL: &str = "approval";

/// `interrupt.requested.kind` of a clarification ask (TURN-E1).
pub const KIND_CLARIFICATION: &str = "clarification";

/// `interrupt.requested.kind` of an MCP tool's request for input (MRTR,
/// EFF-12).
pub const KIND_MCP_INPUT: &str = "mcp-input";

/// What an interrupt waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterruptKind {
    /// A held tool call waits for accept or reject (TTC §C).
    Approval,
    /// A clarification ask waits for the user's answers (TTC §E).
    Clarification,
    /// An MCP tool answered `input_required`: the human's answers to its
    /// `inputRequests` are awaited before the host retries (EFF-12).
    McpInput,
}

impl InterruptKind {
    /// The wire name (`interrupt.requested.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approval => KIND_APPROVAL,
            Self::Clarification => KIND_CLARIFICATION,
            Self::McpInput => KIND_MCP_INPUT,
        }
    }

    /// Whether the interrupt is answered with `{"answers": {...}}` (a
    /// clarification or an MCP input request) rather than accept/reject.
    pub fn takes_answers(self) -> bool {
        matches!(self, Self::Clarification | Self::McpInput)
    }

    /// The run status while an interrupt of this kind is open.
    fn waiting_status(self) -> RunStatus {
        match self {
            Self::Approval => RunStatus::WaitingApproval,
            Self::Clarification | Self::McpInput => RunStatus::WaitingInput,
        }
    }
}

/// How long a waiter whose deadline passed waits for a resolution that was
/// already taken (the resolver is between its take and its write).
const RESOLUTION_GRACE: Duration = Duration::from_secs(5);

/// What the approver decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Run the held call (once).
    Accept,
    /// Do not run it; the model is told it was rejected.
    Reject,
}

impl Action {
    /// Every wire name, in documented order.
    pub const NAMES: &'static [&'static str] = &["accept", "reject"];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Reject => "reject",
        }
    }

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "accept" => Some(Self::Accept),
            "reject" => Some(Self::Reject),
            _ => None,
        }
    }
}

/// Through which door a resolution came (`interrupt.resolved.via`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `POST /runs/{runId}/interrupts/{nodeId}` by an authenticated principal.
    Principal,
    /// `POST /interrupts/{token}` (the signed link).
    LinkToken,
    /// Tool or model content: only the `approval-from-content` mutant.
    Content,
}

impl Via {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Principal => "principal",
            Self::LinkToken => "link-token",
            Self::Content => "content",
        }
    }
}

/// A decision on an interrupt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// Accept or reject (a clarification's answer is an `Accept`).
    pub action: Action,
    /// The user's answers to a clarification (an object); `None` for an
    /// approval.
    pub answers: Option<Value>,
    /// The principal on whose authority it was made.
    pub by: String,
    /// How it arrived.
    pub via: Via,
}

/// What is known about one open interrupt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// What the interrupt waits for.
    pub kind: InterruptKind,
    /// The run.
    pub run_id: String,
    /// The node the run is paused at.
    pub node_id: String,
    /// The held call.
    pub call_id: String,
    /// The held call's tool.
    pub tool_name: String,
    /// The acting principal of the run, the only one who may resolve.
    pub bound_principal: String,
    /// The trust of the turn that emitted the call.
    pub content_trust: ContentTrust,
    /// The signed link token.
    pub token: String,
    /// The keys an `mcp-input` answer must carry (every key of the MCP
    /// result's `inputRequests`, EFF-12); empty for the other kinds.
    pub input_keys: Vec<String>,
    /// The question of a clarification ask (`None` for the other kinds);
    /// the MCP server mount relays it as the elicitation message (TURN-E4).
    pub question: Option<String>,
}

/// One entry of an MCP `input_required` result's `inputRequests`, as the
/// human sees it on `interrupt.requested`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputPrompt {
    /// The `inputRequests` key (the answer's key).
    pub key: String,
    /// The request's `params.message` (empty when it has none).
    pub message: String,
}

/// What the loop asks for when it holds a call.
#[derive(Debug, Clone, Copy)]
pub struct HoldRequest<'a> {
    /// What the interrupt waits for.
    pub kind: InterruptKind,
    /// The question of a clarification ask (`None` for an approval).
    pub question: Option<&'a str>,
    /// The run.
    pub run_id: &'a str,
    /// The loop's node.
    pub node_id: &'a str,
    /// The held call.
    pub call_id: &'a str,
    /// Its tool.
    pub tool_name: &'a str,
    /// The run's acting principal.
    pub bound_principal: &'a str,
    /// The trust of the turn that emitted the call.
    pub content_trust: ContentTrust,
    /// The call event (`interrupt.requested` is caused by it).
    pub causation: &'a str,
    /// What an `mcp-input` interrupt asks for (empty for the other kinds).
    pub inputs: &'a [InputPrompt],
}

/// Why a resolution did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The interrupt is not open (never was, already resolved, expired).
    #[error("the interrupt is not open")]
    NotOpen,
    /// The store failed while recording the resolution.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitEnd {
    /// Resolved (the `interrupt.resolved` event is written).
    Resolved(Resolution),
    /// Nobody resolved it in time; it is withdrawn.
    Expired,
    /// The resolution could not be recorded (the store failed).
    Lost,
}

#[derive(Debug)]
struct Entry {
    ticket: Ticket,
    requested_event_id: String,
    wake: oneshot::Sender<Resolution>,
}

type Open = Arc<Mutex<HashMap<String, Entry>>>;

/// The open interrupts of the host, one per run at most.
pub struct Interrupts {
    key: LinkKey,
    open: Open,
}

impl std::fmt::Debug for Interrupts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupts")
            .field("open", &lock(&self.open).len())
            .finish_non_exhaustive()
    }
}

impl Default for Interrupts {
    fn default() -> Self {
        Self::new()
    }
}

/// Locks the registry. A poisoned lock only means a thread panicked while
/// holding it; every operation is one insert, lookup or removal, so the
/// map is still consistent and is reused as it is.
fn lock(open: &Open) -> MutexGuard<'_, HashMap<String, Entry>> {
    open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Interrupts {
    /// An empty registry with a fresh link-signing key.
    pub fn new() -> Self {
        Self {
            key: LinkKey::random(),
            open: Arc::default(),
        }
    }

    /// Opens the interrupt of a held call: registers it, then writes
    /// `interrupt.requested` with the run at `waiting-approval` (one
    /// transaction), all under the registry lock, so nobody can resolve an
    /// interrupt whose request is not in the log yet.
    pub fn open(
        &self,
        storage: &Storage,
        request: HoldRequest<'_>,
    ) -> Result<Pending, StorageError> {
        let token = self.key.mint(Binding {
            run_id: request.run_id,
            node_id: request.node_id,
            call_id: request.call_id,
        });
        let ticket = Ticket {
            kind: request.kind,
            run_id: request.run_id.to_owned(),
            node_id: request.node_id.to_owned(),
            call_id: request.call_id.to_owned(),
            tool_name: request.tool_name.to_owned(),
            bound_principal: request.bound_principal.to_owned(),
            content_trust: request.content_trust,
            token,
            input_keys: request.inputs.iter().map(|p| p.key.clone()).collect(),
            question: request.question.map(str::to_owned),
        };
        let payload = match request.kind {
            InterruptKind::Approval => json!({
                "kind": KIND_APPROVAL,
                "nodeId": ticket.node_id,
                "callId": ticket.call_id,
                "toolName": ticket.tool_name,
                "boundPrincipal": ticket.bound_principal,
                "contentTrust": ticket.content_trust.as_str(),
                "token": ticket.token,
            }),
            // No link token: the answers come from the bound principal
            // over the authenticated route only.
            InterruptKind::Clarification => json!({
                "kind": KIND_CLARIFICATION,
                "nodeId": ticket.node_id,
                "callId": ticket.call_id,
                "toolName": ticket.tool_name,
                "question": ticket.question.as_deref().unwrap_or_default(),
                "boundPrincipal": ticket.bound_principal,
                "contentTrust": ticket.content_trust.as_str(),
            }),
            // EFF-12: the MCP tool's questions, keyed as its `inputRequests`;
            // no link token either (answers come from the bound principal).
            InterruptKind::McpInput => {
                let requests: serde_json::Map<String, Value> = request
                    .inputs
                    .iter()
                    .map(|p| (p.key.clone(), json!({"message": p.message})))
                    .collect();
                json!({
                    "kind": KIND_MCP_INPUT,
                    "nodeId": ticket.node_id,
                    "callId": ticket.call_id,
                    "toolName": ticket.tool_name,
                    "toolId": ticket.tool_name,
                    "inputRequests": requests,
                    "boundPrincipal": ticket.bound_principal,
                    "contentTrust": ticket.content_trust.as_str(),
                })
            }
        };
        let event = NewEvent::new(INTERRUPT_REQUESTED, payload)
            .at_node(request.node_id)
            .caused_by(Some(request.causation.to_owned()));
        let (wake, woken) = oneshot::channel();
        let mut open = lock(&self.open);
        let requested = storage.append_event_with_status(
            request.run_id,
            request.kind.waiting_status(),
            Some(request.node_id),
            event,
        )?;
        // The loop is sequential, so a run has one open interrupt at most;
        // a stale one (impossible while its Pending lives) is replaced and
        // its waiter sees `Lost`.
        open.insert(
            ticket.run_id.clone(),
            Entry {
                ticket: ticket.clone(),
                requested_event_id: requested.event_id,
                wake,
            },
        );
        Ok(Pending {
            open: Arc::clone(&self.open),
            ticket,
            woken,
        })
    }

    /// The open interrupt of `run_id`, if any.
    pub fn ticket(&self, run_id: &str) -> Option<Ticket> {
        lock(&self.open)
            .get(run_id)
            .map(|entry| entry.ticket.clone())
    }

    /// The open interrupt a link token names, if the token is well formed,
    /// its interrupt is open and its signature verifies.
    pub fn ticket_by_token(&self, token: &str) -> Option<Ticket> {
        let nonce_ok = token::nonce_of(token).is_some();
        let open = lock(&self.open);
        nonce_ok
            .then(|| {
                open.values()
                    .map(|entry| &entry.ticket)
                    // Links resolve approvals only; a clarification is
                    // answered by the bound principal (TURN-E1).
                    .filter(|ticket| ticket.kind == InterruptKind::Approval)
                    .find(|ticket| ticket.token.len() == token.len() && self.verify(ticket, token))
            })
            .flatten()
            .cloned()
    }

    fn verify(&self, ticket: &Ticket, token: &str) -> bool {
        self.key.verify(
            token,
            Binding {
                run_id: &ticket.run_id,
                node_id: &ticket.node_id,
                call_id: &ticket.call_id,
            },
        )
    }

    /// Resolves the interrupt `ticket` names, if it is still that same
    /// interrupt and still open: at most once, whoever races. Writes
    /// `interrupt.resolved` (the run back at `running`) BEFORE the loop is
    /// woken, so the held call's return always follows it in the log.
    pub fn resolve(
        &self,
        storage: &Storage,
        ticket: &Ticket,
        resolution: Resolution,
    ) -> Result<RunEventDoc, ResolveError> {
        let entry = {
            let mut open = lock(&self.open);
            let same = open
                .get(&ticket.run_id)
                .is_some_and(|entry| entry.ticket.token == ticket.token);
            if !same {
                return Err(ResolveError::NotOpen);
            }
            open.remove(&ticket.run_id).ok_or(ResolveError::NotOpen)?
        };
        // Content-free like the tool events: a clarification's answers go
        // to the model, not into the log.
        let payload = match entry.ticket.kind {
            InterruptKind::Approval => json!({
                "nodeId": entry.ticket.node_id,
                "callId": entry.ticket.call_id,
                "action": resolution.action.as_str(),
                "by": resolution.by,
                "via": resolution.via.as_str(),
            }),
            InterruptKind::Clarification | InterruptKind::McpInput => json!({
                "kind": entry.ticket.kind.as_str(),
                "nodeId": entry.ticket.node_id,
                "callId": entry.ticket.call_id,
                "by": resolution.by,
                "via": resolution.via.as_str(),
            }),
        };
        let event = NewEvent::new(INTERRUPT_RESOLVED, payload)
            .at_node(&entry.ticket.node_id)
            .caused_by(Some(entry.requested_event_id));
        // On a store failure the sender is dropped unsent: the waiter sees
        // `Lost` and fails the run instead of acting on an unrecorded
        // decision.
        let resolved =
            storage.append_event_with_status(&ticket.run_id, RunStatus::Running, None, event)?;
        // The waiter may be gone (host shutting down); nothing to wake then.
        let _ = entry.wake.send(resolution);
        Ok(resolved)
    }
}

/// The loop's side of one open interrupt. Dropping it withdraws the
/// interrupt if it is still open (the run ended or the host shut down), so
/// no interrupt outlives its waiter.
#[derive(Debug)]
pub struct Pending {
    open: Open,
    ticket: Ticket,
    woken: oneshot::Receiver<Resolution>,
}

impl Pending {
    /// The interrupt.
    pub fn ticket(&self) -> &Ticket {
        &self.ticket
    }

    /// Waits for the resolution, at most `timeout`. At the deadline the
    /// interrupt is withdrawn under the registry lock; if a resolver took
    /// it first, its (already recorded) decision is waited for a little
    /// longer, bounded too.
    pub async fn wait(mut self, timeout: Duration) -> WaitEnd {
        match tokio::time::timeout(timeout, &mut self.woken).await {
            Ok(Ok(resolution)) => WaitEnd::Resolved(resolution),
            Ok(Err(_)) => WaitEnd::Lost,
            Err(_) if self.withdraw() => WaitEnd::Expired,
            Err(_) => match tokio::time::timeout(RESOLUTION_GRACE, &mut self.woken).await {
                Ok(Ok(resolution)) => WaitEnd::Resolved(resolution),
                _ => WaitEnd::Lost,
            },
        }
    }

    /// Removes this interrupt if it is still open; whether it was.
    fn withdraw(&self) -> bool {
        let mut open = lock(&self.open);
        let mine = open
            .get(&self.ticket.run_id)
            .is_some_and(|entry| entry.ticket.token == self.ticket.token);
        if mine {
            open.remove(&self.ticket.run_id);
        }
        mine
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.withdraw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage_with_run(run_id: &str) -> Storage {
        let storage = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        storage.create_run(run_id, "alice").expect("run");
        storage
    }

    fn request(run_id: &str) -> HoldRequest<'_> {
        HoldRequest {
            kind: InterruptKind::Approval,
            question: None,
            run_id,
            node_id: "agent",
            call_id: "call_1",
            tool_name: "w",
            bound_principal: "alice",
            content_trust: ContentTrust::Untrusted,
            causation: "evt_call",
            inputs: &[],
        }
    }

    fn by_alice(action: Action) -> Resolution {
        Resolution {
            action,
            answers: None,
            by: "alice".into(),
            via: Via::Principal,
        }
    }

    #[tokio::test]
    async fn open_records_the_request_and_resolve_wakes_the_waiter_once() {
        let storage = storage_with_run("run_1");
        let interrupts = Interrupts::new();
        let pending = interrupts.open(&storage, request("run_1")).expect("open");
        let run = storage.run("run_1").expect("read").expect("run");
        assert_eq!(run.status, RunStatus::WaitingApproval);
        assert_eq!(run.current_node_id.as_deref(), Some("agent"));
        assert!(!run.status.is_terminal());

        let ticket = interrupts.ticket("run_1").expect("open");
        assert_eq!(
            interrupts.ticket_by_token(&ticket.token),
            Some(ticket.clone())
        );
        interrupts
            .resolve(&storage, &ticket, by_alice(Action::Accept))
            .expect("resolved");
        assert!(matches!(
            interrupts.resolve(&storage, &ticket, by_alice(Action::Reject)),
            Err(ResolveError::NotOpen)
        ));
        assert_eq!(
            pending.wait(Duration::from_secs(5)).await,
            WaitEnd::Resolved(by_alice(Action::Accept))
        );
        let events = storage.events_after("run_1", -1).expect("events");
        let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
        assert_eq!(types, [INTERRUPT_REQUESTED, INTERRUPT_RESOLVED]);
        assert_eq!(events[0].node_id.as_deref(), Some("agent"));
        assert_eq!(events[0].causation_id.as_deref(), Some("evt_call"));
        assert_eq!(events[1].payload["action"], "accept");
        assert_eq!(events[1].payload["by"], "alice");
        assert_eq!(
            events[1].causation_id.as_deref(),
            Some(events[0].event_id.as_str())
        );
        let run = storage.run("run_1").expect("read").expect("run");
        assert_eq!(run.status, RunStatus::Running);
        assert_eq!(run.current_node_id, None);
    }

    #[tokio::test]
    async fn a_clarification_waits_for_input_and_carries_the_answers() {
        let storage = storage_with_run("run_1");
        let interrupts = Interrupts::new();
        let pending = interrupts
            .open(
                &storage,
                HoldRequest {
                    kind: InterruptKind::Clarification,
                    question: Some("Which file?"),
                    ..request("run_1")
                },
            )
            .expect("open");
        let run = storage.run("run_1").expect("read").expect("run");
        assert_eq!(run.status, RunStatus::WaitingInput);
        let ticket = pending.ticket().clone();
        assert_eq!(ticket.question.as_deref(), Some("Which file?"));
        // Links never resolve a clarification.
        assert_eq!(interrupts.ticket_by_token(&ticket.token), None);
        let answered = Resolution {
            answers: Some(json!({"file": "a"})),
            ..by_alice(Action::Accept)
        };
        interrupts
            .resolve(&storage, &ticket, answered.clone())
            .expect("resolved");
        assert_eq!(
            pending.wait(Duration::from_secs(5)).await,
            WaitEnd::Resolved(answered)
        );
        let events = storage.events_after("run_1", -1).expect("events");
        assert_eq!(events[0].payload["kind"], "clarification");
        assert_eq!(events[0].payload["question"], "Which file?");
        assert!(events[0].payload.get("token").is_none());
        assert_eq!(events[1].payload["kind"], "clarification");
        assert!(events[1].payload.get("action").is_none());
        assert_eq!(
            storage.run("run_1").expect("read").expect("run").status,
            RunStatus::Running
        );
    }

    #[tokio::test]
    async fn an_unresolved_interrupt_expires_and_is_withdrawn() {
        let storage = storage_with_run("run_1");
        let interrupts = Interrupts::new();
        let pending = interrupts.open(&storage, request("run_1")).expect("open");
        let ticket = pending.ticket().clone();
        assert_eq!(
            pending.wait(Duration::from_millis(20)).await,
            WaitEnd::Expired
        );
        assert_eq!(interrupts.ticket("run_1"), None);
        assert_eq!(interrupts.ticket_by_token(&ticket.token), None);
        assert!(matches!(
            interrupts.resolve(&storage, &ticket, by_alice(Action::Accept)),
            Err(ResolveError::NotOpen)
        ));
    }

    #[test]
    fn dropping_the_waiter_withdraws_the_interrupt() {
        let storage = storage_with_run("run_1");
        let interrupts = Interrupts::new();
        let pending = interrupts.open(&storage, request("run_1")).expect("open");
        assert!(interrupts.ticket("run_1").is_some());
        drop(pending);
        assert_eq!(interrupts.ticket("run_1"), None);
    }

    #[test]
    fn forged_or_foreign_tokens_name_no_interrupt() {
        let storage = storage_with_run("run_1");
        let interrupts = Interrupts::new();
        let _pending = interrupts.open(&storage, request("run_1")).expect("open");
        let other = Interrupts::new();
        let foreign = other.key.mint(Binding {
            run_id: "run_1",
            node_id: "agent",
            call_id: "call_1",
        });
        assert_eq!(interrupts.ticket_by_token(&foreign), None);
        assert_eq!(interrupts.ticket_by_token("ilt_nope"), None);
        assert_eq!(Action::parse("accept"), Some(Action::Accept));
        assert_eq!(Action::parse("approve"), None);
    }
}
