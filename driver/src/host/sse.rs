//! Reading a host's Server-Sent Events stream, byte by byte, with every wait and every size
//! bounded.
//!
//! toolcert parses SSE itself over reqwest's byte stream instead of using an SSE client
//! crate: it must not reconnect on its own (a reconnect is something the host's resumption
//! is tested on, so toolcert sends `Last-Event-ID` itself), it needs an idle timeout, and it
//! must see framing exactly as sent (CRLF or LF line ends, comments, split chunks).
//!
//! Whatever the host sends, one read holds at most [`SseLimits`]: a number of events, a number
//! of bytes, and one event's size (a host sending one endless line with no line end is cut at
//! [`SseLimits::max_event_bytes`], not buffered). A read that reaches a limit stops at once and
//! says which in [`SseRead::end`]; the caller decides what a cut read means.

use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::client::{HostClient, TransportError};

/// The largest single event (its pending line, `id`, `event` and `data` together) the parser
/// buffers by default: 1 MiB, far above any event a conformance run produces.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1024 * 1024;

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `event:` field (`message` when absent).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Bounds on one SSE read (one connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseLimits {
    /// Most events kept; the read stops when the host sends one more.
    pub max_events: usize,
    /// Most body bytes read; the read stops when the host sends more.
    pub max_bytes: usize,
    /// Largest single event buffered (see [`DEFAULT_MAX_EVENT_BYTES`]).
    pub max_event_bytes: usize,
}

/// Which [`SseLimits`] bound a read reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseCap {
    /// The host sent more than `max_events` events.
    Events,
    /// The host sent more than `max_bytes` bytes.
    Bytes,
    /// The host sent one event (or one line) larger than `max_event_bytes`.
    EventSize,
}

/// Why a read ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SseEnd {
    /// The server ended the stream.
    Server,
    /// No byte arrived for the idle gap.
    #[default]
    Quiet,
    /// The total budget ran out while bytes were still arriving (no idle gap was seen).
    Budget,
    /// The connection broke mid-stream.
    Broken(String),
    /// A limit was reached; the events before it are kept.
    Cap(SseCap),
}

impl SseEnd {
    /// A short word for transcripts: `server`, `quiet`, `budget`, `broken`, `cap:events`…
    pub fn word(&self) -> &'static str {
        match self {
            SseEnd::Server => "server",
            SseEnd::Quiet => "quiet",
            SseEnd::Budget => "budget",
            SseEnd::Broken(_) => "broken",
            SseEnd::Cap(SseCap::Events) => "cap:events",
            SseEnd::Cap(SseCap::Bytes) => "cap:bytes",
            SseEnd::Cap(SseCap::EventSize) => "cap:eventSize",
        }
    }
}

/// What one connection delivered.
#[derive(Debug, Clone, Default)]
pub struct SseRead {
    /// HTTP status of the response.
    pub status: u16,
    /// `content-type` of the response.
    pub content_type: String,
    /// Events in arrival order (at most [`SseLimits::max_events`]).
    pub events: Vec<SseEvent>,
    /// Body bytes read (at most [`SseLimits::max_bytes`]).
    pub bytes: usize,
    /// Why the read ended.
    pub end: SseEnd,
}

impl SseRead {
    /// The server ended the stream (as opposed to toolcert giving up on idleness, budget or
    /// a limit).
    pub fn ended_by_server(&self) -> bool {
        self.end == SseEnd::Server
    }
}

/// An incremental SSE parser (WHATWG event-stream rules: `\n`, `\r\n` or `\r` line ends,
/// `:` comments, a blank line dispatches, a leading space after the colon is dropped).
///
/// It works on bytes and decodes each complete line, so a UTF-8 character split across two
/// chunks is read whole. An event larger than its size bound stops the parser for good
/// ([`SseParser::overflowed`]): the buffered part is dropped and later input ignored.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    pending_cr: bool,
    current: SseEvent,
    data: String,
    has_data: bool,
    /// Bytes held for the event being assembled, the pending line excluded.
    held: usize,
    max_event_bytes: usize,
    overflowed: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser that buffers at most `max_event_bytes` for one event.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            pending_cr: false,
            current: SseEvent::default(),
            data: String::new(),
            has_data: false,
            held: 0,
            max_event_bytes,
            overflowed: false,
        }
    }

    /// Whether an event outgrew the size bound (the parser then ignores all further input).
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Feed bytes; returns the events completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.overflowed {
                break;
            }
            if self.pending_cr {
                self.pending_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' => {
                    self.pending_cr = true;
                    self.line_end(&mut out);
                }
                b'\n' => self.line_end(&mut out),
                b => {
                    self.line.push(b);
                    if self.line.len() + self.held > self.max_event_bytes {
                        self.overflow();
                    }
                }
            }
        }
        out
    }

    fn overflow(&mut self) {
        self.overflowed = true;
        self.line = Vec::new();
        self.data = String::new();
        self.current = SseEvent::default();
        self.held = 0;
    }

    fn line_end(&mut self, out: &mut Vec<SseEvent>) {
        let bytes = std::mem::take(&mut self.line);
        if bytes.is_empty() {
            if self.has_data {
                let mut event = std::mem::take(&mut self.current);
                event.data = std::mem::take(&mut self.data);
                if event.event.is_empty() {
                    event.event = "message".into();
                }
                out.push(event);
            } else {
                self.current = SseEvent::default();
            }
            self.data.clear();
            self.has_data = false;
            self.held = 0;
            return;
        }
        if bytes[0] == b':' {
            return;
        }
        let line = String::from_utf8_lossy(&bytes);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = value.to_string(),
            "id" if !value.contains('\0') => self.current.id = Some(value.to_string()),
            _ => {}
        }
        self.held = self.data.len()
            + self.current.event.len()
            + self.current.id.as_ref().map_or(0, String::len);
        if self.held > self.max_event_bytes {
            self.overflow();
        }
    }
}

/// Whether an SSE event's `id` can be sent back as `Last-Event-ID`: visible ASCII (and
/// spaces) only. A host's id with other bytes (non-ASCII, control characters) is refused as a
/// resumption point, so a read never turns a host's odd id into a request that cannot be sent.
pub fn resumable_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 1024 && id.bytes().all(|b| (0x20..0x7f).contains(&b))
}

impl HostClient {
    /// Open `path` as an event stream (as `role`, resuming after `last_event_id`) and read
    /// until the server ends it, no byte arrives for `idle`, `total` elapses or a bound of
    /// `limits` is reached ([`SseRead::end`] says which). Bytes count against `limits.max_bytes`
    /// and never against [`Budgets::max_body_bytes`](super::Budgets) beyond it: the caller
    /// passes what is left of its own allowance.
    pub async fn read_sse(
        &self,
        path: &str,
        role: Option<&str>,
        last_event_id: Option<&str>,
        idle: Duration,
        total: Duration,
        limits: SseLimits,
    ) -> Result<SseRead, TransportError> {
        let url = self.url_for(path)?;
        let mut req = self.http().get(&url).header("accept", "text/event-stream");
        if let Some(role) = role {
            req = req.bearer_auth(self.token(role).unwrap_or_default());
        }
        if let Some(id) = last_event_id {
            // The caller resumes only with an id a header can carry ([`resumable_id`]).
            req = req.header("last-event-id", id);
        }
        let deadline = Instant::now() + total;
        let idle = idle.min(self.budgets().read);
        let response = tokio::time::timeout(self.budgets().request, req.send())
            .await
            .map_err(|_| TransportError::Timeout {
                url: url.clone(),
                budget_ms: self.budgets().request.as_millis(),
            })?
            .map_err(|e| {
                // Only a failure to connect says the host is gone; a request toolcert could
                // not build, or a connection that broke, does not.
                if e.is_connect() {
                    TransportError::Connect {
                        url: url.clone(),
                        message: e.to_string(),
                    }
                } else {
                    TransportError::Broken {
                        url: url.clone(),
                        message: e.to_string(),
                    }
                }
            })?;
        let mut read = SseRead {
            status: response.status().as_u16(),
            content_type: response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
            ..SseRead::default()
        };
        if read.status != 200 || !read.content_type.starts_with("text/event-stream") {
            return Ok(read);
        }
        let max_bytes = limits.max_bytes.min(self.budgets().max_body_bytes);
        let mut parser = SseParser::with_max_event_bytes(limits.max_event_bytes);
        let mut stream = response.bytes_stream();
        read.end = loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                break SseEnd::Budget;
            }
            let wait = idle.min(remaining);
            match tokio::time::timeout(wait, stream.next()).await {
                // A full idle gap is a quiet stream; a wait cut short by the deadline is not.
                Err(_) if wait == idle => break SseEnd::Quiet,
                Err(_) => break SseEnd::Budget,
                Ok(None) => break SseEnd::Server,
                Ok(Some(Err(e))) => break SseEnd::Broken(e.to_string()),
                Ok(Some(Ok(chunk))) => {
                    let allowed = chunk.len().min(max_bytes - read.bytes);
                    read.bytes += allowed;
                    read.events.extend(parser.feed(&chunk[..allowed]));
                    if read.events.len() > limits.max_events {
                        read.events.truncate(limits.max_events);
                        break SseEnd::Cap(SseCap::Events);
                    }
                    if parser.overflowed() {
                        break SseEnd::Cap(SseCap::EventSize);
                    }
                    if allowed < chunk.len() {
                        break SseEnd::Cap(SseCap::Bytes);
                    }
                }
            }
        };
        self.charge(read.bytes)?;
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_fields_comments_and_line_ends() {
        let mut p = SseParser::default();
        let events = p.feed(b": keep-alive\r\nid: 3\r\nevent: run.started\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: x\n\ndata:plain\n\n");
        assert_eq!(
            events,
            vec![
                SseEvent {
                    id: Some("3".into()),
                    event: "run.started".into(),
                    data: "{\"a\":\n1}".into()
                },
                SseEvent {
                    id: None,
                    event: "message".into(),
                    data: "plain".into()
                },
            ]
        );
    }

    #[test]
    fn a_character_split_across_chunks_is_read_whole() {
        let text = "data: caf\u{e9} \u{1F600}\n\n".as_bytes();
        for cut in 0..text.len() {
            let mut p = SseParser::default();
            let mut got = p.feed(&text[..cut]);
            got.extend(p.feed(&text[cut..]));
            assert_eq!(got.len(), 1, "cut at {cut}");
            assert_eq!(got[0].data, "caf\u{e9} \u{1F600}", "cut at {cut}");
        }
    }

    #[test]
    fn an_endless_line_is_cut_at_the_event_size_bound_not_buffered() {
        let mut p = SseParser::with_max_event_bytes(1024);
        assert_eq!(p.feed(b"data: ok\n\n").len(), 1);
        let chunk = [b'x'; 300];
        for _ in 0..1000 {
            assert!(p.feed(&chunk).is_empty());
            assert!(
                p.line.capacity() <= 2048,
                "the line grew to {}",
                p.line.capacity()
            );
        }
        assert!(p.overflowed());
        // Nothing after the overflow is parsed, not even a well-formed event.
        assert!(p.feed(b"\n\ndata: late\n\n").is_empty());
    }

    #[test]
    fn an_event_of_endless_data_lines_is_cut_at_the_event_size_bound() {
        let mut p = SseParser::with_max_event_bytes(1000);
        for _ in 0..200 {
            assert!(p.feed(b"data: 0123456789\n").is_empty());
        }
        assert!(p.overflowed());
        assert!(p.data.capacity() <= 2048);
        // Within the bound, a many-line event is fine.
        let mut q = SseParser::with_max_event_bytes(1000);
        let mut text = "data: 0123456789\n".repeat(50);
        text.push('\n');
        assert_eq!(q.feed(text.as_bytes()).len(), 1);
        assert!(!q.overflowed());
    }

    /// A loopback host that answers any request `200 text/event-stream` and then writes
    /// `chunk` until the client goes away, `pause` between writes.
    async fn endless_host(chunk: &'static [u8], pause: Duration) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
                    if s.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    while s.write_all(chunk).await.is_ok() {
                        if !pause.is_zero() {
                            tokio::time::sleep(pause).await;
                        }
                    }
                });
            }
        });
        url
    }

    async fn read(url: &str, idle: Duration, total: Duration, limits: SseLimits) -> SseRead {
        let client =
            HostClient::new(url, Default::default(), crate::host::Budgets::scaled(0.2)).unwrap();
        client
            .read_sse("/events", None, None, idle, total, limits)
            .await
            .unwrap()
    }

    const LIMITS: SseLimits = SseLimits {
        max_events: 50,
        max_bytes: 64 * 1024,
        max_event_bytes: 4 * 1024,
    };
    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn an_endless_stream_ends_at_the_event_cap() {
        let url = endless_host(b"id: 1\ndata: {}\n\n", Duration::from_millis(1)).await;
        let started = Instant::now();
        let got = read(&url, SECOND, 5 * SECOND, LIMITS).await;
        assert_eq!(got.end, SseEnd::Cap(SseCap::Events));
        assert_eq!(got.events.len(), 50);
        assert!(started.elapsed() < 3 * SECOND);
    }

    #[tokio::test]
    async fn an_endless_stream_of_comments_ends_at_the_byte_cap() {
        let url = endless_host(b": padding padding padding\n", Duration::ZERO).await;
        let got = read(&url, SECOND, 5 * SECOND, LIMITS).await;
        assert_eq!(got.end, SseEnd::Cap(SseCap::Bytes));
        assert_eq!(got.bytes, 64 * 1024);
        assert!(got.events.is_empty());
    }

    #[tokio::test]
    async fn an_endless_line_ends_the_read_at_the_event_size_cap() {
        let url = endless_host(
            b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            Duration::ZERO,
        )
        .await;
        let got = read(&url, SECOND, 5 * SECOND, LIMITS).await;
        assert_eq!(got.end, SseEnd::Cap(SseCap::EventSize));
        assert!(got.bytes <= 64 * 1024, "{}", got.bytes);
    }

    #[tokio::test]
    async fn a_stream_that_is_never_quiet_ends_at_its_time_budget() {
        let url = endless_host(b": tick\n", Duration::from_millis(5)).await;
        let started = Instant::now();
        let limits = SseLimits {
            max_bytes: usize::MAX,
            ..LIMITS
        };
        let got = read(
            &url,
            Duration::from_millis(200),
            Duration::from_millis(600),
            limits,
        )
        .await;
        assert_eq!(got.end, SseEnd::Budget);
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(550), "{elapsed:?}");
        assert!(elapsed < 2 * SECOND, "{elapsed:?}");
    }

    proptest! {
        #[test]
        fn chunk_boundaries_never_change_the_events(split in 0usize..60, crlf in any::<bool>()) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let text = format!("id: 1{nl}event: a{nl}data: x{nl}{nl}: c{nl}id: 2{nl}data: y{nl}data: z{nl}{nl}");
            let bytes = text.as_bytes();
            let cut = split.min(bytes.len());
            let mut whole = SseParser::default();
            let expected = whole.feed(bytes);
            let mut parts = SseParser::default();
            let mut got = parts.feed(&bytes[..cut]);
            got.extend(parts.feed(&bytes[cut..]));
            prop_assert_eq!(got, expected);
        }
    }
}
