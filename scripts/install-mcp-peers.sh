#!/usr/bin/env bash
# Installs the real MCP servers toolcert's tests/mcp_real.rs captures, gates and calls, pinned,
# into target/mcp-peers (inside the build directory, so `cargo clean` removes them too):
#
#   target/mcp-peers/npm/node_modules/@modelcontextprotocol/server-everything  (npm, 2026.8.31)
#   target/mcp-peers/py/bin/mcp-server-time                                     (PyPI, in a venv)
#   mcp (PyPI, same venv; mcp-server-time's own SDK, pinned here since it asks only for
#     >=2.3,<3): the real MCP client of tests/mcp_sdk_client.rs and tests/mcp_guard_real.rs
#   a2a-sdk (PyPI, same venv): the real A2A client of tests/a2a_real.rs
#
# Both are stdio servers. Running this again is cheap: a pinned install already present is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
EVERYTHING_VERSION=2026.8.31
TIME_VERSION=2026.10.19
MCP_SDK_VERSION=2.3.0
A2A_SDK_VERSION=1.3.0
PEERS=target/mcp-peers
mkdir -p "$PEERS/npm"
# Its own package root, so npm never installs into a parent directory's node_modules.
[ -f "$PEERS/npm/package.json" ] || echo '{"private": true}' > "$PEERS/npm/package.json"

pkg="$PEERS/npm/node_modules/@modelcontextprotocol/server-everything/package.json"
if ! grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$pkg" 2>/dev/null; then
  (cd "$PEERS/npm" && npm install --no-audit --no-fund --no-save --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION")
fi

# Whether the venv holds exactly this version of a distribution: its dist-info directory
# (what `pip show` reads, without the second or two pip takes to start; every test that needs
# a peer runs this script first).
installed() {
  compgen -G "$PEERS/py/lib/python*/site-packages/$1-$2.dist-info" > /dev/null
}
if ! installed mcp_server_time "$TIME_VERSION" || ! installed mcp "$MCP_SDK_VERSION"; then
  [ -x "$PEERS/py/bin/python" ] || python3 -m venv "$PEERS/py"
  "$PEERS/py/bin/python" -m pip install --quiet --disable-pip-version-check \
    "mcp-server-time==$TIME_VERSION" "mcp==$MCP_SDK_VERSION"
fi
if ! installed a2a_sdk "$A2A_SDK_VERSION"; then
  [ -x "$PEERS/py/bin/python" ] || python3 -m venv "$PEERS/py"
  "$PEERS/py/bin/python" -m pip install --quiet --disable-pip-version-check "a2a-sdk==$A2A_SDK_VERSION"
fi
echo "MCP peers installed in $PEERS: server-everything $EVERYTHING_VERSION, mcp-server-time $TIME_VERSION, mcp $MCP_SDK_VERSION, a2a-sdk $A2A_SDK_VERSION"
