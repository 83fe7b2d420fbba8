//! A bounded Layer-1 load run on loopback: many `POST /runs` with mixed Idempotency-Keys.
//!
//! Used by `cargo bench --bench idempotency` (10,000 requests) and a smaller `cargo test`
//! (`tests/layer1_load.rs`), which include this file; it is no part of the library.
//! Witnessed at toolcert's receiver: every key's work must run exactly once (no duplicate run),
//! and afterwards every key must still replay its first answer (no lost record).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

use toolcert::witness::Receiver;

/// What a load run saw.
#[derive(Debug, Clone, Default)]
pub struct LoadOutcome {
    /// Requests sent (including replays and in-flight retries).
    pub requests: usize,
    /// Distinct keys used.
    pub keys: usize,
    /// Calls toolcert's receiver saw (one per executed run).
    pub receiver_calls: usize,
    /// Keys whose answers named more than one runId.
    pub keys_with_several_runs: usize,
    /// Keys that did not replay their runId in the final pass.
    pub keys_lost: usize,
    /// Answers that were neither 201 nor 409 in-flight.
    pub unexpected: usize,
    /// Wall time.
    pub elapsed: Duration,
}

impl LoadOutcome {
    /// No duplicate run, no lost record, nothing unexpected.
    pub fn clean(&self) -> bool {
        self.receiver_calls == self.keys
            && self.keys_with_several_runs == 0
            && self.keys_lost == 0
            && self.unexpected == 0
    }
}

/// Send `requests` requests over `keys` keys (each key used `requests / keys` times, in
/// shuffled order, `concurrency` at a time) to `base_url` as `token`, then replay every key once.
pub async fn layer1_load(
    base_url: &str,
    token: &str,
    requests: usize,
    keys: usize,
    concurrency: usize,
) -> std::io::Result<LoadOutcome> {
    let receiver = Receiver::start().await?;
    let url = receiver.register("load", 200, json!({"ok": true}), Duration::ZERO, None);
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(concurrency)
        .build()
        .map_err(std::io::Error::other)?;
    let salt = toolcert::canonical::sha256_hex(format!("{:?}", Instant::now()).as_bytes());
    let key_of = |k: usize| format!("load-{}-{k:06}-keykeykey", &salt[..8]);
    let per_key = requests.div_ceil(keys.max(1));
    // Deterministic interleaving: key order rotates so repeats of a key overlap in time.
    let order: Vec<usize> = (0..per_key)
        .flat_map(|r| (0..keys).map(move |k| (k * 7 + r * 13) % keys))
        .take(requests)
        .collect();
    let started = Instant::now();
    let send = |k: usize| {
        let http = http.clone();
        let body = json!({"workflowId": "conformance-effect", "inputs": {"businessKey": format!("load-{}-{k}", &salt[..8]), "receiverUrl": url}});
        let key = key_of(k);
        let endpoint = format!("{base_url}/runs");
        let token = token.to_string();
        async move {
            // A 409 in-flight is retried (bounded): the answer that counts is the final one.
            for _ in 0..50 {
                let resp = http
                    .post(&endpoint)
                    .bearer_auth(&token)
                    .header("Idempotency-Key", &key)
                    .json(&body)
                    .send()
                    .await;
                let Ok(resp) = resp else {
                    return (k, 0u16, Value::Null, false);
                };
                let status = resp.status().as_u16();
                let replay = resp
                    .headers()
                    .get("openwop-idempotent-replay")
                    .is_some_and(|v| v == "true");
                let body: Value = resp.json().await.unwrap_or(Value::Null);
                if status == 409 && body["error"] == "idempotency_in_flight" {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                return (k, status, body, replay);
            }
            (k, 0, Value::Null, false)
        }
    };
    let answers: Vec<(usize, u16, Value, bool)> =
        futures_util::stream::iter(order.iter().copied().map(send))
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
    let mut runs: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut unexpected = 0;
    for (k, status, body, _) in &answers {
        match (status, body["runId"].as_str()) {
            (201, Some(run)) => runs.entry(*k).or_default().push(run.to_string()),
            _ => unexpected += 1,
        }
    }
    let final_pass: Vec<(usize, u16, Value, bool)> =
        futures_util::stream::iter((0..keys).map(send))
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
    let mut keys_lost = 0;
    for (k, status, body, replay) in &final_pass {
        let first = runs.get(k).and_then(|r| r.first());
        if *status != 201 || !replay || body["runId"].as_str() != first.map(String::as_str) {
            keys_lost += 1;
        }
    }
    let keys_with_several_runs = runs
        .values()
        .filter(|r| r.iter().any(|x| x != &r[0]))
        .count();
    Ok(LoadOutcome {
        requests: answers.len() + final_pass.len(),
        keys,
        receiver_calls: receiver.arrivals("load").len(),
        keys_with_several_runs,
        keys_lost,
        unexpected,
        elapsed: started.elapsed(),
    })
}
