//! An incremental decoder for `text/event-stream` bodies (the WHATWG
//! server-sent events format both providers stream in).
//!
//! Bytes arrive in arbitrary chunks; the decoder keeps the unfinished line
//! and yields an event at each blank line. Only `event` and `data` matter
//! here: `id` and `retry` are ignored and `:` lines are comments. An event
//! still open when the body ends is never dispatched (WHATWG SSE §9.2.6), so
//! a half-sent event counts as part of a cut stream.

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, if the event had one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental decoder state.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the line not yet terminated.
    line: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `bytes`; returns every event completed by them, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            if byte == b'\n' {
                let line = std::mem::take(&mut self.line);
                if let Some(event) = self.line_done(&line) {
                    events.push(event);
                }
            } else {
                self.line.push(byte);
            }
        }
        events
    }

    fn line_done(&mut self, raw: &[u8]) -> Option<SseEvent> {
        // CRLF streams: drop the CR before the LF.
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line = String::from_utf8_lossy(raw);
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if self.data.is_empty() {
            // A block with no data dispatches nothing (WHATWG SSE §9.2.6).
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_are_reassembled() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.push(b"event: message_st").is_empty());
        assert!(decoder.push(b"art\ndata: {\"a\"").is_empty());
        let events = decoder.push(b":1}\n\n: keep-alive\n\ndata: [DONE]\r\n\r\n");
        assert_eq!(
            events,
            [
                SseEvent {
                    event: Some("message_start".into()),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: None,
                    data: "[DONE]".into()
                },
            ]
        );
    }

    #[test]
    fn multi_line_data_joins_with_newlines_and_unterminated_events_drop() {
        let mut decoder = SseDecoder::new();
        let events = decoder.push(b"data: a\ndata:b\nid: 7\n\ndata: cut");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "a\nb");
    }
}
