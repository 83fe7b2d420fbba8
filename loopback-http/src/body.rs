//! Request bodies read with a bound, and response bodies whole or streamed.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{Stream, TryStreamExt};
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, Limited, StreamBody};

/// Why a response body stopped: the error a streamed body ends with. hyper then drops the
/// connection, which is how a double cuts an answer short.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What every handler answers with.
pub type Response = http::Response<Body>;

/// A response body: whole (its length is declared) or streamed (chunked).
pub struct Body(UnsyncBoxBody<Bytes, BoxError>);

impl Body {
    /// No bytes (`content-length: 0`).
    pub fn empty() -> Body {
        Body(Empty::new().map_err(|never| match never {}).boxed_unsync())
    }

    /// A stream of chunks, each sent when it is ready. An `Err` item ends the answer there
    /// and drops the connection.
    pub fn from_stream<S, E>(stream: S) -> Body
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        let frames = stream.map_ok(Frame::data).map_err(Into::into);
        Body(StreamBody::new(frames).boxed_unsync())
    }
}

impl Default for Body {
    fn default() -> Body {
        Body::empty()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Body")
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Body {
        Body(
            Full::new(bytes)
                .map_err(|never| match never {})
                .boxed_unsync(),
        )
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Body {
        Body::from(Bytes::from(bytes))
    }
}

impl From<String> for Body {
    fn from(text: String) -> Body {
        Body::from(Bytes::from(text))
    }
}

impl From<&'static str> for Body {
    fn from(text: &'static str) -> Body {
        Body::from(Bytes::from_static(text.as_bytes()))
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.0).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.0.size_hint()
    }
}

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body is longer than the bound the handler read it with.
    #[error("length limit exceeded")]
    TooLarge,
    /// The connection failed or closed mid-body.
    #[error("{0}")]
    Transport(String),
}

/// A request body not yet read.
pub struct RequestBody(hyper::body::Incoming);

impl RequestBody {
    pub(crate) fn new(incoming: hyper::body::Incoming) -> RequestBody {
        RequestBody(incoming)
    }

    /// The whole body, refused once it passes `limit` bytes (a double's memory stays bounded
    /// whatever a client sends).
    pub async fn read(self, limit: usize) -> Result<Bytes, BodyError> {
        match Limited::new(self.0, limit).collect().await {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
            Err(e) => Err(BodyError::Transport(e.to_string())),
        }
    }
}

/// The bound [`RequestBody::read_or_reject`] reads with: 2 MiB, far above any call a host
/// makes to a tool double.
pub const DEFAULT_BODY_LIMIT: usize = 2 * 1024 * 1024;

impl std::fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestBody")
    }
}
