#!/usr/bin/env python3
"""Helpers of scripts/check-terraform.sh: the offline checks of the Terraform
module terraform/ (no provider can be downloaded here, so no `terraform
validate`: what it would catch is checked from the parsed HCL instead).
Run with .tools/terraform-venv's Python; python-hcl2 comes from
.tools/terraform-venv/python-hcl2/ (scripts/install-terraform-tools.sh says
why it is apart).

  parse              every .tf under terraform/ parses (python-hcl2)
  variables          every variable has a type and a description, those whose
                     values can be wrong a validation; every output a
                     description; every variable used, every var.X declared
  references         every local, resource and data source referred to is
                     declared (module and examples); the examples call the
                     module with its variables (the required ones included)
                     and read only its outputs
  validations        the variables' validations, run by `terraform plan` on a
                     copy of variables.tf: good value sets accepted, each bad
                     value refused with its message
  policy             the `eco` policy document of terraform/iam.tf is exactly
                     docs/aws.md's IAM policy, statement by statement
  policy-mutations   the policy comparison catches an added or removed
                     action, a wider resource, a dropped condition, a renamed
                     Sid (mutated copies of iam.tf, in memory)
  invariants         what the module promises an operator (health checks,
                     the termination hook, instance refresh, the bucket's
                     lifecycle, IMDSv2, security group rules, names that fit
                     AWS's limits...)
  checkov REPORT [UNSKIPPED]
                     checkov's JSON report with terraform/.checkov.yaml: no
                     failed check; every skip has a reason above it and, in
                     UNSKIPPED (a run without the skips), still fails
  render             each template of terraform/templates renders with
                     `terraform console` and sample values of the module's
                     variables (eco.toml: TOML with eco's keys; the user
                     data: bash -n)

Exit status 0 when everything holds, 1 otherwise; problems go to stdout.
"""

import base64
import importlib.metadata
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TF = ROOT / "terraform"
DOC = ROOT / "docs" / "aws.md"
HCL2_DIR = ROOT / ".tools" / "terraform-venv" / "python-hcl2"
OUT = ROOT / "target" / "terraform"

sys.path.insert(0, str(HCL2_DIR))
import hcl2  # noqa: E402  (python-hcl2, from HCL2_DIR)
from hcl2.utils import SerializationOptions  # noqa: E402

if not Path(hcl2.__file__).resolve().is_relative_to(HCL2_DIR.resolve()):
    sys.exit(f"hcl2 was imported from {hcl2.__file__}, not {HCL2_DIR}: run scripts/install-terraform-tools.sh")

HCL_OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False)
TERRAFORM_ENV = dict(os.environ, TF_CLI_CONFIG_FILE="/dev/null", TF_IN_AUTOMATION="1", CHECKPOINT_DISABLE="1")


# --- Reading HCL --------------------------------------------------------------
#
# python-hcl2 (8.x) keeps the source form of every value: a quoted string is
# '"text"' (HCL escapes kept), any other expression '${expr}', numbers and
# booleans are Python values, blocks are lists of dicts, block labels quoted.


def unquote(label):
    return label[1:-1] if len(label) >= 2 and label[0] == label[-1] == '"' else label


def unescape(text):
    """The value of the literal parts of an HCL quoted string."""
    out, i = [], 0
    simple = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n in simple:
                out.append(simple[n])
                i += 2
                continue
            if n in "uU":
                width = 4 if n == "u" else 8
                out.append(chr(int(text[i + 2:i + 2 + width], 16)))
                i += 2 + width
                continue
        if text.startswith("$${", i) or text.startswith("%%{", i):
            out.append(text[i] + "{")
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def template_parts(s):
    """Split the inside of a quoted HCL string into ("text", raw) and
    ("expr", expression) parts; template directives %{...} count as
    expressions."""
    parts, i, start = [], 0, 0
    while i < len(s):
        if s.startswith("$${", i) or s.startswith("%%{", i):
            i += 3
            continue
        if s.startswith("${", i) or s.startswith("%{", i):
            if i > start:
                parts.append(("text", s[start:i]))
            depth, j, quote = 1, i + 2, False
            while j < len(s) and depth:
                ch = s[j]
                if ch == "\\" and quote:
                    j += 2
                    continue
                if ch == '"':
                    quote = not quote
                elif not quote and ch == "{":
                    depth += 1
                elif not quote and ch == "}":
                    depth -= 1
                j += 1
            parts.append(("expr", s[i + 2:j - 1].strip()))
            i = start = j
            continue
        i += 1
    if start < len(s):
        parts.append(("text", s[start:]))
    return parts


def is_quoted(v):
    return isinstance(v, str) and len(v) >= 2 and v[0] == '"' and v[-1] == '"'


def is_expr(v):
    return isinstance(v, str) and v.startswith("${") and v.endswith("}") and not is_quoted(v)


def literal(v):
    """The value of a literal (a quoted string without interpolation, a
    number, a boolean); None for anything computed."""
    if isinstance(v, (bool, int, float)):
        return v
    if is_quoted(v):
        parts = template_parts(v[1:-1])
        if all(kind == "text" for kind, _ in parts):
            return unescape(v[1:-1])
    return None


def expr(v):
    """An expression's source text: '${x}' -> 'x'; a literal -> its HCL text."""
    if is_expr(v):
        return v[2:-1].strip()
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def load_text(text):
    return hcl2.loads(text, serialization_options=HCL_OPTIONS)


def load_file(path):
    return load_text(path.read_text())


class Module:
    """The blocks of the .tf files of one directory (not its subdirectories)."""

    def __init__(self, directory, texts=None):
        self.dir = directory
        self.files = sorted(directory.glob("*.tf"))
        self.variables, self.outputs, self.locals = {}, {}, {}
        self.resources, self.data, self.modules = {}, {}, {}
        self.terraform = []
        self.docs = {}
        for f in self.files:
            doc = load_text(texts[f.name]) if texts and f.name in texts else load_file(f)
            self.docs[f.name] = doc
            for block in doc.get("variable", []):
                for name, body in block.items():
                    self.variables[unquote(name)] = body
            for block in doc.get("output", []):
                for name, body in block.items():
                    self.outputs[unquote(name)] = body
            for block in doc.get("locals", []):
                self.locals.update(block)
            for kind, into in (("resource", self.resources), ("data", self.data)):
                for block in doc.get(kind, []):
                    for rtype, named in block.items():
                        for name, body in named.items():
                            into[(unquote(rtype), unquote(name))] = body
            for block in doc.get("module", []):
                for name, body in block.items():
                    self.modules[unquote(name)] = body
            self.terraform += doc.get("terraform", [])

    def resource(self, rtype, name):
        return self.resources.get((rtype, name))


def walk_values(value):
    """Every scalar string under a parsed value (dicts, lists)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk_values(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk_values(v)
    elif isinstance(value, str):
        yield value


def code_of(value):
    """The expression text of a value, literal text left out (a reference
    must not be found in a description)."""
    out = []
    for s in walk_values(value):
        if is_quoted(s):
            out += [e for kind, e in template_parts(s[1:-1]) if kind == "expr"]
        else:
            out.append(s)
    return "\n".join(out)


def block(body, name):
    """The single nested block `name` of a parsed block body ({} if none)."""
    v = body.get(name) if body else None
    if isinstance(v, list) and v and isinstance(v[0], dict):
        return v[0]
    return {}


# --- parse --------------------------------------------------------------------


def cmd_parse():
    files = sorted(TF.rglob("*.tf"))
    files = [f for f in files if ".terraform" not in f.parts]
    rc = 0
    for f in files:
        try:
            load_file(f)
        except Exception as e:  # the parser's own error types vary
            print(f"{f.relative_to(ROOT)}: does not parse: {e}")
            rc = 1
    if not files:
        print("no .tf file under terraform/")
        return 1
    print(f"{len(files)} files parsed with python-hcl2 {importlib.metadata.version('python-hcl2')}")
    return rc


# --- variables ------------------------------------------------------------------

# Variables whose values can be wrong and must be validated, besides every
# number (a range), every *_sha256, *_url, *_cidr_blocks, *_id and *_ids.
VALIDATED = {"name", "cluster_size", "subnet_ids", "architecture", "eco_package_url",
             "etcd_version", "leave_hook_timeout_seconds", "instance_type", "snapshot_prefix",
             "bucket_name", "key_name"}
VALIDATED_SUFFIXES = ("_sha256", "_url", "_cidr_blocks", "_id", "_ids", "_arn", "_bucket")


def var_refs(text):
    return set(re.findall(r"\bvar\.([A-Za-z_][A-Za-z0-9_-]*)", text))


def cmd_variables():
    m = Module(TF)
    problems = []
    for name, body in sorted(m.variables.items()):
        if "type" not in body:
            problems.append(f"variable {name}: no type")
        desc = literal(body.get("description"))
        if not desc or not desc.strip():
            problems.append(f"variable {name}: no description")
        validations = body.get("validation", [])
        needs = (name in VALIDATED or name.endswith(VALIDATED_SUFFIXES)
                 or str(body.get("type")) == "number")
        if needs and not validations:
            problems.append(f"variable {name}: its values can be wrong but it has no validation block")
        for v in validations:
            if "condition" not in v or not is_quoted(v.get("error_message")):
                problems.append(f"variable {name}: a validation without a condition or an error message")
            elif var_refs(code_of(v["condition"])) - {name}:
                problems.append(f"variable {name}: its validation refers to other variables (Terraform >= 1.9 only)")
    for name, body in sorted(m.outputs.items()):
        desc = literal(body.get("description"))
        if not desc or not desc.strip():
            problems.append(f"output {name}: no description")
    # Uses: every expression of the module, the variable blocks' own
    # validations left out (a variable used only by its validation is unused).
    used = set()
    for f, doc in m.docs.items():
        for kind, blocks in doc.items():
            if kind == "variable":
                continue
            used |= var_refs(code_of(blocks))
    declared = set(m.variables)
    for name in sorted(declared - used):
        problems.append(f"variable {name} is declared but never used")
    for name in sorted(used - declared):
        problems.append(f"var.{name} is used but not declared")
    for p in problems:
        print(p)
    if not problems:
        n_valid = sum(1 for b in m.variables.values() if b.get("validation"))
        print(f"{len(m.variables)} variables (each typed and described, {n_valid} validated, all used), "
              f"{len(m.outputs)} outputs (each described)")
    return 1 if problems else 0


# --- references -------------------------------------------------------------------

REF = re.compile(r"(?<![\w.])(data\.)?([a-z][a-z0-9]*_[a-z0-9_]+)\.([A-Za-z_][A-Za-z0-9_-]*)")
PROVIDER_PREFIXES = ("aws_", "random_")


def check_references(m, where):
    problems = []
    all_code = "\n".join(code_of(doc) for doc in m.docs.values())
    for name in sorted(set(re.findall(r"\blocal\.([A-Za-z_][A-Za-z0-9_-]*)", all_code)) - set(m.locals)):
        problems.append(f"{where}: local.{name} is not declared")
    for is_data, rtype, name in set(REF.findall(all_code)):
        if not rtype.startswith(PROVIDER_PREFIXES):
            continue
        table = m.data if is_data else m.resources
        if (rtype, name) not in table:
            problems.append(f"{where}: {'data.' if is_data else ''}{rtype}.{name} is not declared")
    for rtype_name in re.findall(r"\bmodule\.([A-Za-z_][A-Za-z0-9_-]*)", all_code):
        if rtype_name not in m.modules:
            problems.append(f"{where}: module.{rtype_name} is not declared")
    return problems


def cmd_references():
    module = Module(TF)
    problems = check_references(module, "terraform/")
    examples = sorted(d for d in (TF / "examples").iterdir() if d.is_dir()) if (TF / "examples").is_dir() else []
    meta = {"source", "version", "providers", "count", "for_each", "depends_on"}
    required = {n for n, b in module.variables.items() if "default" not in b}
    calls = 0
    for ex in examples:
        m = Module(ex)
        where = str(ex.relative_to(ROOT))
        problems += check_references(m, where)
        code = "\n".join(code_of(doc) for doc in m.docs.values())
        for name in sorted(var_refs(code) - set(m.variables)):
            problems.append(f"{where}: var.{name} is not declared")
        for mname, body in m.modules.items():
            source = literal(body.get("source"))
            if source is None or (ex / source).resolve() != TF.resolve():
                continue
            calls += 1
            args = set(body) - meta
            for a in sorted(args - set(module.variables)):
                problems.append(f"{where}: module {mname}: {a} is not a variable of the module")
            for a in sorted(required - args):
                problems.append(f"{where}: module {mname}: the required variable {a} is not given")
        for mname, out in set(re.findall(r"\bmodule\.([A-Za-z_][A-Za-z0-9_-]*)\.([A-Za-z_][A-Za-z0-9_-]*)", code)):
            if out not in module.outputs:
                problems.append(f"{where}: module.{mname}.{out} is not an output of the module")
    if examples and not calls:
        problems.append("no example calls the module (source = \"../..\")")
    for p in problems:
        print(p)
    if not problems:
        print(f"module: {len(module.resources)} resources, {len(module.data)} data sources, "
              f"{len(module.locals)} locals, every reference declared; "
              f"{len(examples)} examples call it with its variables ({len(required)} required) and outputs")
    return 1 if problems else 0


# --- validations -------------------------------------------------------------------

SHA_A = "a" * 64
SHA_B = "b" * 64
GOOD = {
    "name": "main",
    "vpc_id": "vpc-0123456789abcdef0",
    "subnet_ids": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1", "subnet-0123456789abcdef2"],
    "eco_package_url": "https://packages.example.com/eco_0.1.0_amd64.deb",
    "eco_package_sha256": SHA_A,
    "etcd_version": "3.5.21",
    "etcd_package_sha256": SHA_B,
}
GOOD_TOO = dict(
    GOOD,
    name="a",
    cluster_size=5,
    architecture="arm64",
    instance_type="m7g.xlarge",
    ami_id="ami-0123456789abcdef0",
    volume_size_gib=100,
    key_name="ops",
    ssh_cidr_blocks=["10.1.0.0/16", "2001:db8::/32"],
    client_cidr_blocks=["10.20.0.0/16", "2001:db8:1::/48"],
    client_security_group_ids=["sg-0123456789abcdef0", "sg-01234567"],
    monitoring_cidr_blocks=["10.99.0.0/24"],
    monitoring_security_group_ids=["sg-0123456789abcdef1"],
    load_balancer_internal=False,
    load_balancer_subnet_ids=["subnet-0123456789abcdef9"],
    load_balancer_deletion_protection=False,
    etcd_version="3.4.21",
    etcd_package_url="https://mirror.example.com/etcd-v3.4.21-linux-arm64.tar.gz",
    snapshot_prefix="team/eco_v1+x=y",
    bucket_name="acme.etcd-snapshots",
    noncurrent_version_expiration_days=90,
    access_log_bucket="acme-logs",
    gossip_key_parameter_name="/eco/a/gossip-keys",
    gossip_key_kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    leave_hook_timeout_seconds=7200,
    instance_warmup_seconds=60,
    tags={"team": "platform"},
)
# (variable, bad value, the start of its validation's error message)
BAD = [
    ("name", "Main", "name must be 1-63 lowercase"),
    ("name", "main-", "name must be 1-63 lowercase"),
    ("name", "a" * 64, "name must be 1-63 lowercase"),
    ("cluster_size", 4, "cluster_size must be 1, 3, 5, 7 or 9"),
    ("cluster_size", 11, "cluster_size must be 1, 3, 5, 7 or 9"),
    ("vpc_id", "vpc-123", "vpc_id must be a VPC id"),
    ("subnet_ids", [], "subnet_ids must hold at least one subnet"),
    ("subnet_ids", ["subnet-01234567", "subnet-01234567"], "subnet_ids must hold at least one subnet, each once"),
    ("subnet_ids", ["subnet-xyz"], "Every subnet_ids entry must be a subnet id"),
    ("instance_type", "large", "instance_type must look like an EC2 instance type"),
    ("architecture", "x86_64", "architecture must be \"amd64\" or \"arm64\""),
    ("ami_id", "ami-123", "ami_id must be null or an AMI id"),
    ("volume_size_gib", 8, "volume_size_gib must be a whole number"),
    ("volume_size_gib", 50.5, "volume_size_gib must be a whole number"),
    ("key_name", " ", "key_name must be null or a key pair name"),
    ("ssh_cidr_blocks", ["10.0.0.0/33"], "Every ssh_cidr_blocks entry must be a CIDR block"),
    ("ssh_cidr_blocks", ["0.0.0.0/0"], "ssh_cidr_blocks must not open SSH to the whole internet"),
    ("ssh_cidr_blocks", ["::/0"], "ssh_cidr_blocks must not open SSH to the whole internet"),
    ("leave_hook_timeout_seconds", 29, "leave_hook_timeout_seconds must be a whole number of seconds from 30"),
    ("leave_hook_timeout_seconds", 7201, "leave_hook_timeout_seconds must be a whole number of seconds from 30"),
    ("instance_warmup_seconds", 30, "instance_warmup_seconds must be a whole number of seconds from 60"),
    ("eco_package_url", "http://packages.example.com/eco.deb", "eco_package_url must be an https:// URL"),
    ("eco_package_url", "https://example.com/a b", "eco_package_url must be an https:// URL"),
    ("eco_package_sha256", SHA_A.upper(), "eco_package_sha256 must be 64 lowercase hex digits"),
    ("eco_package_sha256", "abc", "eco_package_sha256 must be 64 lowercase hex digits"),
    ("etcd_version", "v3.5.21", "etcd_version must be x.y.z"),
    ("etcd_version", "3.5", "etcd_version must be x.y.z"),
    ("etcd_version", "3.3.25", "etcd_version must be x.y.z"),
    ("etcd_version", "2.9.0", "etcd_version must be x.y.z"),
    ("etcd_package_url", "ftp://mirror/etcd.tar.gz", "etcd_package_url must be null or an https:// URL"),
    ("etcd_package_sha256", "g" * 64, "etcd_package_sha256 must be 64 lowercase hex digits"),
    ("client_cidr_blocks", ["10.0.0.0"], "Every client_cidr_blocks entry must be a CIDR block"),
    ("client_security_group_ids", ["sg-1"], "Every client_security_group_ids entry must be a security group id"),
    ("monitoring_cidr_blocks", ["prometheus"], "Every monitoring_cidr_blocks entry must be a CIDR block"),
    ("monitoring_security_group_ids", ["prometheus"], "Every monitoring_security_group_ids entry must be a security group id"),
    ("load_balancer_subnet_ids", [], "load_balancer_subnet_ids must be null or at least one subnet id"),
    ("snapshot_prefix", "/eco", "snapshot_prefix must be 1-256 bytes"),
    ("snapshot_prefix", "eco/", "snapshot_prefix must be 1-256 bytes"),
    ("snapshot_prefix", "eco//x", "snapshot_prefix must be 1-256 bytes"),
    ("snapshot_prefix", "eco/.x", "snapshot_prefix must be 1-256 bytes"),
    ("snapshot_prefix", "", "snapshot_prefix must be 1-256 bytes"),
    ("bucket_name", "Acme_Snapshots", "bucket_name must be null or an S3 bucket name"),
    ("bucket_name", "acme..snapshots", "bucket_name must be null or an S3 bucket name"),
    ("bucket_name", "192.168.1.1", "bucket_name must be null or an S3 bucket name"),
    ("noncurrent_version_expiration_days", 0, "noncurrent_version_expiration_days must be a whole number of days"),
    ("access_log_bucket", "Logs", "access_log_bucket must be null or an S3 bucket name"),
    ("gossip_key_parameter_name", "arn:aws:ssm:eu-west-1:123456789012:parameter/x", "gossip_key_parameter_name must be null or an SSM parameter name"),
    ("gossip_key_kms_key_arn", "alias/eco", "gossip_key_kms_key_arn must be null or a KMS key ARN"),
    ("tags", {"aws:cloudformation:stack-name": "x"}, "Tag keys starting with \"aws:\" are reserved"),
]


def terraform(args, cwd, stdin=None):
    return subprocess.run(["terraform", *args], cwd=cwd, env=TERRAFORM_ENV, input=stdin,
                          capture_output=True, text=True)


def plan_with(workdir, values):
    (workdir / "values.auto.tfvars.json").write_text(json.dumps(values))
    return terraform(["plan", "-input=false", "-lock=false", "-no-color", "-refresh=false"], workdir)


def one_line(text):
    return re.sub(r"[\s│]+", " ", text)


def cmd_validations():
    work = OUT / "validations"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    # The variables alone: no provider, nothing to download; `terraform
    # plan` evaluates every validation.
    shutil.copy(TF / "variables.tf", work / "variables.tf")
    r = terraform(["init", "-input=false", "-backend=false", "-no-color"], work)
    if r.returncode:
        print(f"terraform init (variables only) failed:\n{r.stdout}{r.stderr}")
        return 1
    problems = []
    declared = set(Module(TF).variables)
    for label, values in (("the minimal good set", GOOD), ("the full good set", GOOD_TOO)):
        unknown = set(values) - declared
        if unknown:
            problems.append(f"{label} names unknown variables {sorted(unknown)}: update check-terraform.py")
            continue
        r = plan_with(work, values)
        if r.returncode:
            problems.append(f"{label} was refused:\n{r.stdout}{r.stderr}")
    covered = set()
    for var, value, message in BAD:
        if var not in declared:
            problems.append(f"{var} is no variable of the module: update check-terraform.py")
            continue
        r = plan_with(work, dict(GOOD, **{var: value}))
        out = one_line(r.stdout + r.stderr)
        if r.returncode == 0:
            problems.append(f"{var} = {json.dumps(value)} was accepted; expected: {message}")
        elif one_line(message) not in out:
            problems.append(f"{var} = {json.dumps(value)} was refused without \"{message}\":\n{r.stderr}")
        else:
            covered.add(var)
    validated = {n for n, b in Module(TF).variables.items() if b.get("validation")}
    for n in sorted(validated - covered - {"load_balancer_internal", "load_balancer_deletion_protection"}):
        problems.append(f"variable {n} has a validation no bad value of check-terraform.py exercises")
    for p in problems:
        print(p)
    if not problems:
        print(f"2 good sets accepted, {len(BAD)} bad values refused with their messages "
              f"({len(covered)} validated variables exercised)")
    return 1 if problems else 0


# --- policy ----------------------------------------------------------------------

# What each terraform expression of the policy stands for in docs/aws.md.
PLACEHOLDERS = {
    "data.aws_partition.current.partition": "aws",
    "data.aws_region.current.name": "REGION",
    "data.aws_caller_identity.current.account_id": "ACCOUNT",
    "local.group_name": "GROUP",
    "aws_s3_bucket.snapshots.bucket": "BUCKET",
    "aws_s3_bucket.snapshots.id": "BUCKET",
    "aws_s3_bucket.snapshots.arn": "arn:aws:s3:::BUCKET",
    "var.snapshot_prefix": "PREFIX",
    "var.name": "CLUSTER",
    "aws_kms_key.eco.key_id": "KEY-ID",
    "aws_kms_key.eco.arn": "arn:aws:kms:REGION:ACCOUNT:key/KEY-ID",
}


class Unmapped(Exception):
    pass


def resolve(value, locals_, depth=0):
    """A policy value with the doc's placeholders for the terraform parts."""
    if depth > 20:
        raise Unmapped("locals refer to each other in a loop")
    if isinstance(value, (int, float, bool)):
        return str(value).lower() if isinstance(value, bool) else str(value)
    if is_quoted(value):
        out = []
        for kind, part in template_parts(value[1:-1]):
            out.append(unescape(part) if kind == "text" else resolve_expr(part, locals_, depth))
        return "".join(out)
    if is_expr(value):
        return resolve_expr(value[2:-1], locals_, depth)
    raise Unmapped(str(value))


def resolve_expr(x, locals_, depth):
    x = x.strip()
    if x in PLACEHOLDERS:
        return PLACEHOLDERS[x]
    m = re.fullmatch(r"local\.([A-Za-z_][A-Za-z0-9_-]*)", x)
    if m and m.group(1) in locals_:
        return resolve(locals_[m.group(1)], locals_, depth + 1)
    raise Unmapped(x)


def doc_policy():
    text = DOC.read_text()
    section = text.split("## The IAM policy (least privilege)")
    if len(section) < 2:
        raise SystemExit(f"{DOC}: no \"## The IAM policy (least privilege)\" section")
    block = section[1].split("```json")
    if len(block) < 2:
        raise SystemExit(f"{DOC}: no json block in the IAM policy section")
    return json.loads(block[1].split("```")[0])


def as_set(v):
    return {v} if isinstance(v, str) else set(v)


def doc_statement(s):
    cond = {}
    for test, kv in (s.get("Condition") or {}).items():
        for key, values in kv.items():
            cond[(test, key)] = as_set(values)
    other = sorted(set(s) - {"Sid", "Effect", "Action", "Resource", "Condition"})
    return {"Effect": s.get("Effect"), "Action": as_set(s.get("Action", [])),
            "Resource": as_set(s.get("Resource", [])), "Condition": cond, "other": other}


def tf_statement(s, locals_):
    cond = {}
    for c in s.get("condition", []):
        key = (literal(c.get("test")), literal(c.get("variable")))
        cond[key] = {resolve(v, locals_) for v in c.get("values", [])}
    other = sorted(set(s) - {"sid", "effect", "actions", "resources", "condition"})
    return {"Effect": literal(s.get("effect")) or "Allow",
            "Action": {literal(a) if literal(a) is not None else expr(a) for a in s.get("actions", [])},
            "Resource": {resolve(r, locals_) for r in s.get("resources", [])},
            "Condition": cond, "other": other}


def compare_policy(iam_text, locals_):
    """Differences between iam.tf's eco policy document and the doc's policy
    (an empty list when they are the same)."""
    doc = doc_policy()
    parsed = load_text(iam_text)
    tf = None
    for blk in parsed.get("data", []):
        for rtype, named in blk.items():
            for name, body in named.items():
                if unquote(rtype) == "aws_iam_policy_document" and unquote(name) == "eco":
                    tf = body
    if tf is None:
        return ["terraform/iam.tf has no data \"aws_iam_policy_document\" \"eco\""]
    problems = []
    version = literal(tf.get("version")) or "2012-10-17"
    if version != doc.get("Version"):
        problems.append(f"Version: terraform {version}, docs/aws.md {doc.get('Version')}")
    for key in sorted(set(tf) - {"statement", "version"}):
        problems.append(f"terraform's eco policy has `{key}`, which docs/aws.md's policy does not")
    doc_statements = doc["Statement"]
    tf_statements = tf.get("statement", [])
    doc_sids = [s.get("Sid") for s in doc_statements]
    tf_sids = [literal(s.get("sid")) for s in tf_statements]
    if doc_sids != tf_sids:
        missing = [s for s in doc_sids if s not in tf_sids]
        extra = [s for s in tf_sids if s not in doc_sids]
        problems.append(f"Sids differ: docs/aws.md {doc_sids}, terraform {tf_sids}"
                        + (f"; missing in terraform: {missing}" if missing else "")
                        + (f"; not in docs/aws.md: {extra}" if extra else ""))
    tf_by_sid = {literal(s.get("sid")): s for s in tf_statements}
    for ds in doc_statements:
        sid = ds.get("Sid")
        if sid not in tf_by_sid:
            continue
        d = doc_statement(ds)
        try:
            t = tf_statement(tf_by_sid[sid], locals_)
        except Unmapped as e:
            problems.append(f"statement {sid}: `{e}` maps to none of docs/aws.md's placeholders "
                            f"(REGION, ACCOUNT, GROUP, BUCKET, PREFIX, CLUSTER, KEY-ID, the partition)")
            continue
        if d["Effect"] != t["Effect"]:
            problems.append(f"statement {sid}: Effect {t['Effect']} in terraform, {d['Effect']} in docs/aws.md")
        for field in ("Action", "Resource"):
            for x in sorted(t[field] - d[field]):
                problems.append(f"statement {sid}: terraform allows {field} {x}, which docs/aws.md's policy does not")
            for x in sorted(d[field] - t[field]):
                problems.append(f"statement {sid}: docs/aws.md's policy has {field} {x}, which terraform does not")
        if d["Condition"] != t["Condition"]:
            fmt = lambda c: {f"{k[0]} {k[1]}": sorted(v) for k, v in sorted(c.items())}  # noqa: E731
            problems.append(f"statement {sid}: Condition {fmt(t['Condition'])} in terraform, "
                            f"{fmt(d['Condition'])} in docs/aws.md")
        if d["other"]:
            problems.append(f"statement {sid}: docs/aws.md's statement has {d['other']}, which this check does not compare")
        if t["other"]:
            problems.append(f"statement {sid}: terraform's statement has {t['other']}, which docs/aws.md's does not")
    return problems


def cmd_policy():
    m = Module(TF)
    problems = compare_policy((TF / "iam.tf").read_text(), m.locals)
    for p in problems:
        print(f"terraform/iam.tf is not docs/aws.md's policy: {p}")
    if not problems:
        doc = doc_policy()
        n_actions = sum(len(as_set(s["Action"])) for s in doc["Statement"])
        print(f"data.aws_iam_policy_document.eco == docs/aws.md: {len(doc['Statement'])} statements "
              f"({', '.join(s['Sid'] for s in doc['Statement'])}), {n_actions} actions, resources and conditions")
    return 1 if problems else 0


# (what is replaced in iam.tf, by what, a phrase the failure must contain)
MUTATIONS = [
    ('"s3:DeleteObject",', '"s3:DeleteObject",\n      "s3:PutObjectAcl",', "terraform allows Action s3:PutObjectAcl"),
    ('"autoscaling:DescribeLifecycleHooks",\n', "", "docs/aws.md's policy has Action autoscaling:DescribeLifecycleHooks"),
    ("resources = [local.cluster_objects_arn]", 'resources = ["${local.bucket_arn}/*"]',
     "terraform allows Resource arn:aws:s3:::BUCKET/*"),
    ("resources = [local.group_arn]", 'resources = ["*"]', "terraform allows Resource *"),
    ('values   = ["${local.cluster_objects_prefix}/*"]', 'values   = ["*"]', "Condition"),
    ('sid       = "SweepInterruptedUploads"', 'sid       = "SweepUploads"', "Sids differ"),
    ('resources = [local.snapshot_key_arn]', 'resources = [aws_kms_alias.eco.arn]', "maps to none of docs/aws.md's placeholders"),
]


def cmd_policy_mutations():
    m = Module(TF)
    text = (TF / "iam.tf").read_text()
    start = text.find('data "aws_iam_policy_document" "eco"')
    end = text.find('data "aws_iam_policy_document" "bootstrap"')
    problems = []
    for old, new, phrase in MUTATIONS:
        region = text[start:end] if start >= 0 and end > start else text
        if old not in region:
            problems.append(f"mutation {old!r} no longer applies to iam.tf's eco policy: update check-terraform.py")
            continue
        mutated = text[:start] + region.replace(old, new, 1) + text[end:]
        found = compare_policy(mutated, m.locals)
        if not any(phrase in p for p in found):
            problems.append(f"replacing {old!r} by {new!r} was not caught with \"{phrase}\": {found}")
        else:
            print(f"caught: {next(p for p in found if phrase in p)}")
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(MUTATIONS)} mutations of the eco policy caught")
    return 1 if problems else 0


# --- invariants --------------------------------------------------------------------

# Characters AWS accepts in security group and rule descriptions.
SG_DESCRIPTION = re.compile(r"^[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]*$")


def console(expressions, cwd):
    """The values of HCL expressions, evaluated by `terraform console` (no
    provider needed). Piped, the console prints only its last result: the
    expressions go in one list, JSON- then base64-encoded so that the
    values come back exactly."""
    line = "base64encode(jsonencode([" + ", ".join(f"({e})" for e in expressions) + "]))"
    r = terraform(["console"], cwd, stdin=line + "\n")
    out = r.stdout.strip().splitlines()
    if r.returncode or not out:
        raise RuntimeError(f"terraform console: {r.stdout}{r.stderr}")
    return json.loads(base64.b64decode(json.loads(out[-1])))


def inline(x, locals_, subs, depth=0):
    """An expression with every local.X replaced by its own expression and
    every reference in subs by the given HCL literal."""
    if depth > 20:
        raise RuntimeError("locals refer to each other in a loop")

    def local(mo):
        name = mo.group(1)
        if f"local.{name}" in subs:
            return subs[f"local.{name}"]
        return "(" + inline(expr(locals_[name]), locals_, subs, depth + 1) + ")"

    for ref, lit in subs.items():
        if not ref.startswith("local."):
            x = re.sub(r"(?<![\w.])" + re.escape(ref) + r"(?![\w])", lit, x)
    return re.sub(r"(?<![\w.])local\.([A-Za-z_][A-Za-z0-9_]*)(?![\w])", local, x)


def cmd_invariants():
    m = Module(TF)
    problems = []

    def want(cond, what):
        if not cond:
            problems.append(what)

    def lit(body, path):
        v = body
        for part in path.split("."):
            if isinstance(v, list):
                v = v[int(part)] if part.isdigit() and int(part) < len(v) else None
            elif isinstance(v, dict):
                v = v.get(part)
            if v is None:
                return None
        return literal(v) if not isinstance(v, (list, dict)) and literal(v) is not None else (expr(v) if isinstance(v, str) else v)

    asg = m.resource("aws_autoscaling_group", "members") or {}
    want(asg, "an aws_autoscaling_group \"members\"")
    want(lit(asg, "name") == "local.group_name", "the group is named local.group_name (the IAM policy names it)")
    want(lit(asg, "health_check_type") == "EC2",
         "health_check_type = \"EC2\" (never ELB: /readyz says 503 during a recovery)")
    for k in ("min_size", "max_size", "desired_capacity"):
        want(lit(asg, k) == "var.cluster_size", f"the group's {k} = var.cluster_size")
    want(lit(asg, "wait_for_capacity_timeout") == "0", "wait_for_capacity_timeout = \"0\" (a timed-out wait taints the group)")
    want(lit(asg, "protect_from_scale_in") is False, "protect_from_scale_in = false")
    want(lit(asg, "capacity_rebalance") is False, "capacity_rebalance = false")
    want([literal(x) for x in asg.get("termination_policies", [])] == ["OldestLaunchTemplate", "OldestInstance"],
         "termination_policies = [\"OldestLaunchTemplate\", \"OldestInstance\"]")
    want(lit(asg, "launch_template.0.version") == "aws_launch_template.members.latest_version",
         "the group uses the launch template's latest_version (a refresh starts on each new version)")
    hook = block(asg, "initial_lifecycle_hook")
    separate = m.resource("aws_autoscaling_lifecycle_hook", "leave") or {}
    for h, where in ((hook, "initial_lifecycle_hook"), (separate, "aws_autoscaling_lifecycle_hook.leave")):
        want(lit(h, "name") == "eco-leave", f"{where}: name eco-leave")
        want(lit(h, "lifecycle_transition") == "autoscaling:EC2_INSTANCE_TERMINATING",
             f"{where}: on autoscaling:EC2_INSTANCE_TERMINATING")
        want(lit(h, "heartbeat_timeout") == "var.leave_hook_timeout_seconds",
             f"{where}: heartbeat_timeout = var.leave_hook_timeout_seconds")
        want(lit(h, "default_result") == "CONTINUE", f"{where}: default_result CONTINUE")
    want("initial_lifecycle_hook" in (block(asg, "lifecycle").get("ignore_changes") or []),
         "ignore_changes = [initial_lifecycle_hook] on the group (a change of it replaces the whole group)")
    refresh = block(asg, "instance_refresh")
    prefs = block(refresh, "preferences")
    want(lit(refresh, "strategy") == "Rolling", "instance_refresh strategy Rolling")
    want(lit(prefs, "min_healthy_percentage") == "local.refresh_min_healthy_percentage",
         "instance refresh min_healthy_percentage = local.refresh_min_healthy_percentage")
    want(lit(prefs, "max_healthy_percentage") in (None, 100), "instance refresh max_healthy_percentage 100 (never above desired)")
    want(lit(prefs, "instance_warmup") == "var.instance_warmup_seconds", "instance refresh instance_warmup = var.instance_warmup_seconds")
    want(block(asg, "mixed_instances_policy") == {} and not asg.get("warm_pool"),
         "no mixed instances policy (Spot) and no warm pool")

    lt = m.resource("aws_launch_template", "members") or {}
    md = block(lt, "metadata_options")
    want(lit(md, "http_tokens") == "required", "IMDSv2 only (http_tokens = \"required\")")
    want(lit(md, "http_put_response_hop_limit") == 1, "metadata hop limit 1")
    want(lit(md, "http_endpoint") == "enabled", "metadata endpoint enabled (eco's identity)")
    want(lit(md, "instance_metadata_tags") == "disabled", "no instance tags in the metadata")
    want(lit(lt, "user_data") == "base64encode(local.user_data)", "user_data = base64encode(local.user_data)")
    want(lit(lt, "ebs_optimized") is True, "ebs_optimized = true")
    want(lit(lt, "monitoring.0.enabled") is True, "detailed monitoring")
    want(lit(lt, "network_interfaces.0.associate_public_ip_address") is False, "no public address on the members")
    ebs = block(block(lt, "block_device_mappings"), "ebs")
    want(lit(ebs, "encrypted") is True and lit(ebs, "volume_type") == "gp3"
         and lit(ebs, "volume_size") == "var.volume_size_gib", "root volume gp3, encrypted, var.volume_size_gib")
    # The gossip key never reaches the user data.
    for name in ("user_data", "eco_config"):
        code = code_of(m.locals.get(name, ""))
        want(m.locals.get(name) is not None, f"local.{name}")
        want("random_id" not in code and not re.search(r"aws_ssm_parameter\.[\w\[\]*.]*value", code),
             f"local.{name} holds no gossip key (random_id, a parameter's value)")

    tg = m.resource("aws_lb_target_group", "clients") or {}
    hc = block(tg, "health_check")
    want(lit(tg, "protocol") == "TCP" and lit(tg, "port") == 2379 and lit(tg, "target_type") == "instance",
         "target group TCP 2379, instance targets")
    want(lit(hc, "protocol") == "HTTPS" and str(lit(hc, "port")) == "2390" and lit(hc, "path") == "/readyz",
         "health check HTTPS 2390 /readyz")
    want(lit(hc, "healthy_threshold") == 2 and lit(hc, "unhealthy_threshold") == 2 and lit(hc, "interval") == 10,
         "health check thresholds 2/2, interval 10")
    want(lit(tg, "deregistration_delay") == 30 and lit(tg, "connection_termination") is True,
         "deregistration_delay 30 with connection_termination")
    lb = m.resource("aws_lb", "clients") or {}
    want(lit(lb, "load_balancer_type") == "network" and lit(lb, "internal") == "var.load_balancer_internal"
         and lit(lb, "enable_cross_zone_load_balancing") is True
         and lit(lb, "enable_deletion_protection") == "var.load_balancer_deletion_protection",
         "a network load balancer: internal per variable, cross-zone, deletion protection per variable")
    listener = m.resource("aws_lb_listener", "clients") or {}
    want(lit(listener, "protocol") == "TCP" and lit(listener, "port") == 2379, "listener TCP 2379")

    # The bucket.
    pab = m.resource("aws_s3_bucket_public_access_block", "snapshots") or {}
    want(all(lit(pab, k) is True for k in ("block_public_acls", "block_public_policy", "ignore_public_acls",
                                            "restrict_public_buckets")), "public access block: all four true")
    want(lit(m.resource("aws_s3_bucket_versioning", "snapshots"), "versioning_configuration.0.status") == "Enabled",
         "bucket versioning Enabled")
    sse = block(m.resource("aws_s3_bucket_server_side_encryption_configuration", "snapshots"), "rule")
    want(lit(sse, "apply_server_side_encryption_by_default.0.sse_algorithm") == "aws:kms"
         and lit(sse, "apply_server_side_encryption_by_default.0.kms_master_key_id") == "aws_kms_key.eco.arn"
         and lit(sse, "bucket_key_enabled") is True, "bucket SSE-KMS with the cluster's key and the bucket key")
    lc = m.resource("aws_s3_bucket_lifecycle_configuration", "snapshots") or {}
    rules = lc.get("rule", [])
    want(rules, "a lifecycle configuration")
    for r in rules:
        rid = literal(r.get("id"))
        for e in r.get("expiration", []):
            want(not ({"days", "date"} & set(e)),
                 f"lifecycle rule {rid} expires current objects: eco's records under incarnations/ must never expire")
        for t in r.get("transition", []):
            want(False, f"lifecycle rule {rid} transitions objects (restores would wait for a retrieval)")
    want(any(lit(r, "noncurrent_version_expiration.0.noncurrent_days") == "var.noncurrent_version_expiration_days"
             for r in rules), "non-current versions expire after var.noncurrent_version_expiration_days")
    want(any(lit(r, "abort_incomplete_multipart_upload.0.days_after_initiation") == 7 for r in rules),
         "incomplete multipart uploads aborted after 7 days")
    bp = m.data.get(("aws_iam_policy_document", "bucket")) or {}
    tls = [s for s in bp.get("statement", []) if literal(s.get("effect")) == "Deny"
           and any(literal(c.get("variable")) == "aws:SecureTransport"
                   and [literal(v) for v in c.get("values", [])] == ["false"] for c in s.get("condition", []))]
    want(len(tls) == 1 and {expr(x) for x in tls[0].get("resources", [])}
         == {"aws_s3_bucket.snapshots.arn", '"${aws_s3_bucket.snapshots.arn}/*"'},
         "the bucket policy denies aws:SecureTransport = false on the bucket and its objects")

    key = m.resource("aws_kms_key", "eco") or {}
    want(lit(key, "enable_key_rotation") is True, "KMS key rotation")
    want("local.account_root_arn" in code_of(key.get("policy", "")) and "\"*\"" not in code_of(key.get("policy", "")).split("Principal")[1].split("}")[0],
         "the key policy's only principal is the account root")
    alias = m.resource("aws_kms_alias", "eco") or {}
    want(alias.get("name") == '"alias/${var.name}-eco"', "KMS alias alias/<name>-eco")
    param = m.resource("aws_ssm_parameter", "gossip_key") or {}
    rid = m.resource("random_id", "gossip_key") or {}
    want(lit(param, "type") == "SecureString" and lit(param, "key_id") == "aws_kms_key.eco.arn",
         "the gossip key parameter: SecureString with the cluster's key")
    want(param.get("value") == '"${random_id.gossip_key[0].hex}\\n"' and lit(rid, "byte_length") == 32,
         "the gossip key: 32 random bytes, 64 hex digits and a newline")
    want(param.get("name") == '"/eco/${var.name}/gossip-keys"', "the gossip key parameter /eco/<name>/gossip-keys")
    want("value" in (block(param, "lifecycle").get("ignore_changes") or []),
         "the gossip key parameter's value ignored after creation (rotations are not undone)")

    # Security groups: every rule described, with characters AWS accepts.
    rules = {k: v for k, v in m.resources.items()
             if k[0] in ("aws_vpc_security_group_ingress_rule", "aws_vpc_security_group_egress_rule")}
    groups = {k: v for k, v in m.resources.items() if k[0] == "aws_security_group"}
    for (rtype, name), body in {**rules, **groups}.items():
        d = body.get("description")
        want(d is not None, f"{rtype}.{name}: no description")
        if is_quoted(d):
            text = "".join(unescape(p) for kind, p in template_parts(d[1:-1]) if kind == "text")
            want(SG_DESCRIPTION.match(text) is not None,
                 f"{rtype}.{name}: its description has characters AWS refuses: {text!r}")
            want(len(text) <= 200, f"{rtype}.{name}: its description is too long for AWS (255)")
        want(not body.get("ingress") and not body.get("egress"),
             f"{rtype}.{name}: inline ingress/egress blocks (use separate rule resources)")
    ingress = {name: b for (t, name), b in rules.items() if t == "aws_vpc_security_group_ingress_rule"}
    for name, b in ingress.items():
        port = lit(b, "from_port")
        if port in (2380, 7946):
            want(lit(b, "referenced_security_group_id") == "aws_security_group.members.id"
                 and lit(b, "security_group_id") == "aws_security_group.members.id",
                 f"ingress {name}: port {port} only between the members")
        if port == 22:
            want("var.key_name == null" in code_of(b.get("for_each", "")) or "local.ssh_cidrs" in code_of(b.get("for_each", "")),
                 f"ingress {name}: SSH only with a key pair")
        for c in ("cidr_ipv4", "cidr_ipv6"):
            want(literal(b.get(c)) not in ("0.0.0.0/0", "::/0"), f"ingress {name}: open to the whole internet")
    ports = {(lit(b, "ip_protocol"), lit(b, "from_port")) for b in ingress.values()
             if lit(b, "security_group_id") == "aws_security_group.members.id"}
    for need in (("tcp", 2379), ("tcp", 2380), ("udp", 7946), ("tcp", 2390)):
        want(need in ports, f"the members admit {need[0]} {need[1]}")

    # Locals evaluated with terraform console (no provider): the refresh
    # replaces exactly one member at a time; the names fit AWS's limits.
    work = OUT / "console"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    sizes = [1, 3, 5, 7, 9]
    exprs = [inline(expr(m.locals["refresh_min_healthy_percentage"]), m.locals, {"var.cluster_size": str(n)})
             for n in sizes]
    names = ["main", "a" * 28, "a" * 29, "b" * 36, "b" * 37, "c" * 60 + "-x1", "c" * 60 + "-x2", "d" * 18 + "-" + "e" * 44]
    name_locals = ("name_32", "name_64", "bucket_name")
    for n in names:
        subs = {"var.name": json.dumps(n), "var.bucket_name": "null", "local.account_id": '"123456789012"'}
        exprs += [inline(expr(m.locals[k]), m.locals, subs) for k in name_locals]
    try:
        values = console(exprs, work)
    except (RuntimeError, KeyError) as e:
        problems.append(f"evaluating locals: {e}")
        values = []
    if len(values) == len(exprs):
        for n, p in zip(sizes, values[:len(sizes)]):
            kept = math.ceil(n * p / 100)
            want((n == 1 and p == 0) or (n - kept == 1),
                 f"cluster_size {n}: min_healthy_percentage {p} lets the refresh replace {n - kept} at once, not 1")
        rest = values[len(sizes):]
        limits = {"name_32": 32, "name_64": 64, "bucket_name": 63}
        seen = {k: set() for k in name_locals}
        for i, n in enumerate(names):
            for j, k in enumerate(name_locals):
                v = rest[i * len(name_locals) + j]
                want(len(v) <= limits[k], f"name {n!r}: local.{k} {v!r} is longer than {limits[k]}")
                want(re.fullmatch(r"[a-z0-9][a-z0-9-]*[a-z0-9]", v) is not None and "--" not in v,
                     f"name {n!r}: local.{k} {v!r} is not a valid AWS name")
                want(v not in seen[k], f"local.{k}: two cluster names give {v!r}")
                seen[k].add(v)
        want(rest[0] == "main-eco" and rest[2] == "main-eco-snapshots-123456789012",
             "short names kept whole (main-eco, main-eco-snapshots-ACCOUNT)")
    elif values:
        problems.append(f"terraform console printed {len(values)} values for {len(exprs)} expressions")

    for p in problems:
        print(f"not held: {p}")
    if not problems:
        print("group (EC2 health checks, eco-leave hook, one-at-a-time refresh for 1-9 members), "
              "launch template (IMDSv2, hop 1), load balancer, bucket (no expiration of current objects), "
              f"key, gossip key, {len(rules)} security group rules, names within AWS's limits for {len(names)} cluster names")
    return 1 if problems else 0


# --- checkov ------------------------------------------------------------------------


def checkov_results(path):
    data = json.loads(Path(path).read_text())
    if isinstance(data, list):  # one report per framework
        data = {"results": {k: sum((d.get("results", {}).get(k, []) for d in data), [])
                            for k in ("passed_checks", "failed_checks", "skipped_checks")},
                "summary": {k: sum(d.get("summary", {}).get(k, 0) for d in data)
                            for k in ("passed", "failed", "skipped", "parsing_errors")}}
    if "results" not in data and "summary" in data:  # nothing to scan
        data["results"] = {}
    return data


def config_skips():
    """(check id, the comment lines right above it) of .checkov.yaml's skip-check."""
    lines = (TF / ".checkov.yaml").read_text().splitlines()
    skips, in_list = [], False
    for i, line in enumerate(lines):
        if re.match(r"^skip-check:\s*$", line):
            in_list = True
            continue
        if in_list and re.match(r"^\S", line):
            in_list = False
        m = re.match(r"^\s*-\s*(\S+)\s*$", line) if in_list else None
        if m:
            comments, j = [], i - 1
            while j >= 0 and lines[j].strip().startswith("#"):
                comments.insert(0, lines[j].strip().lstrip("#").strip())
                j -= 1
            skips.append((m.group(1), " ".join(comments)))
    return skips


def cmd_unskipped_config(out):
    """Writes terraform/.checkov.yaml without its skip-check list to OUT."""
    lines, keep, skipping = (TF / ".checkov.yaml").read_text().splitlines(), [], False
    for line in lines:
        if re.match(r"^skip-check:\s*$", line):
            skipping = True
            continue
        if skipping and re.match(r"^\S", line) and not line.startswith("#"):
            skipping = False
        if not skipping:
            keep.append(line)
    Path(out).write_text("\n".join(keep) + "\n")
    return 0


def cmd_checkov(report, unskipped=None):
    data = checkov_results(report)
    summary = data.get("summary", {})
    failed = data["results"].get("failed_checks", [])
    problems = []
    for f in failed:
        lines = f.get("file_line_range") or []
        problems.append(f"FAILED {f['check_id']} {f.get('check_name', '')}: {f.get('resource')} "
                        f"({f.get('file_path')}:{'-'.join(map(str, lines))})")
    if summary.get("parsing_errors"):
        problems.append(f"checkov could not parse {summary['parsing_errors']} files")
    if not summary.get("passed"):
        problems.append("checkov passed no check: nothing was scanned")
    skips = config_skips()
    for check, reason in skips:
        if len(reason) < 40:
            problems.append(f"terraform/.checkov.yaml skips {check} without a reason in a comment right above it")
    if unskipped:
        still = {f["check_id"] for f in checkov_results(unskipped)["results"].get("failed_checks", [])}
        for check, _ in skips:
            if check not in still:
                problems.append(f"terraform/.checkov.yaml skips {check}, which passes without the skip: remove it")
    for p in problems:
        print(p)
    print(f"checkov: {summary.get('passed', 0)} passed, {summary.get('failed', 0)} failed, "
          f"{summary.get('skipped', 0)} skipped inline, {len(skips)} skipped by terraform/.checkov.yaml "
          f"({', '.join(c for c, _ in skips)})")
    return 1 if problems else 0


# --- render -----------------------------------------------------------------------

# Sample values of the templates' variables, as locals.tf passes them.
TEMPLATE_VARS = {
    "eco.toml.tftpl": {
        "cluster_name": "main",
        "region": "eu-west-1",
        "group_name": "main-eco",
        "bucket": "main-eco-snapshots-123456789012",
        "prefix": "eco",
        "kms_key_arn": "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "extra_names": ["main-eco-0123456789abcdef.elb.eu-west-1.amazonaws.com"],
    },
    "user-data.sh.tftpl": {
        "region": "eu-west-1",
        "eco_package_url": "https://packages.example.com/eco_0.1.0_amd64.deb",
        "eco_package_sha256": SHA_A,
        "etcd_version": "3.5.21",
        "etcd_package_url": "https://github.com/etcd-io/etcd/releases/download/v3.5.21/etcd-v3.5.21-linux-amd64.tar.gz",
        "etcd_package_sha256": SHA_B,
        "gossip_key_parameter": "/eco/main/gossip-keys",
        "eco_config": None,  # the rendered eco.toml
    },
}


def example_keys():
    """(table, key) pairs of config.example.toml, commented-out ones included
    (as scripts/check-chart.py reads it)."""
    keys, table = set(), ""
    header = re.compile(r"^#?\s*\[\[?([a-z0-9_.]+)\]\]?\s*(#.*)?$")
    key = re.compile(r"^#?\s?([a-z0-9_]+) = ")
    for line in (ROOT / "config.example.toml").read_text().splitlines():
        m = header.match(line)
        if m:
            table = m.group(1)
            continue
        m = key.match(line)
        if m:
            keys.add((table, m.group(1)))
    return keys


def toml_keys(value, table=""):
    for k, v in value.items():
        if isinstance(v, dict):
            yield from toml_keys(v, f"{table}.{k}" if table else k)
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                yield from toml_keys(x, f"{table}.{k}" if table else k)
        else:
            yield (table, k)


def render(template, values, work):
    (work / "values.json").write_text(json.dumps(values))
    return console([f'templatefile("{template}", jsondecode(file("values.json")))'], work)[0]


def cmd_render():
    tdir = TF / "templates"
    templates = sorted(tdir.glob("*.tftpl")) if tdir.is_dir() else []
    if not templates:
        print("no template under terraform/templates yet: nothing rendered")
        return 0
    work = OUT / "render"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    problems, rendered = [], {}
    # The sample values name exactly the variables locals.tf passes.
    calls = list(re.finditer(r'templatefile\("\$\{path\.module\}/templates/([^"]+)", \{(.*?)\}\)',
                             "\n".join(str(v) for v in Module(TF).locals.values()), re.S))
    if sorted(c.group(1) for c in calls) != sorted(TEMPLATE_VARS):
        problems.append(f"locals.tf renders {sorted(c.group(1) for c in calls)}, "
                        f"check-terraform.py's TEMPLATE_VARS knows {sorted(TEMPLATE_VARS)}")
    for call in calls:
        passed = set(re.findall(r"(?:^|,)\s*([A-Za-z_][A-Za-z0-9_]*)\s*=", call.group(2)))
        sample = set(TEMPLATE_VARS.get(call.group(1), {}))
        if passed != sample:
            problems.append(f"locals.tf passes {sorted(passed)} to {call.group(1)}, "
                            f"check-terraform.py's TEMPLATE_VARS has {sorted(sample)}")
    order = sorted(templates, key=lambda t: t.name != "eco.toml.tftpl")  # the config first
    for t in order:
        values = TEMPLATE_VARS.get(t.name)
        if values is None:
            problems.append(f"{t.relative_to(ROOT)}: no sample values in check-terraform.py's TEMPLATE_VARS")
            continue
        values = {k: (rendered.get("eco.toml.tftpl", "") if v is None else v) for k, v in values.items()}
        try:
            text = render(t, values, work)
        except RuntimeError as e:
            problems.append(f"{t.relative_to(ROOT)} does not render: {e}")
            continue
        rendered[t.name] = text
        (work / t.name.removesuffix(".tftpl")).write_text(text)
        if t.name == "eco.toml.tftpl":
            try:
                doc = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                problems.append(f"{t.name}: renders to invalid TOML: {e}")
                continue
            known = example_keys()
            for table, k in toml_keys(doc):
                if (table, k) not in known:
                    problems.append(f"{t.name}: [{table}] {k} is not a key of config.example.toml")
            if doc.get("provider", {}).get("kind") != "aws":
                problems.append(f"{t.name}: provider.kind is not \"aws\"")
        if t.name.endswith(".sh.tftpl"):
            if not text.startswith("#!"):
                problems.append(f"{t.name}: the rendered script has no #! line")
            r = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
            if r.returncode:
                problems.append(f"{t.name}: bash -n: {r.stderr.strip()}")
            if len(text.encode()) > 16384:
                problems.append(f"{t.name}: renders to {len(text.encode())} bytes, over EC2's 16 KiB of user data")
    for p in problems:
        print(p)
    if not problems:
        print(", ".join(f"{n} -> target/terraform/render/{n.removesuffix('.tftpl')} ({len(v.encode())} bytes)"
                        for n, v in rendered.items()))
    return 1 if problems else 0


def main(argv):
    commands = {
        "parse": cmd_parse, "variables": cmd_variables, "references": cmd_references,
        "validations": cmd_validations, "policy": cmd_policy, "policy-mutations": cmd_policy_mutations,
        "invariants": cmd_invariants, "render": cmd_render,
    }
    if len(argv) == 1 and argv[0] in commands:
        return commands[argv[0]]()
    if len(argv) == 2 and argv[0] == "unskipped-config":
        return cmd_unskipped_config(argv[1])
    if argv and argv[0] == "checkov" and len(argv) in (2, 3):
        return cmd_checkov(*argv[1:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
