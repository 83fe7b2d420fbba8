//! The front: a proxy on 127.0.0.1 in front of the embedded reference host that applies a
//! data mutant's rewrites ([`toolcert_core::suite::mutant`]) to its answers and events, so a known
//! bug written as data runs through the mutation matrix like a Rust mutant.
//!
//! Requests pass through unchanged, and so does an answer no rewrite's method and path match
//! (streamed as it comes). Any other answer is read whole (at most [`MAX_BODY`]) and every
//! rewrite whose `when` conditions hold edits it; an event stream is passed
//! on event by event, each event's `data` rewritten as it arrives, so a stream that never ends
//! still flows. Only the reference host sits behind it, so nothing here defends against a
//! hostile upstream beyond the bounds every wait and buffer has.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use loopback_http::{Body, HeaderMap, Request, Response, Router, Server, StatusCode};
use serde_json::{Map, Value, json};

use toolcert_core::expect::matches;
use toolcert_core::suite::{Condition, DataMutant, EventsEdit, SetValue};

/// The most of one request or answer body the front holds.
pub(crate) const MAX_BODY: usize = 16 * 1024 * 1024;

/// The most one event of a stream may hold before it is passed on unread.
const MAX_EVENT: usize = 1024 * 1024;

/// How long the front waits for the host to connect, and between two reads of an answer.
const HOST_WAIT: Duration = Duration::from_secs(60);

/// Headers that belong to one connection, not to the message.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "host",
    "upgrade",
];

/// A running front.
#[derive(Debug)]
pub(crate) struct Front {
    server: Server,
    /// Where clients reach it.
    pub(crate) base_url: String,
    /// The data mutant it applies.
    pub(crate) mutant: Arc<DataMutant>,
}

#[derive(Clone)]
struct State {
    upstream: Arc<str>,
    mutant: Arc<DataMutant>,
    http: reqwest::Client,
}

impl Front {
    /// Start a front for `mutant` before the host at `upstream` (a loopback base URL).
    pub(crate) async fn start(upstream: &str, mutant: Arc<DataMutant>) -> std::io::Result<Front> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(HOST_WAIT)
            .read_timeout(HOST_WAIT)
            .build()
            .map_err(std::io::Error::other)?;
        let state = State {
            upstream: upstream.trim_end_matches('/').into(),
            mutant: mutant.clone(),
            http,
        };
        let router = Router::new(state).fallback(forward);
        let server = Server::bind(([127, 0, 0, 1], 0).into(), router).await?;
        let base_url = format!("http://{}", server.local_addr());
        Ok(Front {
            server,
            base_url,
            mutant,
        })
    }

    /// Stop it, letting answers in flight finish for a moment.
    pub(crate) async fn shutdown(self) {
        self.server.shutdown(Duration::from_millis(200)).await;
    }
}

/// A body as JSON when it parses as JSON.
fn json_of(bytes: &[u8]) -> Option<Value> {
    (!bytes.is_empty())
        .then(|| serde_json::from_slice(bytes).ok())
        .flatten()
}

fn headers_json(headers: &HeaderMap) -> Value {
    let mut out = Map::new();
    for (name, value) in headers {
        out.insert(
            name.as_str().to_string(),
            Value::String(String::from_utf8_lossy(value.as_bytes()).into_owned()),
        );
    }
    Value::Object(out)
}

fn holds(conditions: &[Condition], doc: &Value) -> bool {
    conditions
        .iter()
        .all(|c| matches(&c.expect, doc.pointer(&c.at), doc).is_ok())
}

fn bad_gateway(why: impl std::fmt::Display) -> Response {
    loopback_http::response::text(
        StatusCode::BAD_GATEWAY,
        format!("toolcert front: the reference host behind it did not answer: {why}"),
    )
}

async fn forward(state: State, req: Request) -> Response {
    let method = req.method.clone();
    let path = req.uri.path().to_string();
    let query = req.uri.query().unwrap_or_default().to_string();
    let url = match req.uri.query() {
        Some(q) => format!("{}{path}?{q}", state.upstream),
        None => format!("{}{path}", state.upstream),
    };
    let request_headers = req.headers.clone();
    let body = match req.body.read(MAX_BODY).await {
        Ok(body) => body,
        Err(e) => {
            return loopback_http::response::text(StatusCode::PAYLOAD_TOO_LARGE, e.to_string());
        }
    };
    let mut outbound = state.http.request(method.clone(), &url).body(body.clone());
    for (name, value) in &request_headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            outbound = outbound.header(name, value);
        }
    }
    let answer = match outbound.send().await {
        Ok(answer) => answer,
        Err(e) => return bad_gateway(e),
    };
    let rewrites: Vec<usize> = state
        .mutant
        .rewrites
        .iter()
        .enumerate()
        .filter(|(_, r)| r.matches_request(method.as_str(), &path))
        .map(|(i, _)| i)
        .collect();
    if rewrites.is_empty() {
        // Nothing of the mutant applies: the answer passes as it comes, streamed and unbounded
        // here, as the clean host sent it.
        let (status, headers) = (answer.status(), answer.headers().clone());
        return respond(status, &headers, Body::from_stream(answer.bytes_stream()));
    }
    let request_doc = json!({
        "method": method.as_str(),
        "path": path,
        "query": query,
        "headers": headers_json(&request_headers),
        "body": json_of(&body),
    });
    let status = answer.status();
    let headers = answer.headers().clone();
    let streams = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let mut exchange = json!({
        "request": request_doc,
        "response": {"status": status.as_u16(), "headers": headers_json(&headers)},
    });
    if streams {
        let applying: Vec<usize> = rewrites
            .into_iter()
            .filter(|i| holds(&state.mutant.rewrites[*i].when, &exchange))
            .collect();
        let mut response = respond(status, &headers, Body::empty());
        for i in &applying {
            if let Some(edit) = &state.mutant.rewrites[*i].response {
                edit_head(&mut response, edit.status, &edit.headers);
            }
        }
        let edits: Vec<EventsEdit> = applying
            .iter()
            .filter_map(|i| state.mutant.rewrites[*i].events.clone())
            .collect();
        *response.body_mut() = stream_events(answer, edits);
        return response;
    }
    let bytes = match read_bounded(answer).await {
        Ok(bytes) => bytes,
        Err(why) => return bad_gateway(why),
    };
    let mut body = json_of(&bytes);
    if let Some(b) = &body {
        exchange["response"]["body"] = b.clone();
    }
    let mut response = respond(status, &headers, Body::empty());
    let mut edited = false;
    for i in rewrites {
        let rewrite = &state.mutant.rewrites[i];
        if !holds(&rewrite.when, &exchange) {
            continue;
        }
        if let Some(edit) = &rewrite.response {
            edit_head(&mut response, edit.status, &edit.headers);
            if let Some(b) = body.as_mut() {
                edited |= apply(b, &edit.set, &edit.remove);
            }
        }
        if let (Some(edit), Some(b)) = (&rewrite.events, body.as_mut())
            && let Some(Value::Array(events)) = b.pointer_mut(&edit.within)
        {
            edited |= edit_events(events, edit);
        }
    }
    let bytes = match (edited, body) {
        (true, Some(b)) => Bytes::from(serde_json::to_vec(&b).unwrap_or_default()),
        _ => bytes,
    };
    *response.body_mut() = Body::from(bytes);
    response
}

/// Read an answer whole, at most [`MAX_BODY`].
async fn read_bounded(answer: reqwest::Response) -> Result<Bytes, String> {
    let mut out = Vec::new();
    let mut chunks = answer.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        if out.len() + chunk.len() > MAX_BODY {
            return Err(format!("its answer is larger than {MAX_BODY} bytes"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

/// A response with `status` and the message headers of `headers`.
fn respond(status: reqwest::StatusCode, headers: &HeaderMap, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::OK);
    for (name, value) in headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            response.headers_mut().append(name, value.clone());
        }
    }
    response
}

/// A rewrite's new status and headers.
fn edit_head(
    response: &mut Response,
    status: Option<u16>,
    headers: &std::collections::BTreeMap<String, Option<String>>,
) {
    if let Some(status) = status.and_then(|s| StatusCode::from_u16(s).ok()) {
        *response.status_mut() = status;
    }
    for (name, value) in headers {
        let Ok(name) = loopback_http::header::HeaderName::from_bytes(name.as_bytes()) else {
            continue;
        };
        response.headers_mut().remove(&name);
        if let Some(value) = value
            && let Ok(value) = loopback_http::HeaderValue::from_str(value)
        {
            response.headers_mut().insert(name, value);
        }
    }
}

/// Write and remove members of `doc`; whether anything changed.
pub(crate) fn apply(doc: &mut Value, set: &[SetValue], remove: &[String]) -> bool {
    let mut changed = false;
    for s in set {
        changed |= set_at(doc, &s.at, s.value.clone());
    }
    for at in remove {
        changed |= remove_at(doc, at);
    }
    changed
}

/// The parent pointer and the last token (unescaped) of a non-empty pointer.
fn split_pointer(at: &str) -> Option<(&str, String)> {
    let cut = at.rfind('/')?;
    let token = at[cut + 1..].replace("~1", "/").replace("~0", "~");
    Some((&at[..cut], token))
}

fn set_at(doc: &mut Value, at: &str, value: Value) -> bool {
    let Some((parent, token)) = split_pointer(at) else {
        return false;
    };
    match doc.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(token, value);
            true
        }
        Some(Value::Array(items)) if token == "-" => {
            items.push(value);
            true
        }
        Some(Value::Array(items)) => match token.parse::<usize>() {
            Ok(i) if i < items.len() => {
                items[i] = value;
                true
            }
            Ok(i) if i == items.len() => {
                items.push(value);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

fn remove_at(doc: &mut Value, at: &str) -> bool {
    let Some((parent, token)) = split_pointer(at) else {
        return false;
    };
    match doc.pointer_mut(parent) {
        Some(Value::Object(map)) => map.remove(&token).is_some(),
        Some(Value::Array(items)) => match token.parse::<usize>() {
            Ok(i) if i < items.len() => {
                items.remove(i);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// Apply one events edit to a JSON answer's array of events; whether anything changed.
pub(crate) fn edit_events(events: &mut Vec<Value>, edit: &EventsEdit) -> bool {
    let before = events.len();
    let mut changed = false;
    events.retain_mut(|event| {
        if !holds(&edit.only, event) {
            return true;
        }
        if edit.drop {
            return false;
        }
        changed |= apply(event, &edit.set, &edit.remove);
        true
    });
    changed || events.len() != before
}

/// One event of a stream rewritten: `None` when it is dropped. Its `data` lines are read as
/// one JSON value; an event whose data is not JSON passes unchanged.
pub(crate) fn rewrite_sse_event(block: &str, edits: &[EventsEdit]) -> Option<String> {
    let lines: Vec<&str> = block.lines().collect();
    let data: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    let Ok(mut event) = serde_json::from_str::<Value>(&data.join("\n")) else {
        return Some(format!("{block}\n\n"));
    };
    let mut changed = false;
    for edit in edits {
        if !holds(&edit.only, &event) {
            continue;
        }
        if edit.drop {
            return None;
        }
        changed |= apply(&mut event, &edit.set, &edit.remove);
    }
    if !changed {
        return Some(format!("{block}\n\n"));
    }
    let mut out = String::new();
    let mut wrote_data = false;
    for line in lines {
        if line.starts_with("data:") {
            if !wrote_data {
                out.push_str("data: ");
                out.push_str(&event.to_string());
                out.push('\n');
                wrote_data = true;
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push('\n');
    Some(out)
}

/// Pass an event stream on, event by event, each rewritten by `edits`.
fn stream_events(answer: reqwest::Response, edits: Vec<EventsEdit>) -> Body {
    let upstream = answer.bytes_stream();
    let stream = futures_util::stream::unfold(
        (upstream, Vec::<u8>::new(), edits, false),
        |(mut upstream, mut pending, edits, done)| async move {
            loop {
                // A whole event ends at a blank line (`\n\n`, or `\r\n\r\n`).
                let normalized_end = find_event_end(&pending);
                if let Some((end, skip)) = normalized_end {
                    let block: Vec<u8> = pending.drain(..end + skip).take(end).collect();
                    let block = String::from_utf8_lossy(&block).replace("\r\n", "\n");
                    let out = if edits.is_empty() {
                        Some(format!("{block}\n\n"))
                    } else {
                        rewrite_sse_event(&block, &edits)
                    };
                    match out {
                        Some(out) => {
                            return Some((
                                Ok::<Bytes, std::io::Error>(Bytes::from(out)),
                                (upstream, pending, edits, done),
                            ));
                        }
                        None => continue,
                    }
                }
                if pending.len() > MAX_EVENT {
                    // An event this large is not one a data mutant rewrites: pass it on.
                    let chunk = Bytes::from(std::mem::take(&mut pending));
                    return Some((Ok(chunk), (upstream, pending, edits, done)));
                }
                if done {
                    if pending.is_empty() {
                        return None;
                    }
                    let chunk = Bytes::from(std::mem::take(&mut pending));
                    return Some((Ok(chunk), (upstream, pending, edits, done)));
                }
                match upstream.next().await {
                    Some(Ok(chunk)) => pending.extend_from_slice(&chunk),
                    Some(Err(e)) => {
                        return Some((
                            Err(std::io::Error::other(e)),
                            (upstream, pending, edits, true),
                        ));
                    }
                    None => {
                        return if pending.is_empty() {
                            None
                        } else {
                            let chunk = Bytes::from(std::mem::take(&mut pending));
                            Some((Ok(chunk), (upstream, pending, edits, true)))
                        };
                    }
                }
            }
        },
    );
    Body::from_stream(stream)
}

/// Where the first event in `pending` ends: its length, and the length of the blank line
/// after it.
fn find_event_end(pending: &[u8]) -> Option<(usize, usize)> {
    let lf = pending
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (i, 2));
    let crlf = pending
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(v: Value) -> EventsEdit {
        let mut v = v;
        if let Some(Value::Array(only)) = v.get_mut("where") {
            for c in only {
                // Long form only here: the loader writes inline matchers out.
                assert!(c.get("expect").is_some());
            }
        }
        serde_json::from_value(v).expect("an events edit")
    }

    #[test]
    fn set_and_remove_follow_pointers() {
        let mut doc = json!({"a": {"b": 1}, "list": [1, 2, 3]});
        assert!(apply(
            &mut doc,
            &[
                SetValue {
                    at: "/a/c".into(),
                    value: json!(2)
                },
                SetValue {
                    at: "/list/-".into(),
                    value: json!(4)
                },
                SetValue {
                    at: "/list/0".into(),
                    value: json!(0)
                },
                SetValue {
                    at: "/missing/x".into(),
                    value: json!(9)
                },
            ],
            &["/a/b".into(), "/list/1".into(), "/nothing".into()],
        ));
        assert_eq!(doc, json!({"a": {"c": 2}, "list": [0, 3, 4]}));
        assert!(!apply(&mut doc, &[], &["/nothing".into()]));
    }

    #[test]
    fn events_in_a_json_answer_are_dropped_or_edited_where_they_match() {
        let mut events = vec![
            json!({"type": "run.started", "seq": 1}),
            json!({"type": "tool.called", "seq": 2}),
            json!({"type": "run.completed", "seq": 3}),
        ];
        let drop = edit(
            json!({"where": [{"at": "/type", "expect": {"equals": "tool.called"}}], "drop": true}),
        );
        assert!(edit_events(&mut events, &drop));
        assert_eq!(events.len(), 2);
        let set = edit(
            json!({"where": [{"at": "/seq", "expect": {"equals": 3}}], "set": [{"at": "/seq", "value": 1}]}),
        );
        assert!(edit_events(&mut events, &set));
        assert_eq!(events[1]["seq"], json!(1));
        assert!(!edit_events(&mut events, &drop));
    }

    #[test]
    fn stream_events_are_rewritten_one_by_one() {
        let set = edit(
            json!({"where": [{"at": "/type", "expect": {"equals": "a"}}], "set": [{"at": "/x", "value": true}]}),
        );
        let drop =
            edit(json!({"where": [{"at": "/type", "expect": {"equals": "b"}}], "drop": true}));
        let edits = [set, drop];
        assert_eq!(
            rewrite_sse_event("id: 1\nevent: e\ndata: {\"type\":\ndata: \"a\"}", &edits).as_deref(),
            Some("id: 1\nevent: e\ndata: {\"type\":\"a\",\"x\":true}\n\n")
        );
        assert_eq!(
            rewrite_sse_event("id: 2\ndata: {\"type\": \"b\"}", &edits),
            None
        );
        assert_eq!(
            rewrite_sse_event(": keepalive", &edits).as_deref(),
            Some(": keepalive\n\n")
        );
        assert_eq!(
            rewrite_sse_event("data: {\"type\": \"c\"}", &edits).as_deref(),
            Some("data: {\"type\": \"c\"}\n\n")
        );
    }

    #[test]
    fn an_event_ends_at_the_first_blank_line_of_either_kind() {
        assert_eq!(find_event_end(b"data: 1\n\ndata: 2\n\n"), Some((7, 2)));
        assert_eq!(find_event_end(b"data: 1\r\n\r\n"), Some((7, 4)));
        assert_eq!(find_event_end(b"data: 1\n"), None);
    }
}
