//! Loopback hostile hosts, and a way to run the real `toolcert` binary against one and collect
//! everything it wrote.
//!
//! Shared by `tests/hostile_hosts.rs` and `benches/hostile.rs` (which includes this file with
//! `#[path]`). Every host is a raw `std::net::TcpListener` on 127.0.0.1 with a thread per
//! connection: it serves a valid v1 discovery document on `GET /.well-known/openwop`, then
//! misbehaves on every other request in the way its [`Behaviour`] names. One request per
//! connection (`connection: close`), so a behaviour never depends on connection reuse.
//! Dropping a [`HostileHost`] stops it and every connection thread it started.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The discovery document every hostile host serves: v1, advertising the tool-hooks facets and
/// idempotency, listing the two upstream fixtures, so the hooks and idempotency scenarios are
/// applicable and actually drive requests.
pub const DISCOVERY: &str = r#"{"protocolVersion":"1.0","toolHooks":{"supported":true,"prePostEvents":true,"perToolAuthorization":true,"perToolRateLimit":true},"idempotency":{"supported":true},"fixtures":["conformance-noop","conformance-idempotent"]}"#;

/// [`DISCOVERY`] with a `protocolVersion` that is still `1.`-something but carries what a
/// console or a Markdown report must never pass on raw: an OSC title sequence, a screen clear,
/// a carriage return and a newline starting a Markdown heading, and a `<script>`.
pub const DISCOVERY_WITH_CONTROLS: &str = r#"{"protocolVersion":"1.0\u001b]0;owned\u0007\u001b[2J\r\n# injected <script>alert(1)</script>","toolHooks":{"supported":true,"prePostEvents":true,"perToolAuthorization":true,"perToolRateLimit":true},"idempotency":{"supported":true},"fixtures":["conformance-noop","conformance-idempotent"]}"#;

/// What the markup host puts in every string: markup, an RTL override, a NUL, an escape, a
/// bell, a DEL and a line break that would start a Markdown heading.
pub const MARKUP: &str = "<img src=x onerror=alert(1)>\u{202e}evil\u{0}\u{1b}[2J\u{7}\u{7f}\r\n# injected <script>alert(2)</script>";

/// The steps of the hooks and idempotency scenarios, which the placeholder host names.
const STEP_NAMES: &[&str] = &[
    "again",
    "blocked",
    "blockedLog",
    "call",
    "denied",
    "deniedCall",
    "first",
    "granted",
    "grantedCall",
    "log",
    "run",
    "second",
    "tool",
    "limited",
    "held",
    "valid",
    "okCall",
];

/// The forms of a token the encoding host echoes: reversed, upper-cased, hex (both cases),
/// base64 and base64url, `Basic base64(operator:token)`, and split by invisible characters.
pub fn encoded_forms(token: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let (a, b) = token.split_at(token.len() / 2);
    vec![
        token.chars().rev().collect(),
        token.to_ascii_uppercase(),
        hex::encode(token),
        hex::encode_upper(token),
        STANDARD.encode(token),
        URL_SAFE_NO_PAD.encode(token),
        format!("Basic {}", STANDARD.encode(format!("operator:{token}"))),
        format!("{a}\u{7f}{b}"),
        format!("{a}\u{0}{b}"),
        format!("{a}\u{1b}{b}"),
        format!("{a}\u{200b}{b}"),
    ]
}

/// A `<script>` the HTML and echo hosts put into what they send; no report may carry it raw.
pub const SCRIPT: &str = "<script>alert('toolcert')</script>";

/// What a canary secret reads as in a report.
pub const CANARY_MARK: &str = "[canary]";

/// How many characters of a non-JSON body toolcert keeps (`{"$nonJson": prefix}`).
const NON_JSON_EXCERPT: usize = 512;

/// How many characters of a value a check quotes in its detail before `…`.
const QUOTE_EXCERPT: usize = 300;

/// How a host misbehaves on every request but discovery.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    /// Accepts the connection, reads the request, never writes a byte (holds the socket).
    Silent,
    /// Sends a 200 head with a large `content-length`, then one byte of body per `every`.
    Trickle {
        /// Gap between two body bytes.
        every: Duration,
    },
    /// Echoes the request's `Authorization` value (and its whole body, canaries included)
    /// into the JSON fields checks compare (`status`, `error.code`, `toolReturned.status`,
    /// `runId`, …) and into response headers; alternates HTTP 200 and 403. A 403's statuses
    /// are a `<script>`, a pipe and padding, then the bare token where a check's 300-character
    /// quote of the value ends; every answer carries a key made of control characters.
    EchoAuth,
    /// A 200 `application/json` answer whose body is JSON cut off mid-object (the declared
    /// length matches what is sent).
    TruncatedJson,
    /// A 200 `application/json` answer whose body is binary: NUL and other control bytes, an
    /// ANSI escape and bytes that are not UTF-8.
    BinaryBody,
    /// Declares a `content-length` longer than the body it sends, then closes.
    ShortBody,
    /// HTTP 500 with an HTML error page (a `<script>`, Markdown table pipes, and the request's
    /// Authorization value, as a debug page would print it), then the bare token straddling
    /// the end of toolcert's 512-character excerpt of a non-JSON body.
    Html500,
    /// 302 to the very path asked for.
    RedirectLoop,
    /// 302 to `http://example.com/`.
    RedirectOffLoopback,
    /// On every `…/events` request an SSE stream that never ends, `per_sec` events a second;
    /// 200 `{"runId":"r1","status":"running"}` elsewhere.
    EndlessEvents {
        /// Events a second.
        per_sec: u32,
    },
    /// 200 `{"runId":"r1","status":"completed"}` to everything: a plain host (for the
    /// behaviours that live in its discovery document).
    Plain,
    /// Every answer a valid JSON body just under the client's 4 MiB cap: a run that keeps
    /// every answer would hold gigabytes.
    BigBodies,
    /// Echoes template placeholders naming the scenarios' own steps into every field, so a
    /// harness that expanded host values would expand them again and again.
    EchoPlaceholders,
    /// Every run stays `running` for ever: runs answer `running`, polls bring nothing new and
    /// say `running`, and event streams send one event then a comment every 200 ms, never
    /// ending and never quiet.
    NeverSettles,
    /// Every answer is JSON nested `depth` levels deep (in arrays) beside the usual fields.
    Nested {
        /// Nesting depth.
        depth: usize,
    },
    /// Every string field holds markup, an RTL override (U+202E), a NUL and other controls.
    Markup,
    /// Echoes the request's bearer token in pieces and encodings: split across two adjacent
    /// fields, reversed, upper-cased, in hex, base64 and base64url, as `Basic
    /// base64(operator:token)`, and split by a DEL, a NUL, an escape and a zero-width space;
    /// in the fields checks compare and quote, and in headers.
    EncodedEcho,
    /// Runs read `running` once, then `completed`; their event streams send events whose
    /// `id:` holds non-ASCII and invalid UTF-8 bytes, then end.
    NonAsciiEventIds,
}

/// One parsed request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Method.
    pub method: String,
    /// Path with query.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// Body (read as far as `content-length` says, capped).
    pub body: Vec<u8>,
}

impl Request {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }
}

/// What a host saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Connections accepted.
    pub connections: AtomicUsize,
    /// Discovery requests answered.
    pub discovery: AtomicUsize,
    /// Other requests (misbehaved on).
    pub other: AtomicUsize,
    /// Every request line (`GET /path`), in order.
    pub lines: Mutex<Vec<String>>,
}

/// A running hostile host on 127.0.0.1.
pub struct HostileHost {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    seen: Arc<Seen>,
    acceptor: Option<JoinHandle<()>>,
}

impl HostileHost {
    /// Start a host with this behaviour on an ephemeral port, serving [`DISCOVERY`].
    pub fn start(behaviour: Behaviour) -> HostileHost {
        HostileHost::start_with_discovery(behaviour, DISCOVERY)
    }

    /// Start a host with this behaviour, serving `discovery` as its discovery document.
    pub fn start_with_discovery(
        behaviour: Behaviour,
        discovery: impl Into<Arc<str>>,
    ) -> HostileHost {
        let discovery: Arc<str> = discovery.into();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Seen::default());
        let acceptor = {
            let (stop, seen) = (stop.clone(), seen.clone());
            std::thread::Builder::new()
                .name(format!("hostile-{addr}"))
                .spawn(move || accept_loop(listener, behaviour, discovery, stop, seen))
                .expect("spawn the acceptor")
        };
        HostileHost {
            addr,
            stop,
            seen,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What the host saw so far.
    pub fn seen(&self) -> &Seen {
        &self.seen
    }
}

impl Drop for HostileHost {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

/// A port nothing listens on (bound once, then released).
pub fn closed_port_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

fn accept_loop(
    listener: TcpListener,
    behaviour: Behaviour,
    discovery: Arc<str>,
    stop: Arc<AtomicBool>,
    seen: Arc<Seen>,
) {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(conn) = conn else { continue };
        seen.connections.fetch_add(1, Ordering::SeqCst);
        let (stop, seen, discovery) = (stop.clone(), seen.clone(), discovery.clone());
        workers.retain(|w| !w.is_finished());
        if let Ok(w) = std::thread::Builder::new()
            .name("hostile-conn".into())
            .spawn(move || serve(conn, behaviour, &discovery, &stop, &seen))
        {
            workers.push(w);
        }
    }
    for w in workers {
        let _ = w.join();
    }
}

/// Poll interval of every blocking read or sleep, so a stopped host winds down quickly.
const TICK: Duration = Duration::from_millis(50);

fn serve(
    mut conn: TcpStream,
    behaviour: Behaviour,
    discovery: &str,
    stop: &AtomicBool,
    seen: &Seen,
) {
    let _ = conn.set_read_timeout(Some(TICK));
    let _ = conn.set_nodelay(true);
    let Some(req) = read_request(&mut conn, stop) else {
        return;
    };
    seen.lines
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!("{} {}", req.method, req.path));
    if req.method == "GET" && req.path_only() == "/.well-known/openwop" {
        seen.discovery.fetch_add(1, Ordering::SeqCst);
        respond(
            &mut conn,
            "200 OK",
            "application/json",
            &[],
            discovery.as_bytes(),
        );
        return;
    }
    let n = seen.other.fetch_add(1, Ordering::SeqCst);
    match behaviour {
        Behaviour::Silent => hold(&mut conn, stop),
        Behaviour::Trickle { every } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\nconnection: close\r\n\r\n";
            if conn.write_all(head.as_bytes()).is_err() {
                return;
            }
            // `{` then spaces: valid JSON so far, forever.
            let mut byte = b'{';
            while !stop.load(Ordering::SeqCst) {
                if conn.write_all(&[byte]).and_then(|_| conn.flush()).is_err() {
                    return;
                }
                byte = b' ';
                if !sleep_unless_stopped(every, stop) {
                    return;
                }
            }
        }
        Behaviour::EchoAuth => {
            let auth = req.header("authorization").unwrap_or("");
            let bare = auth
                .strip_prefix("Bearer ")
                .or_else(|| auth.strip_prefix("bearer "))
                .unwrap_or(auth);
            let body = String::from_utf8_lossy(&req.body).into_owned();
            let forbidden = n % 2 == 1;
            // A 403 puts a `<script>` and a table pipe where row details quote it, and the bare
            // token where a check's quote of the value (300 characters and `…`) ends: half a
            // token is still a leak.
            let status = if forbidden {
                let lead = format!("{SCRIPT}|");
                let pad = QUOTE_EXCERPT - 1 - bare.len() / 2 - lead.len();
                format!("{lead}{}{bare}", "x".repeat(pad))
            } else {
                auth.to_string()
            };
            let mut echoed = serde_json::json!({
                "status": status,
                "runId": body,
                "token": bare,
                "error": {"code": auth, "message": format!("{SCRIPT} {auth}"), "details": {"token": bare}},
                "toolReturned": {"status": status, "error": {"code": auth, "message": bare}, "durationMs": 1},
                "outcome": auth,
                "events": [{"sequence": 1, "type": auth, "payload": {"authorization": auth, "body": body}}],
                "echo": {"authorization": auth, "path": req.path, "body": body},
            });
            // A key a closed-object check names when it refuses the object: a screen clear, a
            // bell and a line break that would start a Markdown heading.
            echoed["\u{1b}[2J\u{7}\r\n# injected"] = serde_json::json!(true);
            respond(
                &mut conn,
                if forbidden { "403 Forbidden" } else { "200 OK" },
                "application/json",
                &[("x-echo-authorization", auth), ("x-echo-token", bare)],
                echoed.to_string().as_bytes(),
            );
        }
        Behaviour::TruncatedJson => respond(
            &mut conn,
            "200 OK",
            "application/json",
            &[],
            br#"{"runId":"r1","status":"completed","toolReturned":{"status":"ok","durationMs":3,"output":{"items":[1,2,"#,
        ),
        Behaviour::BinaryBody => respond(
            &mut conn,
            "200 OK",
            "application/json",
            &[],
            b"\x00\x01\x02\x03\x1b[31mred\x1b[0m\x07\x08\x0b\x0c\x7f\xff\xfe\xc3\x28\x80\x81 ]]> </failure> \x00",
        ),
        Behaviour::ShortBody => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 4096\r\nconnection: close\r\n\r\n";
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(br#"{"runId":"r1","status":"completed","toolRet"#);
            let _ = conn.flush();
            let _ = conn.shutdown(Shutdown::Both);
        }
        Behaviour::Html500 => {
            let auth = req.header("authorization").unwrap_or("");
            let bare = auth.strip_prefix("Bearer ").unwrap_or(auth);
            let mut page = format!(
                "<!DOCTYPE html><html><head><title>500 Internal Server Error</title>{SCRIPT}</head>\
                 <body><h1>Internal Server Error</h1><p>| a | table | breaker |</p>\
                 <pre>request headers:\nAuthorization: {auth}\n</pre>\
                 <img src=x onerror=alert(1)><a href=\"javascript:alert(1)\">retry</a><!-- ]]> -->"
            );
            // A debug page that prints the bare token where toolcert's 512-character excerpt of
            // a non-JSON body ends: half a token is still a leak.
            let lead = "<p>session ";
            while page.len() + lead.len() < NON_JSON_EXCERPT - bare.len() / 2 {
                page.push('.');
            }
            page.push_str(&format!("{lead}{bare}</p></body></html>"));
            respond(
                &mut conn,
                "500 Internal Server Error",
                "text/html; charset=utf-8",
                &[],
                page.as_bytes(),
            );
        }
        Behaviour::RedirectLoop => {
            let to = req.path.clone();
            respond(&mut conn, "302 Found", "text/plain", &[("location", &to)], b"");
        }
        Behaviour::RedirectOffLoopback => respond(
            &mut conn,
            "302 Found",
            "text/plain",
            &[("location", "http://example.com/")],
            b"",
        ),
        Behaviour::Plain => respond(
            &mut conn,
            "200 OK",
            "application/json",
            &[],
            br#"{"runId":"r1","status":"completed"}"#,
        ),
        Behaviour::BigBodies => {
            // Half a long string, half many short ones: just under 4 MiB in all.
            let item = format!("\"{}\"", "y".repeat(1022));
            let items = vec![item; 2040].join(",");
            let pad = "x".repeat(4 * 1024 * 1024 - items.len() - 200);
            let body = format!(
                r#"{{"runId":"r1","status":"running","pad":"{pad}","items":[{items}]}}"#
            );
            respond(&mut conn, "200 OK", "application/json", &[], body.as_bytes());
        }
        Behaviour::EchoPlaceholders => {
            let all: String = STEP_NAMES
                .iter()
                .map(|n| format!("{{{{steps.{n}.body}}}}{{{{steps.{n}}}}}"))
                .collect();
            let echoed = serde_json::json!({
                "runId": all, "status": all, "id": all, "callId": all,
                "error": {"code": all, "message": all},
                "toolReturned": {"status": all, "error": {"code": all}},
                "events": [{"sequence": 1, "type": all, "payload": {"x": all}}],
                "echo": String::from_utf8_lossy(&req.body),
            });
            respond(
                &mut conn,
                "200 OK",
                "application/json",
                &[],
                echoed.to_string().as_bytes(),
            );
        }
        Behaviour::NeverSettles => {
            if req.path_only().ends_with("/events") {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let first = "id: 1\ndata: {\"sequence\":1,\"runId\":\"r1\",\"type\":\"run.started\",\"payload\":{}}\n\n";
                if conn.write_all(first.as_bytes()).is_err() {
                    return;
                }
                while !stop.load(Ordering::SeqCst) {
                    if conn.write_all(b": still running\n\n").is_err() {
                        return;
                    }
                    if !sleep_unless_stopped(Duration::from_millis(200), stop) {
                        return;
                    }
                }
            } else {
                let body = if req.path_only().ends_with("/poll") {
                    r#"{"events":[],"status":"running","runStatus":"running"}"#
                } else {
                    r#"{"runId":"r1","status":"running"}"#
                };
                let status = if req.method == "POST" { "201 Created" } else { "200 OK" };
                respond(&mut conn, status, "application/json", &[], body.as_bytes());
            }
        }
        Behaviour::Nested { depth } => {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let body = format!(
                r#"{{"runId":"r1","status":"completed","deep":{deep},"toolReturned":{{"status":"ok","output":{deep}}},"events":[{{"sequence":1,"payload":{deep}}}]}}"#
            );
            respond(&mut conn, "200 OK", "application/json", &[], body.as_bytes());
        }
        Behaviour::Markup => {
            let m = MARKUP;
            let body = serde_json::json!({
                "runId": m, "status": m, "id": m,
                "error": {"code": m, "message": m, "details": {m: m}},
                "toolReturned": {"status": m, "error": {"code": m, "message": m}},
                "events": [{"sequence": 1, "type": m, "payload": {"m": m}}],
                m: [m, m],
            });
            respond(
                &mut conn,
                if n.is_multiple_of(2) { "200 OK" } else { "403 Forbidden" },
                "application/json",
                &[("x-markup", "<b>bold</b> <script>x</script>")],
                body.to_string().as_bytes(),
            );
        }
        Behaviour::EncodedEcho => {
            let auth = req.header("authorization").unwrap_or("");
            let bare = auth.strip_prefix("Bearer ").unwrap_or(auth);
            let forms = encoded_forms(bare);
            let (head, tail) = bare.split_at(bare.len() / 2);
            let pick = |i: usize| forms[(n + i) % forms.len()].clone();
            let mut body = serde_json::json!({
                "runId": pick(0),
                "status": pick(1),
                "tokenHead": head,
                "tokenTail": tail,
                "error": {"code": pick(2), "message": format!("{} {}", pick(3), pick(4))},
                "toolReturned": {"status": pick(5), "error": {"code": pick(6), "message": pick(7)}},
                "events": [{"sequence": 1, "type": pick(8), "payload": {"a": head, "b": tail}}],
            });
            for (i, f) in forms.iter().enumerate() {
                body[format!("form{i}")] = serde_json::json!(f);
            }
            let b64 = {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.encode(bare)
            };
            respond(
                &mut conn,
                if n.is_multiple_of(2) { "200 OK" } else { "403 Forbidden" },
                "application/json",
                &[("x-echo-b64", &b64), ("x-echo-rev", &bare.chars().rev().collect::<String>())],
                body.to_string().as_bytes(),
            );
        }
        Behaviour::NonAsciiEventIds => {
            if req.path_only().ends_with("/events") {
                let mut stream: Vec<u8> = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec();
                for seq in 1..=2 {
                    stream.extend_from_slice("id: \u{e9}\u{2603}-".as_bytes());
                    stream.extend_from_slice(&[0xff, 0xfe, b'0' + seq as u8]);
                    stream.extend_from_slice(format!("\ndata: {{\"sequence\":{seq},\"runId\":\"r1\",\"type\":\"run.started\",\"payload\":{{}}}}\n\n").as_bytes());
                }
                let _ = conn.write_all(&stream);
                let _ = conn.flush();
                let _ = conn.shutdown(Shutdown::Both);
            } else {
                let status = if n.is_multiple_of(3) { "running" } else { "completed" };
                let body = format!(r#"{{"runId":"r1","status":"{status}","events":[]}}"#);
                respond(&mut conn, "200 OK", "application/json", &[], body.as_bytes());
            }
        }
        Behaviour::EndlessEvents { per_sec } => {
            if req.path_only().ends_with("/events") {
                endless_events(&mut conn, per_sec.max(1), stop);
            } else {
                respond(
                    &mut conn,
                    "200 OK",
                    "application/json",
                    &[],
                    br#"{"runId":"r1","status":"running"}"#,
                );
            }
        }
    }
}

fn endless_events(conn: &mut TcpStream, per_sec: u32, stop: &AtomicBool) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    if conn.write_all(head.as_bytes()).is_err() {
        return;
    }
    let started = Instant::now();
    let mut sent: u64 = 0;
    let gap = Duration::from_secs_f64(1.0 / f64::from(per_sec));
    while !stop.load(Ordering::SeqCst) {
        // Catch up to the rate in one write, then sleep one gap (at least 1 ms).
        let due = (started.elapsed().as_secs_f64() * f64::from(per_sec)) as u64 + 1;
        let mut chunk = String::new();
        while sent < due {
            sent += 1;
            chunk.push_str(&format!(
                "id: {sent}\ndata: {{\"sequence\":{sent},\"type\":\"node.started\",\"payload\":{{}}}}\n\n"
            ));
        }
        if !chunk.is_empty() && conn.write_all(chunk.as_bytes()).is_err() {
            return;
        }
        std::thread::sleep(gap.max(Duration::from_millis(1)));
    }
}

/// Read one request head and its body (at most 1 MiB); `None` when the peer went away or the
/// host stopped first.
fn read_request(conn: &mut TcpStream, stop: &AtomicBool) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > 64 * 1024 || stop.load(Ordering::SeqCst) {
            return None;
        }
        match conn.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if is_tick(&e) => {}
            Err(_) => return None,
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
        .min(1024 * 1024);
    let mut body = buf[head_end + 4..].to_vec();
    let deadline = Instant::now() + Duration::from_secs(5);
    while body.len() < length && Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
        match conn.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) if is_tick(&e) => {}
            Err(_) => break,
        }
    }
    body.truncate(length);
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn is_tick(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn respond(
    conn: &mut TcpStream,
    status: &str,
    content_type: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
    let _ = conn.flush();
    let _ = conn.shutdown(Shutdown::Write);
    // Let the client read to the end before the socket closes.
    let mut sink = [0u8; 1024];
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        match conn.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if is_tick(&e) => {}
            Err(_) => break,
        }
    }
}

/// Hold a connection open without writing, until the peer closes or the host stops.
fn hold(conn: &mut TcpStream, stop: &AtomicBool) {
    let mut sink = [0u8; 1024];
    while !stop.load(Ordering::SeqCst) {
        match conn.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if is_tick(&e) => {}
            Err(_) => return,
        }
    }
}

/// Sleep `d` in ticks; `false` when the host stopped meanwhile.
fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(TICK.min(until.saturating_duration_since(Instant::now())));
    }
    !stop.load(Ordering::SeqCst)
}

/// The role tokens of a run: distinctive, random, and made only of characters that read the
/// same in JSON, XML, Markdown and a URL (so a leak cannot hide behind an escape). `operator`
/// and `actor` go on the command line (`--token ROLE=TOKEN`), the other four in the profile
/// file, with a principal for every role (without principals the hooks scenarios are
/// `blocked` before they send anything).
#[derive(Debug, Clone)]
pub struct Secrets {
    /// `operator` token (flag).
    pub operator: String,
    /// `actor` token (flag).
    pub actor: String,
    /// `peer`, `lacking`, `unevaluable`, `foreign` tokens (profile file).
    pub profile: [String; 4],
}

/// The roles whose tokens the profile file carries, in [`Secrets::profile`] order.
/// Length of a token's fixed part (`hostile` + 2 letters).
const TOKEN_PREFIX: usize = 9;

const PROFILE_ROLES: [&str; 4] = ["peer", "lacking", "unevaluable", "foreign"];

impl Secrets {
    /// Fresh random tokens: each `hostile` + 2 letters + 32 random letters and digits (base 62:
    /// a run of 8 of them matches nothing in a report by chance, not even a hex digest).
    pub fn fresh() -> Secrets {
        let r = |tag: &str| format!("hostile{tag}{}", random62(32));
        Secrets {
            operator: r("OP"),
            actor: r("AC"),
            profile: [r("PE"), r("LA"), r("UN"), r("FO")],
        }
    }

    /// The `--token` flags.
    pub fn flags(&self) -> Vec<String> {
        vec![
            "--token".into(),
            format!("operator={}", self.operator),
            "--token".into(),
            format!("actor={}", self.actor),
        ]
    }

    /// The profile file: a principal for every role, the four other tokens, a granted scope
    /// and the facts rows ask for.
    pub fn profile_json(&self) -> serde_json::Value {
        let mut roles = serde_json::json!({
            "operator": {"principal": "hostile-ops"},
            "actor": {"principal": "hostile-alice"},
        });
        for (role, token) in PROFILE_ROLES.iter().zip(&self.profile) {
            roles[*role] =
                serde_json::json!({"token": token, "principal": format!("hostile-{role}")});
        }
        serde_json::json!({
            "roles": roles,
            "scopes": {"granted": "tools:write"},
            "facts": {"recordLimitBytes": 65536, "clarificationTool": "ask_user", "mcpServerPath": "/mcp", "rateLimitCapacity": 5},
        })
    }

    /// Every secret of the run.
    pub fn all(&self) -> Vec<&str> {
        let mut all = vec![self.operator.as_str(), self.actor.as_str()];
        all.extend(self.profile.iter().map(String::as_str));
        all
    }
}

/// `n` random characters from `[0-9A-Za-z]`.
fn random62(n: usize) -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = String::with_capacity(n);
    while out.len() < n {
        // Bytes 6 and 8 carry the v4 version and variant bits; 248 = 4 × 62: no modulo bias.
        for (i, b) in uuid::Uuid::new_v4().as_bytes().iter().enumerate() {
            if i != 6 && i != 8 && *b < 248 && out.len() < n {
                out.push(ALPHABET[usize::from(*b) % 62] as char);
            }
        }
    }
    out
}

/// Everything one `toolcert run` left behind.
#[derive(Debug)]
pub struct Artifacts {
    /// Exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Wall time of the process.
    pub wall: Duration,
    /// Peak resident set (VmHWM) seen while it ran, in KiB.
    pub peak_rss_kib: u64,
    /// Stdout.
    pub stdout: String,
    /// Stderr.
    pub stderr: String,
    /// `--report` file, if written.
    pub json: Option<String>,
    /// `--junit` file, if written.
    pub junit: Option<String>,
    /// `--markdown` file, if written.
    pub markdown: Option<String>,
    /// `--html` file, if written.
    pub html: Option<String>,
    /// Directory the reports were written to.
    pub dir: PathBuf,
}

impl Drop for Artifacts {
    /// The scratch directory goes with the artifacts, unless a failed assertion is unwinding:
    /// then it stays for a look (its path is in the failure message).
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Artifacts {
    /// `(name, text)` of every artifact that exists: the four reports, stdout, stderr.
    pub fn texts(&self) -> Vec<(&'static str, &str)> {
        let mut out = vec![
            ("stdout", self.stdout.as_str()),
            ("stderr", self.stderr.as_str()),
        ];
        for (name, text) in [
            ("r.json", &self.json),
            ("r.xml", &self.junit),
            ("r.md", &self.markdown),
            ("r.html", &self.html),
        ] {
            if let Some(t) = text {
                out.push((name, t.as_str()));
            }
        }
        out
    }

    /// Every place a secret shows: `(artifact, what)` for each token, each `Bearer <token>`,
    /// each run of 8 random characters of a token (a secret cut in half by a truncation is still a
    /// leak) and each `tc-canary-` prefix.
    ///
    /// Every form the encoding host sends counts too, looked for in the text with every
    /// invisible character (raw, or as a JSON `\u` escape) taken out and in any letter case:
    /// the token reversed, 8-character runs of it, its hex, base64 and base64url encodings
    /// (the part that depends only on the token, at each byte alignment, so `Basic
    /// base64(role:token)` is found too).
    pub fn leaks(&self, secrets: &Secrets) -> Vec<String> {
        let mut found = Vec::new();
        for (name, text) in self.texts() {
            let visible = visible_text(text);
            let folded = visible.to_ascii_lowercase();
            for token in secrets.all() {
                if text.contains(&format!("Bearer {token}")) {
                    found.push(format!("{name}: Bearer {token}"));
                } else if text.contains(token) {
                    found.push(format!("{name}: token {token}"));
                } else if let Some(part) = fragments(token, 8).find(|p| text.contains(p)) {
                    found.push(format!("{name}: a fragment {part:?} of token {token}"));
                } else if let Some(part) =
                    fragments(token, 8).find(|p| folded.contains(&p.to_ascii_lowercase()))
                {
                    found.push(format!(
                        "{name}: a fragment {part:?} of token {token}, split or re-cased"
                    ));
                } else if let Some(form) = encoded(token).into_iter().find(|f| {
                    if f.bytes().all(|b| b.is_ascii_hexdigit()) {
                        folded.contains(&f.to_ascii_lowercase())
                    } else {
                        visible.contains(f.as_str())
                    }
                }) {
                    found.push(format!("{name}: the form {form:?} of token {token}"));
                }
            }
            let canaries = text.matches("tc-canary-").count();
            if canaries > 0 {
                found.push(format!(
                    "{name}: {canaries} canary (tc-canary-) occurrence(s)"
                ));
            }
        }
        found
    }
}

/// `text` without invisible characters, raw or written as JSON `\uXXXX` escapes.
fn visible_text(text: &str) -> String {
    let invisible = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\\u") {
        out.extend(rest[..at].chars().filter(|c| !invisible(*c)));
        let code = rest
            .get(at + 2..at + 6)
            .and_then(|h| u32::from_str_radix(h, 16).ok());
        match code.and_then(char::from_u32) {
            Some(c) if invisible(c) => rest = &rest[at + 6..],
            _ => {
                out.push_str("\\u");
                rest = &rest[at + 2..];
            }
        }
    }
    out.extend(rest.chars().filter(|c| !invisible(*c)));
    out
}

/// The reversed token's random part, and the hex, base64 and base64url forms of a token (the
/// characters of base64 that depend only on the token, at each of the three alignments).
fn encoded(token: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let random = &token[TOKEN_PREFIX.min(token.len())..];
    let mut forms = vec![
        random.chars().rev().collect::<String>(),
        hex::encode(random),
    ];
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for align in 0..3usize {
            let mut input = vec![0u8; align];
            input.extend_from_slice(token.as_bytes());
            let text = engine.encode(&input);
            let first = (8 * align).div_ceil(6);
            let end = (8 * (align + token.len())) / 6;
            forms.push(text[first..end].to_string());
        }
    }
    forms
}

/// Every window of `n` characters of a token's random part (its 9-character prefix is the
/// same for every run and would only find itself).
fn fragments(token: &str, n: usize) -> impl Iterator<Item = &str> + '_ {
    let random = &token[TOKEN_PREFIX.min(token.len())..];
    (0..=random.len().saturating_sub(n)).map(move |i| &random[i..i + n.min(random.len())])
}

/// Run `exe run --host URL …` with every report written into `dir`, the given extra flags and
/// the secrets' `--token` flags; measure wall time and peak RSS while it runs. A run that
/// outlives `kill_after` is killed (its code is then `None`).
pub fn run_toolcert(
    exe: &Path,
    url: &str,
    extra: &[&str],
    secrets: &Secrets,
    dir: &Path,
    kill_after: Duration,
) -> Artifacts {
    run_toolcert_on(exe, &["--host", url], extra, secrets, dir, kill_after)
}

/// [`run_toolcert`] against the host `target` names: `["--host", URL]` or `["--spawn", CMD]`.
pub fn run_toolcert_on(
    exe: &Path,
    target: &[&str],
    extra: &[&str],
    secrets: &Secrets,
    dir: &Path,
    kill_after: Duration,
) -> Artifacts {
    std::fs::create_dir_all(dir).expect("scratch dir");
    let (json, xml, md, html) = (
        dir.join("r.json"),
        dir.join("r.xml"),
        dir.join("r.md"),
        dir.join("r.html"),
    );
    for f in [&json, &xml, &md, &html] {
        let _ = std::fs::remove_file(f);
    }
    let profile = dir.join("profile.json");
    std::fs::write(&profile, secrets.profile_json().to_string()).expect("profile written");
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(target.iter().map(|s| s.to_string()));
    args.push("--profile".into());
    args.push(profile.display().to_string());
    args.extend(secrets.flags());
    for (flag, path) in [
        ("--report", &json),
        ("--junit", &xml),
        ("--markdown", &md),
        ("--html", &html),
    ] {
        args.push(flag.into());
        args.push(path.display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let started = Instant::now();
    let mut child = Command::new(exe)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolcert starts");
    let pid = child.id();
    let (out, err) = read_output(&mut child);
    let mut peak = 0u64;
    let status = loop {
        peak = peak.max(vm_hwm_kib(pid).unwrap_or(0));
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > kill_after => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let wall = started.elapsed();
    let read = |p: &PathBuf| {
        std::fs::read(p)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    Artifacts {
        code: status.and_then(|s| s.code()),
        wall,
        peak_rss_kib: peak,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        json: read(&json),
        junit: read(&xml),
        markdown: read(&md),
        html: read(&html),
        dir: dir.to_path_buf(),
    }
}

/// Read a child's stdout and stderr to their ends on threads of their own (so neither pipe
/// fills while the other is read); join the handles for the text.
pub fn read_output(child: &mut std::process::Child) -> (JoinHandle<String>, JoinHandle<String>) {
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    (
        drain(Box::new(child.stdout.take().expect("stdout piped"))),
        drain(Box::new(child.stderr.take().expect("stderr piped"))),
    )
}

/// Processes alive (not zombies) whose command line holds `marker`.
pub fn alive_with(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            (cmd.contains(marker) && !zombie).then_some(cmd)
        })
        .collect()
}

/// `VmHWM` (peak resident set) of a live process, in KiB.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A fresh scratch directory under the system temp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "toolcert-hostile-{}-{name}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
