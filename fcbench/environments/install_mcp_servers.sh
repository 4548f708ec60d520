#!/usr/bin/env bash
# Installs the reference MCP servers into .mcp/ (git-ignored), pinned, for the mcp environment's
# tests, the bundled `workspace` example and anyone trying `build-dataset new --mcp`:
#   .mcp/npm/node_modules/@modelcontextprotocol/server-{memory,filesystem}/dist/index.js   run with `node`
#   .mcp/venv/bin/mcp-server-time, .mcp/venv/bin/mcp-server-git           (they need mcp>=2.3,<3)
#   .mcp/venv-sqlite/bin/mcp-server-sqlite                                   (its last release crashes on
#                                                                            mcp 2.x: its own venv, mcp<2)
# Idempotent: what is there already is kept. About 20 s with warm package caches; nothing runs `npx`
# later, so the servers start with no network.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=.mcp
NPM_PACKAGES="@modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31"
mkdir -p "$DEST"
if [ ! -f "$DEST/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js" ] \
   || [ ! -f "$DEST/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" ]; then
    command -v npm >/dev/null 2>&1 || { echo "error: npm is needed to install the MCP servers (node >= 18 and npm)" >&2; exit 1; }
    # shellcheck disable=SC2086
    npm install --prefix "$DEST/npm" --no-audit --no-fund --loglevel=error $NPM_PACKAGES >/dev/null
fi
if [ ! -x "$DEST/venv/bin/mcp-server-time" ] || [ ! -x "$DEST/venv/bin/mcp-server-git" ]; then
    python3 -m venv "$DEST/venv"
    "$DEST/venv/bin/pip" install -q mcp-server-time==2026.10.19 mcp-server-git==2026.10.19 2>&1 | { grep -v "^WARNING: Location" || true; }
fi
if [ ! -x "$DEST/venv-sqlite/bin/mcp-server-sqlite" ]; then
    python3 -m venv "$DEST/venv-sqlite"
    "$DEST/venv-sqlite/bin/pip" install -q mcp-server-sqlite==2025.4.25 'mcp<2' 2>&1 | { grep -v "^WARNING: Location" || true; }
fi
for server in "$DEST/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js" \
              "$DEST/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" \
              "$DEST/venv/bin/mcp-server-time" "$DEST/venv/bin/mcp-server-git" "$DEST/venv-sqlite/bin/mcp-server-sqlite"; do
    [ -e "$server" ] || { echo "error: $server is missing after the install" >&2; exit 1; }
done
echo "MCP servers installed in $DEST/"
