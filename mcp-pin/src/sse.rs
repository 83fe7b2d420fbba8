//! The Server-Sent Events stream toolcert serves for an MCP session's unasked messages (the
//! optional GET stream of Streamable HTTP): the double's and the guard's. A priming event
//! (an `id`, empty `data`), then one `message` event per JSON-RPC message, until the sender
//! is dropped.

use serde_json::Value;
use tokio::sync::mpsc;

/// A `200 text/event-stream` response carrying every message `rx` yields.
pub fn event_stream(rx: mpsc::Receiver<Value>) -> loopback_http::Response {
    use futures_util::StreamExt as _;
    let priming = futures_util::stream::once(async {
        Ok::<bytes::Bytes, std::convert::Infallible>(bytes::Bytes::from_static(b"id: 0\ndata:\n\n"))
    });
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        let m = rx.recv().await?;
        Some((
            Ok::<bytes::Bytes, std::convert::Infallible>(
                format!("event: message\ndata: {m}\n\n").into(),
            ),
            rx,
        ))
    });
    loopback_http::response::with_type(
        loopback_http::StatusCode::OK,
        "text/event-stream",
        loopback_http::Body::from_stream(priming.chain(events)),
    )
}
