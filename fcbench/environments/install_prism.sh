#!/usr/bin/env bash
# Installs the Prism OpenAPI mock server (@stoplight/prism-cli, from npm) into .prism/ (git-ignored).
# The http environment's tests and bench/http_env.py serve the Amadeus descriptions with it.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -x .prism/node_modules/.bin/prism ]; then
    exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "error: npm is needed to install Prism (node and npm)" >&2; exit 1; }
npm install --prefix .prism --no-audit --no-fund --loglevel=error @stoplight/prism-cli >/dev/null
.prism/node_modules/.bin/prism --version
