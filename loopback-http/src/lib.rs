//! HTTP/1.1 on 127.0.0.1 for toolcert's doubles (the tool receiver, the MCP doubles, the mock
//! model provider) and its test servers, on hyper's server half alone.
//!
//! One job, and only what the doubles need:
//!
//! - [`Router`]: routes by method and path, with `{name}` path parameters (percent-decoded),
//!   a fallback, a guard that runs before every route, and `405` with `allow` for a known path
//!   asked with a method it does not serve;
//! - [`RequestBody::read`]: a request body, read whole up to a bound;
//! - [`Body`]: a response body, whole or streamed (server-sent events), whose stream may end in
//!   an error to drop the connection mid-answer;
//! - [`Server`]: serves a router on a loopback listener until shut down (gracefully, with a
//!   bounded wait) or dropped.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use loopback_http::{Router, Server, response};
//! let router = Router::new(()).post("/echo/{name}", |(), request: loopback_http::Request| async move {
//!     let name = request.param("name").unwrap_or_default().to_string();
//!     response::json(http::StatusCode::OK, &serde_json::json!({"name": name}))
//! });
//! let server = Server::bind(([127, 0, 0, 1], 0).into(), router).await?;
//! println!("http://{}/echo/x", server.local_addr());
//! server.shutdown(std::time::Duration::from_secs(2)).await;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod body;
pub mod response;
mod router;
mod server;

pub use body::{Body, BodyError, DEFAULT_BODY_LIMIT, RequestBody, Response};
pub use router::{Request, Router};
pub use server::Server;

pub use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
