#!/usr/bin/env python3
"""The local cluster of `make run`, kept in the foreground.

Runs one `eco run` per instance of .run/local/group.toml (first copied from
examples/local/group.toml), each with its config written from
examples/local/instance.toml. eco's own log lines (its events) go to the
terminal, prefixed with the instance, and to .run/local/<id>/eco.log;
etcd's log goes to .run/local/<id>/etcd.log (etcd.log_file).

The group file is watched while it runs: an instance added to it gets its
eco started (it joins as a learner and is promoted); an instance removed
from it is left to leave (the cluster removes its member, its eco stops its
etcd and keeps the data), and then its eco is stopped. An eco that exits on
its own is started again after a pause while its instance is in the group,
as systemd or Kubernetes would.

Ctrl-C (or SIGTERM) stops every eco with SIGTERM (each stops its etcd
first), waits for them, and kills by pid whatever is left after a bound.

Usage: run-local.py --eco target/debug/eco --etcd-bin DIR
       [--run-dir .run/local] [--group-from examples/local/group.toml]
(tests/run_local.rs runs it in a directory of its own, on other
addresses.)
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / ".run" / "local"
EXAMPLE = ROOT / "examples" / "local"
API_PORT = 2390
# An eco that exits on its own is started again after this pause.
RESTART_AFTER = 5.0
# A removed instance gets this long to leave before its eco is stopped
# anyway.
LEAVE_WITHIN = 180.0
# Every eco gets this long to stop after SIGTERM before it is killed.
STOP_WITHIN = 90.0

print_lock = threading.Lock()


def say(line):
    with print_lock:
        print(line, flush=True)


def read_group(path):
    """The group file's instances as {id: address}, or raises ValueError."""
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    out = {}
    for entry in doc.get("instance", []):
        iid, address = entry.get("id"), entry.get("address")
        if not isinstance(iid, str) or not isinstance(address, str):
            raise ValueError(f"an [[instance]] without a string id and address: {entry}")
        if iid in out:
            raise ValueError(f"instance {iid} is listed twice")
        out[iid] = address
    return out


def write_config(iid):
    """Writes .run/local/<id>.toml from the example; returns its path."""
    text = (EXAMPLE / "instance.toml").read_text().replace("@ID@", iid)
    (RUN / iid).mkdir(parents=True, exist_ok=True)
    path = RUN / f"{iid}.toml"
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


# Keys of eco's JSON lines the terminal does not show.
HIDDEN = {"target", "span", "spans", "threadName", "threadId", "filename", "line_number"}


def shown(value):
    """A field's value as the terminal shows it."""
    if isinstance(value, str):
        return value if value and " " not in value and '"' not in value else json.dumps(value)
    return json.dumps(value)


def render(iid, raw):
    """One of eco's JSON log lines as one terminal line: time, instance,
    level, message, the event's name and its fields. Anything else (a
    panic's text) is shown as it is."""
    try:
        rec = json.loads(raw)
    except ValueError:
        rec = None
    if not isinstance(rec, dict):
        return f"{'':12} {iid:<6} {raw}"
    when = str(rec.pop("timestamp", ""))[11:23]
    level = str(rec.pop("level", ""))
    message = str(rec.pop("message", ""))
    event = rec.pop("event", None)
    fields = " ".join(f"{k}={shown(v)}" for k, v in rec.items() if k not in HIDDEN)
    line = f"{when:<12} {iid:<6} {level:<5} {message}"
    if event:
        line += f"  [{event}]"
    if fields:
        line += f"  {fields}"
    return line


def rel(path):
    """`path` relative to the repository (where make run runs)."""
    return os.path.relpath(path, ROOT)


def status_of(address):
    """The instance's /status as JSON, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{address}:{API_PORT}/status", timeout=2) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


class Eco:
    """One instance's eco process."""

    def __init__(self, eco_bin, iid, address):
        self.eco_bin = eco_bin
        self.id = iid
        self.address = address
        self.process = None
        self.exited_at = None
        # Set once the instance left the group: when it was seen leaving.
        self.leaving_since = None

    def start(self):
        config = write_config(self.id)
        log = open(RUN / self.id / "eco.log", "ab")
        self.process = subprocess.Popen(
            [self.eco_bin, "run", "--config", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Ctrl-C reaches this script only; it stops the ecos itself.
            start_new_session=True,
        )
        self.exited_at = None
        threading.Thread(target=self.forward, args=(self.process, log), daemon=True).start()

    def forward(self, process, log):
        with log:
            for raw in process.stdout:
                log.write(raw)
                log.flush()
                say(render(self.id, raw.decode(errors="replace").rstrip()))

    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        if self.running():
            self.process.send_signal(signal.SIGTERM)

    def wait(self, deadline):
        if self.process is None:
            return
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f"[{self.id}] eco did not stop in time: killing pid {self.process.pid}")
            self.process.kill()
            self.process.wait()

    def has_left(self):
        """The instance's eco says its etcd stopped and it is no member."""
        s = status_of(self.address)
        return s is not None and not s.get("process", {}).get("running") and s.get("member") is None


class Supervisor:
    def __init__(self, eco_bin):
        self.eco_bin = eco_bin
        self.group_file = RUN / "group.toml"
        self.ecos = {}
        self.group = {}
        self.group_stamp = None
        self.group_problem = None

    def refresh_group(self):
        """Re-reads the group file when it changed; returns the instances
        added and removed since the last read."""
        try:
            st = self.group_file.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError as e:
            stamp = str(e)
        if stamp == self.group_stamp:
            return [], []
        self.group_stamp = stamp
        try:
            group = read_group(self.group_file)
        except (OSError, ValueError, tomllib.TOMLDecodeError) as e:
            if str(e) != self.group_problem:
                say(f"==> {rel(self.group_file)} cannot be read ({e}); the instances keep running as they are")
                self.group_problem = str(e)
            return [], []
        self.group_problem = None
        added = [i for i in group if i not in self.group]
        removed = [i for i in self.group if i not in group]
        self.group = group
        return added, removed

    def start(self, iid):
        eco = self.ecos.get(iid)
        if eco is None or eco.address != self.group[iid]:
            eco = Eco(self.eco_bin, iid, self.group[iid])
            self.ecos[iid] = eco
        eco.leaving_since = None
        if not eco.running():
            eco.start()

    def tend(self):
        """One round: follow the group file, restart exited ecos, stop the
        ones whose instance has left."""
        added, removed = self.refresh_group()
        for iid in added:
            if iid in self.ecos and self.ecos[iid].running():
                self.ecos[iid].leaving_since = None
                say(f"==> {iid} is back in the group; its eco keeps running")
                continue
            say(f"==> {iid} ({self.group[iid]}) joined the group: starting its eco "
                f"(eco log {rel(RUN / iid / 'eco.log')}, etcd log {rel(RUN / iid / 'etcd.log')})")
            self.start(iid)
        for iid in removed:
            eco = self.ecos.get(iid)
            if eco is not None and eco.running():
                eco.leaving_since = time.monotonic()
                say(f"==> {iid} left the group: the cluster removes its member; its eco "
                    "stops once it has left (its data is kept)")
        now = time.monotonic()
        for iid, eco in list(self.ecos.items()):
            if eco.leaving_since is not None:
                if not eco.running():
                    eco.leaving_since = None
                elif eco.has_left() or now - eco.leaving_since > LEAVE_WITHIN:
                    why = "it has left the cluster" if eco.has_left() else \
                        f"it did not leave within {LEAVE_WITHIN:.0f} s"
                    say(f"==> {iid}: {why}; stopping its eco")
                    eco.stop()
                    eco.wait(time.monotonic() + STOP_WITHIN)
                    eco.leaving_since = None
                continue
            if iid not in self.group or eco.process is None:
                continue
            code = eco.process.poll()
            if code is None:
                continue
            if eco.exited_at is None:
                eco.exited_at = now
                say(f"==> {iid}: eco exited ({code}); starting it again in {RESTART_AFTER:.0f} s "
                    f"(its log: {rel(RUN / iid / 'eco.log')})")
            elif now - eco.exited_at >= RESTART_AFTER:
                eco.start()

    def stop_all(self):
        running = [e for e in self.ecos.values() if e.running()]
        if not running:
            return
        say("\n==> stopping the local cluster (each eco stops its etcd first)...")
        for e in running:
            e.stop()
        deadline = time.monotonic() + STOP_WITHIN
        for e in running:
            e.wait(deadline)


def etcdctl(etcd_bin, tls, *args):
    return subprocess.run(
        [str(Path(etcd_bin) / "etcdctl"), *tls, "--command-timeout=1s", *args],
        capture_output=True,
        text=True,
        timeout=10,
    )


def wait_for_voters(sup, etcd_bin, want):
    """Waits (bounded) until `want` voters have started and answer."""
    first = sup.group[want[0]]
    tls = ["--cacert", str(RUN / want[0] / "tls/ca.crt"),
           "--cert", str(RUN / want[0] / "tls/eco.crt"),
           "--key", str(RUN / want[0] / "tls/eco.key")]
    endpoints = ",".join(f"https://{sup.group[i]}:2379" for i in want)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        sup.tend()
        try:
            listed = etcdctl(etcd_bin, tls, f"--endpoints=https://{first}:2379", "member", "list")
            voters = [line for line in listed.stdout.splitlines()
                      if ", started, " in line and line.rstrip().endswith(", false")]
            if len(voters) == len(want) and etcdctl(
                    etcd_bin, tls, f"--endpoints={endpoints}", "endpoint", "health").returncode == 0:
                return endpoints
        except (OSError, subprocess.TimeoutExpired):
            pass
        time.sleep(0.5)
    return None


def main():
    global RUN
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eco", required=True)
    parser.add_argument("--etcd-bin", required=True)
    parser.add_argument("--etcd-version", default="3.5")
    parser.add_argument("--run-dir", default=str(RUN),
                        help="where configs, data, logs and the store go")
    parser.add_argument("--group-from", default=str(EXAMPLE / "group.toml"),
                        help="the group file copied into the run directory at the first run")
    args = parser.parse_args()
    eco_bin = str(Path(args.eco).resolve())
    RUN = Path(args.run_dir).resolve()

    (RUN / "store").mkdir(parents=True, exist_ok=True)
    keys = RUN / "gossip.keys"
    if not keys.exists():
        old = os.umask(0o077)
        try:
            keys.write_text(os.urandom(32).hex() + "\n")
        finally:
            os.umask(old)
    keys.chmod(0o600)
    group_file = RUN / "group.toml"
    if not group_file.exists():
        group_file.write_text(Path(args.group_from).read_text())

    sup = Supervisor(eco_bin)
    stopping = threading.Event()

    def on_signal(_sig, _frame):
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        sup.refresh_group()
        if not sup.group:
            sys.exit(f"{group_file} lists no instance (make clean-run starts over)")
        for iid in sup.group:
            sup.start(iid)
        ids = list(sup.group)
        endpoints = wait_for_voters(sup, args.etcd_bin, ids)
        if stopping.is_set():
            return
        if endpoints is None:
            say(f"==> the cluster did not come up within 90 s; the ecos keep trying (logs in {rel(RUN)})")
        else:
            banner(sup, args, ids, endpoints)
        while not stopping.is_set():
            sup.tend()
            stopping.wait(0.5)
    finally:
        sup.stop_all()
        say(f"stopped. Data stays in {rel(RUN)} (make clean-run removes it).")


def client_env(path, etcd_bin, endpoints, op, user):
    """Writes a file to `source` for etcdctl as `user`."""
    path.write_text(
        f"# source {rel(path)}: etcdctl as {user} (written by make run)\n"
        f"export PATH={etcd_bin}:$PATH\n"
        f"export ETCDCTL_API=3\n"
        f"export ETCDCTL_ENDPOINTS={endpoints}\n"
        f"export ETCDCTL_CACERT={op}/ca.crt\n"
        f"export ETCDCTL_CERT={op}/{user}.crt\n"
        f"export ETCDCTL_KEY={op}/{user}.key\n"
    )


def banner(sup, args, ids, endpoints):
    eco = sup.eco_bin
    first = RUN / f"{ids[0]}.toml"
    op = RUN / "operator"
    for user in ("operator", "app"):
        subprocess.run(
            [eco, "certs", "client", "--config", str(first), "--user", user,
             "--out", str(op), "--validity", "30days"],
            check=True, capture_output=True, timeout=60,
        )
        client_env(RUN / f"{user}.env", args.etcd_bin, endpoints, op, user)
    logs = "\n".join(f"            {i}: {rel(RUN / i / 'eco.log')}, etcd's: {rel(RUN / i / 'etcd.log')}"
                     for i in ids)
    n = len(ids) + 1
    say(f"""
==> the local cluster is up: {len(ids)} voters (etcd {args.etcd_version}), TLS on etcd's
    client and peer ports from the cluster's own CA, client certificates
    required; etcd's authentication on, users by certificate CN
    (certificates of operator, root, and app, only /app/, are in {rel(op)})
    client endpoints: {endpoints}
    try, in another terminal:
            source {rel(RUN / 'operator.env')}     (etcdctl as operator)
            etcdctl put hello world; etcdctl get hello
            etcdctl member list -w table
            source {rel(RUN / 'app.env')}          (etcdctl as app)
            etcdctl put /app/greeting hi
            etcdctl get hello                  (refused: permission denied)
    status: {rel(Path(eco))} status --cluster --config {rel(first)}
    logs:   eco's events below (whole JSON lines in each eco.log);
{logs}
    resize: add an [[instance]] to {rel(sup.group_file)}, e.g.
              [[instance]]
              id = "eco-{n}"
              address = "127.0.0.{10 + n}"
              zone = "zone-a"
            its eco starts and joins; remove it and it leaves, then its eco
            stops. Watch it with the status line above.
    Ctrl-C stops the cluster.
""")


if __name__ == "__main__":
    main()
