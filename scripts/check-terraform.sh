#!/usr/bin/env bash
# Checks the Terraform module terraform/ (and its examples) offline: no
# provider can be downloaded on the build machine, so `terraform init` and
# `terraform validate` cannot run. Instead:
#   1. terraform fmt -check -recursive;
#   2. every .tf parses (python-hcl2);
#   3. variables typed, described and validated where a value can be wrong,
#      outputs described, every variable used; every reference declared and
#      the examples' module calls right; the validations themselves run by
#      `terraform plan` on a copy of variables.tf (no provider needed);
#   4. the instances' `eco` IAM policy is exactly docs/aws.md's (which
#      tests/aws_policy.rs checks against the code's AWS calls), and the
#      comparison catches mutations of it;
#   5. what the module promises an operator (scripts/check-terraform.py
#      invariants), locals evaluated with `terraform console`;
#   6. checkov with terraform/.checkov.yaml: no failed check, and every
#      skip explained and still needed;
#   7. the templates of terraform/templates render (terraform console).
#
# Writes under target/terraform/: check.log (every check's output),
# checkov*.json, render/ (the rendered templates).
#
# One line per check; exit status 1 when any check failed.
# Tools: scripts/install-terraform-tools.sh (called here when missing or out
# of date); terraform comes with the machine image.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

venv="$root/.tools/terraform-venv"
req="$root/scripts/terraform-tools-requirements.txt"
if [ ! -x "$venv/bin/checkov" ] || [ ! -d "$venv/python-hcl2/hcl2" ] || ! cmp -s "$req" "$venv/.requirements"; then
  bash scripts/install-terraform-tools.sh
fi
if ! command -v terraform > /dev/null; then
  echo "check-terraform: terraform is not on PATH (it comes with the machine image, not from a package registry)" >&2
  exit 1
fi
py="$venv/bin/python"
helper="$root/scripts/check-terraform.py"
out="$root/target/terraform"
export TF_CLI_CONFIG_FILE=/dev/null CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1

rm -rf "$out"
mkdir -p "$out"

started=$(date +%s%N)
failed=0
passed=0
log="$out/check.log"

# check NAME CMD...: runs CMD, prints one line and the last line of its
# output; on failure all of its output.
check() {
  local name=$1; shift
  local t0 t1 output
  t0=$(date +%s%N)
  if output=$("$@" 2>&1); then
    t1=$(date +%s%N)
    printf 'ok    %-66s %5dms\n' "$name" $(( (t1 - t0) / 1000000 ))
    [ -z "$output" ] || printf '%s\n' "$output" | tail -n 1 | sed 's/^/      /'
    passed=$((passed + 1))
  else
    t1=$(date +%s%N)
    printf 'FAIL  %-66s %5dms\n' "$name" $(( (t1 - t0) / 1000000 ))
    printf '%s\n' "$output" | sed 's/^/      /'
    failed=$((failed + 1))
  fi
  printf '== %s\n%s\n' "$name" "$output" >> "$log"
}

# 1. Formatting, examples included.
check "terraform fmt -check -recursive terraform/" terraform fmt -check -recursive -diff terraform

# 2-3. Parsing, variables and outputs, references, validations.
check "every .tf parses (python-hcl2)" "$py" "$helper" parse
check "variables typed, described, validated, used; outputs described" "$py" "$helper" variables
check "references declared; the examples call the module right" "$py" "$helper" references
check "variable validations: good sets pass, bad values refused (plan)" "$py" "$helper" validations

# 4. The IAM policy.
check "IAM policy eco (iam.tf) == docs/aws.md's policy" "$py" "$helper" policy
check "the policy comparison catches mutations of iam.tf" "$py" "$helper" policy-mutations

# 5. What the module promises.
check "invariants (health checks, hook, refresh, bucket, IMDS, SGs, names)" "$py" "$helper" invariants

# 6. checkov: once with the repo's configuration (the verdict), once
#    without its skips (each skip must still be needed), on a copy of the
#    tree without .checkov.yaml (checkov also reads the one of the directory
#    it scans). checkov exits 1 when a check fails: the JSON report decides.
checkov_run() {
  "$venv/bin/checkov" -d terraform --config-file terraform/.checkov.yaml -o json \
    > "$out/checkov.json" 2> "$out/checkov.stderr" || true
  rm -rf "$out/unskipped"
  cp -r terraform "$out/unskipped"
  rm -rf "$out/unskipped/.checkov.yaml" "$out/unskipped/.terraform" "$out"/unskipped/examples/*/.terraform
  "$py" "$helper" unskipped-config "$out/checkov-unskipped.yaml"
  "$venv/bin/checkov" -d "$out/unskipped" --config-file "$out/checkov-unskipped.yaml" -o json \
    > "$out/checkov-unskipped.json" 2> "$out/checkov-unskipped.stderr" || true
  "$py" "$helper" checkov "$out/checkov.json" "$out/checkov-unskipped.json"
}
check "checkov (terraform/.checkov.yaml): no failed check" checkov_run

# 7. The templates (terraform/templates), when there are any.
if compgen -G "terraform/templates/*.tftpl" > /dev/null; then
  check "templates render (terraform console, sample values)" "$py" "$helper" render
else
  printf 'skip  %-66s\n' "templates render: no terraform/templates/*.tftpl yet"
fi

elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
printf '\nterraform checks: %d passed, %d failed in %d.%03ds (details: target/terraform/check.log)\n' \
  "$passed" "$failed" $((elapsed / 1000)) $((elapsed % 1000))
[ "$failed" -eq 0 ]
