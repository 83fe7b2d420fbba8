//! What a run may hold of what hosts send: a memory budget per run, not only per read.
//!
//! One read is bounded by the client's body cap, but a host can multiply a large answer (the
//! same 4 MiB body to every request of every scenario), and a run keeps what it observed until
//! its report is written. So a run charges, as it keeps them, the bytes of every host answer
//! (the driver's `HostClient`), every event stream read, what the host sent toolcert's doubles
//! (receiver, mock provider, MCP server), and what the transcripts keep, against one
//! [`MemoryBudget`]: [`BUDGET_PER_TRIAL`] per trial of the run. Once a charge would pass it,
//! the budget is spent for good: the step that asked gets an `error` observation naming the
//! budget, and every row not yet judged is `error` too, so the run ends quickly with a small
//! report that still rechecks.
//!
//! Beside the budget, every kept value is bounded in depth ([`MAX_DEPTH`]), so a report stays
//! one that `toolcert recheck` (serde_json reads 128 levels) can read back, and a host body is
//! refused before it is parsed when it holds more JSON values than [`MAX_BODY_VALUES`] (a
//! 4 MiB body of `[0,0,…]` is two million values, some 64 MB once parsed).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// What one trial of a run may keep of what hosts send: 8 MiB. The whole suite against the
/// reference host keeps about 2.2 MiB (observations 1.6 MiB, transcripts 0.6 MiB).
pub const BUDGET_PER_TRIAL: usize = 8 * 1024 * 1024;

/// The deepest a kept value may nest: a value deeper than this (a host's answer nested 120
/// deep) is kept with its deeper parts replaced by `{"$tooDeep": 32}`, and judged so. The
/// deepest observation of the whole suite against the reference host nests 12 levels; each
/// level of an array nested in an array costs some 100 bytes in memory per byte sent.
pub const MAX_DEPTH: usize = 32;

/// The most JSON values one host body may hold to be parsed.
pub const MAX_BODY_VALUES: usize = 250_000;

/// The largest discovery document toolcert takes (the reference host's is 2 KiB).
pub const MAX_DISCOVERY_BYTES: usize = 1024 * 1024;

/// The budget of one run, shared by its sessions' clients and scenarios.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: usize,
    held: AtomicUsize,
    spent: OnceLock<Exhausted>,
}

/// The budget is spent: what every refused charge, and every row not yet judged, says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the host's answers exceeded toolcert's memory budget of {} for this run ({} per trial): toolcert keeps no more of what it sends, so no further row is judged",
    crate::input::human(*limit as u64),
    crate::input::human(BUDGET_PER_TRIAL as u64)
)]
pub struct Exhausted {
    /// The run's budget in bytes.
    pub limit: usize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> MemoryBudget {
        MemoryBudget {
            limit,
            held: AtomicUsize::new(0),
            spent: OnceLock::new(),
        }
    }

    /// The budget of a run of `trials` trials.
    pub fn for_trials(trials: u32) -> MemoryBudget {
        MemoryBudget::new(BUDGET_PER_TRIAL.saturating_mul(trials.max(1) as usize))
    }

    /// The budget in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes charged so far.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// Keep `bytes` more, or refuse: a charge that would pass the limit spends the budget for
    /// good, and so does every charge after it.
    pub fn charge(&self, bytes: usize) -> Result<(), Exhausted> {
        if let Some(spent) = self.spent.get() {
            return Err(spent.clone());
        }
        let took = self
            .held
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                held.checked_add(bytes).filter(|after| *after <= self.limit)
            });
        match took {
            Ok(_) => Ok(()),
            Err(_) => {
                let spent = self.spent.get_or_init(|| Exhausted { limit: self.limit });
                Err(spent.clone())
            }
        }
    }

    /// Count `bytes` kept whether or not they fit (what is kept anyway, e.g. a transcript
    /// entry's URL once its bodies were left out); the budget is spent when they pass it.
    pub fn charge_anyway(&self, bytes: usize) {
        let after = self
            .held
            .fetch_add(bytes, Ordering::SeqCst)
            .saturating_add(bytes);
        if after > self.limit {
            let _ = self.spent.get_or_init(|| Exhausted { limit: self.limit });
        }
    }

    /// Why the budget is spent, once it is.
    pub fn exhausted(&self) -> Option<&Exhausted> {
        self.spent.get()
    }
}

/// A writer that only counts the bytes written to it: how large a text would be, without
/// building it.
#[derive(Debug, Default)]
pub struct ByteCount(pub usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The size of `value` as compact JSON, without building the text.
pub fn json_len(value: &Value) -> usize {
    let mut count = ByteCount::default();
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Replace every part of `value` nested deeper than `max` levels by `{"$tooDeep": max}`;
/// whether anything was replaced.
pub fn bound_depth(value: &mut Value, max: usize) -> bool {
    fn walk(v: &mut Value, depth: usize, max: usize) -> bool {
        match v {
            Value::Array(_) | Value::Object(_) if depth >= max => {
                *v = serde_json::json!({"$tooDeep": max});
                true
            }
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |cut, x| walk(x, depth + 1, max) | cut),
            Value::Object(map) => map
                .values_mut()
                .fold(false, |cut, x| walk(x, depth + 1, max) | cut),
            _ => false,
        }
    }
    walk(value, 0, max)
}

/// How many JSON values the JSON text `bytes` holds at most, and how deep it nests, by one
/// pass over its bytes (no parsing, no allocation): what decides whether a body is parsed.
pub fn shape_of(bytes: &[u8]) -> (usize, usize) {
    let (mut values, mut depth, mut deepest) = (1usize, 0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                values += 1;
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' | b':' => values += 1,
            _ => {}
        }
    }
    (values, deepest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_budget_refuses_what_passes_it_and_stays_spent() {
        let b = MemoryBudget::new(10);
        assert!(b.charge(6).is_ok());
        assert!(b.charge(4).is_ok());
        let e = b.charge(1).unwrap_err();
        assert!(e.to_string().contains("memory budget of 10 bytes"), "{e}");
        assert_eq!(b.held(), 10);
        // Spent for good, even for nothing.
        assert!(b.charge(0).is_err());
        assert!(b.exhausted().is_some());
        let c = MemoryBudget::new(10);
        c.charge_anyway(11);
        assert!(c.exhausted().is_some());
        assert_eq!(
            MemoryBudget::for_trials(3).limit(),
            3 * BUDGET_PER_TRIAL,
            "a budget per trial"
        );
    }

    #[test]
    fn depth_is_bounded_and_the_rest_kept() {
        let mut deep = json!(1);
        for _ in 0..120 {
            deep = json!([deep]);
        }
        let mut v = json!({"a": deep, "b": "kept"});
        assert!(bound_depth(&mut v, 64));
        let text = serde_json::to_string(&v).unwrap();
        assert!(text.contains("{\"$tooDeep\":64}"), "{text}");
        assert_eq!(v["b"], "kept");
        // It reads back, nested in a report another dozen levels deep.
        let mut wrapped = v;
        for _ in 0..12 {
            wrapped = json!({"x": wrapped});
        }
        let back: Value = serde_json::from_str(&wrapped.to_string()).unwrap();
        assert_eq!(back, wrapped);
        let mut shallow = json!({"a": [1, {"b": 2}]});
        assert!(!bound_depth(&mut shallow, 64));
    }

    #[test]
    fn the_shape_of_a_body_is_read_without_parsing() {
        // Six values, counted from above (every opening, comma and colon adds one).
        assert_eq!(shape_of(br#"{"a":[1,2,"x,[]"],"b":{}}"#), (9, 2));
        let zeros = format!("[{}0]", "0,".repeat(1000));
        assert_eq!(shape_of(zeros.as_bytes()), (1002, 1));
        assert_eq!(json_len(&json!({"a": [1, "x"]})), 13);
    }
}
