//! End-to-end checks of v2 idempotency on the reference host: effects
//! (Layer 2: identity, atomic claim, ledger, retries, retention), Layer 1
//! (`Idempotency-Key` on `POST /runs`) and tenants. Everything runs over real HTTP on 127.0.0.1 against
//! a tiny axum receiver that plays the provider, counting arrivals per
//! business key and recording each `Idempotency-Key`. Every wait is bounded.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::{
    ALICE, DAVE, ERIN, Loopback, OPERATOR, assert_valid, bounded, client, discovery, seam_host,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RunningHost};
use serde_json::{Value, json};

const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const LONG_TIMEOUT: Duration = Duration::from_secs(240);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
const FOURTEEN_DAYS: u64 = 1_209_600;

// ---------------------------------------------------------------------------
// The provider.

/// One arrival at the provider: the `Idempotency-Key` it carried, if any.
type Arrivals = Arc<Mutex<HashMap<String, Vec<Option<String>>>>>;

/// A loopback provider. `/ok` answers 200; `/flaky` answers 503 to the
/// first arrival of each business key and 200 afterwards; `/down` always
/// answers 503. Every arrival is recorded under its body's `businessKey`.
type Provider = Loopback<Arrivals>;

impl Provider {
    async fn start() -> Self {
        fn record(arrivals: &Arrivals, headers: &HeaderMap, body: &[u8]) -> usize {
            let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let business_key = value["businessKey"].as_str().unwrap_or("").to_owned();
            let key = headers
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut arrivals = arrivals.lock().expect("lock");
            let seen = arrivals.entry(business_key).or_default();
            seen.push(key);
            seen.len()
        }
        async fn ok(
            State(arrivals): State<Arrivals>,
            headers: HeaderMap,
            body: axum::body::Bytes,
        ) -> StatusCode {
            record(&arrivals, &headers, &body);
            StatusCode::OK
        }
        async fn flaky(
            State(arrivals): State<Arrivals>,
            headers: HeaderMap,
            body: axum::body::Bytes,
        ) -> StatusCode {
            if record(&arrivals, &headers, &body) == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }
        async fn down(
            State(arrivals): State<Arrivals>,
            headers: HeaderMap,
            body: axum::body::Bytes,
        ) -> StatusCode {
            record(&arrivals, &headers, &body);
            StatusCode::SERVICE_UNAVAILABLE
        }
        let routes = Router::new()
            .route("/ok", post(ok))
            .route("/flaky", post(flaky))
            .route("/down", post(down));
        Self::serve(routes).await
    }

    /// The `Idempotency-Key` of every arrival for `business_key`, in order.
    fn keys(&self, business_key: &str) -> Vec<Option<String>> {
        self.state
            .lock()
            .expect("lock")
            .get(business_key)
            .cloned()
            .unwrap_or_default()
    }

    fn count(&self, business_key: &str) -> usize {
        self.keys(business_key).len()
    }
}

// ---------------------------------------------------------------------------
// Helpers.

/// A seams-on host, otherwise as configured by default.
async fn host(mutant: Option<Mutant>) -> RunningHost {
    seam_host(mutant, HostConfig::default()).await
}

/// A fresh business key / nonce.
fn fresh(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// A fresh valid Idempotency-Key (22..128 of the grammar).
fn fresh_key() -> String {
    format!("idem.{}", uuid::Uuid::new_v4().simple())
}

#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    fn replayed(&self) -> bool {
        self.headers
            .get("openwop-idempotent-replay")
            .is_some_and(|v| v == "true")
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
    }
}

/// Calls `test/idempotency/<seam>` as the operator, checking the request
/// and the answer against the published schemas.
async fn seam(client: &reqwest::Client, host: &RunningHost, seam: &str, body: Value) -> Answer {
    assert_valid(&format!("idempotency-{seam}.request.schema.json"), &body);
    let answer = seam_raw(client, host, seam, OPERATOR, body).await;
    assert_valid(
        &format!("idempotency-{seam}.response.schema.json"),
        &answer.body,
    );
    answer
}

async fn seam_raw(
    client: &reqwest::Client,
    host: &RunningHost,
    seam: &str,
    token: &str,
    body: Value,
) -> Answer {
    let response = client
        .post(format!(
            "{}/conformance/seams/sample/test/idempotency/{seam}",
            host.base_url
        ))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("seam answers");
    answer(response).await
}

/// `POST /runs` with a raw body and an optional Idempotency-Key.
async fn post_run_raw(
    client: &reqwest::Client,
    host: &RunningHost,
    token: Option<&str>,
    key: Option<&str>,
    body: &str,
) -> Answer {
    let mut request = client
        .post(format!("{}/runs", host.base_url))
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    answer(request.send().await.expect("POST /runs answers")).await
}

async fn post_run(
    client: &reqwest::Client,
    host: &RunningHost,
    token: &str,
    key: Option<&str>,
    body: &Value,
) -> Answer {
    post_run_raw(client, host, Some(token), key, &body.to_string()).await
}

fn effect_workflow(business_key: &str, receiver: &str, count: Option<u64>) -> Value {
    let mut inputs = json!({"businessKey": business_key, "receiverUrl": receiver});
    if let Some(count) = count {
        inputs["count"] = json!(count);
    }
    json!({"workflowId": "conformance-effect", "inputs": inputs})
}

async fn get(client: &reqwest::Client, url: &str, token: &str) -> Answer {
    answer(
        client
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .expect("GET answers"),
    )
    .await
}

async fn effects(
    client: &reqwest::Client,
    host: &RunningHost,
    token: &str,
    run_id: &str,
) -> Answer {
    get(
        client,
        &format!("{}/runs/{run_id}/effects", host.base_url),
        token,
    )
    .await
}

/// The run's ledger rows (as the operator, who is in tenant-a).
async fn ledger(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> Vec<Value> {
    let answer = effects(client, host, OPERATOR, run_id).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["runId"], run_id);
    answer.body["effects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn run_id(answer: &Answer) -> String {
    answer.body["runId"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no runId in {:?}", answer.body))
}

/// Every ledger row has exactly the documented members and no content.
fn assert_row_shape(row: &Value) {
    let keys: BTreeSet<&str> = row
        .as_object()
        .expect("row object")
        .keys()
        .map(String::as_str)
        .collect();
    let allowed: BTreeSet<&str> = [
        "effectId",
        "nodeId",
        "attempt",
        "keying",
        "state",
        "at",
        "invocationId",
        "providerKey",
    ]
    .into();
    assert!(keys.is_subset(&allowed), "{row}");
    for required in ["effectId", "nodeId", "attempt", "keying", "state", "at"] {
        assert!(keys.contains(required), "{required} missing in {row}");
    }
    assert!(
        ["claimed", "completed", "released", "escaped"]
            .contains(&row["state"].as_str().unwrap_or("")),
        "{row}"
    );
    let at = row["at"].as_str().expect("at");
    assert!(
        time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).is_ok(),
        "{at}"
    );
}

// ---------------------------------------------------------------------------
// Layer 2: the race, the re-dispatch, retries, keying.

/// Runs one concurrent-claim with `executors` and returns (answer, arrivals).
async fn race_once(
    client: &reqwest::Client,
    host: &RunningHost,
    provider: &Provider,
    executors: u64,
) -> (Answer, usize, String) {
    let business_key = fresh("race");
    let answer = seam(
        client,
        host,
        "concurrent-claim",
        json!({"executors": executors, "businessKey": business_key,
               "receiverUrl": provider.url("/ok")}),
    )
    .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let arrivals = provider.count(&business_key);
    (answer, arrivals, business_key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn race_seam_delivers_exactly_once_100_times() {
    bounded(LONG_TIMEOUT, async {
        let provider = Provider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        for repetition in 0..100 {
            let (answer, arrivals, _) = race_once(&client, &host, &provider, 16).await;
            assert_eq!(arrivals, 1, "repetition {repetition}");
            assert_eq!(answer.body["delivered"], 1, "repetition {repetition}");
            assert_eq!(answer.body["attempted"], 16, "repetition {repetition}");
            let minted = answer.body["mintedIds"].as_array().expect("ids");
            assert_eq!(minted.len(), 16);
            assert!(minted.iter().all(|id| *id == minted[0]), "{minted:?}");
            let rows = ledger(&client, &host, &run_id(&answer)).await;
            assert_eq!(rows.len(), 1, "{rows:?}");
            assert_eq!(rows[0]["effectId"], minted[0]);
            assert_eq!(rows[0]["state"], "completed");
            assert_eq!(
                rows[0]["invocationId"], answer.body["logicalInvocationId"],
                "{rows:?}"
            );
        }
        host.shutdown().await;
    })
    .await;
}

/// How often, out of `repetitions`, the provider saw one race more than once.
async fn double_delivery_rate(mutant: Option<Mutant>, repetitions: u32, executors: u64) -> f64 {
    let provider = Provider::start().await;
    let host = host(mutant).await;
    let client = client(CLIENT_TIMEOUT);
    let mut doubled = 0u32;
    for _ in 0..repetitions {
        let (answer, arrivals, _) = race_once(&client, &host, &provider, executors).await;
        assert_eq!(
            answer.body["delivered"].as_u64(),
            u64::try_from(arrivals).ok(),
            "the seam reports what the provider saw"
        );
        if arrivals > 1 {
            doubled += 1;
        }
    }
    host.shutdown().await;
    f64::from(doubled) / f64::from(repetitions)
}

// One worker per CPU, as the binary and toolcert's embedded host run.
// (Oversubscribed — more workers than CPUs — the OS sometimes parks the
// racers' workers while the first one finishes its write, and the measured
// rate drops to about 94%.)
#[tokio::test(flavor = "multi_thread")]
async fn read_then_write_claim_double_delivers_in_most_races() {
    bounded(LONG_TIMEOUT, async {
        for executors in [2, 16] {
            let mutant =
                double_delivery_rate(Some(Mutant::ClaimReadThenWrite), 100, executors).await;
            let clean = double_delivery_rate(None, 100, executors).await;
            // Reported with `--nocapture`.
            println!(
                "race detection, {executors} executors, 100 repetitions: claim-read-then-write {:.0}%, clean {:.0}%",
                mutant * 100.0,
                clean * 100.0
            );
            assert!(clean.abs() < f64::EPSILON, "clean host double-delivered");
            // The rate itself is measured by `cargo bench --bench idempotency` (100 of 100 on an
            // idle machine); here, sharing the CPU with other test binaries, it has been seen as
            // low as 89%, so the floor only says the race is lost far more often than not.
            assert!(mutant >= 0.5, "mutant double-delivered only {mutant}");
        }
    })
    .await;
}

#[tokio::test]
async fn redispatch_delivers_once_and_the_seed_bug_twice() {
    bounded(TEST_TIMEOUT, async {
        let provider = Provider::start().await;
        let client = client(CLIENT_TIMEOUT);
        for (mutant, expected) in [(None, 1), (Some(Mutant::ClaimReadThenWrite), 2)] {
            let host = host(mutant).await;
            for _ in 0..5 {
                let business_key = fresh("redispatch");
                let answer = seam(
                    &client,
                    &host,
                    "redispatch",
                    json!({"businessKey": business_key, "receiverUrl": provider.url("/ok"),
                           "stallMs": 150}),
                )
                .await;
                assert_eq!(answer.status, 200, "{:?}", answer.body);
                assert_eq!(answer.body["executors"], 2);
                assert_eq!(answer.body["delivered"], expected, "{mutant:?}");
                assert_eq!(provider.count(&business_key), expected, "{mutant:?}");
                let rows = ledger(&client, &host, &run_id(&answer)).await;
                assert_eq!(rows.len(), expected, "{rows:?}");
                assert!(
                    rows.iter()
                        .all(|r| r["effectId"] == answer.body["effectId"])
                );
                assert!(rows.iter().all(|r| r["attempt"] == 1));
            }
            host.shutdown().await;
        }
    })
    .await;
}

#[tokio::test]
async fn effect_retry_rows_share_one_identity_and_one_key() {
    bounded(TEST_TIMEOUT, async {
        let provider = Provider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let business_key = fresh("retry");
        let answer = seam(
            &client,
            &host,
            "effect-retry",
            json!({"providerUrl": provider.url("/flaky"), "businessKey": business_key}),
        )
        .await;
        assert_eq!(answer.status, 201, "{:?}", answer.body);
        let effect_id = answer.body["effectId"]
            .as_str()
            .expect("effectId")
            .to_owned();
        let rows = ledger(&client, &host, &run_id(&answer)).await;
        assert_eq!(rows.len(), 2, "{rows:?}");
        for row in &rows {
            assert_row_shape(row);
            assert_eq!(row["effectId"], effect_id.as_str());
            assert_eq!(row["providerKey"], effect_id.as_str());
            assert_eq!(row["keying"], "business-identity");
            assert_eq!(row["nodeId"], "effect");
        }
        assert_eq!(
            (&rows[0]["attempt"], &rows[0]["state"]),
            (&json!(1), &json!("released"))
        );
        assert_eq!(
            (&rows[1]["attempt"], &rows[1]["state"]),
            (&json!(2), &json!("completed"))
        );
        assert_eq!(rows[0]["invocationId"], rows[1]["invocationId"]);
        assert_eq!(
            provider.keys(&business_key),
            vec![Some(effect_id.clone()), Some(effect_id.clone())]
        );
        // Content-free: the business key never appears in the ledger.
        assert!(!Value::Array(rows).to_string().contains(&business_key));

        // A provider that never recovers: three attempts, the last escaped,
        // and the run failed.
        let business_key = fresh("down");
        let answer = seam(
            &client,
            &host,
            "effect-retry",
            json!({"providerUrl": provider.url("/down"), "businessKey": business_key}),
        )
        .await;
        assert_eq!(answer.status, 201);
        let rows = ledger(&client, &host, &run_id(&answer)).await;
        let states: Vec<&str> = rows.iter().filter_map(|r| r["state"].as_str()).collect();
        assert_eq!(states, ["released", "released", "escaped"]);
        let attempts: Vec<u64> = rows.iter().filter_map(|r| r["attempt"].as_u64()).collect();
        assert_eq!(attempts, [1, 2, 3]);
        assert_eq!(provider.count(&business_key), 3);
        let run = get(
            &client,
            &format!("{}/runs/{}", host.base_url, run_id(&answer)),
            OPERATOR,
        )
        .await;
        assert_eq!(run.body["status"], "failed");
        assert_eq!(run.body["error"]["code"], "refhost.effect_escaped");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn keying_is_stable_across_the_workflow_and_the_seams() {
    bounded(TEST_TIMEOUT, async {
        let provider = Provider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let business_key = fresh("order");

        // First entry point: the workflow fires the effect.
        let first = post_run(
            &client,
            &host,
            ALICE,
            None,
            &effect_workflow(&business_key, &provider.url("/ok"), None),
        )
        .await;
        assert_eq!(first.status, 201, "{:?}", first.body);
        assert_eq!(first.body["status"], "completed");
        let rows = ledger(&client, &host, &run_id(&first)).await;
        assert_eq!(rows.len(), 1);
        assert_row_shape(&rows[0]);
        let effect_id = rows[0]["effectId"].as_str().expect("id").to_owned();
        assert_eq!(provider.count(&business_key), 1);

        // The seams, other runs, the same business operation: the same id,
        // and nothing fires again.
        let retry = seam(
            &client,
            &host,
            "effect-retry",
            json!({"providerUrl": provider.url("/ok"), "businessKey": business_key}),
        )
        .await;
        assert_eq!(retry.body["effectId"], effect_id.as_str());
        let race = seam(
            &client,
            &host,
            "concurrent-claim",
            json!({"executors": 4, "businessKey": business_key, "receiverUrl": provider.url("/ok")}),
        )
        .await;
        assert!(
            race.body["mintedIds"]
                .as_array()
                .expect("ids")
                .iter()
                .all(|id| *id == effect_id.as_str())
        );
        assert_eq!(race.body["attempted"], 4);
        assert_eq!(race.body["delivered"], 0);
        assert_eq!(provider.count(&business_key), 1);

        // A second workflow run: completes, fires nothing, adds no attempt
        // row to its own ledger (only one `attempt: 0` reference row with
        // the same effectId), and reports the effectId as `deduplicated`.
        let second = post_run(
            &client,
            &host,
            ALICE,
            None,
            &effect_workflow(&business_key, &provider.url("/ok"), None),
        )
        .await;
        assert_eq!(second.body["status"], "completed");
        for other in [run_id(&second), run_id(&retry), run_id(&race)] {
            let rows = ledger(&client, &host, &other).await;
            assert_eq!(rows.len(), 1, "{rows:?}");
            assert_row_shape(&rows[0]);
            assert_eq!(rows[0]["effectId"], effect_id.as_str());
            assert_eq!(rows[0]["attempt"], 0);
            assert_eq!(rows[0]["state"], "completed");
            assert_eq!(rows[0]["keying"], "business-identity");
            assert!(rows[0].get("providerKey").is_none());
        }
        let events = get(
            &client,
            &format!("{}/runs/{}/events/poll", host.base_url, run_id(&second)),
            ALICE,
        )
        .await;
        let completed = events.body["events"]
            .as_array()
            .expect("events")
            .iter()
            .find(|e| e["type"] == "run.completed")
            .cloned()
            .expect("run.completed");
        assert_eq!(
            completed["payload"]["result"]["effects"],
            json!([{"effectId": effect_id, "nodeId": "effect", "outcome": "deduplicated"}])
        );
        assert_eq!(provider.count(&business_key), 1);

        // Several effects of one run are distinct effects.
        let many = fresh("many");
        let run = post_run(
            &client,
            &host,
            ALICE,
            None,
            &effect_workflow(&many, &provider.url("/ok"), Some(3)),
        )
        .await;
        let rows = ledger(&client, &host, &run_id(&run)).await;
        let ids: BTreeSet<&str> = rows.iter().filter_map(|r| r["effectId"].as_str()).collect();
        assert_eq!(ids.len(), 3, "{rows:?}");
        for n in 1..=3 {
            let keys = provider.keys(&format!("{many}#{n}"));
            assert_eq!(keys.len(), 1);
            assert!(keys[0].as_deref().is_some_and(|k| ids.contains(k)));
        }
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Layer 1.

#[tokio::test]
async fn layer1_replays_the_first_final_response_with_the_replay_header() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let noop = json!({"workflowId": "conformance-noop"});

        // Without a key every request executes.
        let a = post_run(&client, &host, ALICE, None, &noop).await;
        let b = post_run(&client, &host, ALICE, None, &noop).await;
        assert_eq!((a.status, b.status), (201, 201));
        assert_ne!(run_id(&a), run_id(&b));
        assert!(!a.replayed() && !b.replayed());
        assert_eq!(a.body["status"], "completed");

        let key = fresh_key();
        let first = post_run(&client, &host, ALICE, Some(&key), &noop).await;
        assert_eq!(first.status, 201);
        assert!(first.header("openwop-idempotent-replay").is_none());
        // The same body spelled differently (JCS digest): a replay.
        let again = post_run_raw(
            &client,
            &host,
            Some(ALICE),
            Some(&key),
            "{ \"workflowId\" : \"conformance-noop\" }",
        )
        .await;
        assert_eq!(again.status, 201);
        assert!(again.replayed());
        assert_eq!(again.body, first.body);

        // Another body: 409 mismatch, no cached body, no runId.
        let other = post_run(
            &client,
            &host,
            ALICE,
            Some(&key),
            &json!({"workflowId": "conformance-noop", "configurable": {"x": 1}}),
        )
        .await;
        assert_eq!(other.status, 409);
        assert_eq!(other.body["error"], "idempotency_key_mismatch");
        assert!(other.body.get("runId").is_none());
        assert!(!other.body.to_string().contains(&run_id(&first)));
        assert!(!other.replayed());

        // A final 4xx (unknown workflow) is cached too.
        let key = fresh_key();
        let missing = json!({"workflowId": "no-such-workflow"});
        let first = post_run(&client, &host, ALICE, Some(&key), &missing).await;
        assert_eq!(first.status, 404);
        assert!(
            first.body["message"]
                .as_str()
                .unwrap_or("")
                .contains("no-such-workflow")
        );
        let again = post_run(&client, &host, ALICE, Some(&key), &missing).await;
        assert_eq!(again.status, 404);
        assert!(again.replayed());
        host.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_duplicates_run_the_work_once() {
    bounded(TEST_TIMEOUT, async {
        let provider = Provider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        for _ in 0..10 {
            let key = fresh_key();
            let business_key = fresh("burst");
            let body = effect_workflow(&business_key, &provider.url("/ok"), None);
            let answers = futures_util::future::join_all(
                (0..8).map(|_| post_run(&client, &host, ALICE, Some(&key), &body)),
            )
            .await;
            let mut runs = BTreeSet::new();
            for answer in &answers {
                match answer.status {
                    201 => {
                        runs.insert(run_id(answer));
                    }
                    409 => {
                        assert_eq!(answer.body["error"], "idempotency_in_flight");
                        assert!(answer.header("retry-after").is_some());
                    }
                    other => panic!("unexpected {other}: {:?}", answer.body),
                }
            }
            assert!(runs.len() <= 1, "{runs:?}");
            assert_eq!(provider.count(&business_key), 1);
            // Afterwards the key replays its one run.
            let replay = post_run(&client, &host, ALICE, Some(&key), &body).await;
            assert!(replay.replayed());
            if let Some(first) = runs.first() {
                assert_eq!(&run_id(&replay), first);
            }
        }
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn layer1_rejects_keys_outside_the_grammar() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let noop = json!({"workflowId": "conformance-noop"});
        for bad in [
            "short".to_owned(),
            "a".repeat(21),
            "a".repeat(129),
            "has spaces in it 0123456789".to_owned(),
            "slash/0123456789abcdefghijk".to_owned(),
        ] {
            let answer = post_run(&client, &host, ALICE, Some(&bad), &noop).await;
            assert_eq!(answer.status, 400, "{bad}");
            assert_eq!(answer.body["error"], "idempotency_key_invalid", "{bad}");
        }
        for good in [
            "a".repeat(22),
            "Z".repeat(128),
            "A.b_c~d-e0123456789xyzQ".to_owned(),
        ] {
            let answer = post_run(&client, &host, ALICE, Some(&good), &noop).await;
            assert_eq!(answer.status, 201, "{good}");
        }
        host.shutdown().await;
    })
    .await;
}

/// The hold seam arms the caller tenant's next create with a key (RFC 0213 §B): that create
/// keeps its claim in flight for `holdMs`, a concurrent same-key create meets the in-flight
/// branch (409 with `Retry-After`, no timing in `details`), the held one then completes, and a
/// later duplicate replays it. Another tenant's same key is never held.
#[tokio::test]
async fn layer1_in_flight_is_409_with_retry_after_then_executes() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let key = fresh_key();
        let armed = seam(&client, &host, "hold", json!({"key": key, "holdMs": 1200})).await;
        assert_eq!(armed.status, 201, "{:?}", armed.body);
        assert_eq!(armed.body, json!({"key": key, "holdMs": 1200}));
        let noop = json!({"workflowId": "conformance-noop"});
        // Another tenant's same key is not held.
        let started = std::time::Instant::now();
        let erin = post_run(&client, &host, ERIN, Some(&key), &noop).await;
        assert_eq!(erin.status, 201);
        assert!(started.elapsed() < Duration::from_millis(1000));
        let held = {
            let (client, host, key, noop) = (
                client.clone(),
                host.base_url.clone(),
                key.clone(),
                noop.clone(),
            );
            tokio::spawn(async move {
                let request = client
                    .post(format!("{host}/runs"))
                    .bearer_auth(ALICE)
                    .header("Idempotency-Key", key)
                    .json(&noop);
                answer(request.send().await.expect("POST /runs answers")).await
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let busy = post_run(&client, &host, ALICE, Some(&key), &noop).await;
        assert_eq!(busy.status, 409);
        assert_eq!(busy.body["error"], "idempotency_in_flight");
        assert!(
            busy.header("retry-after")
                .is_some_and(|v| v.parse::<u64>().is_ok_and(|s| s >= 1))
        );
        let details = busy.body.get("details").cloned().unwrap_or(Value::Null);
        assert!(!details.to_string().contains("retryAfter"), "{details}");
        assert!(!busy.replayed());
        let held = held.await.expect("the held create answers");
        assert_eq!(held.status, 201, "{:?}", held.body);
        assert!(
            started.elapsed() >= Duration::from_millis(1200),
            "the create was held"
        );
        assert!(!held.replayed());
        let after = post_run(&client, &host, ALICE, Some(&key), &noop).await;
        assert_eq!(after.status, 201, "{:?}", after.body);
        assert!(after.replayed());
        assert_eq!(run_id(&after), run_id(&held));
        // A hold is used once: the next create with a fresh arming of a used key replays.
        let again = seam(&client, &host, "hold", json!({"key": key, "holdMs": 10})).await;
        assert_eq!(again.status, 201);
        assert!(
            post_run(&client, &host, ALICE, Some(&key), &noop)
                .await
                .replayed()
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn layer1_never_caches_503_validation_errors_401_or_403() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);

        // 503 is transient: every retry executes again until one succeeds.
        let key = fresh_key();
        let flaky = json!({"workflowId": "conformance-flaky",
                           "inputs": {"nonce": fresh("nonce"), "failTimes": 2}});
        for _ in 0..2 {
            let answer = post_run(&client, &host, ALICE, Some(&key), &flaky).await;
            assert_eq!(answer.status, 503, "{:?}", answer.body);
            assert_eq!(answer.body["error"], "service_unavailable");
            assert_eq!(answer.header("retry-after"), Some("1"));
            assert!(!answer.replayed());
        }
        let third = post_run(&client, &host, ALICE, Some(&key), &flaky).await;
        assert_eq!(third.status, 201);
        assert!(!third.replayed());
        let fourth = post_run(&client, &host, ALICE, Some(&key), &flaky).await;
        assert!(fourth.replayed());
        assert_eq!(run_id(&fourth), run_id(&third));

        // A validation error was never processed: nothing to replay, and
        // the key is still free for a corrected request.
        let key = fresh_key();
        for _ in 0..2 {
            let answer = post_run(&client, &host, ALICE, Some(&key), &json!({"workflow": 1})).await;
            assert_eq!(answer.status, 400);
            assert_eq!(answer.body["error"], "validation_error");
            assert!(!answer.replayed());
        }
        let fixed = post_run(
            &client,
            &host,
            ALICE,
            Some(&key),
            &json!({"workflowId": "conformance-noop"}),
        )
        .await;
        assert_eq!(fixed.status, 201);

        // 401 and 403 come before the key is looked at.
        let key = fresh_key();
        let noop = json!({"workflowId": "conformance-noop"});
        let anonymous = post_run_raw(&client, &host, None, Some(&key), &noop.to_string()).await;
        assert_eq!(anonymous.status, 401);
        let dave = post_run(&client, &host, DAVE, Some(&key), &noop).await;
        assert_eq!(dave.status, 403);
        let operator = post_run(&client, &host, OPERATOR, Some(&key), &noop).await;
        assert_eq!(operator.status, 403, "the operator lacks runs:write");
        let alice = post_run(&client, &host, ALICE, Some(&key), &noop).await;
        assert_eq!(alice.status, 201);
        assert!(!alice.replayed());
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn layer1_keys_are_scoped_by_tenant() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let key = fresh_key();
        let noop = json!({"workflowId": "conformance-noop"});
        let alice = post_run(&client, &host, ALICE, Some(&key), &noop).await;
        let erin = post_run(&client, &host, ERIN, Some(&key), &noop).await;
        assert_eq!((alice.status, erin.status), (201, 201));
        assert!(!erin.replayed());
        assert_ne!(run_id(&alice), run_id(&erin));
        // Another principal of alice's tenant shares alice's key space.
        let bob = post_run(&client, &host, "refhost-bob-token", Some(&key), &noop).await;
        assert!(bob.replayed());
        assert_eq!(run_id(&bob), run_id(&alice));
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Tenants, retention, discovery, seam hygiene.

#[tokio::test]
async fn another_tenants_run_is_indistinguishable_from_an_unknown_one() {
    bounded(TEST_TIMEOUT, async {
        let provider = Provider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let run = post_run(
            &client,
            &host,
            ALICE,
            None,
            &effect_workflow(&fresh("tenant"), &provider.url("/ok"), None),
        )
        .await;
        let id = run_id(&run);
        let unknown = "run_00000000000000000000000000000000";
        for suffix in ["", "/events/poll", "/events", "/effects"] {
            let mine = get(
                &client,
                &format!("{}/runs/{id}{suffix}", host.base_url),
                ALICE,
            )
            .await;
            assert_eq!(mine.status, 200, "{suffix}");
            let theirs = get(
                &client,
                &format!("{}/runs/{id}{suffix}", host.base_url),
                ERIN,
            )
            .await;
            let nobody = get(
                &client,
                &format!("{}/runs/{unknown}{suffix}", host.base_url),
                ERIN,
            )
            .await;
            assert_eq!((theirs.status, nobody.status), (404, 404), "{suffix}");
            assert_eq!(theirs.body["error"], "not_found");
            assert_eq!(
                theirs.body["message"]
                    .as_str()
                    .map(|m| m.replace(&id, "RUN")),
                nobody.body["message"]
                    .as_str()
                    .map(|m| m.replace(unknown, "RUN")),
                "{suffix}"
            );
        }
        // Erin's own runs are hers.
        let hers = post_run(
            &client,
            &host,
            ERIN,
            None,
            &json!({"workflowId": "conformance-noop"}),
        )
        .await;
        let read = get(
            &client,
            &format!("{}/runs/{}", host.base_url, run_id(&hers)),
            ERIN,
        )
        .await;
        assert_eq!(read.status, 200);
        let not_alices = get(
            &client,
            &format!("{}/runs/{}", host.base_url, run_id(&hers)),
            ALICE,
        )
        .await;
        assert_eq!(not_alices.status, 404);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_sweeper_keeps_effect_records_for_14_days() {
    bounded(TEST_TIMEOUT, async {
        let provider = Provider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let run = post_run(
            &client,
            &host,
            ALICE,
            None,
            &effect_workflow(&fresh("sweep"), &provider.url("/ok"), Some(2)),
        )
        .await;
        let id = run_id(&run);
        for offset in [0, 86_400 * 2, FOURTEEN_DAYS - 1] {
            let swept = seam(
                &client,
                &host,
                "sweep",
                json!({"runId": id, "nowOffsetSeconds": offset}),
            )
            .await;
            assert_eq!(swept.status, 200);
            assert_eq!(
                swept.body,
                json!({"swept": 0, "remaining": 2}),
                "offset {offset}"
            );
        }
        let swept = seam(
            &client,
            &host,
            "sweep",
            json!({"runId": id, "nowOffsetSeconds": FOURTEEN_DAYS + 1}),
        )
        .await;
        assert_eq!(swept.body, json!({"swept": 2, "remaining": 0}));
        assert!(ledger(&client, &host, &id).await.is_empty());
        let unknown = seam(
            &client,
            &host,
            "sweep",
            json!({"runId": "run_00000000000000000000000000000000", "nowOffsetSeconds": 0}),
        )
        .await;
        assert_eq!(unknown.status, 404);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn discovery_advertises_the_idempotency_record() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        assert_eq!(
            discovery(&client, &host.base_url).await["idempotency"],
            json!({"status": "stable", "since": "2.0", "witness": "witnessable-gated",
                   "crossRegion": "single-region"})
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn seams_check_the_caller_and_name_the_bad_member() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let body = json!({"executors": 2, "businessKey": "k"});
        let anonymous = client
            .post(format!(
                "{}/conformance/seams/sample/test/idempotency/concurrent-claim",
                host.base_url
            ))
            .json(&body)
            .send()
            .await
            .expect("answers");
        assert_eq!(anonymous.status(), 401);
        let alice = seam_raw(&client, &host, "concurrent-claim", ALICE, body).await;
        assert_eq!(alice.status, 403);
        for (seam_name, body, member) in [
            (
                "concurrent-claim",
                json!({"executors": 300, "businessKey": "k"}),
                "executors",
            ),
            (
                "concurrent-claim",
                json!({"executors": 2, "businessKey": "k", "principal": "mallory"}),
                "principal",
            ),
            (
                "redispatch",
                json!({"businessKey": "k", "receiverUrl": "http://127.0.0.1:1/", "stallMs": 0}),
                "stallMs",
            ),
            (
                "effect-retry",
                json!({"providerUrl": "https://127.0.0.1/", "businessKey": "k"}),
                "providerUrl",
            ),
            ("hold", json!({"key": "short", "holdMs": 10}), "key"),
            (
                "sweep",
                json!({"runId": "r", "nowOffsetSeconds": 10_000_001}),
                "nowOffsetSeconds",
            ),
            (
                "sweep",
                json!({"runId": "r", "nowOffsetSeconds": 0, "x": 1}),
                "x",
            ),
        ] {
            let answer = seam_raw(&client, &host, seam_name, OPERATOR, body.clone()).await;
            assert_eq!(answer.status, 400, "{seam_name} {body}");
            assert_eq!(answer.body["error"], "validation_error");
            assert!(
                answer.body["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains(member),
                "{seam_name}: {:?}",
                answer.body
            );
            assert_valid(
                &format!("idempotency-{seam_name}.response.schema.json"),
                &answer.body,
            );
        }
        // A named principal of another tenant makes a run of that tenant.
        let erins = seam(
            &client,
            &host,
            "concurrent-claim",
            json!({"executors": 2, "businessKey": fresh("erin"), "principal": "erin"}),
        )
        .await;
        assert_eq!(erins.status, 200);
        let id = run_id(&erins);
        assert_eq!(effects(&client, &host, ERIN, &id).await.status, 200);
        assert_eq!(effects(&client, &host, OPERATOR, &id).await.status, 404);
        host.shutdown().await;
    })
    .await;
}
