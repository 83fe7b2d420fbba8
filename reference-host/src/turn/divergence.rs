//! Replay divergence (RPL-7): a replay fork compares each LIVE model round
//! with the source's recorded round of the same number.
//!
//! Rounds are compared on a normalized form ([`Normalized`]): the kind
//! (`refusal` | `truncated` | `tool-calls` | `text`), the text, and the
//! tool calls as `(name, RFC 8785 canonical arguments)` in order. Call ids
//! and provider-specific block layout are not compared. A source with no
//! recorded round of that number (it ended earlier) differs too. Rounds a
//! fork serves from the source's record (provider-executed tools, TURN-F2)
//! are not live and are not compared.
//!
//! - Equal: nothing is written.
//! - Different, and not exactly one side a refusal: one `replay.diverged`
//!   (the first such point only) and the fork goes on with the live answer.
//! - Exactly one side a refusal: `replay.diverged-at-refusal`, then the run
//!   fails with `replay_diverged_at_refusal` and no further provider request.
//!
//! Both events carry `{originalEventId, replayEventId, divergencePoint}`:
//! the fork's event at sequence S is the divergence event itself
//! (`replayEventId`), and `originalEventId` is the source's event at S (or
//! its last one, when it has none at S), the first source event the fork
//! no longer reproduces.
//!
//! OTel: RPL-7 also asks for a span attribute `openwop.replay.diverged:
//! true`. This host exports no OpenTelemetry at all, so that half of the
//! row is not witnessable against it; the events are the whole witness.

use serde_json::{Value, json};

use crate::base::event_codes;
use crate::base::events::{self, NewEvent, REPLAY_DIVERGED, RunEventDoc};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::store::storage::{StorageError, event_id_at_or_before};
use crate::turn::plan::RunFailure;
use crate::turn::provider::{Completion, ModelResponse};
use crate::turn::records::{self, ReplaySource};

/// `run.failed` code: exactly one of the source's round and the fork's live
/// round is a refusal (RPL-7; registered, C-27 status 409).
pub const REPLAY_DIVERGED_AT_REFUSAL: &str = event_codes::REPLAY_DIVERGED_AT_REFUSAL;

/// The kind of a model round, as RPL-7 compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The model refused.
    Refusal,
    /// The output was cut at the token limit.
    Truncated,
    /// A clean answer with tool calls.
    ToolCalls,
    /// A clean answer with text only.
    Text,
}

/// A model round in the form RPL-7 compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// How the round ended.
    pub kind: Kind,
    /// The assistant text, if any.
    pub text: Option<String>,
    /// The tool calls in order: name and RFC 8785 canonical arguments (the
    /// raw text when it is not JSON).
    pub calls: Vec<(String, String)>,
}

impl Normalized {
    /// The normalized form of `response`.
    pub fn of(response: &ModelResponse) -> Self {
        let kind = match response.completion {
            Completion::Refused => Kind::Refusal,
            Completion::Truncated => Kind::Truncated,
            Completion::Clean if !response.tool_calls.is_empty() => Kind::ToolCalls,
            Completion::Clean => Kind::Text,
        };
        let calls = response
            .tool_calls
            .iter()
            .map(|call| (call.name.clone(), canonical(&call.arguments_text)))
            .collect();
        Self {
            kind,
            text: response.text.clone(),
            calls,
        }
    }
}

/// The RFC 8785 form of JSON arguments, so key order and number spelling
/// do not count as divergence; anything else is compared as it is.
fn canonical(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|value| serde_json_canonicalizer::to_string(&value).ok())
        .unwrap_or_else(|| arguments.to_owned())
}

/// What comparing a fork's live round with the source's round found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Equal: nothing to report.
    Same,
    /// Different, and not exactly one of the two a refusal.
    Diverged,
    /// Exactly one of the two is a refusal.
    AtRefusal {
        /// Whether the fork (rather than the source) refused.
        fork_refused: bool,
    },
}

/// Compares the fork's live round with the source's recorded one (`None`
/// when the source has no round of that number).
pub fn compare(source: Option<&ModelResponse>, live: &ModelResponse) -> Verdict {
    let live = Normalized::of(live);
    let Some(source) = source.map(Normalized::of) else {
        // The source ended earlier: a divergence (RPL-7), at a refusal when
        // the fork refuses.
        return if live.kind == Kind::Refusal {
            Verdict::AtRefusal { fork_refused: true }
        } else {
            Verdict::Diverged
        };
    };
    let (source_refused, fork_refused) = (source.kind == Kind::Refusal, live.kind == Kind::Refusal);
    if source_refused != fork_refused {
        Verdict::AtRefusal { fork_refused }
    } else if source == live {
        Verdict::Same
    } else {
        Verdict::Diverged
    }
}

/// `divergencePoint` of model round `round`.
pub fn divergence_point(round: u32) -> String {
    format!("model-round-{round}")
}

/// Checks live round `round` of replay fork `run_id` against its source and
/// writes what RPL-7 asks for. `Err` ends the run (divergence at a refusal).
pub fn check(
    state: &Domain,
    run_id: &str,
    source: &ReplaySource,
    round: u32,
    live: &ModelResponse,
) -> Result<(), RunFailure> {
    let storage = state.storage();
    let recorded = records::model(storage, &source.run_id, source.attempt, round)?;
    let verdict = match compare(recorded.as_ref(), live) {
        // Bug under `refusal-divergence-continues`: a refusal on one side
        // only is reported and handled like any divergence.
        Verdict::AtRefusal { .. } if state.mutant_is(Mutant::RefusalDivergenceContinues) => {
            Verdict::Diverged
        }
        verdict => verdict,
    };
    match verdict {
        Verdict::Same => Ok(()),
        Verdict::Diverged => {
            // Bug under `replay-divergence-silent`: nothing is written.
            // RPL-7: one `replay.diverged` per fork, at the first point.
            if !state.mutant_is(Mutant::ReplayDivergenceSilent) && !already_diverged(state, run_id)?
            {
                record(state, run_id, &source.run_id, REPLAY_DIVERGED, round)?;
            }
            Ok(())
        }
        Verdict::AtRefusal { fork_refused } => {
            record(
                state,
                run_id,
                &source.run_id,
                events::REPLAY_DIVERGED_AT_REFUSAL,
                round,
            )?;
            let source_side = format!("source run `{}`", source.run_id);
            let message = match (fork_refused, recorded.is_some()) {
                (true, true) => format!(
                    "the replay fork refused at model round {round}, where {source_side} answered (RPL-7)"
                ),
                (true, false) => format!(
                    "the replay fork refused at model round {round}, where {source_side} had already ended (RPL-7)"
                ),
                (false, _) => format!(
                    "{source_side} refused at model round {round}, where the replay fork answered (RPL-7)"
                ),
            };
            Err(
                RunFailure::new(REPLAY_DIVERGED_AT_REFUSAL, message).with_details(json!({
                    "divergencePoint": divergence_point(round),
                    "sourceRunId": source.run_id,
                })),
            )
        }
    }
}

/// Whether the fork already wrote its `replay.diverged`.
fn already_diverged(state: &Domain, run_id: &str) -> Result<bool, StorageError> {
    Ok(state
        .storage()
        .events_after(run_id, -1)?
        .iter()
        .any(|event| event.event_type == REPLAY_DIVERGED))
}

/// Appends `event_type` to the fork with the RPL-7 payload: its own id as
/// `replayEventId`, and the source's event at the same sequence (or its
/// last one before it) as `originalEventId`.
fn record(
    state: &Domain,
    run_id: &str,
    source_run_id: &str,
    event_type: &'static str,
    round: u32,
) -> Result<RunEventDoc, StorageError> {
    state.storage().append_event_in_slot(run_id, |tx, slot| {
        let original =
            event_id_at_or_before(tx, source_run_id, slot.sequence)?.ok_or_else(|| {
                StorageError::Corrupt {
                    column: "events.event_id",
                    problem: format!("source run `{source_run_id}` has no events"),
                }
            })?;
        Ok(NewEvent::new(
            event_type,
            json!({
                "originalEventId": original,
                "replayEventId": slot.event_id,
                "divergencePoint": divergence_point(round),
            }),
        ))
    })
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
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
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::provider::ToolEmission;

    fn answer(completion: Completion, text: Option<&str>, calls: &[(&str, &str)]) -> ModelResponse {
        ModelResponse {
            text: text.map(str::to_owned),
            refusal: None,
            tool_calls: calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| ToolEmission {
                    id: format!("call_{i}"),
                    name: (*name).to_owned(),
                    arguments_text: (*args).to_owned(),
                })
                .collect(),
            completion,
            blocks: Vec::new(),
        }
    }

    #[test]
    fn equal_rounds_ignore_call_ids_key_order_and_number_spelling() {
        let source = answer(Completion::Clean, None, &[("t", r#"{"a": 1, "b": [1.0]}"#)]);
        let mut live = answer(Completion::Clean, None, &[("t", r#"{"b":[1],"a":1}"#)]);
        live.tool_calls[0].id = "other".into();
        assert_eq!(compare(Some(&source), &live), Verdict::Same);
        let text = answer(Completion::Clean, Some("done"), &[]);
        assert_eq!(compare(Some(&text), &text.clone()), Verdict::Same);
    }

    #[test]
    fn differences_are_divergences() {
        let text = answer(Completion::Clean, Some("done"), &[]);
        let other = answer(Completion::Clean, Some("else"), &[]);
        let call = answer(Completion::Clean, None, &[("t", r#"{"a": 1}"#)]);
        let other_args = answer(Completion::Clean, None, &[("t", r#"{"a": 2}"#)]);
        let cut = answer(Completion::Truncated, Some("done"), &[]);
        assert_eq!(compare(Some(&text), &other), Verdict::Diverged);
        assert_eq!(compare(Some(&text), &call), Verdict::Diverged);
        assert_eq!(compare(Some(&call), &other_args), Verdict::Diverged);
        assert_eq!(compare(Some(&text), &cut), Verdict::Diverged);
        assert_eq!(compare(None, &text), Verdict::Diverged);
    }

    #[test]
    fn a_refusal_on_one_side_only_is_at_refusal() {
        let text = answer(Completion::Clean, Some("done"), &[]);
        let refused = answer(Completion::Refused, None, &[]);
        assert_eq!(
            compare(Some(&text), &refused),
            Verdict::AtRefusal { fork_refused: true }
        );
        assert_eq!(
            compare(Some(&refused), &text),
            Verdict::AtRefusal {
                fork_refused: false
            }
        );
        assert_eq!(
            compare(None, &refused),
            Verdict::AtRefusal { fork_refused: true }
        );
        assert_eq!(compare(Some(&refused), &refused.clone()), Verdict::Same);
    }

    #[test]
    fn the_failure_code_is_registered() {
        assert!(event_codes::is_registered(REPLAY_DIVERGED_AT_REFUSAL));
        assert_eq!(divergence_point(2), "model-round-2");
    }
}
