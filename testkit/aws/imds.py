"""An IMDSv2 endpoint per EC2 instance: a test-kit addition to moto.

moto 5.2.5 serves instance metadata of one fixed, fake instance on its own
port. This module serves, for every moto EC2 instance that is running and
whose private IPv4 is a loopback address (127.0.0.0/8), its own metadata
on (that address, the kit's IMDS port), answered from moto's live state in
this process. `Fleet.sync()` (run by the kit's poller every ~200 ms) starts
a server when such an instance appears and stops it when the instance stops
running (terminated, shutting down, stopped).

IMDSv2, as AWS serves it with `HttpTokens=required`:
  - `PUT /latest/api/token` with `X-aws-ec2-metadata-token-ttl-seconds`
    between 1 and 21600 returns a token (400 when the header is missing or
    out of range, 403 when `X-Forwarded-For` is present), and the TTL in the
    same header;
  - every GET needs `X-aws-ec2-metadata-token` with a valid, unexpired token
    of this instance (401 otherwise);
  - paths: `/latest/meta-data/` (listing), `instance-id`, `local-ipv4`,
    `local-hostname`, `hostname`, `ami-id`, `instance-type`,
    `placement/availability-zone`, `placement/region`,
    `autoscaling/target-lifecycle-state` (`InService`; `Terminated` once
    the group terminates the instance, `Terminating:Wait` included;
    `Standby`, `Detached`; 404 outside any group), and
    `/latest/dynamic/instance-identity/document` (JSON).
"""

from __future__ import annotations

import ipaddress
import json
import math
import secrets
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from moto.autoscaling.models import autoscaling_backends
from moto.ec2.models import ec2_backends

from lifecycle import LOCK

MAX_TTL = 21600
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
SERVED_STATES = ("pending", "running")

META_DATA_KEYS = [
    "ami-id",
    "autoscaling/",
    "hostname",
    "instance-id",
    "instance-type",
    "local-hostname",
    "local-ipv4",
    "placement/",
]


def _target_lifecycle_state(instance_id: str) -> str | None:
    """What IMDS serves at autoscaling/target-lifecycle-state (None: the
    instance is in no group)."""
    for account in list(autoscaling_backends.values()):
        for backend in list(account.values()):
            for group in list(backend.autoscaling_groups.values()):
                for state in group.instance_states:
                    if state.instance.id != instance_id:
                        continue
                    current = state.lifecycle_state
                    if current.startswith("Terminating") or current == "Terminated":
                        return "Terminated"
                    if current in ("Standby", "EnteringStandby"):
                        return "Standby"
                    if current in ("Detaching", "Detached"):
                        return "Detached"
                    return "InService"
    return None


class _Server(ThreadingHTTPServer):
    """The metadata server of one instance, with its tokens; it closes its
    open (keep-alive) connections when stopped."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, backend, instance_id: str):
        self.backend = backend
        self.instance_id = instance_id
        self.tokens: dict[str, float] = {}  # token -> expiry (monotonic)
        self.connections: set[socket.socket] = set()
        self.stopped = False
        self.guard = threading.Lock()
        super().__init__(address, _Handler)

    def get_request(self):
        conn, addr = super().get_request()
        with self.guard:
            self.connections.add(conn)
        return conn, addr

    def shutdown_request(self, request):
        with self.guard:
            self.connections.discard(request)
        super().shutdown_request(request)

    def stop(self) -> None:
        self.stopped = True
        self.shutdown()
        self.server_close()
        with self.guard:
            for conn in list(self.connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "EC2ws"
    sys_version = ""
    timeout = 10  # idle keep-alive connections are closed after this

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass

    def _send(self, status: int, body: str = "", headers: dict | None = None) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _drain(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    def do_PUT(self):
        self._drain()
        if self.server.stopped:
            self.close_connection = True
            return
        if self.path != "/latest/api/token":
            return self._send(403, "Forbidden")
        if self.headers.get("X-Forwarded-For") is not None:
            return self._send(403, "Forbidden")
        raw = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        try:
            ttl = int(raw)
        except (TypeError, ValueError):
            return self._send(400, "Bad Request")
        if not 1 <= ttl <= MAX_TTL:
            return self._send(400, "Bad Request")
        token = secrets.token_urlsafe(42)
        with self.server.guard:
            now = time.monotonic()
            self.server.tokens = {t: e for t, e in self.server.tokens.items() if e > now}
            self.server.tokens[token] = now + ttl
        self._send(200, token, {"X-aws-ec2-metadata-token-ttl-seconds": str(ttl)})

    def do_GET(self):
        if self.server.stopped:
            self.close_connection = True
            return
        token = self.headers.get("X-aws-ec2-metadata-token")
        with self.server.guard:
            expiry = self.server.tokens.get(token) if token else None
        left = expiry - time.monotonic() if expiry else 0.0
        if left <= 0:
            return self._send(401, "Unauthorized")
        answer = self._answer(self.path.split("?", 1)[0])
        if answer is None:
            return self._send(404, "Not Found")
        self._send(200, answer, {"X-aws-ec2-metadata-token-ttl-seconds": str(math.ceil(left))})

    def do_POST(self):
        self._drain()
        self._send(405, "Method Not Allowed", {"Allow": "GET, PUT"})

    do_DELETE = do_POST

    def _answer(self, path: str) -> str | None:
        """The value at `path`, from moto's live state (None: not found)."""
        with LOCK:
            backend = self.server.backend
            try:
                instance = backend.get_instance(self.server.instance_id)
            except Exception:  # moto's InvalidInstanceIdError
                return None
            zone = instance.placement.zone
            region = backend.region_name
            values = {
                "/latest/meta-data/instance-id": instance.id,
                "/latest/meta-data/local-ipv4": instance.private_ip,
                "/latest/meta-data/local-hostname": instance.private_dns_name,
                "/latest/meta-data/hostname": instance.private_dns_name,
                "/latest/meta-data/ami-id": instance.image_id,
                "/latest/meta-data/instance-type": instance.instance_type,
                "/latest/meta-data/placement/availability-zone": zone,
                "/latest/meta-data/placement/region": region,
                "/latest/meta-data/placement/": "availability-zone\nregion",
                "/latest/meta-data/autoscaling/": "target-lifecycle-state",
                "/latest/meta-data/": "\n".join(META_DATA_KEYS),
            }
            if path == "/latest/meta-data/autoscaling/target-lifecycle-state":
                return _target_lifecycle_state(instance.id)
            if path == "/latest/dynamic/instance-identity/document":
                return json.dumps(
                    {
                        "accountId": backend.account_id,
                        "architecture": "x86_64",
                        "availabilityZone": zone,
                        "imageId": instance.image_id,
                        "instanceId": instance.id,
                        "instanceType": instance.instance_type,
                        "pendingTime": instance.launch_time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "privateIp": instance.private_ip,
                        "region": region,
                        "version": "2017-09-30",
                    },
                    indent=2,
                )
            return values.get(path)


class Fleet:
    """The metadata servers, one per running loopback instance, on `port`."""

    def __init__(self, port: int):
        self.port = port
        self.servers: dict[str, tuple[str, _Server]] = {}  # instance id -> (ip, server)
        self.failed: dict[str, str] = {}  # instance id -> last bind error (logged once)

    def _wanted(self) -> dict[str, tuple[str, object]]:
        wanted = {}
        with LOCK:
            for account in list(ec2_backends.values()):
                for backend in list(account.values()):
                    for instance in backend.all_instances():
                        ip = instance.private_ip
                        if instance.state not in SERVED_STATES or not ip:
                            continue
                        if ipaddress.ip_address(ip) in LOOPBACK:
                            wanted[instance.id] = (ip, backend)
        return wanted

    def sync(self) -> None:
        """Stops the servers of instances gone, then starts the missing ones."""
        wanted = self._wanted()
        for instance_id in [i for i in self.servers if i not in wanted]:
            ip, server = self.servers.pop(instance_id)
            server.stop()
            print(f"imds: stopped {instance_id} on {ip}:{self.port}", file=sys.stderr, flush=True)
        for instance_id, (ip, backend) in wanted.items():
            if instance_id in self.servers:
                continue
            try:
                server = _Server((ip, self.port), backend, instance_id)
            except OSError as err:
                if self.failed.get(instance_id) != str(err):
                    print(f"imds: {instance_id} on {ip}:{self.port}: {err}", file=sys.stderr, flush=True)
                    self.failed[instance_id] = str(err)
                continue
            self.failed.pop(instance_id, None)
            threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.1},
                name=f"imds-{instance_id}",
                daemon=True,
            ).start()
            self.servers[instance_id] = (ip, server)
            print(f"imds: serving {instance_id} on {ip}:{self.port}", file=sys.stderr, flush=True)

    def stop_all(self) -> None:
        for _, server in self.servers.values():
            server.stop()
        self.servers.clear()
