//! The guard over Streamable HTTP: it listens on 127.0.0.1 and forwards to the server's
//! loopback URL, one server session per client session.
//!
//! A POST carries one JSON-RPC message: a request is answered with `application/json` (the
//! guard's answer, after the gate for a `tools/call`); a notification or a response with
//! `202`. `initialize` opens a session (a fresh `Mcp-Session-Id`, visible ASCII), which every
//! later request must carry (`400` without it, `404` for one the guard does not know). GET
//! opens the session's stream of what the server sends unasked (one per session, `409` for a
//! second); DELETE ends the session and its server connection. A 2026-07-28 snapshot has no
//! sessions: every request goes to one shared session.
//!
//! MCP requires a server to validate `Origin` (DNS rebinding): a request whose `Origin` is
//! not a loopback origin is refused `403`. The listener itself binds a loopback address
//! only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::{Guard, MAX_CLIENT_MESSAGE, Session, error};
use crate::REVISION_2026_07_28;

/// How many unasked messages a session holds for a client that has not opened its GET
/// stream (beyond that they are dropped: the guard counted what it needs already).
const EVENT_BACKLOG: usize = 256;

/// The most client sessions (each with its server connection) open at once; an `initialize`
/// beyond it is answered `503` until a client ends its session (DELETE).
pub const MAX_SESSIONS: usize = 64;

/// One client session: the guard's session and its event stream, until GET takes it.
struct HttpSession {
    session: Arc<Session>,
    events: Option<mpsc::Receiver<Value>>,
}

#[derive(Clone)]
struct State {
    guard: Arc<Guard>,
    sessions: Arc<Mutex<HashMap<String, HttpSession>>>,
}

/// A running HTTP guard.
pub struct HttpGuard {
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    server: loopback_http::Server,
    state: State,
}

impl std::fmt::Debug for HttpGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpGuard").field("url", &self.url).finish()
    }
}

/// Why the HTTP guard did not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Not a loopback address.
    #[error("--listen {0}: the guard listens on a loopback address only (127.0.0.1:PORT)")]
    NotLoopback(String),
    /// Binding failed.
    #[error("--listen {addr}: {reason}")]
    Bind {
        /// The address.
        addr: String,
        /// The OS error.
        reason: String,
    },
}

/// Listen on `addr` (loopback only; port 0 picks one).
pub async fn serve_http(guard: Arc<Guard>, addr: SocketAddr) -> Result<HttpGuard, ListenError> {
    if !addr.ip().is_loopback() {
        return Err(ListenError::NotLoopback(addr.to_string()));
    }
    let state = State {
        guard,
        sessions: Arc::new(Mutex::new(HashMap::new())),
    };
    let router = loopback_http::Router::new(state.clone())
        .post("/mcp", post)
        .get("/mcp", get)
        .delete("/mcp", delete);
    let server = loopback_http::Server::bind(addr, router)
        .await
        .map_err(|e| ListenError::Bind {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?;
    Ok(HttpGuard {
        url: format!("http://{}/mcp", server.local_addr()),
        server,
        state,
    })
}

impl HttpGuard {
    /// Stop listening and close every session's server connection (bounded).
    pub async fn shutdown(self) {
        let sessions: Vec<Arc<Session>> = self
            .state
            .sessions
            .lock()
            .map(|mut m| m.drain().map(|(_, s)| s.session).collect())
            .unwrap_or_default();
        for s in sessions {
            s.close().await;
        }
        self.server.shutdown(Duration::from_secs(2)).await;
    }
}

/// Whether an `Origin` header, when present, names a loopback origin.
fn origin_ok(headers: &loopback_http::HeaderMap) -> bool {
    let Some(origin) = headers.get("origin") else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let Ok(url) = reqwest::Url::parse(origin) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

fn session_id(headers: &loopback_http::HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The guard's session for a request: a new one on `initialize`, the shared one on
/// 2026-07-28, else the one its `Mcp-Session-Id` names.
fn find(
    state: &State,
    headers: &loopback_http::HeaderMap,
    opens: bool,
) -> Result<(String, Arc<Session>), Box<loopback_http::Response>> {
    use loopback_http::{StatusCode, response};
    let modern = state.guard.pinned().version == REVISION_2026_07_28;
    let mut sessions = state
        .sessions
        .lock()
        .map_err(|_| Box::new(response::status(StatusCode::INTERNAL_SERVER_ERROR)))?;
    let key = if modern {
        String::new()
    } else if opens {
        if sessions.len() >= MAX_SESSIONS {
            return Err(Box::new(response::json(
                StatusCode::SERVICE_UNAVAILABLE,
                &error(
                    &Value::Null,
                    -32000,
                    format!(
                        "the toolcert guard has {MAX_SESSIONS} sessions open: end one (DELETE) first"
                    ),
                    None,
                ),
            )));
        }
        uuid::Uuid::new_v4().to_string()
    } else {
        match session_id(headers) {
            None => {
                return Err(Box::new(response::text(
                    StatusCode::BAD_REQUEST,
                    "Mcp-Session-Id required",
                )));
            }
            Some(s) if !sessions.contains_key(&s) => {
                return Err(Box::new(response::status(StatusCode::NOT_FOUND)));
            }
            Some(s) => s,
        }
    };
    let entry = sessions.entry(key.clone()).or_insert_with(|| {
        let (tx, rx) = mpsc::channel(EVENT_BACKLOG);
        HttpSession {
            session: state.guard.session(tx),
            events: Some(rx),
        }
    });
    Ok((key, entry.session.clone()))
}

async fn post(state: State, request: loopback_http::Request) -> loopback_http::Response {
    use loopback_http::{StatusCode, response};
    if !origin_ok(&request.headers) {
        return response::text(StatusCode::FORBIDDEN, "Origin is not a loopback origin");
    }
    let headers = request.headers;
    let body = match request.body.read(MAX_CLIENT_MESSAGE).await {
        Ok(b) => b,
        Err(_) => {
            return response::json(
                StatusCode::PAYLOAD_TOO_LARGE,
                &error(&Value::Null, -32700, "the message is too large", None),
            );
        }
    };
    let msg = match std::str::from_utf8(&body)
        .map_err(|_| "not UTF-8".to_string())
        .and_then(|t| toolcert_base::canonical::parse_strict(t).map_err(|e| e.to_string()))
    {
        Ok(m) => m,
        Err(e) => {
            return response::json(
                StatusCode::BAD_REQUEST,
                &error(&Value::Null, -32700, format!("Parse error: {e}"), None),
            );
        }
    };
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    if method == "server/discover" && state.guard.pinned().version != REVISION_2026_07_28 {
        // As a 2025-11-25 server answers the 2026-07-28 probe (no session needed): the
        // client falls back to `initialize`.
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        return response::json(
            StatusCode::OK,
            &error(&id, -32601, "Method not found: server/discover", None),
        );
    }
    let opens = method == "initialize";
    let (key, session) = match find(&state, &headers, opens) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let is_request = msg.get("method").is_some() && msg.get("id").is_some();
    let answer = session.handle(msg).await;
    match answer {
        Some(a) if is_request => {
            let failed_init = opens && a.get("error").is_some();
            let mut resp = response::json(StatusCode::OK, &a);
            if opens
                && !failed_init
                && !key.is_empty()
                && let Ok(v) = key.parse()
            {
                resp.headers_mut().insert("mcp-session-id", v);
            }
            if failed_init && let Ok(mut m) = state.sessions.lock() {
                m.remove(&key);
            }
            resp
        }
        _ => response::status(StatusCode::ACCEPTED),
    }
}

async fn get(state: State, request: loopback_http::Request) -> loopback_http::Response {
    use loopback_http::{StatusCode, response};
    if !origin_ok(&request.headers) {
        return response::text(StatusCode::FORBIDDEN, "Origin is not a loopback origin");
    }
    let modern = state.guard.pinned().version == REVISION_2026_07_28;
    if modern {
        return response::status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let Some(sid) = session_id(&request.headers) else {
        return response::text(StatusCode::BAD_REQUEST, "Mcp-Session-Id required");
    };
    let rx = {
        let Ok(mut sessions) = state.sessions.lock() else {
            return response::status(StatusCode::INTERNAL_SERVER_ERROR);
        };
        let Some(s) = sessions.get_mut(&sid) else {
            return response::status(StatusCode::NOT_FOUND);
        };
        match s.events.take() {
            Some(rx) => rx,
            None => return response::text(StatusCode::CONFLICT, "a GET stream is already open"),
        }
    };
    crate::sse::event_stream(rx)
}

async fn delete(state: State, request: loopback_http::Request) -> loopback_http::Response {
    use loopback_http::{StatusCode, response};
    let removed = session_id(&request.headers)
        .and_then(|sid| state.sessions.lock().ok().and_then(|mut m| m.remove(&sid)));
    match removed {
        Some(s) => {
            s.session.close().await;
            response::status(StatusCode::OK)
        }
        None => response::status(StatusCode::NOT_FOUND),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins_pass() {
        let h = |o: Option<&str>| {
            let mut m = loopback_http::HeaderMap::new();
            if let Some(o) = o {
                m.insert("origin", o.parse().unwrap());
            }
            m
        };
        for ok in [
            None,
            Some("http://127.0.0.1:8080"),
            Some("http://localhost:3000"),
            Some("http://[::1]:1"),
        ] {
            assert!(origin_ok(&h(ok)), "{ok:?}");
        }
        for bad in [
            "http://evil.example",
            "http://127.0.0.1.evil.example",
            "null",
            "https://10.0.0.1",
        ] {
            assert!(!origin_ok(&h(Some(bad))), "{bad}");
        }
    }
}
