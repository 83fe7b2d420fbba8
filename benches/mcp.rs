//! Wall time of MCP capture and of the pre-call gate.
//!
//! `cargo bench --bench mcp` prints medians over N runs (default 5, `TOOLCERT_BENCH_ITERS`):
//!
//! - capture of a 2,000-tool, 20-page double (in process and on stdio): target < 1 s;
//! - gate cost per call: a gated call minus a plain call (connect, initialize, tools/call,
//!   close) on the same stdio server, and the same cost as the call measures it (offline
//!   rules + listing + barriers + comparison + pre-dispatch), with its stages: target < 50 ms.
//!   Measured on the stdio double and on mcp-server-time (strict policy), and on
//!   server-everything, which needs the explicit `settle` policy (its start-up list_changed);
//!   there `settle` costs one extra ping round trip (the causal start-up barrier), no window;
//! - capture of server-everything;
//! - the guard (`toolcert mcp guard`, in process, in front of the stdio double with 2,000
//!   tools on 40 pages): per call, the whole gate and the guard's overhead (everything but the
//!   live listing the seed requires before each call), next to a bare listing of the same
//!   server in the same run (toolcert's client, and a minimal serde_json line reader): goals
//!   overhead < 5 ms and whole gate < 1.5x the bare listing.
//!
//! The machine these figures come from may be shared with other builds: the medians are
//! wall time, not CPU time.
//!
//! The real servers are used when `scripts/install-mcp-peers.sh` has installed them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolcert::mcp::call::{self, CallOptions, Outcome};
use toolcert::mcp::cases::acceptable_review;
use toolcert::mcp::client::{Client, Timeouts};
use toolcert::mcp::double::{InProcess, Script, generated_pages};
use toolcert::mcp::gate::{GateOptions, ListChangedPolicy};
use toolcert::mcp::guard::{self, Guard, GuardConfig, audit::Audit};
use toolcert::mcp::snapshot::{self, CaptureOptions};
use toolcert::mcp::transport::{Endpoint, Limits, StdioCommand, Transport};
use toolcert::mcp::{REVISION_2025_11_25, review};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn time<F: FnMut()>(iters: usize, mut f: F) -> f64 {
    median(
        (0..iters)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

/// Capture, review `tool`, write; (path, digest).
async fn pin(ep: &Endpoint, tool: &str, dir: &Path) -> (PathBuf, String) {
    let mut doc = snapshot::capture(ep, &CaptureOptions::new("s"))
        .await
        .expect("capture");
    let t = snapshot::tools_named(&doc["servers"]["s"], tool)[0]
        .1
        .clone();
    review::apply(&mut doc, "s", tool, acceptable_review(&t)).expect("review");
    let path = dir.join(format!("{}.json", tool));
    let sha = snapshot::write(&path, &doc).expect("write");
    (path, sha)
}

async fn plain_call(ep: &Endpoint, tool: &str, args: &Value) {
    let mut c = Client::connect(ep, Limits::default(), Timeouts::default())
        .await
        .expect("connect");
    c.initialize(REVISION_2025_11_25, &json!({}))
        .await
        .expect("initialize");
    let r = c.call_tool(tool, args).await.expect("call");
    assert_ne!(r.get("isError"), Some(&json!(true)));
    c.close().await;
}

/// The runtime, the run count and the scratch directory every measurement shares.
struct Ctx<'a> {
    rt: &'a tokio::runtime::Runtime,
    iters: usize,
    dir: &'a Path,
}

fn gate_cost(
    ctx: &Ctx,
    label: &str,
    ep: &Endpoint,
    tool: &str,
    args: Value,
    policy: ListChangedPolicy,
) {
    let (rt, iters, dir) = (ctx.rt, ctx.iters, ctx.dir);
    let (path, sha) = rt.block_on(pin(ep, tool, dir));
    let mut g = GateOptions::new(&sha, "s", tool);
    g.policy = policy;
    let copts = CallOptions {
        arguments: Some(args.clone()),
        expect_output: false,
        ..Default::default()
    };
    let mut added = Vec::new();
    let (mut offline, mut listing, mut pre) = (Vec::new(), Vec::new(), Vec::new());
    let gated = time(iters, || {
        let r = rt.block_on(call::call(&path, ep, &g, &copts));
        assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
        let t = r.gate.timings_us;
        added.push(Duration::from_micros(
            t.offline + t.listing_compare + r.pre_dispatch_us,
        ));
        offline.push(Duration::from_micros(t.offline));
        listing.push(Duration::from_micros(t.listing_compare));
        pre.push(Duration::from_micros(r.pre_dispatch_us));
    });
    let plain = time(iters, || rt.block_on(plain_call(ep, tool, &args)));
    println!(
        "{label}: gated call median {gated:.1} ms, plain call {plain:.1} ms (difference {:.1} ms, noisy across process starts); measured in the call: the gate adds {:.1} ms (target < 50 ms) = offline rules {:.1} + listing, barriers and comparison {:.1} + pre-dispatch {:.1}",
        gated - plain,
        median(added),
        median(offline),
        median(listing),
        median(pre),
    );
}

/// A bare listing of every page with the least a client can do: write `tools/list` lines to
/// the server's stdin, read its answer lines, parse each with `serde_json` (no duplicate-key
/// or I-JSON check), follow `nextCursor`.
fn minimal_listing(rt: &tokio::runtime::Runtime, argv: &[String], iters: usize) -> f64 {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    rt.block_on(async {
        let mut child = tokio::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let mut id = 0;
        let send = async |stdin: &mut tokio::process::ChildStdin, m: Value| {
            let mut b = serde_json::to_vec(&m).unwrap();
            b.push(b'\n');
            stdin.write_all(&b).await.unwrap();
        };
        id += 1;
        send(&mut stdin, json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bare", "version": "0"}}})).await;
        out.read_line(&mut line).await.unwrap();
        send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let mut runs = Vec::new();
        for _ in 0..iters {
            let t = Instant::now();
            let mut cursor: Option<String> = None;
            loop {
                id += 1;
                let params = match &cursor {
                    Some(c) => json!({"cursor": c}),
                    None => json!({}),
                };
                send(&mut stdin, json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})).await;
                line.clear();
                out.read_line(&mut line).await.unwrap();
                let v: Value = serde_json::from_str(&line).unwrap();
                match v["result"]["nextCursor"].as_str() {
                    Some(c) => cursor = Some(c.to_string()),
                    None => break,
                }
            }
            runs.push(t.elapsed());
        }
        drop(stdin);
        let _ = child.kill().await;
        median(runs)
    })
}

/// The guard, in process, in front of the stdio double: per-call timings from its audit log
/// and the client's round trip, next to bare listings of the same server.
fn guard_cost(ctx: &Ctx, argv: &[String], tool: &str) {
    let (rt, iters, dir) = (ctx.rt, ctx.iters.max(10), ctx.dir);
    let ep = Endpoint::Stdio(StdioCommand::argv(argv.to_vec()));
    let (path, sha) = rt.block_on(pin(&ep, tool, dir));
    // The bare listing: toolcert's own client, one connection, every page.
    let bare = rt.block_on(async {
        let mut c = Client::connect(&ep, Limits::default(), Timeouts::default())
            .await
            .unwrap();
        c.initialize(REVISION_2025_11_25, &json!({})).await.unwrap();
        let mut runs = Vec::new();
        for _ in 0..iters {
            let t = Instant::now();
            let l = c.list_tools(1000, false).await.unwrap();
            assert_eq!(l.pages.len(), 40);
            runs.push(t.elapsed());
        }
        c.close().await;
        median(runs)
    });
    let minimal = minimal_listing(rt, argv, iters);
    let audit = dir.join("guard-audit.jsonl");
    let _ = std::fs::remove_file(&audit);
    let (guarded, direct) = rt.block_on(async {
        let g = Guard::new(
            GuardConfig {
                manifest: path.clone(),
                upstream: ep.clone(),
                gate: GateOptions::new(&sha, "s", ""),
                secrets: Vec::new(),
            },
            Audit::file(&audit).unwrap(),
        )
        .unwrap();
        let (client, task) = guard::on_pipe(g);
        let (cr, cw) = tokio::io::split(client);
        let mut c = Client::over(
            Transport::lines(cr, cw, Limits::default()),
            Timeouts::default(),
        );
        c.initialize(REVISION_2025_11_25, &json!({})).await.unwrap();
        let mut runs = Vec::new();
        for _ in 0..iters {
            let t = Instant::now();
            let r = c.call_tool(tool, &json!({"message": "hi"})).await.unwrap();
            assert_eq!(r["structuredContent"]["echo"], "ok", "{r}");
            runs.push(t.elapsed());
        }
        c.close().await;
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        // The same call without the guard, on one connection to the same server.
        let mut d = Client::connect(&ep, Limits::default(), Timeouts::default())
            .await
            .unwrap();
        d.initialize(REVISION_2025_11_25, &json!({})).await.unwrap();
        let mut direct = Vec::new();
        for _ in 0..iters {
            let t = Instant::now();
            d.call_tool(tool, &json!({"message": "hi"})).await.unwrap();
            direct.push(t.elapsed());
        }
        d.close().await;
        (median(runs), median(direct))
    });
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().all(|l| l["verdict"] == "ok"));
    let us = |k: &str| -> Vec<Duration> {
        lines
            .iter()
            .map(|l| Duration::from_micros(l["timingsUs"][k].as_u64().unwrap()))
            .collect()
    };
    let overhead: Vec<Duration> = lines
        .iter()
        .map(|l| {
            let t = &l["timingsUs"];
            Duration::from_micros(t["gate"].as_u64().unwrap() - t["liveListing"].as_u64().unwrap())
        })
        .collect();
    let (gate, listing, overhead) = (
        median(us("gate")),
        median(us("liveListing")),
        median(overhead),
    );
    println!(
        "guard, stdio double, 2,000 tools / 40 pages, {iters} calls: whole gate median {gate:.1} ms (its live listing {listing:.1} ms; the guard's overhead beyond it {overhead:.2} ms, goal < 5 ms); bare listing of the same server {bare:.1} ms with toolcert's client, {minimal:.1} ms with a minimal serde_json reader; whole gate / bare listing = {:.2} (goal < 1.5), / minimal listing = {:.2}; a call through the guard {guarded:.1} ms end to end, the same call without it {direct:.1} ms",
        gate / bare,
        gate / minimal,
    );
}

fn main() {
    // `TOOLCERT_BENCH_ONLY=guard` runs only the guard's measurement.
    let only_guard = std::env::var("TOOLCERT_BENCH_ONLY").is_ok_and(|v| v == "guard");
    let iters: usize = std::env::var("TOOLCERT_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("toolcert-mcp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ctx = Ctx {
        rt: &rt,
        iters,
        dir: &dir,
    };

    let ok =
        json!({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"echo": "ok"}});
    // The guard: 2,000 tools on 40 pages.
    let forty = dir.join("forty.json");
    std::fs::write(
        &forty,
        serde_json::to_string(&Script {
            pages: generated_pages(2000, 50),
            call_result: ok.clone(),
            ..Script::default()
        })
        .unwrap(),
    )
    .unwrap();
    guard_cost(
        &ctx,
        &[
            env!("CARGO_BIN_EXE_toolcert").into(),
            "mcp".into(),
            "double".into(),
            "--script".into(),
            forty.display().to_string(),
        ],
        "tool-01999",
    );
    if only_guard {
        return;
    }
    // 2,000 tools on 20 pages.
    let big = Script {
        pages: generated_pages(2000, 100),
        call_result: ok.clone(),
        ..Script::default()
    };
    let in_process = Endpoint::Double(InProcess::new(big.clone()));
    let ms = time(iters, || {
        let doc = rt
            .block_on(snapshot::capture(&in_process, &CaptureOptions::new("s")))
            .unwrap();
        assert_eq!(
            doc["servers"]["s"]["toolPages"].as_array().unwrap().len(),
            20
        );
    });
    println!(
        "capture of 2,000 tools on 20 pages, in-process double: median {ms:.1} ms (target < 1000 ms)"
    );
    let script = dir.join("big.json");
    std::fs::write(&script, serde_json::to_string(&big).unwrap()).unwrap();
    let stdio = Endpoint::Stdio(StdioCommand::argv(vec![
        env!("CARGO_BIN_EXE_toolcert").into(),
        "mcp".into(),
        "double".into(),
        "--script".into(),
        script.display().to_string(),
    ]));
    let ms = time(iters, || {
        rt.block_on(snapshot::capture(&stdio, &CaptureOptions::new("s")))
            .unwrap();
    });
    println!(
        "capture of 2,000 tools on 20 pages, stdio double: median {ms:.1} ms (target < 1000 ms)"
    );
    gate_cost(
        &ctx,
        "stdio double, 2,000 tools / 20 pages, strict",
        &stdio,
        "tool-01999",
        json!({"message": "hi"}),
        ListChangedPolicy::Strict,
    );
    let small = dir.join("small.json");
    std::fs::write(
        &small,
        serde_json::to_string(&Script {
            call_result: ok,
            ..Script::default()
        })
        .unwrap(),
    )
    .unwrap();
    let small_ep = Endpoint::Stdio(StdioCommand::argv(vec![
        env!("CARGO_BIN_EXE_toolcert").into(),
        "mcp".into(),
        "double".into(),
        "--script".into(),
        small.display().to_string(),
    ]));
    gate_cost(
        &ctx,
        "stdio double, 1 tool, strict",
        &small_ep,
        "echo",
        json!({"message": "hi"}),
        ListChangedPolicy::Strict,
    );

    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-peers");
    let time_bin = peers.join("py/bin/mcp-server-time");
    if time_bin.exists() {
        let ep = Endpoint::Stdio(StdioCommand::argv(vec![time_bin.display().to_string()]));
        gate_cost(
            &ctx,
            "mcp-server-time, strict",
            &ep,
            "get_current_time",
            json!({"timezone": "Etc/UTC"}),
            ListChangedPolicy::Strict,
        );
    } else {
        println!("mcp-server-time not installed (scripts/install-mcp-peers.sh): skipped");
    }
    let entry =
        peers.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if entry.exists() {
        let ep = Endpoint::Stdio(StdioCommand::argv(vec![
            "node".into(),
            entry.display().to_string(),
            "stdio".into(),
        ]));
        let ms = time(iters, || {
            rt.block_on(snapshot::capture(&ep, &CaptureOptions::new("s")))
                .unwrap();
        });
        println!("capture of server-everything (13 tools, node start included): median {ms:.1} ms");
        gate_cost(
            &ctx,
            "server-everything, settle (one start-up ping, no window)",
            &ep,
            "echo",
            json!({"message": "hi"}),
            ListChangedPolicy::Settle,
        );
    } else {
        println!("server-everything not installed (scripts/install-mcp-peers.sh): skipped");
    }
}
