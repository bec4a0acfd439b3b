#!/usr/bin/env bash
# Installs the Terraform module's check tools into .tools/, idempotently,
# from the package registries only:
#   - checkov and its dependencies, pinned in
#     scripts/terraform-tools-requirements.txt, in the venv
#     .tools/terraform-venv (recreated only when that file changed);
#   - python-hcl2, pinned in the same file, alone in
#     .tools/terraform-venv/python-hcl2/ (--no-deps, --target): checkov's
#     bc-python-hcl2 is a fork installing the same `hcl2` package, so the two
#     cannot share site-packages; scripts/check-terraform.py puts this
#     directory first on its path. lark and regex, its dependencies, are
#     checkov's pinned ones.
# Terraform itself is not installed here: no package registry has it; it
# comes with the machine image (/usr/local/bin/terraform). This script says
# so when it is missing (scripts/check-terraform.sh then fails).
# Runnable on its own; scripts/check-terraform.sh calls it when the venv is
# missing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
mkdir -p "$tools"

log() { printf 'install-terraform-tools: %s\n' "$*" >&2; }

venv="$tools/terraform-venv"
req="$root/scripts/terraform-tools-requirements.txt"
hcl2_pin=$(grep -E '^python-hcl2==' "$req")
if ! cmp -s "$req" "$venv/.requirements" 2>/dev/null; then
  log "creating the terraform tools venv ($venv): checkov, $hcl2_pin"
  rm -rf "$venv"
  python3 -m venv "$venv"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # Everything but python-hcl2 into the venv...
  grep -vE '^python-hcl2==' "$req" > "$work/requirements.txt"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$work/requirements.txt"
  # ...and python-hcl2 beside it, on its own.
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    --target "$venv/python-hcl2" "$hcl2_pin"
  rm -rf "$work"
  trap - EXIT
  cp "$req" "$venv/.requirements"
fi

hcl2_version=$(PYTHONPATH="$venv/python-hcl2" "$venv/bin/python" -c \
  'import importlib.metadata as m; print(m.version("python-hcl2"))' 2>/dev/null || echo "MISSING")
if ! terraform_version=$(terraform version 2>/dev/null | head -1); then
  terraform_version="NOT INSTALLED"
fi
log "terraform tools: checkov $("$venv/bin/checkov" --version), python-hcl2 $hcl2_version, terraform: $terraform_version"
if [ "$terraform_version" = "NOT INSTALLED" ]; then
  log "terraform is not on PATH: it is part of the machine image, not installable from the package registries;"
  log "scripts/check-terraform.sh needs it (terraform fmt, terraform plan on the variables, terraform console)."
fi
