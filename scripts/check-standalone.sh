#!/usr/bin/env bash
# The feature split holds: toolcert without its default `reference` feature builds (it then
# certifies remote and spawned hosts only), and its normal dependency tree has no axum and no
# SQLite, which only the embedded reference host needs.
set -euo pipefail
cd "$(dirname "$0")/.."
# Lints (a type check of every target): a `cfg` slip that leaves an unused item only shows up
# as a warning here. No build: this check compiles nothing the lint pass did not already check,
# and building the same code a second time only cost CI minutes.
cargo clippy --no-default-features --all-targets --locked -- -D warnings
tree=$(cargo tree --no-default-features -e normal --prefix none --locked)
found=$(grep -E '^(axum|axum-core|rusqlite|libsqlite3-sys) ' <<<"$tree" | sort -u || true)
if [ -n "$found" ]; then
  {
    echo "scripts/check-standalone.sh: toolcert --no-default-features must not depend on axum or SQLite, but its tree has:"
    echo "$found"
    echo "(cargo tree --no-default-features -e normal shows what pulls them in; gate that behind the \`reference\` feature)"
  } >&2
  exit 1
fi
echo "scripts/check-standalone.sh: toolcert --no-default-features type-checks, without axum or SQLite"
