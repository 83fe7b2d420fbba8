//! The `openudon.mcp-tool-manifest.0.1` snapshot: capture it from a live server, load it
//! strictly, hash it, write it.
//!
//! Shape (mcp-facts §4.2; `schemas/mcp-tool-manifest.schema.json` is the exact form):
//!
//! ```text
//! profile, protocolVersion, capturedAt, expiresAt,
//! servers.<key>: serverInfo (complete), capabilities, instructions?, clientCapabilities,
//!                toolPages[] (each page's complete tools/list result, no JSON-RPC framing),
//!                captureEvidence, reviews.<tool>
//! ```
//!
//! The digest (`manifestSha256`) is SHA-256 over the RFC 8785 bytes of the whole document
//! (§4.3.7), after a parse that rejects duplicate member names. It does not depend on how the
//! file is indented: the canonical form is hashed, not the file's bytes.
//!
//! Connection details (the command line, the URL) are deliberately not recorded: they are
//! runtime-private and may carry credentials (seed, "Provisional Stage 1 interface").

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::client::{Client, ClientError, Timeouts};
use super::transport::{Endpoint, Limits};
use super::{PROFILE, time as mcp_time};
use toolcert_base::canonical::{jcs_sha256_hex, parse_ijson};

/// The JSON Schema of the snapshot, as shipped in `schemas/`.
pub const SCHEMA: &str = include_str!("../../schemas/mcp-tool-manifest.schema.json");

/// The largest snapshot file toolcert reads: 64 MiB.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// How often a capture restarts its listing after a `list_changed` arrived mid-pagination
/// (§4.10.3) before it gives up.
pub const MAX_RESTARTS: u32 = 3;

/// Why a snapshot could not be captured, read or written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SnapshotError {
    /// Reading or writing the file failed.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// Not strict I-JSON (a duplicate member name, or a number a double cannot hold exactly).
    #[error(
        "{path} is not strict I-JSON (§4.3.7 rejects duplicate member names; RFC 8785 needs numbers a double holds exactly): {reason}"
    )]
    NotJson {
        /// The file.
        path: String,
        /// The parser's complaint.
        reason: String,
    },
    /// Not a snapshot of this profile.
    #[error(
        "{path} does not match schemas/mcp-tool-manifest.schema.json at `{pointer}`: {message}"
    )]
    Schema {
        /// The file.
        path: String,
        /// Where.
        pointer: String,
        /// What.
        message: String,
    },
    /// The MCP exchange failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// `list_changed` kept arriving during pagination.
    #[error(
        "the tool list changed during pagination {restarts} times in a row (notifications/tools/list_changed, §4.10.3); no stable catalog to capture"
    )]
    Unstable {
        /// Restarts made.
        restarts: u32,
    },
    /// `--expires-in` over the product maximum.
    #[error(
        "--expires-in {asked:?} exceeds the maximum of {max:?} (§4.3.5: expiry is a reviewer decision under a product maximum)"
    )]
    ExpiryTooLong {
        /// Asked.
        asked: Duration,
        /// The maximum.
        max: Duration,
    },
    /// `--expires-in` under the minimum.
    #[error(
        "--expires-in {asked:?} is below the minimum of {min:?}: the review must be made inside the window and a snapshot that expires before anyone can use it pins nothing"
    )]
    ExpiryTooShort {
        /// Asked.
        asked: Duration,
        /// The minimum.
        min: Duration,
    },
    /// The server sent sampling or elicitation requests while its catalog was captured.
    #[error(
        "the server sent {0} during discovery (refused): sampling and elicitation are excluded from pinned calls (4.8.2), so this catalog cannot be pinned"
    )]
    ExcludedRequest(String),
    /// A 2026-07-28 page without valid `ttlMs` and `cacheScope`.
    #[error("{0}")]
    CacheFields(String),
    /// No such server key in the snapshot.
    #[error("the snapshot has no server `{0}`")]
    NoServer(String),
}

/// A snapshot read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The document.
    pub doc: Value,
    /// Its `manifestSha256`.
    pub sha256: String,
}

/// The digest of a snapshot document.
pub fn digest(doc: &Value) -> String {
    jcs_sha256_hex(doc)
}

/// Read a file strictly (size cap, UTF-8, duplicate members rejected) and hash it; no schema
/// check yet (the gate hashes first, §4.4.1, then checks completeness, §4.4.2).
pub fn read_strict(path: &Path) -> Result<Loaded, SnapshotError> {
    let p = path.display().to_string();
    let io = |e: std::io::Error| SnapshotError::Io {
        path: p.clone(),
        reason: e.to_string(),
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_FILE_BYTES {
        return Err(SnapshotError::Io {
            path: p,
            reason: format!("larger than {MAX_FILE_BYTES} bytes"),
        });
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    let doc = parse_ijson(&text).map_err(|e| SnapshotError::NotJson {
        path: p.clone(),
        reason: e.to_string(),
    })?;
    let sha256 = digest(&doc);
    Ok(Loaded { doc, sha256 })
}

fn validator() -> Option<&'static jsonschema::Validator> {
    static V: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    V.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).ok()?;
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .ok()
    })
    .as_ref()
}

/// Check a document against the snapshot schema; the first (deepest) violation.
pub fn check_schema(path: &str, doc: &Value) -> Result<(), SnapshotError> {
    let Some(v) = validator() else {
        return Err(SnapshotError::Schema {
            path: path.into(),
            pointer: String::new(),
            message: "the embedded snapshot schema does not compile".into(),
        });
    };
    let mut errors: Vec<_> = v
        .iter_errors(doc)
        .map(|e| (e.instance_path().to_string(), e.to_string()))
        .collect();
    errors.sort_by_key(|(p, _)| std::cmp::Reverse(p.matches('/').count()));
    match errors.into_iter().next() {
        None => Ok(()),
        Some((pointer, message)) => Err(SnapshotError::Schema {
            path: path.into(),
            pointer,
            message: message.chars().take(400).collect(),
        }),
    }
}

/// Read, hash and schema-check a snapshot.
pub fn load(path: &Path) -> Result<Loaded, SnapshotError> {
    let loaded = read_strict(path)?;
    check_schema(&path.display().to_string(), &loaded.doc)?;
    Ok(loaded)
}

/// Write a snapshot (indented JSON, trailing newline) and return its digest.
pub fn write(path: &Path, doc: &Value) -> Result<String, SnapshotError> {
    let mut text = serde_json::to_string_pretty(doc).unwrap_or_default();
    text.push('\n');
    std::fs::write(path, text).map_err(|e| SnapshotError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(digest(doc))
}

/// How to capture.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureOptions {
    /// The symbolic server key.
    pub server: String,
    /// The revision to ask for.
    pub revision: String,
    /// The client capabilities to declare (a catalog may depend on them, mcp-facts §2.3).
    pub client_capabilities: Value,
    /// `expiresAt - capturedAt`, at most [`mcp_time::MAX_EXPIRES_IN`].
    pub expires_in: Duration,
    /// Page cap.
    pub max_pages: usize,
    /// Record this `capturedAt` instead of now (a reproducible capture: two captures of an
    /// unchanged server then hash the same).
    pub captured_at: Option<time::OffsetDateTime>,
    /// Client timeouts.
    pub timeouts: Timeouts,
    /// Transport limits.
    pub limits: Limits,
    /// The authorization context the catalog is listed under (a label; `none` without
    /// credentials). Recorded; the gate must run under the same one.
    pub authorization: String,
}

impl CaptureOptions {
    /// Defaults for `server`.
    pub fn new(server: &str) -> CaptureOptions {
        CaptureOptions {
            server: server.to_string(),
            revision: super::REVISION_2025_11_25.into(),
            client_capabilities: json!({}),
            expires_in: mcp_time::DEFAULT_EXPIRES_IN,
            max_pages: super::client::MAX_PAGES,
            captured_at: None,
            timeouts: Timeouts::default(),
            limits: Limits::default(),
            authorization: "none".into(),
        }
    }
}

/// Capture one server's complete catalog over one connection (§4.3, §4.10).
pub async fn capture(endpoint: &Endpoint, opts: &CaptureOptions) -> Result<Value, SnapshotError> {
    if opts.expires_in > mcp_time::MAX_EXPIRES_IN {
        return Err(SnapshotError::ExpiryTooLong {
            asked: opts.expires_in,
            max: mcp_time::MAX_EXPIRES_IN,
        });
    }
    if opts.expires_in < mcp_time::MIN_EXPIRES_IN {
        return Err(SnapshotError::ExpiryTooShort {
            asked: opts.expires_in,
            min: mcp_time::MIN_EXPIRES_IN,
        });
    }
    let mut client = Client::connect(endpoint, opts.limits, opts.timeouts).await?;
    let result = capture_on(&mut client, opts).await;
    client.close().await;
    result
}

async fn capture_on(client: &mut Client, opts: &CaptureOptions) -> Result<Value, SnapshotError> {
    let init = client
        .initialize(&opts.revision, &opts.client_capabilities)
        .await?;
    let captured_at = opts.captured_at.unwrap_or_else(mcp_time::now);
    // Some servers announce list_changed while starting (§4.10.2). A causal barrier (one
    // ping, `Client::startup_barrier`) instead of a quiet window: what arrived before it was
    // read before the first tools/list is sent, so the listing already reflects it; anything
    // later restarts the listing below.
    let settle_list_changed = client.startup_barrier().await?;
    let mut restarts = 0;
    let listing = loop {
        let seq = client.list_changed_seq();
        let listing = client.list_tools(opts.max_pages, false).await?;
        // A barrier makes a notification sent with the last page visible here.
        client.barrier().await?;
        if client.list_changed_seq() == seq {
            break listing;
        }
        restarts += 1;
        if restarts > MAX_RESTARTS {
            return Err(SnapshotError::Unstable { restarts });
        }
    };
    let excluded = super::client::Rpc::excluded_requests(client);
    if !excluded.is_empty() {
        return Err(SnapshotError::ExcludedRequest(excluded.join(", ")));
    }
    if init.protocol_version == super::REVISION_2026_07_28 {
        cache_fields(&listing.pages).map_err(SnapshotError::CacheFields)?;
    }
    let mut server = Map::new();
    server.insert("serverInfo".into(), init.server_info.clone());
    server.insert("capabilities".into(), init.capabilities.clone());
    if let Some(i) = &init.instructions {
        server.insert("instructions".into(), i.clone());
    }
    server.insert(
        "clientCapabilities".into(),
        opts.client_capabilities.clone(),
    );
    server.insert("toolPages".into(), Value::Array(listing.pages));
    let requests: Vec<&str> = client
        .server_requests()
        .iter()
        .map(|r| r.method.as_str())
        .collect();
    let mut evidence = json!({
        "listChangedWhileSettling": settle_list_changed,
        "listingRestarts": restarts,
        "serverRequests": requests,
    });
    if init.protocol_version == super::REVISION_2026_07_28 {
        evidence["listen"] = json!(client.listen_state());
    }
    server.insert("captureEvidence".into(), evidence);
    server.insert(
        "authorization".into(),
        json!({"context": opts.authorization}),
    );
    server.insert("reviews".into(), json!({}));
    let mut servers = Map::new();
    servers.insert(opts.server.clone(), Value::Object(server));
    Ok(json!({
        "profile": PROFILE,
        "protocolVersion": init.protocol_version,
        "capturedAt": mcp_time::format(captured_at),
        "expiresAt": mcp_time::format(mcp_time::add(captured_at, opts.expires_in)),
        "servers": servers,
    }))
}

/// MCP 2026-07-28 (mcp-facts §3): every `tools/list` result carries `ttlMs` (an integer
/// ≥ 0) and `cacheScope` (`public` or `private`), the same scope on every page. The smallest
/// `ttlMs` and the scope, or what is wrong.
pub fn cache_fields(pages: &[Value]) -> Result<(u64, String), String> {
    let mut out: Option<(u64, &str)> = None;
    for (i, page) in pages.iter().enumerate() {
        let ttl = page.get("ttlMs").and_then(Value::as_u64);
        let scope = page.get("cacheScope").and_then(Value::as_str);
        let (Some(ttl), Some(scope @ ("public" | "private"))) = (ttl, scope) else {
            return Err(format!(
                "tools/list page {i} has no valid ttlMs (an integer ≥ 0) and cacheScope (public or private), which MCP 2026-07-28 requires"
            ));
        };
        if let Some((_, s)) = out
            && s != scope
        {
            return Err(format!(
                "tools/list page {i} has cacheScope {scope}, an earlier page {s}"
            ));
        }
        out = Some((out.map_or(ttl, |(t, _)| t.min(ttl)), scope));
    }
    out.map(|(t, s)| (t, s.to_string()))
        .ok_or_else(|| "tools/list returned no page".to_string())
}

/// The server entry `key` of a snapshot.
pub fn server<'a>(doc: &'a Value, key: &str) -> Result<&'a Value, SnapshotError> {
    doc.get("servers")
        .and_then(|s| s.get(key))
        .ok_or_else(|| SnapshotError::NoServer(key.to_string()))
}

/// A server entry's `toolPages` (empty when it has none).
pub fn pages(server: &Value) -> &[Value] {
    server
        .get("toolPages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Every Tool object of a server entry's pages named `name`, with its JSON pointer.
pub fn tools_named<'a>(server: &'a Value, name: &str) -> Vec<(String, &'a Value)> {
    let mut out = Vec::new();
    if let Some(pages) = server.get("toolPages").and_then(Value::as_array) {
        for (p, page) in pages.iter().enumerate() {
            if let Some(tools) = page.get("tools").and_then(Value::as_array) {
                for (t, tool) in tools.iter().enumerate() {
                    if tool.get("name").and_then(Value::as_str) == Some(name) {
                        out.push((format!("/toolPages/{p}/tools/{t}"), tool));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::double::{InProcess, Script, generated_pages};
    use toolcert_base::canonical::parse_strict;

    #[tokio::test]
    async fn capture_follows_every_page_and_keeps_pages_whole() {
        let mut script = Script {
            pages: generated_pages(7, 3),
            ..Script::default()
        };
        script.pages[1][0]["x-unknown"] = json!({"kept": true});
        let double = InProcess::new(script);
        let doc = capture(&Endpoint::Double(double.clone()), &CaptureOptions::new("d"))
            .await
            .unwrap();
        let pages = doc["servers"]["d"]["toolPages"].as_array().unwrap();
        assert_eq!(pages.len(), 3);
        assert_eq!(pages[0]["nextCursor"], "page-1");
        assert_eq!(pages[1]["tools"][0]["x-unknown"]["kept"], true);
        assert!(pages[0].get("jsonrpc").is_none() && pages[0].get("id").is_none());
        check_schema("captured", &doc).unwrap();
        assert_eq!(
            double
                .witness
                .connections
                .load(std::sync::atomic::Ordering::SeqCst),
            1
        );
    }

    #[tokio::test]
    async fn a_list_changed_mid_pagination_restarts_the_listing() {
        let mut script = Script {
            pages: generated_pages(4, 2),
            ..Script::default()
        };
        script.list_changed.after_lists = vec![0];
        let doc = capture(
            &Endpoint::Double(InProcess::new(script)),
            &CaptureOptions::new("d"),
        )
        .await
        .unwrap();
        assert_eq!(doc["servers"]["d"]["captureEvidence"]["listingRestarts"], 1);
        assert_eq!(
            doc["servers"]["d"]["toolPages"].as_array().unwrap().len(),
            2
        );
    }

    #[tokio::test]
    async fn expiry_over_the_maximum_is_refused() {
        let mut opts = CaptureOptions::new("d");
        opts.expires_in = mcp_time::MAX_EXPIRES_IN + Duration::from_secs(1);
        let err = capture(&Endpoint::Double(InProcess::new(Script::default())), &opts)
            .await
            .unwrap_err();
        assert!(matches!(err, SnapshotError::ExpiryTooLong { .. }), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn the_digest_ignores_layout_and_duplicate_members_are_refused(
            desc in "\\PC{0,40}",
            name in "[a-z]{1,8}",
        ) {
            let mut t = crate::double::echo_tool();
            t["description"] = json!(desc);
            t["name"] = json!(name);
            let doc = json!({"profile": PROFILE, "servers": {"s": {"toolPages": [{"tools": [t]}]}}});
            let compact = serde_json::to_string(&doc).unwrap();
            let pretty = serde_json::to_string_pretty(&doc).unwrap();
            let a = digest(&parse_strict(&compact).unwrap());
            proptest::prop_assert_eq!(&a, &digest(&parse_strict(&pretty).unwrap()));
            proptest::prop_assert_eq!(&a, &digest(&doc));
            // A repeated member name anywhere is refused, never collapsed.
            let dup = compact.replacen("\"name\":", "\"name\":\"dup\",\"name\":", 1);
            proptest::prop_assert!(parse_strict(&dup).is_err());
            // One changed character changes the digest.
            let mut changed = doc.clone();
            changed["servers"]["s"]["toolPages"][0]["tools"][0]["description"] = json!(format!("{desc}."));
            proptest::prop_assert_ne!(&a, &digest(&changed));
        }
    }

    #[test]
    fn duplicate_members_in_a_file_are_refused() {
        let dir = std::env::temp_dir().join(format!("toolcert-snap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("dup.json");
        std::fs::write(&f, r#"{"profile": "a", "profile": "b"}"#).unwrap();
        let err = read_strict(&f).unwrap_err();
        assert!(err.to_string().contains("duplicate object key"), "{err}");
    }
}
