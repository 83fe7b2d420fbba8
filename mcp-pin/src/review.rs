//! A reviewer's record for one selected tool: who, when, the six assertions (mcp-facts §4.6)
//! and the input-channel classification (§4.9.1).
//!
//! Annotations (`readOnlyHint` and the rest) stay inside the Tool object as captured and are
//! never read here: MCP calls them untrusted hints (§2.4), so every assertion is the
//! reviewer's own statement. [`check`] is used twice: by `toolcert mcp review` before it
//! writes, and by the gate on every call (§4.4.2, §4.4.6), so an edited snapshot with a
//! failing review is refused even when its digest was re-pinned.

use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use super::snapshot;

/// A review refusal: the rule broken and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("review refused ({rule}): {what}")]
pub struct ReviewError {
    /// The rule, e.g. `4.6 headless`.
    pub rule: String,
    /// What is wrong.
    pub what: String,
}

fn refuse(rule: &str, what: impl Into<String>) -> ReviewError {
    ReviewError {
        rule: rule.to_string(),
        what: what.into(),
    }
}

/// The three input-channel classes (§4.9.1).
pub const CHANNEL_CLASSES: &[&str] = &["data", "instruction", "authority"];

/// What a reviewer states.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewInput {
    /// Reviewer identity.
    pub reviewer: String,
    /// `reviewedAt` (UTC, `YYYY-MM-DDTHH:MM:SSZ`).
    pub reviewed_at: String,
    /// `headless` (must be true).
    pub headless: Option<bool>,
    /// `independentCalls` (must be true).
    pub independent_calls: Option<bool>,
    /// `modelBacked` (must be stated).
    pub model_backed: Option<bool>,
    /// `sideEffects` (must be stated; empty is an explicit "none").
    pub side_effects: Option<Vec<String>>,
    /// `concurrency` (`safe` or `serialize`).
    pub concurrency: Option<String>,
    /// `referenceBasedIO` (must be true).
    pub reference_based_io: Option<bool>,
    /// Pointer → class.
    pub input_channels: Vec<(String, String)>,
}

impl ReviewInput {
    /// The review object as the snapshot stores it. Unstated assertions are left out, so
    /// [`check`] can name the one missing.
    pub fn to_value(&self) -> Value {
        let mut a = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                a.insert(k.into(), v);
            }
        };
        put("headless", self.headless.map(Value::Bool));
        put("independentCalls", self.independent_calls.map(Value::Bool));
        put("modelBacked", self.model_backed.map(Value::Bool));
        put("sideEffects", self.side_effects.as_ref().map(|s| json!(s)));
        put("concurrency", self.concurrency.as_ref().map(|s| json!(s)));
        put("referenceBasedIO", self.reference_based_io.map(Value::Bool));
        let channels: Map<String, Value> = self
            .input_channels
            .iter()
            .map(|(p, c)| (p.clone(), json!(c)))
            .collect();
        json!({
            "reviewer": self.reviewer,
            "reviewedAt": self.reviewed_at,
            "assertions": a,
            "inputChannels": channels,
        })
    }
}

/// Check one review against the reviewed Tool object: every assertion present and
/// acceptable, every argument channel classified, nothing excluded by §4.8.
pub fn check(review: &Value, tool: &Value) -> Result<(), ReviewError> {
    let reviewer = review.get("reviewer").and_then(Value::as_str).unwrap_or("");
    if reviewer.trim().is_empty() {
        return Err(refuse("4.3.6 reviewer", "no reviewer identity"));
    }
    let at = review
        .get("reviewedAt")
        .and_then(Value::as_str)
        .unwrap_or("");
    super::time::parse(at).map_err(|e| refuse("4.3.6 reviewedAt", e.to_string()))?;
    let a = review.get("assertions").cloned().unwrap_or(json!({}));
    let must_be_true = |key: &str, why: &str| match a.get(key) {
        Some(Value::Bool(true)) => Ok(()),
        Some(Value::Bool(false)) => Err(refuse(
            &format!("4.6 {key}"),
            format!("{key} is false: {why}"),
        )),
        _ => Err(refuse(
            &format!("4.6 {key}"),
            format!("{key} is not stated (must be true: {why})"),
        )),
    };
    must_be_true("headless", "no GUI or contemporaneous human interaction")?;
    must_be_true(
        "independentCalls",
        "no dependence on a prior call, session or server-minted handle",
    )?;
    if !a.get("modelBacked").is_some_and(Value::is_boolean) {
        return Err(refuse(
            "4.6 modelBacked",
            "modelBacked must be stated true or false",
        ));
    }
    match a.get("sideEffects").and_then(Value::as_array) {
        Some(list)
            if list
                .iter()
                .all(|s| s.as_str().is_some_and(|s| !s.is_empty())) => {}
        Some(_) => {
            return Err(refuse(
                "4.6 sideEffects",
                "every side-effect class is a non-empty string",
            ));
        }
        None => {
            return Err(refuse(
                "4.6 sideEffects",
                "sideEffects must enumerate the reviewed side-effect classes (an explicit empty list when none)",
            ));
        }
    }
    match a.get("concurrency").and_then(Value::as_str) {
        Some("safe" | "serialize") => {}
        _ => {
            return Err(refuse(
                "4.6 concurrency",
                "concurrency must be `safe` or `serialize`",
            ));
        }
    }
    must_be_true(
        "referenceBasedIO",
        "JSON values or addressable references, no local paths or live handles",
    )?;
    if tool
        .pointer("/execution/taskSupport")
        .and_then(Value::as_str)
        == Some("required")
    {
        return Err(refuse(
            "4.8.1 task-augmented",
            "execution.taskSupport is `required`: task-augmented calls are excluded",
        ));
    }
    check_channels(review.get("inputChannels").unwrap_or(&Value::Null), tool)
}

/// The review's `reviewedAt` lies inside the snapshot's window (rule `4.3.6 reviewedAt`): not
/// before `capturedAt` (it would be a review of a catalog not captured yet) and before
/// `expiresAt` (a review at or after it reviews an expired snapshot). Checked by
/// `toolcert mcp review` before it writes and by the gate on every call, so a hand-edited,
/// re-pinned date is refused too.
///
/// A review dated in the future (beyond [`super::time::CLOCK_SKEW`] from `now`) is refused
/// too: nobody has reviewed it yet.
pub fn check_window(
    review: &Value,
    captured_at: OffsetDateTime,
    expires_at: OffsetDateTime,
    now: OffsetDateTime,
) -> Result<(), ReviewError> {
    let text = review
        .get("reviewedAt")
        .and_then(Value::as_str)
        .unwrap_or("");
    let at = super::time::parse(text).map_err(|e| refuse("4.3.6 reviewedAt", e.to_string()))?;
    let fmt = super::time::format;
    if at < captured_at {
        return Err(refuse(
            "4.3.6 reviewedAt",
            format!(
                "reviewedAt {} is before the snapshot's capturedAt {}: a review cannot predate the catalog it reviews",
                fmt(at),
                fmt(captured_at)
            ),
        ));
    }
    if at >= expires_at {
        return Err(refuse(
            "4.3.6 reviewedAt",
            format!(
                "reviewedAt {} is not before the snapshot's expiresAt {}: an expired snapshot cannot be reviewed; capture again",
                fmt(at),
                fmt(expires_at)
            ),
        ));
    }
    if at > super::time::add(now, super::time::CLOCK_SKEW) {
        return Err(refuse(
            "4.3.6 reviewedAt",
            format!(
                "reviewedAt {} lies in the future (now {}): a review is dated when it is made",
                fmt(at),
                fmt(now)
            ),
        ));
    }
    Ok(())
}

/// A snapshot's window (rule 4.3.5): `capturedAt` not in the future (beyond
/// [`super::time::CLOCK_SKEW`] from `now`), and `expiresAt - capturedAt` at most `max` (the
/// product maximum, or a local policy's lower one). Checked at capture, at review and by the
/// gate on every call, so a re-pinned snapshot whose dates were edited (ten years of expiry,
/// or every instant in 2099) is refused, not trusted because its digest was updated.
pub fn check_snapshot_window(
    captured_at: OffsetDateTime,
    expires_at: OffsetDateTime,
    now: OffsetDateTime,
    max: std::time::Duration,
) -> Result<(), ReviewError> {
    let fmt = super::time::format;
    if captured_at > super::time::add(now, super::time::CLOCK_SKEW) {
        return Err(refuse(
            "4.3.5 capturedAt",
            format!(
                "capturedAt {} lies in the future (now {}): a capture is dated when it is made",
                fmt(captured_at),
                fmt(now)
            ),
        ));
    }
    if expires_at > super::time::add(captured_at, max) {
        return Err(refuse(
            "4.3.5 expiresAt",
            format!(
                "expiresAt {} is more than {} after capturedAt {}: expiry is a reviewer decision under a maximum, and nothing extends it",
                fmt(expires_at),
                super::time::describe_duration(max),
                fmt(captured_at)
            ),
        ));
    }
    Ok(())
}

/// A snapshot's `capturedAt` and `expiresAt`.
fn window(doc: &Value) -> Result<(OffsetDateTime, OffsetDateTime), ReviewError> {
    let instant = |key: &str| {
        let text = doc.get(key).and_then(Value::as_str).unwrap_or("");
        super::time::parse(text).map_err(|e| refuse(&format!("4.3.5 {key}"), e.to_string()))
    };
    Ok((instant("capturedAt")?, instant("expiresAt")?))
}

/// Every declared argument channel of the Tool's `inputSchema` must be classified, and every
/// classified pointer must name a declared channel (§4.9.1: unclassified or dynamic paths
/// fail closed). Declared channels are the `properties` of the root object schema, and of
/// nested object properties when the reviewer classifies below them.
fn check_channels(channels: &Value, tool: &Value) -> Result<(), ReviewError> {
    let Some(channels) = channels.as_object() else {
        return Err(refuse(
            "4.9.1 inputChannels",
            "no input-channel classification",
        ));
    };
    for (pointer, class) in channels {
        if !class.as_str().is_some_and(|c| CHANNEL_CLASSES.contains(&c)) {
            return Err(refuse(
                "4.9.1 inputChannels",
                format!("{pointer} is classified {class}: use data, instruction or authority"),
            ));
        }
        if schema_at(tool.get("inputSchema").unwrap_or(&Value::Null), pointer).is_none() {
            return Err(refuse(
                "4.9.1 inputChannels",
                format!("{pointer} is not an argument the reviewed inputSchema declares"),
            ));
        }
    }
    let props = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object);
    for name in props.into_iter().flatten().map(|(k, _)| k) {
        let pointer = format!("/{}", toolcert_base::canonical::pointer_token(name));
        let covered = channels
            .keys()
            .any(|k| k == &pointer || k.starts_with(&format!("{pointer}/")));
        if !covered {
            return Err(refuse(
                "4.9.1 inputChannels",
                format!(
                    "argument channel {pointer} is not classified (data, instruction or authority)"
                ),
            ));
        }
    }
    Ok(())
}

/// The sub-schema of `schema` at an RFC 6901 pointer into the arguments (through
/// `properties`).
fn schema_at<'a>(schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    let rest = pointer.strip_prefix('/')?;
    let mut at = schema;
    for token in rest.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        at = at.get("properties")?.get(&token)?;
    }
    Some(at)
}

/// Add (or replace) the review of `tool` on `server` in a snapshot, after checking that the
/// tool occurs exactly once (§4.3.4), the review passes [`check`] and its date lies in the
/// snapshot's window ([`check_window`]). The new digest is what [`snapshot::write`] returns
/// (not computed here too: canonicalizing a large snapshot is the dearest step of a review).
pub fn apply(doc: &mut Value, server: &str, tool: &str, review: Value) -> Result<(), ReviewError> {
    let entry = snapshot::server(doc, server).map_err(|e| refuse("4.4 server", e.to_string()))?;
    let found = snapshot::tools_named(entry, tool);
    let reviewed = match found.as_slice() {
        [(_, t)] => (*t).clone(),
        [] => {
            return Err(refuse(
                "4.4.4 missing",
                format!("no tool named `{tool}` in server `{server}`"),
            ));
        }
        many => {
            let at: Vec<&str> = many.iter().map(|(p, _)| p.as_str()).collect();
            return Err(refuse(
                "4.4.4 duplicate",
                format!("`{tool}` occurs {} times ({})", many.len(), at.join(", ")),
            ));
        }
    };
    check(&review, &reviewed)?;
    let (captured_at, expires_at) = window(doc)?;
    let now = super::time::now();
    check_snapshot_window(captured_at, expires_at, now, super::time::MAX_EXPIRES_IN)?;
    check_window(&review, captured_at, expires_at, now)?;
    let reviews = doc
        .pointer_mut(&format!(
            "/servers/{}/reviews",
            toolcert_base::canonical::pointer_token(server)
        ))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| refuse("4.3.6 reviews", "the server entry has no reviews object"))?;
    reviews.insert(tool.to_string(), review);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::double::echo_tool;

    fn good() -> ReviewInput {
        ReviewInput {
            reviewer: "alice@example.test".into(),
            reviewed_at: "2026-08-30T13:00:00Z".into(),
            headless: Some(true),
            independent_calls: Some(true),
            model_backed: Some(false),
            side_effects: Some(vec![]),
            concurrency: Some("safe".into()),
            reference_based_io: Some(true),
            input_channels: vec![("/message".into(), "data".into())],
        }
    }

    #[test]
    fn a_complete_review_passes_and_each_broken_assertion_names_its_rule() {
        check(&good().to_value(), &echo_tool()).unwrap();
        type Edit = Box<dyn Fn(&mut ReviewInput)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|r| r.headless = Some(false)), "4.6 headless"),
            (Box::new(|r| r.headless = None), "4.6 headless"),
            (
                Box::new(|r| r.independent_calls = Some(false)),
                "4.6 independentCalls",
            ),
            (Box::new(|r| r.model_backed = None), "4.6 modelBacked"),
            (Box::new(|r| r.side_effects = None), "4.6 sideEffects"),
            (
                Box::new(|r| r.concurrency = Some("unknown".into())),
                "4.6 concurrency",
            ),
            (
                Box::new(|r| r.reference_based_io = Some(false)),
                "4.6 referenceBasedIO",
            ),
            (
                Box::new(|r| r.input_channels.clear()),
                "4.9.1 inputChannels",
            ),
            (
                Box::new(|r| r.input_channels.push(("/nope".into(), "data".into()))),
                "4.9.1 inputChannels",
            ),
            (
                Box::new(|r| r.input_channels[0].1 = "trusted".into()),
                "4.9.1 inputChannels",
            ),
            (Box::new(|r| r.reviewer.clear()), "4.3.6 reviewer"),
            (
                Box::new(|r| r.reviewed_at = "later".into()),
                "4.3.6 reviewedAt",
            ),
        ];
        for (edit, rule) in cases {
            let mut r = good();
            edit(&mut r);
            let err = check(&r.to_value(), &echo_tool()).unwrap_err();
            assert_eq!(err.rule, rule, "{err}");
        }
    }

    #[test]
    fn a_review_dated_outside_the_snapshot_window_is_refused() {
        let t = |s: &str| crate::time::parse(s).unwrap();
        let (captured, expires) = (t("2026-08-30T12:00:00Z"), t("2026-09-06T12:00:00Z"));
        for ok in [
            "2026-08-30T12:00:00Z",
            "2026-08-30T13:00:00Z",
            "2026-09-06T11:59:59Z",
        ] {
            let mut r = good();
            r.reviewed_at = ok.into();
            check_window(&r.to_value(), captured, expires, expires).unwrap();
        }
        for (bad, says) in [
            ("2026-08-30T11:59:59Z", "before the snapshot's capturedAt"),
            (
                "2026-09-06T12:00:00Z",
                "not before the snapshot's expiresAt",
            ),
            (
                "2026-10-01T00:00:00Z",
                "not before the snapshot's expiresAt",
            ),
        ] {
            let mut r = good();
            r.reviewed_at = bad.into();
            let err = check_window(&r.to_value(), captured, expires, expires).unwrap_err();
            assert_eq!(err.rule, "4.3.6 reviewedAt", "{bad}");
            assert!(err.what.contains(says), "{bad}: {err}");
        }
        // `apply` checks it against the document's own window.
        let mut doc = json!({
            "capturedAt": "2026-08-30T12:00:00Z",
            "expiresAt": "2026-09-06T12:00:00Z",
            "servers": {"s": {"toolPages": [{"tools": [echo_tool()]}], "reviews": {}}}
        });
        let mut early = good();
        early.reviewed_at = "2026-08-29T00:00:00Z".into();
        let err = apply(&mut doc, "s", "echo", early.to_value()).unwrap_err();
        assert_eq!(err.rule, "4.3.6 reviewedAt");
        assert_eq!(doc["servers"]["s"]["reviews"], json!({}), "nothing written");
        apply(&mut doc, "s", "echo", good().to_value()).unwrap();
    }

    #[test]
    fn a_review_dated_in_the_future_or_of_an_overlong_window_is_refused() {
        let now = crate::time::now();
        let fmt = crate::time::format;
        let hours = |h: i64| time::Duration::hours(h);
        let doc = |captured: OffsetDateTime, expires: OffsetDateTime| {
            json!({
                "capturedAt": fmt(captured),
                "expiresAt": fmt(expires),
                "servers": {"s": {"toolPages": [{"tools": [echo_tool()]}], "reviews": {}}}
            })
        };
        // Inside the window, but a day from now.
        let mut d = doc(now - hours(1), now + hours(24 * 7));
        let mut r = good();
        r.reviewed_at = fmt(now + hours(24));
        let err = apply(&mut d, "s", "echo", r.to_value()).unwrap_err();
        assert_eq!(err.rule, "4.3.6 reviewedAt", "{err}");
        assert!(err.what.contains("in the future"), "{err}");
        // A window longer than the product maximum (a hand-edited expiresAt).
        let mut d = doc(now - hours(1), now + hours(24 * 3650));
        let mut r = good();
        r.reviewed_at = fmt(now);
        let err = apply(&mut d, "s", "echo", r.to_value()).unwrap_err();
        assert_eq!(err.rule, "4.3.5 expiresAt", "{err}");
    }

    #[test]
    fn annotations_never_stand_in_for_assertions() {
        // echo claims readOnlyHint: true; a review without sideEffects is still refused.
        let mut r = good();
        r.side_effects = None;
        assert!(echo_tool()["annotations"]["readOnlyHint"] == true);
        assert_eq!(
            check(&r.to_value(), &echo_tool()).unwrap_err().rule,
            "4.6 sideEffects"
        );
    }

    #[test]
    fn task_required_tools_are_excluded() {
        let mut t = echo_tool();
        t["execution"]["taskSupport"] = json!("required");
        assert_eq!(
            check(&good().to_value(), &t).unwrap_err().rule,
            "4.8.1 task-augmented"
        );
    }
}
