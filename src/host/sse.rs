//! Reading a host's Server-Sent Events stream, byte by byte, with every wait bounded.
//!
//! toolcert parses SSE itself over reqwest's byte stream instead of using an SSE client
//! crate: it must not reconnect on its own (a reconnect is something the host's resumption
//! is tested on, so toolcert sends `Last-Event-ID` itself), it needs an idle timeout, and it
//! must see framing exactly as sent (CRLF or LF line ends, comments, split chunks).

use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::{HostClient, TransportError};

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

/// What one connection delivered.
#[derive(Debug, Clone, Default)]
pub struct SseRead {
    /// HTTP status of the response.
    pub status: u16,
    /// `content-type` of the response.
    pub content_type: String,
    /// Events in arrival order.
    pub events: Vec<SseEvent>,
    /// The server ended the stream (as opposed to toolcert giving up on idleness or budget).
    pub ended_by_server: bool,
}

/// An incremental SSE parser (WHATWG event-stream rules: `\n`, `\r\n` or `\r` line ends,
/// `:` comments, a blank line dispatches, a leading space after the colon is dropped).
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: String,
    pending_cr: bool,
    current: SseEvent,
    data_lines: Vec<String>,
    has_data: bool,
}

impl SseParser {
    /// Feed bytes; returns the events completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let text = String::from_utf8_lossy(bytes);
        let mut out = Vec::new();
        for ch in text.chars() {
            if self.pending_cr {
                self.pending_cr = false;
                if ch == '\n' {
                    continue;
                }
            }
            match ch {
                '\r' => {
                    self.pending_cr = true;
                    self.line(&mut out);
                }
                '\n' => self.line(&mut out),
                c => self.buffer.push(c),
            }
        }
        out
    }

    fn line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.buffer);
        if line.is_empty() {
            if self.has_data {
                let mut event = std::mem::take(&mut self.current);
                event.data = self.data_lines.join("\n");
                if event.event.is_empty() {
                    event.event = "message".into();
                }
                out.push(event);
            } else {
                self.current = SseEvent::default();
            }
            self.data_lines.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f.to_string(), v.strip_prefix(' ').unwrap_or(v).to_string()),
            None => (line, String::new()),
        };
        match field.as_str() {
            "data" => {
                self.data_lines.push(value);
                self.has_data = true;
            }
            "event" => self.current.event = value,
            "id" if !value.contains('\0') => self.current.id = Some(value),
            _ => {}
        }
    }
}

impl HostClient {
    /// Open `path` as an event stream (as `role`, resuming after `last_event_id`) and read
    /// until the server ends it, no byte arrives for `idle`, or `total` elapses.
    pub async fn read_sse(
        &self,
        path: &str,
        role: Option<&str>,
        last_event_id: Option<&str>,
        idle: Duration,
        total: Duration,
    ) -> Result<SseRead, TransportError> {
        let url = format!("{}{}", self.base_url(), path);
        let mut req = self.http().get(&url).header("accept", "text/event-stream");
        if let Some(role) = role {
            req = req.bearer_auth(self.token(role).unwrap_or_default());
        }
        if let Some(id) = last_event_id {
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
            .map_err(|e| TransportError::Connect {
                url: url.clone(),
                message: e.to_string(),
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
        let mut parser = SseParser::default();
        let mut stream = response.bytes_stream();
        let mut bytes_read = 0usize;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                break;
            }
            match tokio::time::timeout(idle.min(remaining), stream.next()).await {
                Err(_) => break,
                Ok(None) => {
                    read.ended_by_server = true;
                    break;
                }
                Ok(Some(Err(_))) => break,
                Ok(Some(Ok(chunk))) => {
                    bytes_read += chunk.len();
                    if bytes_read > self.budgets().max_body_bytes {
                        return Err(TransportError::TooLarge {
                            url,
                            cap: self.budgets().max_body_bytes,
                        });
                    }
                    read.events.extend(parser.feed(&chunk));
                }
            }
        }
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
