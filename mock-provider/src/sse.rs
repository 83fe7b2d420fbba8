//! Server-sent events, argument chunking, and bodies that can be cut mid-answer.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use loopback_http::Body;
use serde_json::Value;

use crate::error::ScriptedCut;

/// Longest piece a text or argument delta carries. Real providers stream a few tokens per
/// delta; small pieces make hosts exercise their reassembly logic.
const MAX_PIECE_CHARS: usize = 16;

/// How long a cut body stays open after its last byte before the connection is dropped.
/// Hyper only flushes buffered bytes while the body is pending, so without this pause the
/// events before the cut could be lost together with the connection.
const CUT_FLUSH_PAUSE: Duration = Duration::from_millis(20);

/// One server-sent event: an optional `event:` name and one `data:` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    name: Option<&'static str>,
    data: String,
}

impl SseEvent {
    /// A `data:`-only event carrying JSON (OpenAI's format).
    pub(crate) fn data(value: &Value) -> SseEvent {
        SseEvent {
            name: None,
            data: value.to_string(),
        }
    }

    /// OpenAI's end-of-stream sentinel, `data: [DONE]`.
    pub(crate) fn done() -> SseEvent {
        SseEvent {
            name: None,
            data: "[DONE]".to_string(),
        }
    }

    /// A named event carrying JSON (Anthropic's format).
    pub(crate) fn named(name: &'static str, value: &Value) -> SseEvent {
        SseEvent {
            name: Some(name),
            data: value.to_string(),
        }
    }

    /// The event's wire bytes, terminated by the blank line.
    pub(crate) fn encode(&self) -> Bytes {
        // Compact JSON never contains a raw newline, so one `data:` line always suffices.
        let text = match self.name {
            Some(name) => format!("event: {name}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        };
        Bytes::from(text)
    }
}

/// Split `text` into pieces for deltas: every piece non-empty, on char boundaries, at most
/// [`MAX_PIECE_CHARS`] chars, and at least two pieces whenever the text has more than one
/// char, so a host that only reads the first delta is caught. Empty text gives no pieces.
pub(crate) fn split_pieces(text: &str) -> Vec<&str> {
    let chars = text.chars().count();
    if chars <= 1 {
        return if text.is_empty() {
            Vec::new()
        } else {
            vec![text]
        };
    }
    let count = chars.div_ceil(MAX_PIECE_CHARS).max(2);
    // Spread the chars evenly: the first `chars % count` pieces get one extra.
    let base = chars / count;
    let extra = chars % count;
    let mut pieces = Vec::with_capacity(count);
    let mut boundaries = text.char_indices().map(|(i, _)| i).chain([text.len()]);
    let mut start = boundaries.next().unwrap_or(0);
    for piece in 0..count {
        let len = base + usize::from(piece < extra);
        let end = boundaries.nth(len - 1).unwrap_or(text.len());
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

/// An SSE response body. With `cut = Some(n)`, only the first `n` events are sent (never the
/// final terminator event) and then the connection is dropped.
pub(crate) fn event_body(events: Vec<SseEvent>, cut: Option<u64>) -> Body {
    let limit = match cut {
        // The terminator (`[DONE]` / `message_stop`) is the last event: a cut answer must not
        // look complete, so even a large count stops before it.
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(events.len().saturating_sub(1)),
        None => events.len(),
    };
    let chunks: Vec<Bytes> = events.iter().take(limit).map(SseEvent::encode).collect();
    chunked_body(chunks, cut.is_some())
}

/// A JSON response body; with `cut`, only its first half is sent before the connection drops.
pub(crate) fn json_body(bytes: Vec<u8>, cut: bool) -> Body {
    if !cut {
        return Body::from(bytes);
    }
    let mut bytes = bytes;
    bytes.truncate(bytes.len() / 2);
    chunked_body(vec![Bytes::from(bytes)], true)
}

fn chunked_body(chunks: Vec<Bytes>, cut: bool) -> Body {
    let head = futures_util::stream::iter(chunks.into_iter().map(Ok::<Bytes, ScriptedCut>));
    let tail = futures_util::stream::once(async move {
        if cut {
            tokio::time::sleep(CUT_FLUSH_PAUSE).await;
            Some(Err(ScriptedCut))
        } else {
            None
        }
    })
    .filter_map(futures_util::future::ready);
    Body::from_stream(head.chain(tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pieces_of_short_texts() {
        assert!(split_pieces("").is_empty());
        assert_eq!(split_pieces("x"), vec!["x"]);
        assert_eq!(split_pieces("{}"), vec!["{", "}"]);
        assert_eq!(split_pieces("abc"), vec!["ab", "c"]);
    }

    #[test]
    fn pieces_respect_char_boundaries() {
        let text = "héllo wörld ✓ ünïcödé ✓✓";
        let pieces = split_pieces(text);
        assert!(pieces.len() >= 2);
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn long_text_gets_many_bounded_pieces() {
        let text = "a".repeat(100);
        let pieces = split_pieces(&text);
        assert_eq!(pieces.len(), 7);
        assert!(pieces.iter().all(|p| p.len() <= MAX_PIECE_CHARS));
    }

    #[test]
    fn events_encode_as_sse() {
        let value = serde_json::json!({"a": "x\ny"});
        assert_eq!(
            SseEvent::data(&value).encode(),
            Bytes::from_static(b"data: {\"a\":\"x\\ny\"}\n\n")
        );
        assert_eq!(
            SseEvent::named("ping", &serde_json::json!({"type": "ping"})).encode(),
            Bytes::from_static(b"event: ping\ndata: {\"type\":\"ping\"}\n\n")
        );
        assert_eq!(
            SseEvent::done().encode(),
            Bytes::from_static(b"data: [DONE]\n\n")
        );
    }

    proptest! {
        #[test]
        fn pieces_reassemble(text in ".{0,80}") {
            let pieces = split_pieces(&text);
            prop_assert_eq!(pieces.concat(), text.clone());
            prop_assert!(pieces.iter().all(|p| !p.is_empty()));
            prop_assert!(pieces.iter().all(|p| p.chars().count() <= MAX_PIECE_CHARS));
            if text.chars().count() > 1 {
                prop_assert!(pieces.len() >= 2);
            }
        }
    }
}
