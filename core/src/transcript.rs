//! A scenario's transcript: every exchange with the host, in order, redacted on the way out.
//!
//! The transcript goes into the JSON report so a failure can be read (and re-checked) without
//! the host. Every token and canary of the run is scrubbed by [`toolcert_base::redact::Redactor`]
//! before any transcript leaves the process.
//!
//! A transcript is bounded whatever the host sends, so a report stays small: entries go in
//! through [`Transcript::push`], which replaces a request or response body larger than
//! [`MAX_KEPT_BODY_BYTES`] (serialized) by its [`truncated`] form and keeps at most
//! [`MAX_EXCHANGES`] entries per scenario (the first ones and the latest ones; how many were
//! dropped between them is recorded). Only the transcript is cut: the observations checks
//! judge keep whole bodies up to the client's body cap.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use toolcert_base::redact::REDACTED;

/// One HTTP exchange between toolcert and the host.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    /// The scenario step that made the exchange.
    pub step: String,
    /// HTTP method.
    pub method: String,
    /// Full URL.
    pub url: String,
    /// Request headers toolcert set (the `Authorization` value is always redacted).
    pub request_headers: serde_json::Map<String, Value>,
    /// Request body, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_body: Option<Value>,
    /// Response status, when a response arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Response headers (lowercase names).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty", default)]
    pub response_headers: serde_json::Map<String, Value>,
    /// Response body: parsed JSON, or `{"$nonJson": "<prefix>"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_body: Option<Value>,
    /// Wall time of the exchange in milliseconds.
    pub elapsed_ms: u64,
    /// Transport failure, when no usable response arrived; or, saying so, toolcert's own
    /// dropping of a request before its answer (an `http` step's `abandon`, MCP-14).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport_error: Option<String>,
    /// A `curl` command that reproduces the request (token replaced by `$TOKEN`).
    pub curl: String,
}

/// The largest request or response body a transcript entry keeps whole (serialized JSON):
/// 64 KiB. Every body a conforming host answers a conformance scenario with is far smaller;
/// a larger one is kept as its [`truncated`] form.
pub const MAX_KEPT_BODY_BYTES: usize = 64 * 1024;

/// The most exchanges one scenario's transcript keeps: 500 (the largest scenario makes well
/// under a hundred against the reference host). Past it the first [`KEPT_HEAD`] stay and the
/// rest is a window of the latest ones.
pub const MAX_EXCHANGES: usize = 500;

/// How many of the first exchanges a full transcript keeps (the others are the latest ones).
pub const KEPT_HEAD: usize = 400;

/// The ordered exchanges of one scenario.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transcript {
    /// Exchanges in the order they were made (see [`Transcript::push`] for the bound).
    pub exchanges: Vec<Exchange>,
    /// Exchanges dropped to keep the transcript within [`MAX_EXCHANGES`]: they were made
    /// between `exchanges[KEPT_HEAD - 1]` and `exchanges[KEPT_HEAD]`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_exchanges: usize,
    /// The run's memory budget what this transcript keeps is charged to (none: unbounded
    /// but for the per-entry and per-scenario bounds).
    #[serde(skip)]
    budget: Option<std::sync::Arc<crate::budget::MemoryBudget>>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Transcript {
    /// An empty transcript whose entries are charged to `budget`.
    pub fn charged_to(budget: Option<std::sync::Arc<crate::budget::MemoryBudget>>) -> Self {
        Transcript {
            budget,
            ..Transcript::default()
        }
    }

    /// Record an exchange within the bounds: its bodies cut to [`MAX_KEPT_BODY_BYTES`], and
    /// once [`MAX_EXCHANGES`] are kept, the oldest of the latest ones dropped (counted in
    /// [`Transcript::dropped_exchanges`]).
    pub fn push(&mut self, mut exchange: Exchange) {
        for body in [&mut exchange.request_body, &mut exchange.response_body] {
            if let Some(b) = body.as_mut() {
                cap_in_place(b, MAX_KEPT_BODY_BYTES);
                crate::budget::bound_depth(b, crate::budget::MAX_DEPTH);
            }
        }
        if let Some(budget) = &self.budget {
            // The bodies first: once the budget is spent they are left out (counted), and
            // what is left of the entry is kept anyway (the number of entries is bounded).
            let bodies: usize = [&exchange.request_body, &exchange.response_body]
                .into_iter()
                .flatten()
                .map(crate::budget::json_len)
                .sum();
            if budget.charge(bodies).is_err() {
                for body in [&mut exchange.request_body, &mut exchange.response_body] {
                    if let Some(b) = body.as_mut() {
                        cap_in_place(b, 0);
                    }
                }
            }
            let rest = exchange.url.len()
                + exchange.curl.len()
                + exchange.transport_error.as_ref().map_or(0, String::len)
                + serde_json::to_string(&exchange.response_headers).map_or(0, |s| s.len())
                + serde_json::to_string(&exchange.request_headers).map_or(0, |s| s.len());
            budget.charge_anyway(rest);
        }
        if self.exchanges.len() >= MAX_EXCHANGES {
            self.exchanges.remove(KEPT_HEAD);
            self.dropped_exchanges += 1;
        }
        self.exchanges.push(exchange);
    }
}

/// `value` if it serializes to at most `max_bytes`, else its [`truncated`] form.
pub fn cap_value(value: &Value, max_bytes: usize) -> Value {
    let mut v = value.clone();
    cap_in_place(&mut v, max_bytes);
    v
}

fn cap_in_place(value: &mut Value, max_bytes: usize) {
    if let Some(t) = truncated(value, max_bytes) {
        *value = t;
    }
}

/// The form a value too large to keep takes: `{"$truncated": {"bytes": N, "kept": K},
/// "prefix": "…"}`, where `N` is its serialized size and `prefix` its first `K ≤ max_bytes`
/// serialized bytes; `None` when it fits in `max_bytes`.
///
/// The prefix ends outside any JSON string, so no string in it is cut: a secret in the body
/// is either wholly in the prefix (where `redact` scrubs it) or wholly left out, never half
/// kept past the redaction.
pub fn truncated(value: &Value, max_bytes: usize) -> Option<Value> {
    let mut w = PrefixWriter {
        total: 0,
        prefix: Vec::with_capacity(max_bytes.min(64 * 1024) + 1),
        max: max_bytes,
    };
    serde_json::to_writer(&mut w, value).ok()?;
    if w.total <= max_bytes {
        return None;
    }
    let cut = string_safe_cut(&w.prefix);
    let prefix = String::from_utf8_lossy(&w.prefix[..cut]).into_owned();
    Some(serde_json::json!({
        "$truncated": {"bytes": w.total, "kept": cut},
        "prefix": prefix,
    }))
}

/// The longest prefix length of serialized JSON that ends outside a string literal.
fn string_safe_cut(json: &[u8]) -> usize {
    let (mut in_string, mut escaped, mut safe) = (false, false, 0);
    for (i, &b) in json.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                safe = i + 1;
            }
        } else if b == b'"' {
            in_string = true;
        } else {
            safe = i + 1;
        }
    }
    if !in_string { json.len() } else { safe }
}

/// Counts every byte written and keeps the first `max`.
struct PrefixWriter {
    total: usize,
    prefix: Vec<u8>,
    max: usize,
}

impl std::io::Write for PrefixWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.total += buf.len();
        let room = self.max.saturating_sub(self.prefix.len());
        self.prefix.extend_from_slice(&buf[..room.min(buf.len())]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_small_body_is_kept_whole_and_a_large_one_as_a_bounded_prefix() {
        let small = json!({"runId": "r1", "status": "running"});
        assert_eq!(truncated(&small, 1024), None);
        let big = json!({"events": (0..5000).map(|i| json!({"sequence": i, "type": "run.started"})).collect::<Vec<_>>()});
        let total = serde_json::to_vec(&big).unwrap().len();
        let t = truncated(&big, 1024).unwrap();
        assert_eq!(t["$truncated"]["bytes"], total);
        let kept = t["$truncated"]["kept"].as_u64().unwrap() as usize;
        assert!(kept <= 1024 && kept > 900, "{kept}");
        let prefix = t["prefix"].as_str().unwrap();
        assert_eq!(prefix.len(), kept);
        assert!(serde_json::to_string(&big).unwrap().starts_with(prefix));
        assert!(serde_json::to_vec(&t).unwrap().len() < 2 * 1024);
    }

    #[test]
    fn a_prefix_never_ends_inside_a_string() {
        let v = json!({"a": "x".repeat(10), "secret": "canary-0123456789", "b": 1});
        let text = serde_json::to_string(&v).unwrap();
        let at = text.find("canary").unwrap();
        for max in 1..text.len() {
            let t = truncated(&v, max).unwrap();
            let prefix = t["prefix"].as_str().unwrap();
            assert!(text.starts_with(prefix));
            // The canary is wholly in the prefix or not at all.
            if prefix.len() > at {
                assert!(prefix.contains("canary-0123456789"), "{max}: {prefix}");
            }
            assert_eq!(prefix.matches('"').count() % 2, 0, "{max}: {prefix}");
        }
        // A string with escaped quotes is not mistaken for its end.
        let q = json!(["ab\"cd\"ef", 1]);
        let t = truncated(&q, 8).unwrap();
        assert_eq!(t["prefix"], "[");
    }

    #[test]
    fn push_cuts_bodies_and_keeps_the_first_and_latest_exchanges() {
        let mut t = Transcript::default();
        let big = json!({"blob": "y".repeat(MAX_KEPT_BODY_BYTES * 2)});
        for i in 0..(MAX_EXCHANGES + 250) {
            t.push(Exchange {
                step: format!("s{i}"),
                request_body: (i < 3).then(|| big.clone()),
                response_body: Some(json!({"i": i})),
                ..Exchange::default()
            });
        }
        assert_eq!(t.exchanges.len(), MAX_EXCHANGES);
        assert_eq!(t.dropped_exchanges, 250);
        assert_eq!(
            t.exchanges[KEPT_HEAD - 1].step,
            format!("s{}", KEPT_HEAD - 1)
        );
        assert_eq!(t.exchanges[KEPT_HEAD].step, format!("s{}", KEPT_HEAD + 250));
        assert_eq!(
            t.exchanges.last().unwrap().step,
            format!("s{}", MAX_EXCHANGES + 249)
        );
        let first = &t.exchanges[0];
        assert!(
            first
                .request_body
                .as_ref()
                .unwrap()
                .get("$truncated")
                .is_some()
        );
        assert_eq!(first.response_body, Some(json!({"i": 0})));
        let size = serde_json::to_vec(&t).unwrap().len();
        assert!(size < MAX_EXCHANGES * 1024, "{size}");
        let back: Transcript = serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(back.dropped_exchanges, 250);
        // An unbounded transcript serializes as before: no dropped count.
        let small = serde_json::to_value(Transcript::default()).unwrap();
        assert_eq!(small, json!({"exchanges": []}));
    }

    #[test]
    fn a_bounded_transcript_satisfies_the_report_schema() {
        let report: Value =
            serde_json::from_str(include_str!("../../schemas/report.schema.json")).unwrap();
        let schema = json!({
            "$defs": report["$defs"],
            "$ref": "#/$defs/scenario/properties/transcript",
        });
        let mut set = crate::suite::SchemaSet::default();
        set.insert("transcript", &schema).unwrap();
        let mut t = Transcript::default();
        let big = json!({"blob": "y".repeat(MAX_KEPT_BODY_BYTES + 1)});
        for i in 0..(MAX_EXCHANGES + 3) {
            t.push(Exchange {
                step: format!("s{i}"),
                method: "GET".into(),
                url: "http://h/x".into(),
                curl: "curl".into(),
                response_body: (i == 0).then(|| big.clone()),
                ..Exchange::default()
            });
        }
        let value = serde_json::to_value(&t).unwrap();
        assert_eq!(value["droppedExchanges"], 3);
        assert!(value["exchanges"][0]["responseBody"]["$truncated"].is_object());
        let violations = set.violations("transcript", &value).unwrap();
        assert!(violations.is_empty(), "{violations:?}");
    }
}
