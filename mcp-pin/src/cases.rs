//! Gate-rule cases against the double, the gate's mutation matrix
//! (`reports/mcp-gate-mutants.md`), and the same cases as portable vectors
//! (`fixtures/mcp-drift-vectors/`).
//!
//! A case pins a snapshot captured from a clean double, optionally edits it, and runs the
//! gate against a live double that misbehaves in one way. The matrix runs, for every
//! [`Mutant`], the case that a correct gate refuses and that mutant lets pass: a mutant is
//! killed when its verdict differs from the correct gate's.
//!
//! [`export_vectors`] writes every case as a directory of language-neutral files another
//! pinning gateway can run without toolcert: the pinned snapshot, the server (the double's
//! script, a declarative description), the exchange toolcert's gate had with it, and the
//! expected verdict and rule; [`run_vector`] runs one from those files alone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::double::{InProcess, Script, echo_tool};
use super::gate::{self, GateOptions, ListChangedPolicy, Mutant, Rule};
use super::review::ReviewInput;
use super::snapshot::{self, CaptureOptions};
use super::transport::Endpoint;
use super::{review, time as mcp_time};

/// The reviewer record every case uses: reviewed now, all assertions acceptable, every
/// top-level argument of `tool` classified `data`. (Now: a review may not predate the
/// snapshot's `capturedAt`, so review after capturing.)
pub fn acceptable_review(tool: &Value) -> Value {
    let channels = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.keys()
                .map(|k| {
                    (
                        format!("/{}", toolcert_base::canonical::pointer_token(k)),
                        "data".to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    ReviewInput {
        reviewer: "release-review@example.test".into(),
        reviewed_at: mcp_time::format(mcp_time::now()),
        headless: Some(true),
        independent_calls: Some(true),
        model_backed: Some(false),
        side_effects: Some(vec![]),
        concurrency: Some("safe".into()),
        reference_based_io: Some(true),
        input_channels: channels,
    }
    .to_value()
}

/// Capture `script` in process as server `s`, review `tool`, write it to `path`; the digest.
pub async fn pin(script: &Script, tool: &str, path: &Path) -> Result<String, String> {
    let double = InProcess::new(script.clone());
    let mut doc = snapshot::capture(&Endpoint::Double(double), &CaptureOptions::new("s"))
        .await
        .map_err(|e| e.to_string())?;
    let t = snapshot::tools_named(
        snapshot::server(&doc, "s").map_err(|e| e.to_string())?,
        tool,
    )
    .first()
    .map(|(_, t)| (*t).clone())
    .ok_or("no such tool")?;
    review::apply(&mut doc, "s", tool, acceptable_review(&t)).map_err(|e| e.to_string())?;
    snapshot::write(path, &doc).map_err(|e| e.to_string())
}

/// One gate case.
#[derive(Debug, Clone)]
pub struct Case {
    /// What it shows.
    pub name: &'static str,
    /// The rule a correct gate refuses with (`None`: it passes).
    pub expect: Option<Rule>,
    /// The double the snapshot is captured from (default [`reviewed_script`]).
    pub reviewed: Script,
    /// The live double.
    pub live: Script,
    /// Edit the pinned document and re-pin its digest (an edited, re-pinned snapshot).
    pub edit: Option<fn(&mut Value)>,
    /// Judge expiry this long after the capture.
    pub later: Option<Duration>,
    /// The `list_changed` policy.
    pub policy: ListChangedPolicy,
    /// An earlier connection recorded an invalidation of the snapshot beside it.
    pub prior_invalidation: bool,
}

impl Case {
    fn new(name: &'static str, expect: Option<Rule>, live: Script) -> Case {
        Case {
            name,
            expect,
            reviewed: reviewed_script(),
            live,
            edit: None,
            later: None,
            policy: ListChangedPolicy::Strict,
            prior_invalidation: false,
        }
    }
}

/// A live double whose `echo` differs by `f`.
fn drifted(f: fn(&mut Value)) -> Script {
    let mut t = echo_tool();
    f(&mut t);
    Script {
        pages: vec![vec![t]],
        ..Script::default()
    }
}

/// The reviewed catalog: two pages, `echo` on the first.
pub fn reviewed_script() -> Script {
    let mut other = echo_tool();
    other["name"] = json!("other");
    Script {
        pages: vec![vec![echo_tool()], vec![other]],
        ..Script::default()
    }
}

/// One case per gate rule (§4.4, §4.5).
pub fn gate_cases() -> Vec<Case> {
    let base = reviewed_script;
    let with_pages = |pages: Vec<Vec<Value>>| Script {
        pages,
        ..Script::default()
    };
    let other = || {
        let mut o = echo_tool();
        o["name"] = json!("other");
        o
    };
    let mut cases = vec![Case::new("an unchanged server passes", None, base())];
    cases.push(Case {
        edit: Some(|d| {
            d["servers"]["s"]["reviews"]["echo"]["assertions"]["headless"] = json!(false)
        }),
        ..Case::new(
            "a re-pinned snapshot whose review fails an assertion",
            Some(Rule::Review),
            base(),
        )
    });
    cases.push(Case {
        edit: Some(|d| {
            d["servers"]["s"]["reviews"]
                .as_object_mut()
                .map(|r| r.remove("echo"));
        }),
        ..Case::new(
            "a re-pinned snapshot without the tool's review",
            Some(Rule::Incomplete),
            base(),
        )
    });
    cases.push(Case {
        edit: Some(|d| d["servers"]["s"]["toolPages"] = json!([])),
        ..Case::new(
            "a re-pinned snapshot without its pages",
            Some(Rule::Incomplete),
            base(),
        )
    });
    cases.push(Case {
        edit: Some(|d| {
            let t = d["servers"]["s"]["toolPages"][0]["tools"][0].clone();
            if let Some(a) = d["servers"]["s"]["toolPages"][1]["tools"].as_array_mut() {
                a.push(t);
            }
        }),
        ..Case::new(
            "a re-pinned snapshot listing the tool twice",
            Some(Rule::Incomplete),
            base(),
        )
    });
    cases.push(Case {
        edit: Some(|d| {
            let captured = d["capturedAt"]
                .as_str()
                .and_then(|t| mcp_time::parse(t).ok());
            if let Some(c) = captured {
                let before = mcp_time::format(c - time::Duration::seconds(1));
                d["servers"]["s"]["reviews"]["echo"]["reviewedAt"] = json!(before);
            }
        }),
        ..Case::new(
            "a re-pinned snapshot reviewed before its capturedAt",
            Some(Rule::Review),
            base(),
        )
    });
    cases.push(Case {
        edit: Some(|d| {
            let expires = d["expiresAt"].clone();
            d["servers"]["s"]["reviews"]["echo"]["reviewedAt"] = expires;
        }),
        ..Case::new(
            "a re-pinned snapshot reviewed at its expiresAt",
            Some(Rule::Review),
            base(),
        )
    });
    cases.push(Case {
        later: Some(mcp_time::DEFAULT_EXPIRES_IN + Duration::from_secs(1)),
        ..Case::new("an expired snapshot", Some(Rule::Expired), base())
    });
    let mut v = base();
    v.protocol_versions = vec!["2025-06-18".into()];
    cases.push(Case::new(
        "the server negotiates another revision",
        Some(Rule::Version),
        v,
    ));
    let mut v = base();
    v.server_info["version"] = json!("1.0.1");
    cases.push(Case::new(
        "serverInfo.version changed",
        Some(Rule::ServerInfo),
        v,
    ));
    let mut v = base();
    v.server_info["title"] = json!("Double");
    cases.push(Case::new(
        "serverInfo gained a member",
        Some(Rule::ServerInfo),
        v,
    ));
    cases.push(Case::new(
        "the tool is gone",
        Some(Rule::Missing),
        with_pages(vec![vec![other()]]),
    ));
    cases.push(Case::new(
        "the name repeats on the same page",
        Some(Rule::Duplicate),
        with_pages(vec![vec![echo_tool(), echo_tool()], vec![other()]]),
    ));
    cases.push(Case::new(
        "the name repeats on a later page",
        Some(Rule::Duplicate),
        with_pages(vec![vec![echo_tool()], vec![other(), echo_tool()]]),
    ));
    type Edit = (&'static str, fn(&mut Value));
    let drifts: [Edit; 9] = [
        ("description changed", |t| {
            t["description"] = json!("Echoes the message back!")
        }),
        ("title changed", |t| t["title"] = json!("Echo 2")),
        ("inputSchema changed", |t| {
            t["inputSchema"]["properties"]["message"]["maxLength"] = json!(101)
        }),
        ("outputSchema removed", |t| {
            t.as_object_mut().map(|o| o.remove("outputSchema"));
        }),
        ("an annotation changed", |t| {
            t["annotations"]["destructiveHint"] = json!(true)
        }),
        ("execution metadata changed", |t| {
            t["execution"]["taskSupport"] = json!("optional")
        }),
        ("icons changed", |t| {
            t["icons"][0]["sizes"] = json!(["32x32"])
        }),
        ("an unknown member changed", |t| {
            t["x-vendor"]["tier"] = json!(2)
        }),
        ("_meta added", |t| t["_meta"] = json!({"com.example/x": 1})),
    ];
    for (name, f) in drifts {
        let mut live = drifted(f);
        live.pages.push(vec![other()]);
        cases.push(Case::new(name, Some(Rule::Drift), live));
    }
    let mut v = base();
    v.drift = Some(super::double::Drift {
        after_lists: 1,
        pages: vec![
            vec![echo_tool()],
            vec![{
                let mut o = other();
                o["name"] = json!("echo");
                o["description"] = json!("moved");
                o
            }],
        ],
    });
    cases.push(Case::new(
        "the catalog drifts between pages (a duplicate appears on page 2)",
        Some(Rule::Duplicate),
        v,
    ));
    let mut v = base();
    v.list_changed.after_initialized = 1;
    cases.push(Case::new(
        "list_changed right after initialized (strict)",
        Some(Rule::ListChanged),
        v.clone(),
    ));
    cases.push(Case {
        policy: ListChangedPolicy::Settle,
        ..Case::new(
            "list_changed right after initialized (settle: ignored, recorded)",
            None,
            v,
        )
    });
    let mut v = base();
    v.list_changed.after_lists = vec![0];
    cases.push(Case {
        policy: ListChangedPolicy::Settle,
        ..Case::new(
            "list_changed during pagination, identical re-list (settle too)",
            Some(Rule::ListChanged),
            v,
        )
    });
    let mut v = base();
    v.capabilities = json!({"tools": {}});
    v.list_changed.after_lists = vec![1];
    cases.push(Case::new(
        "undeclared list_changed still invalidates",
        Some(Rule::ListChanged),
        v,
    ));
    let mut v = base();
    v.list_result = Some(json!({"tools": "echo"}));
    cases.push(Case::new(
        "tools/list answers something that is not a catalog",
        Some(Rule::Listing),
        v,
    ));
    let mut v = base();
    v.server_info = json!(null);
    cases.push(Case::new(
        "initialize without serverInfo",
        Some(Rule::ServerInfo),
        v,
    ));
    let mut v = base();
    v.loop_cursors = true;
    cases.push(Case::new("pagination that loops", Some(Rule::Listing), v));
    let mut v = base();
    v.hang_on = Some("tools/list".into());
    cases.push(Case::new(
        "a server that never answers tools/list",
        Some(Rule::Listing),
        v,
    ));
    let mut v = base();
    v.flood = Some(super::double::Flood {
        on: "tools/list".into(),
        count: 30_000,
        bytes: 10,
    });
    cases.push(Case::new("a notification flood", Some(Rule::Listing), v));
    cases.push(Case {
        prior_invalidation: true,
        ..Case::new(
            "a snapshot an earlier connection invalidated",
            Some(Rule::Invalidated),
            base(),
        )
    });
    let mut v = base();
    v.request_after_initialized = Some("sampling/createMessage".into());
    cases.push(Case::new(
        "the server asks for sampling during discovery",
        Some(Rule::ExcludedRequest),
        v,
    ));
    let mut v = base();
    v.request_after_initialized = Some("elicitation/create".into());
    cases.push(Case::new(
        "the server asks for elicitation during discovery",
        Some(Rule::ExcludedRequest),
        v,
    ));
    cases.push(Case {
        edit: Some(|d| {
            let captured = d["capturedAt"]
                .as_str()
                .and_then(|t| mcp_time::parse(t).ok());
            if let Some(c) = captured {
                let ten_years = Duration::from_secs(3650 * 86_400);
                d["expiresAt"] = json!(mcp_time::format(mcp_time::add(c, ten_years)));
            }
        }),
        ..Case::new(
            "a re-pinned snapshot expiring ten years after its capture",
            Some(Rule::Window),
            base(),
        )
    });
    cases.push(Case {
        edit: Some(|d| {
            d["capturedAt"] = json!("2099-01-01T00:00:00Z");
            d["expiresAt"] = json!("2099-01-08T00:00:00Z");
            d["servers"]["s"]["reviews"]["echo"]["reviewedAt"] = json!("2099-01-01T01:00:00Z");
        }),
        ..Case::new(
            "a re-pinned snapshot captured, reviewed and expiring in 2099",
            Some(Rule::Window),
            base(),
        )
    });
    // 2^53 + 1 is not a double: it canonicalizes to 2^53, so without the I-JSON check a
    // snapshot holding one and a server sending the other compare equal, a silent drift.
    let big = |n: u64| {
        let mut t = echo_tool();
        t["inputSchema"]["properties"]["message"]["maxLength"] = json!(n);
        Script {
            pages: vec![vec![t], vec![other()]],
            ..Script::default()
        }
    };
    cases.push(Case {
        edit: Some(|d| {
            d["servers"]["s"]["toolPages"][0]["tools"][0]["inputSchema"]["properties"]["message"]
                ["maxLength"] = json!(9_007_199_254_740_992_u64);
        }),
        ..Case::new(
            "a re-pinned snapshot holding an integer beyond 2^53 - 1 (outside I-JSON)",
            Some(Rule::Digest),
            big(9_007_199_254_740_993),
        )
    });
    cases.push(Case::new(
        "the server sends an integer beyond 2^53 - 1 (outside I-JSON)",
        Some(Rule::Listing),
        big(9_007_199_254_740_993),
    ));
    cases
}

/// The case that kills each mutant.
pub fn mutant_case(m: Mutant) -> Case {
    let all = gate_cases();
    let pick = |name: &str| all.iter().find(|c| c.name == name).cloned();
    let name = match m {
        Mutant::FirstPageOnly => "the name repeats on a later page",
        Mutant::NameAndSchemaOnly => "description changed",
        Mutant::ServerInfoIgnored => "serverInfo.version changed",
        Mutant::ExpiryIgnored => "an expired snapshot",
        Mutant::RevivedByRelist => "list_changed during pagination, identical re-list (settle too)",
        Mutant::DuplicatesTolerated => "the name repeats on the same page",
        Mutant::InvalidationForgotten => "a snapshot an earlier connection invalidated",
        Mutant::ExcludedRequestsTolerated => "the server asks for sampling during discovery",
        Mutant::WindowUnchecked => "a re-pinned snapshot expiring ten years after its capture",
    };
    pick(name).unwrap_or_else(|| Case::new("missing case", None, Script::default()))
}

/// What a case observed.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// `None`: the gate passed; otherwise the refusing rule.
    pub refused: Option<Rule>,
    /// Connections the live double saw.
    pub connections: u64,
    /// The refusal in words.
    pub message: String,
}

/// Run one case (with a mutant, or the correct gate) in a scratch directory.
pub async fn run_case(case: &Case, mutant: Option<Mutant>, dir: &Path) -> Result<Observed, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let path: PathBuf = dir.join(format!("{}.json", uuid::Uuid::new_v4()));
    let mut sha = pin(&case.reviewed, "echo", &path).await?;
    let mut doc = snapshot::read_strict(&path).map_err(|e| e.to_string())?.doc;
    if let Some(edit) = case.edit {
        edit(&mut doc);
        sha = snapshot::write(&path, &doc).map_err(|e| e.to_string())?;
    }
    if case.prior_invalidation {
        let record = prior_record(&sha, mcp_time::now());
        super::invalidation::append(&path, &record).map_err(|e| e.to_string())?;
    }
    let live = InProcess::new(case.live.clone());
    let mut opts = GateOptions::new(&sha, "s", "echo");
    opts.policy = case.policy;
    opts.mutant = mutant;
    opts.timeouts.request = Duration::from_millis(500);
    opts.limits.max_messages = 20_000;
    if let Some(d) = case.later {
        let captured = doc["capturedAt"]
            .as_str()
            .map(mcp_time::parse)
            .transpose()
            .map_err(|e| e.to_string())?;
        opts.now = captured.map(|c| mcp_time::add(c, d));
    }
    let observed = observe(&path, &live, &opts).await;
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(super::invalidation::record_path(&path));
    Ok(observed)
}

/// The invalidation an earlier connection recorded, in the case that has one.
fn prior_record(sha: &str, at: time::OffsetDateTime) -> super::invalidation::Record {
    super::invalidation::Record {
        manifest_sha256: sha.to_string(),
        server: "s".into(),
        at: mcp_time::format(at),
        rule: "4.5.4-indeterminate".into(),
        startup: false,
        reason: "notifications/tools/list_changed arrived during a call".into(),
    }
}

/// Run the gate for the snapshot at `path` against `live`; what it gave.
async fn observe(path: &Path, live: &InProcess, opts: &GateOptions) -> Observed {
    let result = gate::gate(path, &Endpoint::Double(live.clone()), opts).await;
    let connections = live
        .witness
        .connections
        .load(std::sync::atomic::Ordering::SeqCst);
    match result {
        Ok(p) => {
            p.client.close().await;
            Observed {
                refused: None,
                connections,
                message: "pass".into(),
            }
        }
        Err(r) => Observed {
            refused: Some(r.refusal.rule),
            connections,
            message: r.refusal.message,
        },
    }
}

/// The mutation matrix as Markdown: every mutant, the rule it weakens, the killing case,
/// and the two verdicts.
pub async fn mutant_report(dir: &Path) -> Result<String, String> {
    let mut out = String::from(
        "# MCP gate mutants\n\n\
         Generated by `cargo test --test integration mcp_double::mutant_report_is_current` (set `TOOLCERT_BLESS=1` to rewrite).\n\
         Each mutant weakens one rule of the pre-call gate (`toolcert mcp gate --mutant NAME`, hidden). The killing case runs\n\
         against toolcert's MCP double; a mutant is killed when its verdict differs from the correct gate's.\n\n\
         | Mutant | Weakens | Killing case | Correct gate | Mutant gate | Killed |\n\
         |---|---|---|---|---|---|\n",
    );
    let show = |o: &Observed| {
        o.refused
            .map_or("pass".to_string(), |r| format!("refused `{}`", r.id()))
    };
    for m in Mutant::ALL {
        let case = mutant_case(m);
        let correct = run_case(&case, None, dir).await?;
        let mutant = run_case(&case, Some(m), dir).await?;
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            m.name(),
            m.breaks(),
            case.name,
            show(&correct),
            show(&mutant),
            if correct.refused != mutant.refused {
                "yes"
            } else {
                "**no**"
            }
        ));
    }
    Ok(out)
}

/// The profile of a portable drift vector's `vector.json`.
pub const VECTOR_PROFILE: &str = "toolcert.mcp-drift-vector.0.1";

/// The instant every vector's snapshot is captured at (reviewed an hour later, judged a day
/// later unless the case says otherwise), so the files do not change from run to run.
pub const VECTOR_CAPTURED_AT: &str = "2026-01-01T00:00:00Z";

/// What a vector expects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// `pass` or `refused`.
    pub verdict: String,
    /// The rule a refusal names (toolcert's id of the seed's rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// `vector.json`: how to run one vector and what it must give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Vector {
    /// [`VECTOR_PROFILE`].
    pub profile: String,
    /// What the case shows.
    pub name: String,
    /// The server key in the snapshot.
    pub server: String,
    /// The selected tool.
    pub tool: String,
    /// The pinned digest (of `snapshot.json`).
    pub manifest_sha256: String,
    /// The instant to judge expiry at.
    pub now: String,
    /// `strict` or `settle`.
    pub list_changed_policy: ListChangedPolicy,
    /// An invalidation an earlier connection recorded (to be in force before the gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_invalidation: Option<super::invalidation::Record>,
    /// The expected verdict.
    pub expect: Expect,
}

fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').chars().take(60).collect()
}

fn pretty(v: &impl Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(v)
        .map(|mut t| {
            t.push('\n');
            t
        })
        .map_err(|e| e.to_string())
}

/// Write every gate case as a vector directory under `dir` (`001-…`, `002-…`); how many.
/// Each holds `vector.json`, `snapshot.json` (the pinned snapshot, byte for byte what
/// `manifestSha256` is the digest of, once canonicalized), `server.json` (the live server as
/// the double's script) and `exchange.jsonl` (every message of toolcert's gate run against
/// it, in order, at most 200; `clientInfo.version` written as `(toolcert)` so the files do
/// not change with toolcert's version).
pub async fn export_vectors(dir: &Path) -> Result<usize, String> {
    let t = |s: &str| mcp_time::parse(s).map_err(|e| e.to_string());
    let captured = t(VECTOR_CAPTURED_AT)?;
    let cases = gate_cases();
    for (i, case) in cases.iter().enumerate() {
        let sub = dir.join(format!("{:03}-{}", i + 1, slug(case.name)));
        std::fs::create_dir_all(&sub).map_err(|e| e.to_string())?;
        let mut opts = CaptureOptions::new("s");
        opts.captured_at = Some(captured);
        let mut doc = snapshot::capture(
            &Endpoint::Double(InProcess::new(case.reviewed.clone())),
            &opts,
        )
        .await
        .map_err(|e| e.to_string())?;
        let tool = snapshot::tools_named(
            snapshot::server(&doc, "s").map_err(|e| e.to_string())?,
            "echo",
        )
        .first()
        .map(|(_, t)| (*t).clone())
        .ok_or("no echo")?;
        let mut review = acceptable_review(&tool);
        review["reviewedAt"] = json!(mcp_time::format(captured + time::Duration::hours(1)));
        // Written directly: `review::apply` checks the date against the real clock.
        doc["servers"]["s"]["reviews"]["echo"] = review;
        if let Some(edit) = case.edit {
            edit(&mut doc);
        }
        let sha = snapshot::write(&sub.join("snapshot.json"), &doc).map_err(|e| e.to_string())?;
        let now = mcp_time::add(captured, case.later.unwrap_or(Duration::from_secs(86_400)));
        let vector = Vector {
            profile: VECTOR_PROFILE.into(),
            name: case.name.into(),
            server: "s".into(),
            tool: "echo".into(),
            manifest_sha256: sha.clone(),
            now: mcp_time::format(now),
            list_changed_policy: case.policy,
            prior_invalidation: case
                .prior_invalidation
                .then(|| prior_record(&sha, captured + time::Duration::hours(2))),
            expect: Expect {
                verdict: if case.expect.is_some() {
                    "refused"
                } else {
                    "pass"
                }
                .into(),
                rule: case.expect.map(|r| r.id().to_string()),
            },
        };
        std::fs::write(sub.join("vector.json"), pretty(&vector)?).map_err(|e| e.to_string())?;
        std::fs::write(sub.join("server.json"), pretty(&case.live)?).map_err(|e| e.to_string())?;
        let scratch =
            std::env::temp_dir().join(format!("toolcert-vectors-{}", uuid::Uuid::new_v4()));
        let (observed, live) = run_vector(&sub, &scratch).await?;
        let _ = std::fs::remove_dir_all(&scratch);
        if observed.refused.map(|r| r.id().to_string()) != vector.expect.rule {
            return Err(format!(
                "{}: the gate gave {:?}, the case expects {:?}: {}",
                case.name, observed.refused, vector.expect.rule, observed.message
            ));
        }
        let mut exchange = String::new();
        let transcript = live
            .witness
            .transcript
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default();
        for mut line in transcript {
            if let Some(v) = line.pointer_mut("/message/params/clientInfo/version") {
                *v = json!("(toolcert)");
            }
            exchange.push_str(&line.to_string());
            exchange.push('\n');
        }
        let dropped = live
            .witness
            .transcript_dropped
            .load(std::sync::atomic::Ordering::Relaxed);
        if dropped > 0 {
            exchange.push_str(&json!({"truncated": dropped}).to_string());
            exchange.push('\n');
        }
        std::fs::write(sub.join("exchange.jsonl"), exchange).map_err(|e| e.to_string())?;
    }
    Ok(cases.len())
}

/// Run one vector from its files alone: copy its snapshot into `scratch`, put its prior
/// invalidation beside it, serve `server.json` in process, gate at its `now`. What the gate
/// gave, and the double (its witness holds the exchange).
pub async fn run_vector(dir: &Path, scratch: &Path) -> Result<(Observed, InProcess), String> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("{}/{name}: {e}", dir.display()))
    };
    let vector: Vector =
        serde_json::from_str(&read("vector.json")?).map_err(|e| format!("vector.json: {e}"))?;
    if vector.profile != VECTOR_PROFILE {
        return Err(format!("{}: profile {}", dir.display(), vector.profile));
    }
    let script: Script =
        serde_json::from_str(&read("server.json")?).map_err(|e| format!("server.json: {e}"))?;
    std::fs::create_dir_all(scratch).map_err(|e| e.to_string())?;
    let path = scratch.join(format!("{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&path, read("snapshot.json")?).map_err(|e| e.to_string())?;
    if let Some(record) = &vector.prior_invalidation {
        super::invalidation::append(&path, record).map_err(|e| e.to_string())?;
    }
    let live = InProcess::new(script);
    let mut opts = GateOptions::new(&vector.manifest_sha256, &vector.server, &vector.tool);
    opts.policy = vector.list_changed_policy;
    opts.now = Some(mcp_time::parse(&vector.now).map_err(|e| e.to_string())?);
    opts.timeouts.request = Duration::from_millis(500);
    let observed = observe(&path, &live, &opts).await;
    Ok((observed, live))
}
