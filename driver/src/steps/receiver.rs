//! `receiver`: register a tool receiver endpoint for this scenario.

use std::time::Duration;

use serde_json::{Value, json};

use super::ctx::ScenarioCtx;
use toolcert_core::observation::{NotObserved, Observation, ReceiverObservation};
use toolcert_core::suite::ReceiverSpec;

/// The largest pad toolcert puts in a receiver's answer (`padBytes`): 16 MiB.
pub const MAX_PAD_BYTES: u64 = 16 << 20;

/// Register the receiver and record its first observation at `/receivers/NAME`.
pub(super) fn run(ctx: &mut ScenarioCtx<'_>, spec: &ReceiverSpec) {
    let obs = register(ctx, spec);
    ctx.doc["receivers"][&spec.name] = obs.to_value();
}

fn register(ctx: &mut ScenarioCtx<'_>, spec: &ReceiverSpec) -> Observation<ReceiverObservation> {
    let body = match spec.body.as_ref().map(|b| ctx.render(b)) {
        None => json!({"ok": true}),
        Some(Ok(b)) => b,
        Some(Err(e)) => return ctx.template_failure(&e).into(),
    };
    let mut body = body;
    if let Some(pad) = &spec.pad_bytes {
        let bytes = match ctx.render(pad) {
            Ok(Value::Number(n)) => n.as_u64(),
            Ok(Value::String(s)) => s.trim().parse::<u64>().ok(),
            Ok(_) => None,
            Err(e) => return ctx.template_failure(&e).into(),
        };
        let Some(bytes) = bytes else {
            return NotObserved::error(format!(
                "scenario data: receiver {}: padBytes must be a byte count",
                spec.name
            ))
            .into();
        };
        // Clamped: a pad is for crossing a record limit, not for load. A limit past what
        // toolcert pads (a profile stating 2^63 bytes) cannot be exercised, and says so.
        if bytes > MAX_PAD_BYTES {
            return NotObserved::blocked(format!(
                "receiver {}: the answer must be padded to {bytes} bytes to cross the limit, more than the {} toolcert pads a tool answer to; the limit cannot be exercised",
                spec.name,
                toolcert_core::input::human(MAX_PAD_BYTES)
            ))
            .into();
        }
        if let Value::Object(map) = &mut body {
            map.insert("pad".into(), Value::String("x".repeat(bytes as usize)));
        }
    }
    let id = format!("{}-{}", ctx.nonce, spec.name);
    let url = ctx.receiver.register(
        &id,
        spec.status,
        body,
        Duration::from_millis(spec.delay_ms),
        spec.fail_first.map(|f| (f.count, f.status)),
    );
    if spec.hold {
        ctx.receiver.hold(&id);
    }
    if spec.delay_first_only {
        ctx.receiver.delay_first_only(&id);
    }
    ctx.receivers.push((spec.name.clone(), id));
    let url = Value::String(url);
    Observation::Made(ReceiverObservation {
        url_via_unspecified: via_unspecified(&url),
        url,
        count: 0,
        idempotency_keys: None,
        distinct_idempotency_keys: None,
        arrivals: Vec::new(),
    })
}

/// The receiver's URL with its host written as the unspecified address `0.0.0.0`. Linux
/// connects such a URL to the loopback listener, so a host whose SSRF guard lets it through is
/// counted at the receiver, while the traffic still never leaves the machine (HOOKS-EVT-5).
pub(super) fn via_unspecified(url: &Value) -> Value {
    match url.as_str() {
        Some(u) => Value::String(u.replacen("//127.0.0.1:", "//0.0.0.0:", 1)),
        None => Value::Null,
    }
}
