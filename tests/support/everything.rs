//! server-everything (the pinned peer of `scripts/install-mcp-peers.sh`) as the MCP tests run
//! it: its entry point, and its Streamable HTTP mode pinned to loopback.

use std::path::PathBuf;

use super::peers::installed;

/// server-everything's entry point under the peers' install.
pub const ENTRY: &str = "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";

/// `node <entry> stdio`: the argv of server-everything on stdio.
#[allow(dead_code)] // not every test binary runs it on stdio
pub fn stdio_argv() -> Vec<String> {
    vec![
        "node".into(),
        installed(ENTRY).display().to_string(),
        "stdio".into(),
    ]
}

/// server-everything's Streamable HTTP mode binds every interface and has no host option, so
/// it runs here only under `scripts/mcp-force-loopback.cjs` (a `node --require` preload that
/// rewrites every listen() to 127.0.0.1 and exits if the bound address is anything else), on
/// an ephemeral port, and only after /proc/net shows it listening on 127.0.0.1 alone.
pub struct LoopbackEverything {
    child: std::process::Child,
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl Drop for LoopbackEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every listening TCP socket on `port`, as the kernel's hex local address.
fn listeners_on(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 4 || cols[3] != "0A" {
                continue;
            }
            if let Some((addr, p)) = cols[1].rsplit_once(':')
                && u16::from_str_radix(p, 16) == Ok(port)
            {
                out.push(addr.to_string());
            }
        }
    }
    out
}

/// Start server-everything in Streamable HTTP mode on 127.0.0.1 only (an ephemeral port).
pub fn over_http() -> LoopbackEverything {
    let entry = installed(ENTRY).display().to_string();
    let preload = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/mcp-force-loopback.cjs");
    let mut child = std::process::Command::new("node")
        .arg("--require")
        .arg(&preload)
        .arg(&entry)
        .arg("streamableHttp")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PORT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start node");
    // Keep draining its stderr (it logs every session there) so it never blocks on it.
    let lines = super::peers::stderr_lines(&mut child);
    // Owned by the guard first, so a panic below still stops it.
    let mut server = LoopbackEverything {
        child,
        url: String::new(),
    };
    let port: u16 = super::peers::announced(
        &lines,
        "force-loopback: listening on 127.0.0.1:",
        std::time::Duration::from_secs(30),
        "server-everything (streamableHttp)",
        |line| assert!(!line.contains("not 127.0.0.1"), "{line}"),
    )
    .parse()
    .unwrap();
    let listeners = listeners_on(port);
    assert!(
        !listeners.is_empty() && listeners.iter().all(|a| a == "0100007F"),
        "port {port} must be bound to 127.0.0.1 only, the kernel lists {listeners:?}"
    );
    server.url = format!("http://127.0.0.1:{port}/mcp");
    server
}
