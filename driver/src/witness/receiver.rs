//! The tool receiver: an HTTP endpoint per scenario and name that plays the tool.
//!
//! It records every arrival (headers, including `Idempotency-Key`, and the JSON body) before
//! answering, so a call counts even when the host gives up waiting. Each endpoint answers
//! with its own status, body and delay. It listens on 127.0.0.1 only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loopback_http::{Request, Response, Router, Server, StatusCode, response};
use serde_json::{Value, json};

use toolcert_core::observation::Arrival;

/// Longest an endpoint may delay its answer.
const MAX_DELAY: Duration = Duration::from_secs(30);

/// The most arrivals one endpoint records (later ones are only counted): a scenario expects
/// a handful, so a host flooding an endpoint costs no memory.
pub const MAX_ARRIVALS: usize = 1_000;

/// The most body bytes one endpoint keeps; later arrivals keep `{"$notKept": …}` instead.
pub const MAX_KEPT_BYTES: usize = 4 * 1024 * 1024;

/// How an endpoint answers, and what it has seen.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Status to answer with.
    pub status: u16,
    /// Body to answer with.
    pub body: Value,
    /// Delay before answering.
    pub delay: Duration,
    /// The first `n` calls get this status instead (a transient failure).
    pub fail_first: Option<(u32, u16)>,
    /// Calls seen (the first `MAX_ARRIVALS` (1,000)).
    pub arrivals: Vec<Arrival>,
    /// Calls seen past `MAX_ARRIVALS`, counted only.
    pub uncounted_beyond: usize,
    /// Body bytes kept so far.
    pub kept_bytes: usize,
    /// Only the first call is delayed (a re-execution answers at once, so its measured
    /// duration can never equal the first one's).
    pub delay_first_only: bool,
    /// While `Some(false)`, every call is held open (at most `MAX_DELAY`); `true` releases.
    pub hold: Option<tokio::sync::watch::Sender<bool>>,
}

#[derive(Default)]
struct Inner {
    endpoints: HashMap<String, Endpoint>,
    /// Calls to ids nobody registered (counted only).
    strays: usize,
}

struct Shared {
    inner: Mutex<Inner>,
    started: Instant,
}

/// A running receiver.
pub struct Receiver {
    base_url: String,
    shared: Arc<Shared>,
    /// Serves until the receiver is dropped.
    _server: Server,
}

impl Receiver {
    /// Start on 127.0.0.1 with an ephemeral port.
    pub async fn start() -> std::io::Result<Receiver> {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner::default()),
            started: Instant::now(),
        });
        let router = Router::new(shared.clone()).any("/r/{id}", arrive);
        let server = Server::bind(SocketAddr::from(([127, 0, 0, 1], 0)), router).await?;
        Ok(Receiver {
            base_url: format!("http://{}", server.local_addr()),
            shared,
            _server: server,
        })
    }

    /// Register an endpoint under a unique id and return its URL.
    pub fn register(
        &self,
        id: &str,
        status: u16,
        body: Value,
        delay: Duration,
        fail_first: Option<(u32, u16)>,
    ) -> String {
        let endpoint = Endpoint {
            status,
            body,
            delay: delay.min(MAX_DELAY),
            fail_first,
            arrivals: Vec::new(),
            uncounted_beyond: 0,
            kept_bytes: 0,
            delay_first_only: false,
            hold: None,
        };
        self.lock().endpoints.insert(id.to_string(), endpoint);
        format!("{}/r/{}", self.base_url, id)
    }

    /// Delay only the first call to `id`.
    pub fn delay_first_only(&self, id: &str) {
        if let Some(e) = self.lock().endpoints.get_mut(id) {
            e.delay_first_only = true;
        }
    }

    /// Hold every call to `id` open until [`Receiver::release`] (at most 30 s): the window in
    /// which a recovery scenario kills the host while the call is in doubt (TURN-D8).
    pub fn hold(&self, id: &str) {
        if let Some(e) = self.lock().endpoints.get_mut(id) {
            e.hold = Some(tokio::sync::watch::Sender::new(false));
        }
    }

    /// Answer every call held at `id`, and every later one at once. Returns how many calls had
    /// arrived, or `None` for an unknown id.
    pub fn release(&self, id: &str) -> Option<usize> {
        let inner = self.lock();
        let e = inner.endpoints.get(id)?;
        if let Some(h) = &e.hold {
            h.send_replace(true);
        }
        Some(e.arrivals.len())
    }

    /// The calls an endpoint has seen so far.
    pub fn arrivals(&self, id: &str) -> Vec<Arrival> {
        self.lock()
            .endpoints
            .get(id)
            .map(|e| e.arrivals.clone())
            .unwrap_or_default()
    }

    /// How many calls an endpoint has seen (recorded or only counted).
    pub fn count(&self, id: &str) -> usize {
        self.lock()
            .endpoints
            .get(id)
            .map_or(0, |e| e.arrivals.len() + e.uncounted_beyond)
    }

    /// Calls to ids nobody registered (a host calling a stale URL).
    pub fn strays(&self) -> usize {
        self.lock().strays
    }

    /// Forget endpoints whose id starts with `prefix` (a finished scenario's).
    pub fn forget(&self, prefix: &str) {
        self.lock()
            .endpoints
            .retain(|id, _| !id.starts_with(prefix));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A poisoned lock only means another request panicked mid-insert; the data is usable.
        self.shared.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn arrive(shared: Arc<Shared>, request: Request) -> Response {
    let id = request.param("id").unwrap_or_default().to_string();
    let body = match request.body.read_or_reject().await {
        Ok(body) => body,
        Err(rejected) => return rejected,
    };
    let arrival = Arrival {
        method: request.method.to_string(),
        headers: request
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    json!(String::from_utf8_lossy(v.as_bytes())),
                )
            })
            .collect(),
        body: crate::host::parse_body_for_witness(&body),
        at_ms: shared.started.elapsed().as_millis() as u64,
    };
    let answer = {
        let mut inner = shared.inner.lock().unwrap_or_else(|p| p.into_inner());
        match inner.endpoints.get_mut(&id) {
            Some(endpoint) => {
                let mut arrival = arrival;
                let size = toolcert_core::budget::json_len(&arrival.body);
                if endpoint.kept_bytes + size > MAX_KEPT_BYTES {
                    arrival.body = json!({"$notKept": format!(
                        "a body of {size} bytes: this endpoint already keeps {} of bodies, toolcert's bound",
                        toolcert_core::input::human(MAX_KEPT_BYTES as u64)
                    )});
                } else {
                    endpoint.kept_bytes += size;
                }
                if endpoint.arrivals.len() < MAX_ARRIVALS {
                    endpoint.arrivals.push(arrival);
                } else {
                    endpoint.uncounted_beyond += 1;
                }
                let seen = endpoint.arrivals.len() + endpoint.uncounted_beyond;
                let status = match endpoint.fail_first {
                    Some((n, failing)) if seen <= n as usize => failing,
                    _ => endpoint.status,
                };
                let held = endpoint.hold.as_ref().map(|h| h.subscribe());
                let delay = if endpoint.delay_first_only && seen > 1 {
                    Duration::ZERO
                } else {
                    endpoint.delay
                };
                Some((status, endpoint.body.clone(), delay, held))
            }
            None => {
                inner.strays += 1;
                None
            }
        }
    };
    let Some((status, body, delay, held)) = answer else {
        return response::json(StatusCode::NOT_FOUND, &json!({"error": "unknown receiver"}));
    };
    if let Some(mut released) = held {
        // Bounded: an unreleased call is answered after MAX_DELAY anyway.
        let _ = tokio::time::timeout(MAX_DELAY, released.wait_for(|r| *r)).await;
    }
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response::json(status, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn records_arrivals_per_endpoint_and_answers_as_told() {
        let receiver = Receiver::start().await.unwrap();
        let url = receiver.register("s1-tool", 500, json!({"boom": true}), Duration::ZERO, None);
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let resp = client
            .post(&url)
            .header("Idempotency-Key", "k1")
            .json(&json!({"a": 1}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 500);
        let arrivals = receiver.arrivals("s1-tool");
        assert_eq!(arrivals.len(), 1);
        assert_eq!(arrivals[0].body, json!({"a": 1}));
        assert_eq!(arrivals[0].headers["idempotency-key"], "k1");
        let stray = client.post(format!("{url}x")).send().await.unwrap();
        assert_eq!(stray.status().as_u16(), 404);
        assert_eq!(receiver.strays(), 1);
        receiver.forget("s1-");
        assert!(receiver.arrivals("s1-tool").is_empty());
    }

    #[tokio::test]
    async fn a_flooded_endpoint_keeps_bounded_bodies_and_counts_every_call() {
        let receiver = Receiver::start().await.unwrap();
        let url = receiver.register("s2-tool", 200, json!({}), Duration::ZERO, None);
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let big = json!({"pad": "x".repeat(MAX_KEPT_BYTES / 2 - 64)});
        for _ in 0..3 {
            client.post(&url).json(&big).send().await.unwrap();
        }
        let arrivals = receiver.arrivals("s2-tool");
        assert_eq!(receiver.count("s2-tool"), 3);
        assert_eq!(arrivals[1].body, big);
        assert!(
            arrivals[2].body["$notKept"].is_string(),
            "{}",
            arrivals[2].body
        );
    }
}
