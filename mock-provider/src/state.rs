//! The provider's state: loaded scripts, how far each has been consumed, and the recordings.
//!
//! Everything is keyed by the request's `model` value. Each test run uses its own key, so runs
//! never see each other's scripts or recordings and nothing needs resetting between them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;

use crate::error::{ApiError, ScriptError};
use crate::record::{Endpoint, RecordedRequest};
use crate::script::{Round, Script};

/// Shared, cheaply cloneable provider state; the router and [`crate::MockProvider`] both
/// hold one.
#[derive(Debug, Clone, Default)]
pub struct ProviderState {
    keys: Arc<Mutex<HashMap<String, KeyState>>>,
}

/// One model key: its script (absent for keys only ever seen in requests) and its record.
#[derive(Debug, Default)]
struct KeyState {
    script: Option<LoadedScript>,
    requests: Vec<RecordedRequest>,
    problems: Vec<String>,
}

#[derive(Debug)]
struct LoadedScript {
    rounds: Vec<Round>,
    /// Per round, the first generated-id number it uses (ids count from 1 across the script).
    first_id: Vec<usize>,
    /// The next round to answer with.
    next: usize,
}

/// A request as it arrived, before it is answered.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub endpoint: Endpoint,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    pub stream: bool,
}

/// What a scripted round needs besides the round itself to render an answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RoundContext<'a> {
    /// Which round of the script this is.
    pub index: usize,
    /// The number the round's first generated id uses.
    pub first_id: usize,
    /// The request body.
    pub request: &'a Value,
}

/// How the provider will answer, decided while the state is locked and sent after it is not.
#[derive(Debug)]
pub(crate) struct Decision<R> {
    pub delay: Option<Duration>,
    pub reply: Result<R, ApiError>,
}

impl ProviderState {
    /// Empty state: no scripts, no recordings.
    pub fn new() -> ProviderState {
        ProviderState::default()
    }

    /// Load `script`, replacing any script for the same key and clearing that key's record.
    pub fn load(&self, script: Script) -> Result<(), ScriptError> {
        script.validate()?;
        let mut next_id = 1;
        let first_id = script
            .rounds
            .iter()
            .map(|round| {
                let first = next_id;
                next_id += round.kind.id_slots();
                first
            })
            .collect();
        self.lock().insert(
            script.model,
            KeyState {
                script: Some(LoadedScript {
                    rounds: script.rounds,
                    first_id,
                    next: 0,
                }),
                requests: Vec::new(),
                problems: Vec::new(),
            },
        );
        Ok(())
    }

    /// Every request recorded for `model`, in arrival order.
    pub fn requests(&self, model: &str) -> Vec<RecordedRequest> {
        self.lock()
            .get(model)
            .map(|key| key.requests.clone())
            .unwrap_or_default()
    }

    /// Every problem recorded for `model` (unknown key, past the end, malformed request, a
    /// round the endpoint cannot express), in arrival order.
    pub fn problems(&self, model: &str) -> Vec<String> {
        self.lock()
            .get(model)
            .map(|key| key.problems.clone())
            .unwrap_or_default()
    }

    /// Drop `model`'s script and record.
    pub fn forget(&self, model: &str) {
        self.lock().remove(model);
    }

    /// How many rounds `model`'s script has, if one is loaded.
    pub fn rounds(&self, model: &str) -> Option<usize> {
        self.lock()
            .get(model)
            .and_then(|key| key.script.as_ref())
            .map(|script| script.rounds.len())
    }

    /// Record `incoming` under `model` and decide its answer.
    ///
    /// `invalid` is the request's shape problem, if any: such a request consumes no round.
    /// Otherwise the key's next round is rendered by `render` (under the lock, so recording
    /// order, round order and rendering agree even for concurrent requests; rendering is pure
    /// and cheap).
    pub(crate) fn exchange<R>(
        &self,
        model: &str,
        incoming: Incoming,
        invalid: Option<ApiError>,
        render: impl FnOnce(&Round, RoundContext<'_>) -> Result<R, ApiError>,
    ) -> Decision<R> {
        let mut keys = self.lock();
        let key = keys.entry(model.to_string()).or_default();
        let index = key.requests.len();
        let endpoint = incoming.endpoint;

        // `answered_by`: which round answered, and its kind.
        let (answered_by, delay, reply) = match (invalid, key.script.as_mut()) {
            (Some(problem), _) => (None, None, Err(problem)),
            (None, None) => (None, None, Err(unknown_model(endpoint, model))),
            (None, Some(script)) if script.next >= script.rounds.len() => {
                (None, None, Err(past_the_end(model, script.rounds.len())))
            }
            (None, Some(script)) => {
                let at = script.next;
                script.next += 1;
                let round = &script.rounds[at];
                let context = RoundContext {
                    index: at,
                    first_id: script.first_id[at],
                    request: &incoming.body,
                };
                let delay = round.delay_ms.map(Duration::from_millis);
                (Some((at, round.kind.name())), delay, render(round, context))
            }
        };

        // A scripted `error` round is the answer the test asked for, not a problem.
        let scripted_error = matches!(answered_by, Some((_, "error")));
        let answered = match (&reply, answered_by) {
            (Ok(_), Some((at, kind))) => format!("round {at} ({kind})"),
            (Err(e), Some((at, _))) if scripted_error => format!("round {at} (error {})", e.status),
            (Err(e), Some((at, kind))) => format!("round {at} ({kind}): error: {e}"),
            (Err(e), None) => format!("error: {e}"),
            // Only rounds produce answers; this arm exists for exhaustiveness.
            (Ok(_), None) => "answered".to_string(),
        };
        if let Err(e) = &reply
            && !scripted_error
        {
            key.problems
                .push(format!("request {index} ({endpoint}): {e}"));
        }
        key.requests.push(RecordedRequest {
            index,
            endpoint,
            headers: incoming.headers,
            body: incoming.body,
            stream: incoming.stream,
            round: answered_by.map(|(at, _)| at),
            answered,
        });
        Decision { delay, reply }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, KeyState>> {
        // A panic elsewhere while holding the lock leaves the map itself consistent (every
        // mutation is a single insert/push), so keep serving rather than poisoning every test.
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn unknown_model(endpoint: Endpoint, model: &str) -> ApiError {
    let message = match endpoint {
        Endpoint::OpenAiChat => format!(
            "The model `{model}` does not exist or you do not have access to it. (mock-provider: no script is loaded for this model key)"
        ),
        Endpoint::AnthropicMessages => {
            format!("model: {model} (mock-provider: no script is loaded for this model key)")
        }
    };
    ApiError {
        status: 404,
        message,
        param: Some("model".to_string()),
        code: Some("model_not_found"),
    }
}

fn past_the_end(model: &str, rounds: usize) -> ApiError {
    let noun = if rounds == 1 { "round" } else { "rounds" };
    ApiError::invalid(
        Some("model"),
        format!(
            "mock-provider: the script for model `{model}` has {rounds} {noun}, all already answered; this request is past its end"
        ),
    )
}
