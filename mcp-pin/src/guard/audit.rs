//! The guard's audit log: one JSON line per `tools/call` (the tool, the snapshot's digest,
//! the verdict, the rule, the drift's pointers, the timings), never an argument or a result
//! value, appended to a file or written to stderr.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;

/// How one gated call ended, as the audit log says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Dispatched and answered; the answer was passed on.
    Ok,
    /// A gate rule refused; nothing was dispatched.
    Refused,
    /// A call rule refused before dispatch (arguments, a `list_changed` after the gate).
    NotDispatched,
    /// Dispatched and failed (a protocol error, `isError`, the output contract, an excluded
    /// request during the call).
    Failed,
    /// Dispatched, and the binding was invalidated or no answer came: the side effect may
    /// have happened; the result was not passed on; never retried.
    Indeterminate,
}

/// Stage wall times of one call, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallTimings {
    /// From the request's arrival to dispatch (or to the refusal): the whole gate.
    pub gate: u64,
    /// Of `gate`: the live listing alone (every `tools/list` page). What the guard adds
    /// beyond what the seed requires is `gate - liveListing`.
    pub live_listing: u64,
    /// The `tools/call` round trip, when dispatched.
    pub call: u64,
    /// From arrival to the answer sent to the client.
    pub total: u64,
}

/// One audit line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Line {
    /// When the call arrived (UTC).
    pub at: String,
    /// The guard's client session (1, 2, … per process).
    pub session: u64,
    /// The server key.
    pub server: String,
    /// The tool called.
    pub tool: String,
    /// The snapshot's digest.
    pub manifest_sha256: String,
    /// How it ended.
    pub verdict: Verdict,
    /// The rule that decided a verdict other than `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where the live catalog differed (pointers, and tools for a catalog drift; no values).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<String>,
    /// Live pages read by the gate.
    pub live_pages: usize,
    /// Timings.
    pub timings_us: CallTimings,
}

/// Where audit lines go.
pub struct Audit {
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Audit")
    }
}

impl Audit {
    /// Append to `path` (created if absent).
    pub fn file(path: &Path) -> std::io::Result<Audit> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Audit {
            out: Mutex::new(Box::new(f)),
        })
    }

    /// Write to stderr.
    pub fn stderr() -> Audit {
        Audit {
            out: Mutex::new(Box::new(std::io::stderr())),
        }
    }

    /// Write to any writer (tests, benches).
    pub fn to(w: Box<dyn Write + Send>) -> Audit {
        Audit { out: Mutex::new(w) }
    }

    /// Write one line, whole, in one write (best effort: an audit failure never changes a
    /// verdict, and is said on stderr).
    pub fn write(&self, line: &Line) {
        let mut text = serde_json::to_vec(line).unwrap_or_default();
        text.push(b'\n');
        if let Ok(mut out) = self.out.lock()
            && (out.write_all(&text).is_err() || out.flush().is_err())
        {
            eprintln!("toolcert guard: could not write the audit line");
        }
    }
}
