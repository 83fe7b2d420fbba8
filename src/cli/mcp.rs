//! `toolcert mcp`: pin MCP tools. capture → review → commit the snapshot → gate (or call)
//! in CI. Exit codes: 0 pass/ok; 1 a refusal or failed call (the rule is printed); 3 an
//! indeterminate call (never retried); 2 a usage or I/O error.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::Value;

use crate::mcp::call::{self, CallOptions, Outcome};
use crate::mcp::gate::{self, GateOptions, ListChangedPolicy, Mutant};
use crate::mcp::review::{self, ReviewInput};
use crate::mcp::snapshot::{self, CaptureOptions};
use crate::mcp::transport::{Endpoint, StdioCommand};
use crate::mcp::{diff, double, time as mcp_time};

/// `toolcert mcp …`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// The MCP subcommands.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Capture a server's complete tool catalog into a snapshot; print its manifestSha256.
    Capture(CaptureArgs),
    /// Record a reviewer's assertions and input channels for one tool; print the new digest.
    Review(ReviewArgs),
    /// The pre-call gate: digest, expiry, completeness, serverInfo, every page, exact Tool.
    Gate(GateArgs),
    /// Gate, validate the arguments, then tools/call on the same connection.
    Call(CallArgs),
    /// Drift between two snapshots, in words.
    Diff(DiffArgs),
    /// toolcert's scriptable MCP server double on stdio (for tests).
    #[command(hide = true)]
    Double(DoubleArgs),
}

/// How to reach the server.
#[derive(Debug, Args)]
pub struct Connection {
    /// Spawn this command (run by `sh -c`) and speak MCP on its stdio. Its environment is
    /// scrubbed to PATH plus `--env`.
    #[arg(long, conflicts_with = "url", required_unless_present = "url")]
    pub stdio: Option<String>,
    /// A loopback Streamable HTTP endpoint (http://127.0.0.1:PORT/mcp).
    #[arg(long)]
    pub url: Option<String>,
    /// NAME=VALUE for the spawned server's environment (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Seconds to wait for each request (initialize, every tools/list page, ping); for
    /// tools/call see `toolcert mcp call --call-timeout`.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
}

impl Connection {
    fn endpoint(&self) -> anyhow::Result<Endpoint> {
        if let Some(url) = &self.url {
            return Ok(Endpoint::Http(url.clone()));
        }
        let mut cmd = StdioCommand::shell(self.stdio.clone().unwrap_or_default());
        for kv in &self.env {
            let Some((k, v)) = kv.split_once('=') else {
                bail!("--env {kv}: write NAME=VALUE");
            };
            cmd = cmd.with_env(k, v);
        }
        Ok(Endpoint::Stdio(cmd))
    }

    fn timeouts(&self) -> crate::mcp::client::Timeouts {
        crate::mcp::client::Timeouts {
            request: std::time::Duration::from_secs(self.timeout.max(1)),
            ..Default::default()
        }
    }
}

/// `toolcert mcp capture`.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// How to reach the server.
    #[command(flatten)]
    pub conn: Connection,
    /// The symbolic server key the snapshot files it under.
    #[arg(long)]
    pub server: String,
    /// Where to write the snapshot.
    #[arg(long)]
    pub out: PathBuf,
    /// expiresAt = capturedAt + this (s, m, h or d; at most 30d).
    #[arg(long, default_value = "7d")]
    pub expires_in: String,
    /// The MCP revision to ask for (2025-11-25, or the stateless 2026-07-28).
    #[arg(long, default_value = crate::mcp::REVISION_2025_11_25)]
    pub revision: String,
    /// The client capabilities to declare, as JSON (recorded; the gate sends them again).
    #[arg(long, default_value = "{}")]
    pub client_capabilities: String,
    /// Record this capturedAt (UTC, e.g. 2026-08-30T12:00:00Z) instead of now, for a
    /// reproducible capture; it may not lie in the future.
    #[arg(long)]
    pub captured_at: Option<String>,
}

/// `toolcert mcp review`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The snapshot (rewritten in place unless --out).
    pub manifest: PathBuf,
    /// Write the reviewed snapshot here instead.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The server key.
    #[arg(long)]
    pub server: String,
    /// The tool name.
    #[arg(long)]
    pub tool: String,
    /// The reviewer's identity.
    #[arg(long)]
    pub reviewer: String,
    /// The review time (default now, UTC).
    #[arg(long)]
    pub reviewed_at: Option<String>,
    /// Needs no GUI or contemporaneous human interaction (must be true).
    #[arg(long)]
    pub headless: Option<bool>,
    /// Semantics do not depend on prior calls, sessions or handles (must be true).
    #[arg(long)]
    pub independent_calls: Option<bool>,
    /// A model decides the result (must be stated).
    #[arg(long)]
    pub model_backed: Option<bool>,
    /// Reviewed side-effect classes, comma-separated; `none` for an explicit empty list.
    #[arg(long)]
    pub side_effects: Option<String>,
    /// `safe` or `serialize`.
    #[arg(long)]
    pub concurrency: Option<String>,
    /// Inputs and outputs are JSON values or addressable references (must be true).
    #[arg(long = "reference-based-io")]
    pub reference_based_io: Option<bool>,
    /// POINTER=CLASS for each argument channel (RFC 6901 pointer into the arguments; class
    /// data, instruction or authority). Repeatable.
    #[arg(long = "channel", value_name = "POINTER=CLASS")]
    pub channels: Vec<String>,
}

/// `toolcert mcp gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The reviewed snapshot.
    #[arg(long)]
    pub manifest: PathBuf,
    /// Its pinned manifestSha256.
    #[arg(long)]
    pub sha256: String,
    /// The server key.
    #[arg(long)]
    pub server: String,
    /// The tool name (exact, case-sensitive).
    #[arg(long)]
    pub tool: String,
    /// How to reach the server.
    #[command(flatten)]
    pub conn: Connection,
    /// `strict` (default): any list_changed on the connection refuses. `settle`: ignore (and
    /// record) those read before the first tools/list is sent, up to a ping right after
    /// initialized; later ones still refuse.
    #[arg(long, value_enum, default_value_t = ListChangedPolicy::Strict)]
    pub list_changed: ListChangedPolicy,
    /// Print a machine-readable verdict.
    #[arg(long)]
    pub json: bool,
    /// Weaken one rule (mutation tests only).
    #[arg(long, value_enum, hide = true)]
    pub mutant: Option<Mutant>,
}

/// `toolcert mcp call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The gate's flags.
    #[command(flatten)]
    pub gate: GateArgs,
    /// The arguments, a JSON object (absent: `{}`).
    #[arg(long)]
    pub arguments: Option<String>,
    /// The operation declares outputs: require an outputSchema and conforming structuredContent.
    #[arg(long)]
    pub expect_output: bool,
    /// Seconds to wait for the tools/call answer (1 to 3600; default 30). Distinct from
    /// --timeout, which bounds each other request (initialize, every tools/list page, ping).
    /// A call that outlives it is indeterminate (exit 3) and never retried.
    #[arg(long, value_name = "SECS")]
    pub call_timeout: Option<u64>,
}

/// `--call-timeout` as a budget, or why not.
fn call_budget(secs: Option<u64>) -> anyhow::Result<std::time::Duration> {
    use crate::mcp::client::{DEFAULT_CALL_TIMEOUT, MAX_CALL_TIMEOUT};
    let Some(secs) = secs else {
        return Ok(DEFAULT_CALL_TIMEOUT);
    };
    if secs == 0 {
        bail!(
            "--call-timeout 0: the call needs a budget of at least 1 second (at most {})",
            MAX_CALL_TIMEOUT.as_secs()
        );
    }
    if secs > MAX_CALL_TIMEOUT.as_secs() {
        bail!(
            "--call-timeout {secs} exceeds the maximum of {} seconds: a call that outlives its budget is indeterminate and never retried, so pick the longest wait you accept",
            MAX_CALL_TIMEOUT.as_secs()
        );
    }
    Ok(std::time::Duration::from_secs(secs))
}

/// `toolcert mcp diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The reviewed snapshot.
    pub old: PathBuf,
    /// The new one.
    pub new: PathBuf,
}

/// `toolcert mcp double`.
#[derive(Debug, Args)]
pub struct DoubleArgs {
    /// The script (JSON, see `toolcert::mcp::double::Script`).
    #[arg(long)]
    pub script: PathBuf,
}

/// Run `toolcert mcp …`.
pub fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    let rt = super::runtime()?;
    match args.command {
        McpCommand::Capture(a) => rt.block_on(capture(a)),
        McpCommand::Review(a) => review_cmd(a),
        McpCommand::Gate(a) => rt.block_on(gate_cmd(a)),
        McpCommand::Call(a) => rt.block_on(call_cmd(a)),
        McpCommand::Diff(a) => diff_cmd(a),
        McpCommand::Double(a) => {
            let text = std::fs::read_to_string(&a.script)
                .with_context(|| format!("reading {}", a.script.display()))?;
            let script: double::Script =
                serde_json::from_str(&text).context("the double's script")?;
            rt.block_on(double::serve_stdio(script));
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn capture(a: CaptureArgs) -> anyhow::Result<ExitCode> {
    let mut opts = CaptureOptions::new(&a.server);
    opts.expires_in = mcp_time::parse_duration(&a.expires_in)?;
    opts.revision = a.revision.clone();
    opts.client_capabilities = crate::canonical::parse_strict(&a.client_capabilities)
        .context("--client-capabilities must be a JSON object")?;
    if !opts.client_capabilities.is_object() {
        bail!("--client-capabilities must be a JSON object");
    }
    opts.timeouts = a.conn.timeouts();
    if let Some(t) = &a.captured_at {
        let t = mcp_time::parse(t)?;
        if t > mcp_time::add(mcp_time::now(), mcp_time::CLOCK_SKEW) {
            bail!("--captured-at {} lies in the future", mcp_time::format(t));
        }
        opts.captured_at = Some(t);
    }
    let doc = snapshot::capture(&a.conn.endpoint()?, &opts).await?;
    let digest = snapshot::write(&a.out, &doc)?;
    let tools: usize = doc["servers"][&a.server]["toolPages"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|p| p["tools"].as_array().map_or(0, Vec::len))
                .sum()
        })
        .unwrap_or(0);
    eprintln!(
        "captured {} tools on {} page(s) from {} {} at {} (expires {})",
        tools,
        doc["servers"][&a.server]["toolPages"]
            .as_array()
            .map_or(0, Vec::len),
        doc["servers"][&a.server]["serverInfo"]["name"],
        doc["servers"][&a.server]["serverInfo"]["version"],
        doc["protocolVersion"],
        doc["expiresAt"],
    );
    println!("{digest}");
    Ok(ExitCode::SUCCESS)
}

fn review_cmd(a: ReviewArgs) -> anyhow::Result<ExitCode> {
    let mut loaded = snapshot::load(&a.manifest)?;
    let side_effects = a.side_effects.as_deref().map(|s| match s.trim() {
        "none" | "" => Vec::new(),
        list => list.split(',').map(|x| x.trim().to_string()).collect(),
    });
    let mut channels = Vec::new();
    for c in &a.channels {
        let Some((p, class)) = c.rsplit_once('=') else {
            bail!("--channel {c}: write POINTER=CLASS, e.g. /message=data");
        };
        channels.push((p.to_string(), class.to_string()));
    }
    let input = ReviewInput {
        reviewer: a.reviewer.clone(),
        reviewed_at: a
            .reviewed_at
            .clone()
            .unwrap_or_else(|| mcp_time::format(mcp_time::now())),
        headless: a.headless,
        independent_calls: a.independent_calls,
        model_backed: a.model_backed,
        side_effects,
        concurrency: a.concurrency.clone(),
        reference_based_io: a.reference_based_io,
        input_channels: channels,
    };
    match review::apply(&mut loaded.doc, &a.server, &a.tool, input.to_value()) {
        Ok(_) => {
            let out = a.out.as_ref().unwrap_or(&a.manifest);
            let digest = snapshot::write(out, &loaded.doc)?;
            eprintln!(
                "reviewed `{}` on `{}`; wrote {}",
                a.tool,
                a.server,
                out.display()
            );
            println!("{digest}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("toolcert: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

fn gate_options(a: &GateArgs) -> GateOptions {
    let mut o = GateOptions::new(&a.sha256, &a.server, &a.tool);
    o.policy = a.list_changed;
    o.mutant = a.mutant;
    o.timeouts = a.conn.timeouts();
    o
}

async fn gate_cmd(a: GateArgs) -> anyhow::Result<ExitCode> {
    let opts = gate_options(&a);
    let endpoint = a.conn.endpoint()?;
    let result = gate::gate(&a.manifest, &endpoint, &opts).await;
    let code = match &result {
        Ok(p) => {
            if a.json {
                println!("{}", gate::verdict_json(&opts, &Ok(p)));
            } else {
                println!(
                    "pass: `{}` on `{}` matches the reviewed snapshot",
                    a.tool, a.server
                );
            }
            ExitCode::SUCCESS
        }
        Err(r) => {
            if a.json {
                println!("{}", gate::verdict_json(&opts, &Err(r)));
            }
            eprintln!("toolcert: {}", gate::describe(&r.refusal));
            ExitCode::from(1)
        }
    };
    if let Ok(p) = result {
        p.client.close().await;
    }
    Ok(code)
}

async fn call_cmd(a: CallArgs) -> anyhow::Result<ExitCode> {
    let mut opts = gate_options(&a.gate);
    opts.timeouts.call = call_budget(a.call_timeout)?;
    let endpoint = a.gate.conn.endpoint()?;
    let arguments: Option<Value> = match &a.arguments {
        None => None,
        Some(t) => {
            Some(crate::canonical::parse_strict(t).context("--arguments is not strict JSON")?)
        }
    };
    let copts = CallOptions {
        arguments,
        expect_output: a.expect_output,
    };
    let report = call::call(&a.gate.manifest, &endpoint, &opts, &copts).await;
    println!("{}", serde_json::to_string_pretty(&report)?);
    if let Some(r) = &report.refusal {
        eprintln!("toolcert: {}", gate::describe(r));
    } else if let Some(m) = &report.message {
        eprintln!("toolcert: {} ({})", m, report.rule.as_deref().unwrap_or(""));
    }
    Ok(match report.outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Indeterminate => ExitCode::from(3),
        _ => ExitCode::from(1),
    })
}

fn diff_cmd(a: DiffArgs) -> anyhow::Result<ExitCode> {
    let old = snapshot::read_strict(&a.old)?;
    let new = snapshot::read_strict(&a.new)?;
    let words = diff::snapshot_diff(&old.doc, &new.doc);
    if words.is_empty() {
        println!("no drift: both snapshots hash to {}", old.sha256);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} → {}", old.sha256, new.sha256);
    for w in &words {
        println!("- {w}");
    }
    Ok(ExitCode::from(1))
}
