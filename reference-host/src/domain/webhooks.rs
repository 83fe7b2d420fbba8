//! Webhook subscriptions and their fan-out (RPL-8).
//!
//! `POST /webhooks` subscribes a loopback URL to the events of the caller's
//! tenant; `DELETE /webhooks/{webhookId}` ends it (routes:
//! [`crate::surface::webhook_routes`]). Subscriptions live in
//! memory only: they are not durable and a restart forgets them.
//!
//! Every committed write to the store calls [`fan_out`] (from
//! `Storage::notify`, after commit). It reads the events appended since the
//! last fan-out in append order (the `events` rowid), drops a fork's prefix
//! (read from the run's stored mode and `fromSeq`, never from the event:
//! RPL-8, invariant replay-fanout-no-refire), and queues one delivery per
//! matching subscription on ONE bounded FIFO channel. One dispatcher task
//! for the whole host ([`spawn_dispatcher`]) POSTs them in that order.

use crate::store::storage::Cached;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use reqwest::Url;
use rusqlite::params;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::invoker::outbound_client_builder;
use crate::store::storage::{CommitListener, Storage};

/// Capacity of the delivery queue; a delivery that does not fit is dropped
/// and counted, so appends never wait for the dispatcher.
pub const QUEUE_CAPACITY: usize = 1024;

/// How long one delivery attempt may take.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(2);

/// Attempts per delivery (on a transport error or a 5xx) before it is
/// dropped.
pub const MAX_ATTEMPTS: u32 = 3;

/// The header naming the delivered event.
pub const DELIVERY_HEADER: &str = "OpenWOP-Delivery";

/// Pause between two attempts of one delivery.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Events read per fan-out query (the loop continues until none is left).
const FAN_OUT_BATCH: i64 = 500;

/// One subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subscription {
    webhook_id: String,
    tenant: String,
    url: Url,
    /// `None`: every event type.
    events: Option<Vec<String>>,
}

/// One queued POST.
#[derive(Debug, Clone, PartialEq)]
struct Delivery {
    url: Url,
    event_id: String,
    body: Value,
}

/// The in-memory subscriptions, the fan-out cursor and the delivery queue.
#[derive(Debug)]
pub struct Fanout {
    subscriptions: Mutex<Vec<Subscription>>,
    /// The `events` rowid fanned out last; `None` while nobody subscribes
    /// (then appends skip the fan-out entirely).
    cursor: Mutex<Option<i64>>,
    /// Whether any subscription exists (the appends' cheap early exit).
    active: AtomicBool,
    queue: mpsc::Sender<Delivery>,
    receiver: Mutex<Option<mpsc::Receiver<Delivery>>>,
    dropped: AtomicU64,
    /// The host's mutant, compared where it acts (`webhook-refires-prefix`,
    /// RPL-8), so the matrix's probe sees the site only in runs that fan out
    /// a fork's prefix.
    mutant: Mutex<Option<Mutant>>,
}

impl Default for Fanout {
    fn default() -> Self {
        Self::new()
    }
}

impl Fanout {
    /// No subscriptions, an empty queue, no dispatcher yet.
    pub fn new() -> Self {
        let (queue, receiver) = mpsc::channel(QUEUE_CAPACITY);
        Self {
            subscriptions: Mutex::new(Vec::new()),
            cursor: Mutex::new(None),
            active: AtomicBool::new(false),
            queue,
            receiver: Mutex::new(Some(receiver)),
            dropped: AtomicU64::new(0),
            mutant: Mutex::new(None),
        }
    }

    /// Sets the host's mutant (`webhook-refires-prefix` plants its bug).
    pub fn set_mutant(&self, mutant: Option<Mutant>) {
        *self.mutant.lock().unwrap_or_else(|p| p.into_inner()) = mutant;
    }

    fn mutant(&self) -> Option<Mutant> {
        *self.mutant.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Deliveries dropped because the queue was full (not exposed over HTTP).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn subscriptions(&self) -> MutexGuard<'_, Vec<Subscription>> {
        // Each operation is one push, retain or scan: a panic elsewhere
        // cannot leave the list half-changed.
        self.subscriptions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn cursor(&self) -> MutexGuard<'_, Option<i64>> {
        // The cursor is one integer; it is always whole.
        self.cursor
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One appended event, with what the fan-out needs of its run.
struct Appended {
    rowid: i64,
    run_id: String,
    sequence: i64,
    event_id: String,
    event_type: String,
    payload: String,
    tenant: String,
    mode: Option<String>,
    from_seq: Option<i64>,
}

impl CommitListener for Fanout {
    fn committed(&self, store: &Storage) {
        fan_out(self, store);
    }
}

/// Queues the deliveries of every event committed since the last call, in
/// append order. Called by the store after every commit (the fan-out is its
/// [`CommitListener`]); it never waits for the dispatcher (a full queue
/// drops and counts).
pub fn fan_out(fanout: &Fanout, storage: &Storage) {
    if !fanout.active.load(Ordering::Acquire) {
        return;
    }
    // The cursor lock serialises fan-outs, so events are queued once each,
    // in rowid (= commit) order, whichever append's notify gets here first.
    let mut cursor = fanout.cursor();
    let Some(mut after) = *cursor else {
        return;
    };
    loop {
        let Ok(batch) = read_after(storage, after) else {
            // A read failure leaves the cursor where it is; the next commit
            // retries.
            return;
        };
        let Some(last) = batch.last().map(|event| event.rowid) else {
            break;
        };
        queue_batch(fanout, batch);
        after = last;
        *cursor = Some(after);
    }
}

fn queue_batch(fanout: &Fanout, batch: Vec<Appended>) {
    let subscriptions = fanout.subscriptions().clone();
    for event in batch {
        // RPL-8: a fork's events up to its `fromSeq` re-state the source's,
        // which were delivered already. Replay-ness comes from the run's
        // stored mode and fromSeq, never from the event. Bug under
        // `webhook-refires-prefix`: it is ignored.
        let forked = matches!(event.mode.as_deref(), Some("replay" | "branch"));
        let prefix = forked && event.from_seq.is_some_and(|from| event.sequence <= from);
        if prefix && fanout.mutant() != Some(Mutant::WebhookRefiresPrefix) {
            continue;
        }
        let payload: Value = serde_json::from_str(&event.payload).unwrap_or(Value::Null);
        for sub in subscriptions.iter().filter(|sub| {
            sub.tenant == event.tenant
                && sub
                    .events
                    .as_ref()
                    .is_none_or(|types| types.contains(&event.event_type))
        }) {
            let delivery = Delivery {
                url: sub.url.clone(),
                event_id: event.event_id.clone(),
                body: json!({
                    "webhookId": sub.webhook_id,
                    "runId": event.run_id,
                    "sequence": event.sequence,
                    "eventId": event.event_id,
                    "type": event.event_type,
                    "payload": payload,
                }),
            };
            if fanout.queue.try_send(delivery).is_err() {
                fanout.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn read_after(
    storage: &Storage,
    after: i64,
) -> Result<Vec<Appended>, crate::store::storage::StorageError> {
    storage.with_conn(|conn| {
        let mut statement = conn.prepare_cached(
            "SELECT e.rowid, e.run_id, e.sequence, e.event_id, e.type, e.payload,
                    r.tenant, t.mode, t.from_seq
             FROM events e JOIN runs r ON r.run_id = e.run_id
             LEFT JOIN turn_runs t ON t.run_id = e.run_id
             WHERE e.rowid > ?1 ORDER BY e.rowid LIMIT ?2",
        )?;
        statement
            .query_map(params![after, FAN_OUT_BATCH], |row| {
                Ok(Appended {
                    rowid: row.get(0)?,
                    run_id: row.get(1)?,
                    sequence: row.get(2)?,
                    event_id: row.get(3)?,
                    event_type: row.get(4)?,
                    payload: row.get(5)?,
                    tenant: row.get(6)?,
                    mode: row.get(7)?,
                    from_seq: row.get(8)?,
                })
            })?
            .collect()
    })
}

/// The events rowid appended last (-1 for none).
fn last_rowid(storage: &Storage) -> Result<i64, crate::store::storage::StorageError> {
    storage.with_conn(|conn| {
        conn.query_row_cached("SELECT COALESCE(MAX(rowid), -1) FROM events", [], |row| {
            row.get(0)
        })
    })
}

/// Adds a subscription of `tenant` and returns its id. Events committed
/// before it are not its business: the first subscription starts the
/// fan-out cursor at the current end of the log.
pub fn subscribe(
    fanout: &Fanout,
    storage: &Storage,
    tenant: &str,
    url: Url,
    events: Option<Vec<String>>,
) -> Result<String, crate::store::storage::StorageError> {
    let webhook_id = format!("wh_{}", uuid::Uuid::new_v4().simple());
    let mut cursor = fanout.cursor();
    if cursor.is_none() {
        *cursor = Some(last_rowid(storage)?);
    }
    fanout.subscriptions().push(Subscription {
        webhook_id: webhook_id.clone(),
        tenant: tenant.to_owned(),
        url,
        events,
    });
    fanout.active.store(true, Ordering::Release);
    Ok(webhook_id)
}

/// Ends `tenant`'s subscription `webhook_id`; `false` when that tenant has
/// no subscription of that id.
pub fn unsubscribe(fanout: &Fanout, tenant: &str, webhook_id: &str) -> bool {
    let mut cursor = fanout.cursor();
    let mut subscriptions = fanout.subscriptions();
    let before = subscriptions.len();
    subscriptions.retain(|sub| !(sub.webhook_id == webhook_id && sub.tenant == tenant));
    if subscriptions.len() == before {
        return false;
    }
    if subscriptions.is_empty() {
        // Nobody listens: appends skip the fan-out until the next subscribe.
        fanout.active.store(false, Ordering::Release);
        *cursor = None;
    }
    true
}

/// Starts the host's ONE dispatcher: it POSTs the queued deliveries in
/// order, each with a 2 s timeout and at most 3 attempts (on a transport
/// error or a 5xx); a delivery still failing after that is dropped. It
/// stops when `stopping` completes (at shutdown). A second call does
/// nothing (the queue has one reader).
pub fn spawn_dispatcher(fanout: &Fanout, stopping: impl Future<Output = ()> + Send + 'static) {
    let receiver = fanout
        .receiver
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take();
    let Some(mut receiver) = receiver else {
        return;
    };
    let Ok(client) = outbound_client_builder().timeout(DELIVERY_TIMEOUT).build() else {
        return;
    };
    tokio::spawn(async move {
        tokio::pin!(stopping);
        loop {
            tokio::select! {
                () = &mut stopping => break,
                next = receiver.recv() => match next {
                    Some(delivery) => {
                        tokio::select! {
                            () = &mut stopping => break,
                            () = deliver(&client, delivery) => {}
                        }
                    }
                    None => break,
                },
            }
        }
    });
}

/// POSTs one delivery, retrying a transport error or a 5xx; every attempt
/// is bounded by the client's 2 s timeout.
async fn deliver(client: &reqwest::Client, delivery: Delivery) {
    for attempt in 1..=MAX_ATTEMPTS {
        let sent = client
            .post(delivery.url.clone())
            .header(DELIVERY_HEADER, &delivery.event_id)
            .json(&delivery.body)
            .send()
            .await;
        match sent {
            Ok(response) if !response.status().is_server_error() => return,
            _ if attempt < MAX_ATTEMPTS => tokio::time::sleep(RETRY_PAUSE).await,
            _ => {}
        }
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::WebhookRefiresPrefix,
    name: "webhook-refires-prefix",
    breaks: "webhook fan-out re-delivers a replay fork's prefix events (RPL-8)",
}];

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::base::events::NewEvent;

    use crate::turn::records::{RunMode, save_fork_plan};

    /// A store with every schema and a fan-out listening to its commits.
    fn store() -> (Storage, Arc<Fanout>) {
        let storage = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let fanout = Arc::new(Fanout::new());
        assert!(storage.set_commit_listener(fanout.clone()));
        (storage, fanout)
    }

    fn queued(fanout: &Fanout) -> Vec<(String, i64)> {
        let mut receiver = fanout
            .receiver
            .lock()
            .expect("lock")
            .take()
            .expect("receiver");
        let mut seen = Vec::new();
        while let Ok(delivery) = receiver.try_recv() {
            seen.push((
                delivery.body["runId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                delivery.body["sequence"].as_i64().unwrap_or(-1),
            ));
        }
        seen
    }

    #[test]
    fn a_branch_forks_copied_prefix_is_not_queued_and_tenants_stay_apart() {
        let (storage, fanout) = store();
        storage
            .create_run_in("src", "alice", "tenant-a")
            .expect("run");
        let append = |run: &str| {
            storage
                .append_event(run, NewEvent::new("node.started", json!({})))
                .expect("append");
        };
        append("src");
        let url = Url::parse("http://127.0.0.1:9/hook").expect("url");
        subscribe(&fanout, &storage, "tenant-a", url, None).expect("subscribe");
        append("src");
        append("src");
        storage
            .create_run_in("br", "alice", "tenant-a")
            .expect("run");
        save_fork_plan(&storage, "br", "{}", Some("src"), RunMode::Branch, Some(1)).expect("plan");
        storage.copy_events("src", "br", 1).expect("copy");
        append("br");
        storage
            .create_run_in("other", "erin", "tenant-b")
            .expect("run");
        append("other");
        // Before the subscription: not queued; the branch's copies of 0..=1: not queued.
        assert_eq!(
            queued(&fanout),
            [
                ("src".to_owned(), 1),
                ("src".to_owned(), 2),
                ("br".to_owned(), 2)
            ]
        );
    }

    #[test]
    fn the_mutant_queues_the_prefix() {
        let (storage, fanout) = store();
        fanout.set_mutant(Some(Mutant::WebhookRefiresPrefix));
        storage
            .create_run_in("src", "alice", "tenant-a")
            .expect("run");
        let url = Url::parse("http://127.0.0.1:9/hook").expect("url");
        subscribe(&fanout, &storage, "tenant-a", url, None).expect("subscribe");
        storage
            .create_run_in("rp", "alice", "tenant-a")
            .expect("run");
        save_fork_plan(&storage, "rp", "{}", Some("src"), RunMode::Replay, Some(0)).expect("plan");
        storage
            .append_event("rp", NewEvent::new("node.started", json!({})))
            .expect("append");
        assert_eq!(queued(&fanout), [("rp".to_owned(), 0)]);
    }
}
