//! What the upstream-only routes share: the v1 spelling of event types, the
//! lenient reading of a seam body an upstream host does, a fresh business key.
//! Below the mode's router ([`super`]) and its handlers, which all use it.

use serde_json::{Map, Value};

use crate::base::events::RunEventDoc;
use crate::domain::error::ApiError;
use crate::domain::json_body::parse_object;

/// The v1 name of a stored (v2) event type; types v1 spells the same way
/// pass through.
pub fn v1_event_type(event_type: &str) -> &str {
    match event_type {
        crate::base::events::TOOL_CALLED => "agent.toolCalled",
        crate::base::events::TOOL_RETURNED => "agent.toolReturned",
        "tool.session-opened" => "tool.session.opened",
        "tool.session-closed" => "tool.session.closed",
        crate::base::events::REPLAY_DIVERGED_AT_REFUSAL => "replay.divergedAtRefusal",
        other => other,
    }
}

/// An event as the v1 read paths serve it: its type renamed by
/// [`v1_event_type`], everything else as stored.
pub fn v1_event(mut event: RunEventDoc) -> RunEventDoc {
    let renamed = v1_event_type(&event.event_type);
    if renamed != event.event_type {
        event.event_type = renamed.to_owned();
    }
    event
}

/// A JSON object body with only the members in `known` kept: an upstream
/// host ignores the members it does not know (toolcert's extensions among
/// them) instead of refusing them. A body that is not a JSON object is
/// still a 400.
pub fn known_members(body: &[u8], known: &[&str]) -> Result<Map<String, Value>, ApiError> {
    let mut object = parse_object(body)?;
    object.retain(|name, _| known.contains(&name.as_str()));
    Ok(object)
}

/// A fresh business key for an upstream seam request, which names none:
/// each request is one logical invocation of its own.
pub(super) fn fresh_business_key() -> String {
    format!("upstream-{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v2_names_map_to_v1_and_others_pass_through() {
        for (v2, v1) in [
            ("agent.tool-called", "agent.toolCalled"),
            ("agent.tool-returned", "agent.toolReturned"),
            ("tool.session-opened", "tool.session.opened"),
            ("tool.session-closed", "tool.session.closed"),
            ("replay.diverged-at-refusal", "replay.divergedAtRefusal"),
            ("run.started", "run.started"),
            ("run.completed", "run.completed"),
            ("authorization.decided", "authorization.decided"),
        ] {
            assert_eq!(v1_event_type(v2), v1, "{v2}");
        }
    }

    #[test]
    fn unknown_members_are_dropped_and_non_objects_refused() {
        let object = known_members(
            json!({"executors": 2, "receiverUrl": "http://10.0.0.1/", "x": null})
                .to_string()
                .as_bytes(),
            &["executors"],
        )
        .expect("object");
        assert_eq!(Value::Object(object), json!({"executors": 2}));
        assert!(known_members(b"[1]", &["executors"]).is_err());
        assert!(known_members(b"{", &["executors"]).is_err());
    }
}
