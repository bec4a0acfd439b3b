#!/usr/bin/env python3
"""Helpers of scripts/check-chart.sh (run with .tools/chart-venv's Python:
PyYAML and jsonschema come with kubernetes-validate).

  split MANIFESTS OUTDIR   split `helm template` output: OUTDIR/core.yaml (kinds
                           kubernetes-validate has schemas for), OUTDIR/crds.yaml
                           (monitoring.coreos.com kinds), OUTDIR/eco.toml (the
                           rendered config, checked: TOML that parses, every key
                           one of config.example.toml)
  crds FILE...             validate ServiceMonitor / PrometheusRule documents
                           against scripts/chart-crd-schemas.json (strict), and
                           every eco_* metric an alert names against
                           src/metrics/; refuses any other kind
  invariants MANIFESTS     what the chart promises, read from rendered objects
  get MANIFESTS KIND NAME PATH   print one field (dotted path) of one object

Exit status 0 when everything holds, 1 otherwise; problems go to stdout.
"""

import json
import re
import sys
import tomllib
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
CRD_GROUP = "monitoring.coreos.com/"

def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def dump_docs(docs, path):
    with open(path, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False, explicit_start=True)


def example_keys():
    """(table, key) pairs of config.example.toml, commented-out ones included."""
    keys = set()
    table = ""
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
    """(table, key) of every leaf of a parsed TOML document."""
    for k, v in value.items():
        if isinstance(v, dict):
            yield from toml_keys(v, f"{table}.{k}" if table else k)
        else:
            yield (table, k)


def check_config(text, where):
    problems = []
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        return [f"{where}: not TOML: {e}"]
    known = example_keys()
    for table, k in toml_keys(doc):
        if (table, k) not in known:
            problems.append(f"{where}: [{table}] {k} is not a key of config.example.toml")
    if doc.get("provider", {}).get("kind") != "statefulset":
        problems.append(f"{where}: provider.kind is not \"statefulset\"")
    return problems


def split(manifests, outdir):
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    docs = load_docs(manifests)
    core = [d for d in docs if not d["apiVersion"].startswith(CRD_GROUP)]
    crds = [d for d in docs if d["apiVersion"].startswith(CRD_GROUP)]
    dump_docs(core, out / "core.yaml")
    dump_docs(crds, out / "crds.yaml")
    configs = [
        d for d in docs
        if d["kind"] == "ConfigMap" and "eco.toml" in (d.get("data") or {})
    ]
    if len(configs) != 1:
        print(f"{manifests}: {len(configs)} ConfigMaps hold eco.toml, expected 1")
        return 1
    text = configs[0]["data"]["eco.toml"]
    if not text.endswith("\n"):
        text += "\n"
    (out / "eco.toml").write_text(text)
    problems = check_config(text, out / "eco.toml")
    for p in problems:
        print(p)
    return 1 if problems else 0


def metric_names():
    """eco's metric names as Prometheus sees them (src/metrics/): the
    registry's prefix, each registered name, counters with _total."""
    src = "".join(f.read_text().split("#[cfg(test)]")[0]
                  for f in sorted((ROOT / "src" / "metrics").glob("*.rs")))
    prefix = re.search(r'Registry::with_prefix\("([a-z_]+)"\)', src)
    prefix = prefix.group(1) + "_" if prefix else ""
    names = set()
    for m in re.finditer(r'"([a-z][a-z0-9_]*)",\s*"', src):
        names.add(prefix + m.group(1))
    return names


def crds(files):
    schemas = json.loads((ROOT / "scripts" / "chart-crd-schemas.json").read_text())
    known = metric_names()
    rc = 0
    counts = {}
    for f in files:
        for d in load_docs(f):
            kind = d.get("kind")
            name = f"{f}: {kind}/{d.get('metadata', {}).get('name')}"
            if kind not in ("ServiceMonitor", "PrometheusRule"):
                print(f"{name}: no schema for this kind in scripts/chart-crd-schemas.json")
                rc = 1
                continue
            schema = dict(schemas[kind])
            schema["$defs"] = schemas["$defs"]
            errors = sorted(
                jsonschema.Draft202012Validator(schema).iter_errors(d),
                key=lambda e: list(e.path),
            )
            for e in errors:
                print(f"{name}: {'.'.join(map(str, e.path))}: {e.message}")
                rc = 1
            counts[kind] = counts.get(kind, 0) + 1
            if kind == "PrometheusRule":
                for g in d["spec"].get("groups", []):
                    for r in g.get("rules", []):
                        for metric in re.findall(r"\beco_[a-z0-9_]+", str(r.get("expr", ""))):
                            if metric not in known and metric.removesuffix("_total") not in known:
                                print(f"{name}: rule {r.get('alert') or r.get('record')}: "
                                      f"{metric} is not a metric of src/metrics/")
                                rc = 1
    print("validated: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return rc


def find(docs, kind, name=None):
    for d in docs:
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name):
            return d
    return None


def get(manifests, kind, name, path):
    d = find(load_docs(manifests), kind, name)
    if d is None:
        print(f"no {kind}/{name}")
        return 1
    for part in path.split("."):
        d = d[int(part)] if isinstance(d, list) else d.get(part)
        if d is None:
            break
    print("" if d is None else d)
    return 0


def invariants(manifests):
    docs = load_docs(manifests)
    problems = []

    def want(cond, what):
        if not cond:
            problems.append(what)

    sts = find(docs, "StatefulSet")
    want(sts is not None, "a StatefulSet")
    if sts is None:
        for p in problems:
            print(f"{manifests}: missing {p}")
        return 1
    spec = sts["spec"]
    pod = spec["template"]["spec"]
    c = pod["containers"][0]
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    want(spec.get("podManagementPolicy") == "Parallel", "podManagementPolicy: Parallel")
    want(spec.get("updateStrategy", {}).get("type") == "RollingUpdate", "updateStrategy RollingUpdate")
    want(spec.get("minReadySeconds", 0) > 0, "minReadySeconds > 0")
    want(c.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/readyz", "a readiness probe on /readyz")
    want(c.get("startupProbe", {}).get("httpGet", {}).get("path") == "/healthz", "a startup probe on /healthz")
    lp = c.get("livenessProbe")
    want(lp is None or lp.get("httpGet", {}).get("path") == "/healthz",
         "no liveness probe, or one on /healthz (never etcd's health)")
    rep = mounts.get("replicas")
    want(rep is not None and "subPath" not in rep, "the replicas ConfigMap mounted as a directory (no subPath)")
    want(volumes.get("replicas", {}).get("configMap", {}).get("name", "").endswith("-replicas"),
         "the replicas volume from the <fullname>-replicas ConfigMap")
    want("checksum/config" in spec["template"]["metadata"].get("annotations", {}), "a checksum/config annotation")
    want(mounts.get("tmp", {}).get("mountPath") == "/tmp" and "emptyDir" in volumes.get("tmp", {}),
         "an emptyDir on /tmp")
    want(mounts.get("data", {}).get("mountPath") == "/var/lib/eco", "the data volume on /var/lib/eco")
    want(pod.get("automountServiceAccountToken") is False, "automountServiceAccountToken: false on the pod")
    want(pod.get("terminationGracePeriodSeconds", 0) >= 60, "terminationGracePeriodSeconds >= 60")
    psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
    want(psc.get("runAsNonRoot") and psc.get("fsGroup") == 10001 and psc.get("runAsUser") == 10001,
         "pod security context: runAsNonRoot, runAsUser and fsGroup 10001")
    want(psc.get("fsGroupChangePolicy") == "OnRootMismatch",
         "fsGroupChangePolicy: OnRootMismatch (Always makes eco's keys group-writable)")
    want(csc.get("readOnlyRootFilesystem") is True and csc.get("allowPrivilegeEscalation") is False
         and csc.get("capabilities", {}).get("drop") == ["ALL"]
         and csc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
         "container security context: read-only root, no escalation, drop ALL, RuntimeDefault")
    env = {e["name"]: e for e in c.get("env", [])}
    want(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
         "POD_NAME from metadata.name")
    want(env.get("ECO_ZONE", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
         == "metadata.labels['topology.kubernetes.io/zone']", "ECO_ZONE from the pod's zone label")
    headless = [d for d in docs if d["kind"] == "Service" and d["spec"].get("clusterIP") == "None"]
    want(len(headless) == 1 and headless[0]["spec"].get("publishNotReadyAddresses") is True,
         "a headless service with publishNotReadyAddresses")
    want(headless and spec.get("serviceName") == headless[0]["metadata"]["name"],
         "the StatefulSet's serviceName is the headless service")
    pdb = find(docs, "PodDisruptionBudget")
    want(pdb is not None and pdb["apiVersion"] == "policy/v1" and "maxUnavailable" in pdb["spec"],
         "a policy/v1 PodDisruptionBudget with maxUnavailable")
    sa = find(docs, "ServiceAccount")
    want(sa is None or sa.get("automountServiceAccountToken") is False,
         "automountServiceAccountToken: false on the ServiceAccount")
    for p in problems:
        print(f"{manifests}: missing {p}")
    return 1 if problems else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "split":
        return split(argv[1], argv[2])
    if len(argv) >= 2 and argv[0] == "crds":
        return crds(argv[1:])
    if len(argv) == 2 and argv[0] == "invariants":
        return invariants(argv[1])
    if len(argv) == 5 and argv[0] == "get":
        return get(*argv[1:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
