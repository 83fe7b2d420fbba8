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
//! - capture of server-everything.
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
use toolcert::mcp::snapshot::{self, CaptureOptions};
use toolcert::mcp::transport::{Endpoint, Limits, StdioCommand};
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

fn main() {
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

    // 2,000 tools on 20 pages.
    let ok =
        json!({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"echo": "ok"}});
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
