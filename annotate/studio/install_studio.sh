#!/usr/bin/env bash
# Install the Label Studio server into its OWN virtual environment.
#
# Why a separate venv: label-studio pins Django and many other packages tightly; installed into the
# project's .venv it would downgrade or clash with what fcbench needs. fcbench only talks to the
# server over HTTP (label-studio-sdk, already a core dependency), so the two never share imports.
#
#   annotate/studio/install_studio.sh                 # -> .venv-studio/ (about 70 s and 1 GB)
#   annotate/studio/install_studio.sh --with-browser  # also playwright, for the labeling-page screenshot
#
# Environment: FCBENCH_STUDIO_VENV (target venv, default <repo>/.venv-studio),
#              FCBENCH_STUDIO_PYTHON (interpreter creating it, default python3),
#              FCBENCH_STUDIO_VERSION (pip requirement, default the version measured here).
# The browser itself is the Debian package `chromium` (apt-get install -y chromium); the script
# only checks for it, since installing system packages is the machine owner's call.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${FCBENCH_STUDIO_VENV:-$ROOT/.venv-studio}"
PYTHON="${FCBENCH_STUDIO_PYTHON:-python3}"
REQUIREMENT="${FCBENCH_STUDIO_VERSION:-label-studio==1.23.2}"
WITH_BROWSER=0

for argument in "$@"; do
    case "$argument" in
        --with-browser) WITH_BROWSER=1 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "error: unknown option $argument (see --help)" >&2; exit 1 ;;
    esac
done

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "$REQUIREMENT"
if [ "$WITH_BROWSER" = 1 ]; then
    "$VENV/bin/pip" install -q playwright
    if ! command -v chromium >/dev/null 2>&1; then
        echo "note: no 'chromium' on PATH; the screenshot needs it (apt-get install -y chromium)" >&2
    fi
fi

# `label-studio version` (not --version, which initialises ~/.local/share) proves the install runs.
# Update checks off: the machine may have no network, and the check must not phone home anyway.
CHECK_HOME="$(mktemp -d)"
trap 'rm -rf "$CHECK_HOME"' EXIT
HOME="$CHECK_HOME" LABEL_STUDIO_BASE_DATA_DIR="$CHECK_HOME/data" LATEST_VERSION_CHECK=false \
    COLLECT_ANALYTICS=false "$VENV/bin/label-studio" version >/dev/null 2>&1
echo "label-studio installed in $VENV"
