//! Durable invalidation (mcp-facts §4.5.1, §4.5.2): what one connection learned about a
//! reviewed snapshot outlives it.
//!
//! The seed: a `list_changed` invalidates the reviewed snapshot immediately, and "re-listing to
//! the same value does not revive that review: a new capture and review are required". A
//! verdict that lasts only as long as one connection does not say that: the next connection
//! re-lists, finds the same catalog, and passes. So every gate, call and guard that sees an
//! invalidating event appends one line to a record beside the snapshot
//! (`<manifest>.invalidated.jsonl`), and every later gate of the same digest and server reads
//! it first and refuses (`4.5.2-invalidated`). A new capture and review change the digest, so
//! the old lines no longer apply; nothing else revives a review.
//!
//! What invalidates: a `list_changed` the policy in force refuses, a drift of the reviewed
//! Tool (or of the pinned catalog or instructions), a missing or duplicated tool, a changed
//! `serverInfo` or revision. A server that drifts and drifts back is not trusted again by
//! toolcert's stance: the review described a catalog the server has since shown it does not
//! keep. Errors that say nothing about the catalog (a timeout, a refused connection) do not.
//!
//! Each line records when the `list_changed` came: `startup` is true for one read before the
//! connection's first `tools/list` was sent (the notifications a server emits while handling
//! `initialized`). `--list-changed settle` does not refuse those live, so it does not refuse
//! their records either; every other line refuses under both policies. Without that, a strict
//! refusal of a server that announces at start (it names `settle` as the fix) would make the
//! snapshot unusable under `settle` too.
//!
//! The record is bounded: it is read up to [`MAX_RECORD_BYTES`]; beyond that the snapshot is
//! taken as invalidated (fail closed).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The most bytes of a record read; a larger record refuses every gate of its snapshot.
pub const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// One invalidating event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The snapshot's digest it applies to.
    pub manifest_sha256: String,
    /// The server key.
    pub server: String,
    /// When (UTC).
    pub at: String,
    /// The rule that refused (or `4.5.4-indeterminate` for a `list_changed` during a call).
    pub rule: String,
    /// A `list_changed` read before the connection's first `tools/list` was sent.
    #[serde(default)]
    pub startup: bool,
    /// What toolcert saw, in words (no argument or result values).
    pub reason: String,
}

/// Where the record of `manifest` lives: `<manifest>.invalidated.jsonl`, beside it.
pub fn record_path(manifest: &Path) -> PathBuf {
    let mut name = manifest
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".invalidated.jsonl");
    manifest.with_file_name(name)
}

/// Why a record could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The record could not be read or written.
    #[error("the invalidation record {path}: {reason}")]
    Io {
        /// The record file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// The record is larger than [`MAX_RECORD_BYTES`].
    #[error(
        "the invalidation record {path} is larger than {MAX_RECORD_BYTES} bytes: taken as invalidated; capture and review again"
    )]
    TooLarge {
        /// The record file.
        path: String,
    },
}

/// The records of `manifest` that apply to this digest and server and refuse under the
/// `list_changed` policy in force (`settle`: records of start-up notifications do not).
pub fn applicable(
    manifest: &Path,
    sha256: &str,
    server: &str,
    settle: bool,
) -> Result<Vec<Record>, RecordError> {
    let path = record_path(manifest);
    let shown = path.display().to_string();
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(RecordError::Io {
                path: shown,
                reason: e.to_string(),
            });
        }
    };
    if meta.len() > MAX_RECORD_BYTES {
        return Err(RecordError::TooLarge { path: shown });
    }
    let text = std::fs::read_to_string(&path).map_err(|e| RecordError::Io {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    // A line that does not parse (a torn write, an edit) is kept as refusing: fail closed.
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Record>(l).unwrap_or_else(|_| Record {
                manifest_sha256: sha256.to_string(),
                server: server.to_string(),
                at: String::new(),
                rule: "unreadable".into(),
                startup: false,
                reason: "a line of the record does not parse".into(),
            })
        })
        .filter(|r| r.manifest_sha256 == sha256 && r.server == server)
        .filter(|r| !(settle && r.startup))
        .collect())
}

/// Append one record beside `manifest` (one line, written whole in one `write`), unless one
/// already there refuses everything this one would (the same digest and server, and not a
/// start-up record where this one is not): one record is enough, so a gate run on every CI
/// build against a server that announces at start does not grow the file without end.
pub fn append(manifest: &Path, record: &Record) -> Result<(), RecordError> {
    let covered = applicable(manifest, &record.manifest_sha256, &record.server, false)?
        .iter()
        .any(|r| !r.startup || record.startup);
    if covered {
        return Ok(());
    }
    let path = record_path(manifest);
    let io = |e: std::io::Error| RecordError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let mut line = serde_json::to_vec(record).map_err(|e| RecordError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io)?;
    f.write_all(&line).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(sha: &str, startup: bool) -> Record {
        Record {
            manifest_sha256: sha.into(),
            server: "s".into(),
            at: "2026-08-30T12:00:00Z".into(),
            rule: "4.5.1-list-changed".into(),
            startup,
            reason: "r".into(),
        }
    }

    #[test]
    fn records_apply_to_their_digest_and_server_and_settle_skips_start_up_ones() {
        let dir = std::env::temp_dir().join(format!("toolcert-inval-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let m = dir.join("snap.json");
        let _ = std::fs::remove_file(record_path(&m));
        assert_eq!(record_path(&m), dir.join("snap.json.invalidated.jsonl"));
        assert!(applicable(&m, "a", "s", false).unwrap().is_empty());
        append(&m, &record("a", true)).unwrap();
        append(&m, &record("b", false)).unwrap();
        assert_eq!(applicable(&m, "a", "s", false).unwrap().len(), 1);
        assert!(applicable(&m, "a", "s", true).unwrap().is_empty());
        assert!(applicable(&m, "a", "other", false).unwrap().is_empty());
        assert_eq!(applicable(&m, "b", "s", true).unwrap().len(), 1);
        // A record already covered is not written again; a stronger one is.
        append(&m, &record("a", true)).unwrap();
        append(&m, &record("b", true)).unwrap();
        assert_eq!(
            std::fs::read_to_string(record_path(&m))
                .unwrap()
                .lines()
                .count(),
            2
        );
        append(&m, &record("a", false)).unwrap();
        assert_eq!(
            std::fs::read_to_string(record_path(&m))
                .unwrap()
                .lines()
                .count(),
            3
        );
        assert_eq!(applicable(&m, "a", "s", true).unwrap().len(), 1);
        // An unreadable line refuses (fail closed).
        std::fs::write(record_path(&m), "{not json\n").unwrap();
        assert_eq!(
            applicable(&m, "z", "s", true).unwrap()[0].rule,
            "unreadable"
        );
    }
}
