//! `toolcert mcp`: pin MCP tools. capture → review → commit the snapshot → gate (or call)
//! in CI, or put `guard` in front of an MCP client. Exit codes: 0 pass/ok; 1 a refusal or
//! failed call (the rule is printed); 3 an indeterminate call (never retried); 2 a usage or
//! I/O error. Every subcommand that prints a result takes `--json` (one JSON value on
//! stdout); without it stdout is for people (and for `SHA=$(…)`: capture, review and digest
//! print the digest alone).

use clap::builder::TypedValueParser as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::Value;

use toolcert::mcp::call::{self, CallOptions, Outcome};
use toolcert::mcp::gate::{self, GateOptions, ListChangedPolicy, Mutant};
use toolcert::mcp::policy::{LocalPolicy, Pin};
use toolcert::mcp::review::{self, ReviewInput};
use toolcert::mcp::snapshot::{self, CaptureOptions};
use toolcert::mcp::transport::{Credential, Endpoint, StdioCommand};
use toolcert::mcp::{diff, double, time as mcp_time};

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
    /// An MCP proxy for a client: the full gate before every tools/call, everything else
    /// passed through. Stdio: `toolcert mcp guard --manifest F --sha256 H --server KEY --
    /// CMD…`; Streamable HTTP: `--url http://127.0.0.1:PORT/mcp --listen 127.0.0.1:0`.
    Guard(GuardArgs),
    /// Drift between two snapshots, in words.
    Diff(DiffArgs),
    /// Print a snapshot's manifestSha256 (SHA-256 over its RFC 8785 bytes).
    Digest(DigestArgs),
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
    #[command(flatten)]
    pub auth: Authorization,
}

/// Under which authorization the catalog is listed (MCP 2026-07-28: `tools/list` MAY vary by
/// the authorization presented).
#[derive(Debug, Args)]
pub struct Authorization {
    /// Send this environment variable's value as the HTTP `Authorization` header (e.g.
    /// `Bearer …`). Read from the environment so it never appears in a process list; never
    /// written anywhere, scrubbed from everything shown. Needs --auth-context.
    #[arg(long, value_name = "VAR", requires = "auth_context")]
    pub authorization_env: Option<String>,
    /// A name for the authorization context the catalog is listed under (e.g. `ci-readonly`).
    /// Capture records it; the gate refuses to run under another. Default `none`.
    #[arg(long, value_name = "LABEL", default_value = gate::NO_AUTHORIZATION)]
    pub auth_context: String,
}

impl Authorization {
    /// The credential, read from its environment variable.
    fn credential(&self) -> anyhow::Result<Option<Credential>> {
        let Some(var) = &self.authorization_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(Some(Credential::new(v))),
            _ => bail!(
                "--authorization-env {var}: the environment variable {var} is not set (or empty)"
            ),
        }
    }
}

impl Connection {
    /// The endpoint, and the secrets its configuration holds (for the redactor).
    fn endpoint(&self) -> anyhow::Result<(Endpoint, Vec<String>)> {
        let mut secrets = Vec::new();
        let credential = self.auth.credential()?;
        if let Some(c) = &credential {
            secrets.push(c.expose().to_string());
            if let Some((_, token)) = c.expose().split_once(' ') {
                secrets.push(token.trim().to_string());
            }
        }
        if let Some(url) = &self.url {
            return Ok(match credential {
                Some(c) => (Endpoint::AuthorizedHttp(url.clone(), c), secrets),
                None => (Endpoint::Http(url.clone()), secrets),
            });
        }
        if credential.is_some() {
            bail!(
                "--authorization-env sends an HTTP header: use it with --url (a stdio server takes its credentials through --env)"
            );
        }
        let mut cmd = StdioCommand::shell(self.stdio.clone().unwrap_or_default());
        for (k, v) in parse_env(&self.env)? {
            secrets.push(v.clone());
            cmd = cmd.with_env(&k, &v);
        }
        Ok((Endpoint::Stdio(cmd), secrets))
    }

    fn timeouts(&self) -> toolcert::mcp::client::Timeouts {
        toolcert::mcp::client::Timeouts {
            request: std::time::Duration::from_secs(self.timeout.max(1)),
            ..Default::default()
        }
    }
}

/// `NAME=VALUE` pairs.
fn parse_env(pairs: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    pairs
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => bail!("--env {kv}: write NAME=VALUE"),
        })
        .collect()
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
    /// expiresAt = capturedAt + this (s, m, h or d; at least 1h, at most 30d).
    #[arg(long, default_value = "7d")]
    pub expires_in: String,
    /// The MCP revision to ask for (2025-11-25, or the stateless 2026-07-28).
    #[arg(long, default_value = toolcert::mcp::REVISION_2025_11_25)]
    pub revision: String,
    /// The client capabilities to declare, as JSON (recorded; the gate sends them again).
    #[arg(long, default_value = "{}")]
    pub client_capabilities: String,
    /// Record this capturedAt (UTC, e.g. 2026-08-30T12:00:00Z) instead of now, for a
    /// reproducible capture; it may not lie in the future.
    #[arg(long)]
    pub captured_at: Option<String>,
    /// Print a JSON summary instead of the digest.
    #[arg(long)]
    pub json: bool,
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
    /// Print a JSON object (the digest, or the refusal) instead of the digest.
    #[arg(long)]
    pub json: bool,
}

/// What a gate checks against, shared by `gate`, `call` and `guard`.
#[derive(Debug, Args)]
pub struct Pinning {
    /// The reviewed snapshot.
    #[arg(long)]
    pub manifest: PathBuf,
    /// Its pinned manifestSha256.
    #[arg(long)]
    pub sha256: String,
    /// The server key.
    #[arg(long)]
    pub server: String,
    /// `strict` (default): any list_changed on the connection refuses. `settle`: ignore (and
    /// record) those read before the first tools/list is sent, up to a ping right after
    /// initialized; later ones still refuse.
    #[arg(
        long,
        default_value = "strict",
        value_parser = clap::builder::PossibleValuesParser::new(ListChangedPolicy::ALL.map(|p| p.name()))
            .try_map(|s| s.parse::<ListChangedPolicy>())
    )]
    pub list_changed: ListChangedPolicy,
    /// The deployment's local policy file (toolcert.mcp-local-policy.0.1: accepted reviewers,
    /// modelBacked, sideEffects, concurrency, input-channel classes, maxExpiresIn, pin).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Pin past the anchors: `instructions`, `catalog` (the whole catalog, every tool in
    /// order, against tool shadowing). Comma-separated or repeated; adds to the policy's.
    #[arg(long, value_name = "WHAT")]
    pub pin: Vec<String>,
    /// Weaken one rule (mutation tests only).
    #[arg(
        long,
        hide = true,
        value_parser = clap::builder::PossibleValuesParser::new(Mutant::ALL.map(|m| m.name()))
            .try_map(|s| s.parse::<Mutant>())
    )]
    pub mutant: Option<Mutant>,
}

impl Pinning {
    /// Gate options for `tool`, with the policy file read.
    fn options(&self, tool: &str, conn: &Connection) -> anyhow::Result<GateOptions> {
        let mut o = GateOptions::new(&self.sha256, &self.server, tool);
        o.policy = self.list_changed;
        o.mutant = self.mutant;
        o.timeouts = conn.timeouts();
        o.authorization = conn.auth.auth_context.clone();
        if let Some(p) = &self.policy {
            o.local = LocalPolicy::load(p)?;
        }
        o.pin = Pin::parse(&self.pin)?;
        Ok(o)
    }
}

/// `toolcert mcp gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The snapshot, digest, server and policies.
    #[command(flatten)]
    pub pinning: Pinning,
    /// The tool name (exact, case-sensitive).
    #[arg(long)]
    pub tool: String,
    /// How to reach the server.
    #[command(flatten)]
    pub conn: Connection,
    /// Print a machine-readable verdict.
    #[arg(long)]
    pub json: bool,
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

/// `toolcert mcp guard`.
#[derive(Debug, Args)]
pub struct GuardArgs {
    /// The snapshot, digest, server and policies.
    #[command(flatten)]
    pub pinning: Pinning,
    /// The server's loopback Streamable HTTP endpoint (instead of a command after `--`).
    #[arg(long)]
    pub url: Option<String>,
    /// Where the HTTP guard listens (a loopback address; port 0 picks a free one). It says
    /// `toolcert guard: listening on http://127.0.0.1:PORT/mcp` on stderr.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    /// NAME=VALUE for the server's environment (stdio; repeatable). Scrubbed to PATH plus
    /// these, as `capture` runs it.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Seconds to wait for each request to the server (initialize, every tools/list page,
    /// ping).
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
    /// Seconds to wait for a tools/call (and any other request the client forwards): 1 to
    /// 3600, default 30. A call that outlives it is indeterminate and never retried.
    #[arg(long, value_name = "SECS")]
    pub call_timeout: Option<u64>,
    /// Append the audit log (one JSON line per tools/call) to this file; default stderr.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    #[command(flatten)]
    pub auth: Authorization,
    /// The server command and its arguments, after `--` (run without a shell).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `--call-timeout` as a budget, or why not.
fn call_budget(secs: Option<u64>) -> anyhow::Result<std::time::Duration> {
    use toolcert::mcp::client::{DEFAULT_CALL_TIMEOUT, MAX_CALL_TIMEOUT};
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
    /// Print the changes as a JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `toolcert mcp digest`.
#[derive(Debug, Args)]
pub struct DigestArgs {
    /// The snapshot.
    pub manifest: PathBuf,
    /// Print a JSON object.
    #[arg(long)]
    pub json: bool,
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
    let rt = super::common::runtime()?;
    match args.command {
        McpCommand::Capture(a) => rt.block_on(capture(a)),
        McpCommand::Review(a) => review_cmd(a),
        McpCommand::Gate(a) => rt.block_on(gate_cmd(a)),
        McpCommand::Call(a) => rt.block_on(call_cmd(a)),
        McpCommand::Guard(a) => rt.block_on(guard_cmd(a)),
        McpCommand::Diff(a) => diff_cmd(a),
        McpCommand::Digest(a) => digest_cmd(a),
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
    opts.client_capabilities = toolcert::canonical::parse_strict(&a.client_capabilities)
        .context("--client-capabilities must be a JSON object")?;
    if !opts.client_capabilities.is_object() {
        bail!("--client-capabilities must be a JSON object");
    }
    opts.timeouts = a.conn.timeouts();
    opts.authorization = a.conn.auth.auth_context.clone();
    if let Some(t) = &a.captured_at {
        let t = mcp_time::parse(t)?;
        if t > mcp_time::add(mcp_time::now(), mcp_time::CLOCK_SKEW) {
            bail!("--captured-at {} lies in the future", mcp_time::format(t));
        }
        opts.captured_at = Some(t);
    }
    let (endpoint, secrets) = a.conn.endpoint()?;
    let redactor = toolcert::redact::Redactor::new(secrets, Vec::new());
    let doc = match snapshot::capture(&endpoint, &opts).await {
        Ok(d) => d,
        Err(e) => bail!("{}", redactor.text(&e.to_string())),
    };
    let digest = snapshot::write(&a.out, &doc)?;
    let entry = &doc["servers"][&a.server];
    let pages = snapshot::pages(entry);
    let tools: usize = pages
        .iter()
        .map(|p| p["tools"].as_array().map_or(0, Vec::len))
        .sum();
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "manifestSha256": digest,
                "out": a.out.display().to_string(),
                "server": a.server,
                "protocolVersion": doc["protocolVersion"],
                "serverInfo": entry["serverInfo"],
                "tools": tools,
                "pages": pages.len(),
                "capturedAt": doc["capturedAt"],
                "expiresAt": doc["expiresAt"],
                "captureEvidence": entry["captureEvidence"],
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "captured {} tools on {} page(s) from {} {} at {} (expires {})",
        tools,
        pages.len(),
        entry["serverInfo"]["name"],
        entry["serverInfo"]["version"],
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
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"manifestSha256": digest, "out": out.display().to_string(), "server": a.server, "tool": a.tool})
                );
            } else {
                println!("{digest}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"refused": {"rule": e.rule, "what": e.what}})
                );
            }
            eprintln!("toolcert: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

async fn gate_cmd(a: GateArgs) -> anyhow::Result<ExitCode> {
    let opts = a.pinning.options(&a.tool, &a.conn)?;
    let (endpoint, secrets) = a.conn.endpoint()?;
    let redactor = toolcert::redact::Redactor::new(secrets, Vec::new());
    let result = gate::gate(&a.pinning.manifest, &endpoint, &opts).await;
    let code = match &result {
        Ok(p) => {
            if a.json {
                println!("{}", gate::verdict_json(&opts, &Ok(p)));
            } else {
                println!(
                    "pass: `{}` on `{}` matches the reviewed snapshot",
                    a.tool, a.pinning.server
                );
            }
            ExitCode::SUCCESS
        }
        Err(r) => {
            if a.json {
                println!("{}", redactor.value(&gate::verdict_json(&opts, &Err(r))));
            }
            eprintln!("toolcert: {}", redactor.text(&gate::describe(&r.refusal)));
            if let Some(e) = &r.evidence.record_error {
                eprintln!("toolcert: could not record the invalidation: {e}");
            }
            ExitCode::from(1)
        }
    };
    if let Ok(p) = result {
        p.client.close().await;
    }
    Ok(code)
}

async fn call_cmd(a: CallArgs) -> anyhow::Result<ExitCode> {
    let mut opts = a.gate.pinning.options(&a.gate.tool, &a.gate.conn)?;
    opts.timeouts.call = call_budget(a.call_timeout)?;
    let (endpoint, secrets) = a.gate.conn.endpoint()?;
    let arguments: Option<Value> = match &a.arguments {
        None => None,
        Some(t) => {
            Some(toolcert::canonical::parse_strict(t).context("--arguments is not strict JSON")?)
        }
    };
    let copts = CallOptions {
        arguments,
        expect_output: a.expect_output,
        secrets,
    };
    let report = call::call(&a.gate.pinning.manifest, &endpoint, &opts, &copts).await;
    if a.gate.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if report.outcome == Outcome::Ok {
        println!(
            "ok: `{}` on `{}`{}",
            a.gate.tool,
            a.gate.pinning.server,
            match &report.body {
                Some(b) => format!("; body: {b}"),
                None => " (no outputSchema reviewed: no body)".into(),
            }
        );
    }
    if let Some(r) = &report.refusal {
        eprintln!("toolcert: {}", gate::describe(r));
    } else if let Some(m) = &report.message {
        eprintln!("toolcert: {} ({})", m, report.rule.as_deref().unwrap_or(""));
        if let Some(t) = report.diagnostics.get("errorText").and_then(Value::as_str) {
            eprintln!("toolcert: the tool said (diagnostic only): {t}");
        }
    }
    Ok(match report.outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Indeterminate => ExitCode::from(3),
        _ => ExitCode::from(1),
    })
}

async fn guard_cmd(a: GuardArgs) -> anyhow::Result<ExitCode> {
    use toolcert::mcp::guard::{self, Guard, GuardConfig, audit::Audit};
    let (upstream, mut secrets) = match (&a.url, a.command.is_empty()) {
        (Some(_), false) => {
            bail!("give the server either as --url or as a command after --, not both")
        }
        (None, true) => bail!(
            "give the server to guard: a command after -- (stdio), or --url http://127.0.0.1:PORT/mcp"
        ),
        (Some(url), true) => {
            let credential = a.auth.credential()?;
            let secrets = credential.iter().map(|c| c.expose().to_string()).collect();
            match credential {
                Some(c) => (Endpoint::AuthorizedHttp(url.clone(), c), secrets),
                None => (Endpoint::Http(url.clone()), secrets),
            }
        }
        (None, false) => {
            if a.auth.authorization_env.is_some() {
                bail!(
                    "--authorization-env sends an HTTP header: use it with --url (a stdio server takes its credentials through --env)"
                );
            }
            let mut cmd = StdioCommand::argv(a.command.clone());
            let mut secrets = Vec::new();
            for (k, v) in parse_env(&a.env)? {
                secrets.push(v.clone());
                cmd = cmd.with_env(&k, &v);
            }
            (Endpoint::Stdio(cmd), secrets)
        }
    };
    secrets.retain(|s| !s.is_empty());
    let conn = Connection {
        stdio: None,
        url: a.url.clone(),
        env: Vec::new(),
        timeout: a.timeout,
        auth: Authorization {
            authorization_env: None,
            auth_context: a.auth.auth_context.clone(),
        },
    };
    let mut opts = a.pinning.options("", &conn)?;
    opts.timeouts.call = call_budget(a.call_timeout)?;
    let audit = match &a.audit {
        Some(p) => Audit::file(p).with_context(|| format!("--audit {}", p.display()))?,
        None => Audit::stderr(),
    };
    let config = GuardConfig {
        manifest: a.pinning.manifest.clone(),
        upstream,
        gate: opts,
        secrets,
    };
    let guard = match Guard::new(config, audit) {
        Ok(g) => g,
        Err(r) => bail!(
            "the guard refuses to start (nothing was started): {}",
            gate::describe(&r)
        ),
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    if a.url.is_some() {
        let addr: std::net::SocketAddr = a
            .listen
            .parse()
            .with_context(|| format!("--listen {}: write 127.0.0.1:PORT", a.listen))?;
        let http = guard::http::serve_http(guard, addr).await?;
        eprintln!("toolcert guard: listening on {}", http.url);
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        http.shutdown().await;
        return Ok(ExitCode::SUCCESS);
    }
    // Stdio: the client speaks on this process's stdin and stdout; it ends the session by
    // closing stdin (or with SIGTERM); either way the server is stopped (EOF, SIGTERM, SIGKILL).
    let signalled = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    };
    guard::serve_lines(guard, tokio::io::stdin(), tokio::io::stdout(), signalled).await;
    // The server is stopped; a read of stdin may still block a runtime thread (after a
    // signal), which would hold the exit: leave now.
    std::process::exit(0)
}

fn diff_cmd(a: DiffArgs) -> anyhow::Result<ExitCode> {
    let old = snapshot::read_strict(&a.old)?;
    let new = snapshot::read_strict(&a.new)?;
    let words = diff::snapshot_diff(&old.doc, &new.doc);
    if a.json {
        println!(
            "{}",
            serde_json::json!({"old": old.sha256, "new": new.sha256, "changes": words})
        );
    } else if words.is_empty() {
        println!("no drift: both snapshots hash to {}", old.sha256);
    } else {
        println!("{} → {}", old.sha256, new.sha256);
        for w in &words {
            println!("- {w}");
        }
    }
    Ok(if words.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn digest_cmd(a: DigestArgs) -> anyhow::Result<ExitCode> {
    let loaded = snapshot::read_strict(&a.manifest)?;
    // The digest of a document that is not a snapshot is still printed (it is what a pin of
    // that file would be), with the reason it would not pass the gate.
    let schema = snapshot::check_schema(&a.manifest.display().to_string(), &loaded.doc).err();
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "manifestSha256": loaded.sha256,
                "path": a.manifest.display().to_string(),
                "schemaError": schema.as_ref().map(ToString::to_string),
            })
        );
    } else {
        println!("{}", loaded.sha256);
    }
    if let Some(e) = schema {
        eprintln!("toolcert: note: {e}");
    }
    Ok(ExitCode::SUCCESS)
}
