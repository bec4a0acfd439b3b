"""The local AWS API eco's AWS tests run against: moto, plus the test kit's
additions. See README.md next to this file.

    .tools/aws-venv/bin/python testkit/aws/emulator.py \
        --host 127.0.0.1 --port P --imds-port Q [--ready-file F] [--verbose]

moto (unchanged, from PyPI, pinned in scripts/aws-tools-requirements.txt):
  every service moto implements (EC2, Auto Scaling, S3, ...) on one
  endpoint, http://HOST:P, dispatched by moto's own WSGI application.

The kit's additions, all in this directory:
  - lifecycle.py: termination lifecycle hooks that wait
    (`Terminating:Wait`), `CompleteLifecycleAction`,
    `RecordLifecycleActionHeartbeat`, zone-balanced launches and scale-ins;
  - imds.py: an IMDSv2 server per running instance with a loopback
    address, on (its address, Q);
  - this file: the launcher, a WSGI layer in front of moto that serializes
    EC2 and Auto Scaling requests with the kit's poller, injects outages,
    and serves the kit's own routes:
      GET  /_testkit/lifecycle-actions   every lifecycle action call (JSON list)
      GET  /_testkit/lifecycle-pending   the actions in progress (JSON list)
      POST /_testkit/outage  {"services": ["autoscaling", "ec2"], "seconds": N,
                              "error": "unavailable" | "throttling"}
                             those services fail for N seconds (0 ends it)
      GET  /_testkit/outage              the outages in force
      GET  /_testkit/health
  - the poller (this process's main thread, every 200 ms): heartbeat
    timeouts, then the IMDS servers.

`--port 0` / `--imds-port 0` pick free ports; the ready file (written
atomically once the endpoint listens) holds {"port", "imds_port", "pid"} in
JSON, and one line is printed to stdout. SIGTERM or SIGINT stop everything
and exit 0.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
import uuid
from urllib.parse import parse_qs

from werkzeug.serving import make_server
from werkzeug.wsgi import get_input_stream

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

import imds
import lifecycle

POLL_SECONDS = 0.2
# The services whose state the kit's poller reads and changes.
LOCKED_SERVICES = ("ec2", "autoscaling")
CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/[^/]+/([^/]+)/aws4_request")


def request_service(environ) -> str | None:
    """The signing name of a SigV4 request (`ec2`, `autoscaling`, `s3`...),
    from its Authorization header or presigned query; None when unsigned."""
    match = CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if match:
        return match.group(1)
    query = parse_qs(environ.get("QUERY_STRING", ""))
    credential = (query.get("X-Amz-Credential") or [""])[0]
    parts = credential.split("/")
    return parts[3] if len(parts) == 5 else None


class Outages:
    """Services that answer with errors until a deadline."""

    def __init__(self):
        self.guard = threading.Lock()
        self.until: dict[str, tuple[float, str]] = {}  # service -> (monotonic deadline, error)

    def set(self, services: list[str], seconds: float, error: str) -> None:
        with self.guard:
            for service in services:
                if seconds > 0:
                    self.until[service] = (time.monotonic() + seconds, error)
                else:
                    self.until.pop(service, None)

    def current(self, service: str | None) -> str | None:
        """The error `service` answers with now, if any."""
        if service is None:
            return None
        with self.guard:
            entry = self.until.get(service)
            if entry is None:
                return None
            if time.monotonic() >= entry[0]:
                del self.until[service]
                return None
            return entry[1]

    def describe(self) -> list[dict]:
        with self.guard:
            now = time.monotonic()
            return [
                {"service": s, "error": e, "seconds_left": max(0.0, d - now)}
                for s, (d, e) in sorted(self.until.items())
            ]


def outage_response(service: str, error: str) -> tuple[int, bytes]:
    """The status and body AWS sends for `error` in each protocol: EC2
    query, S3 REST-XML, and the query protocol of the others (Auto Scaling)."""
    request_id = str(uuid.uuid4())
    message = "Service unavailable (test kit outage)"
    if service == "ec2":
        code = "RequestLimitExceeded" if error == "throttling" else "Unavailable"
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error></Errors><RequestID>{request_id}</RequestID></Response>"
        )
        return 503, body.encode()
    if service == "s3":
        code = "SlowDown" if error == "throttling" else "ServiceUnavailable"
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message><RequestId>{request_id}</RequestId></Error>"
        )
        return 503, body.encode()
    if error == "throttling":
        status, kind, code = 400, "Sender", "Throttling"
    else:
        status, kind, code = 503, "Receiver", "ServiceUnavailable"
    body = (
        f"<ErrorResponse><Error><Type>{kind}</Type><Code>{code}</Code><Message>{message}</Message>"
        f"</Error><RequestId>{request_id}</RequestId></ErrorResponse>"
    )
    return status, body.encode()


class KitApp:
    """WSGI layer in front of moto's application (see the module doc)."""

    def __init__(self, moto_app, outages: Outages):
        self.moto_app = moto_app
        self.outages = outages

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_testkit/"):
            return self.kit_route(environ, start_response, path)
        service = request_service(environ)
        error = self.outages.current(service)
        if error is not None:
            get_input_stream(environ).read()  # keep the connection usable
            status, body = outage_response(service, error)
            start_response(
                f"{status} {'Service Unavailable' if status == 503 else 'Bad Request'}",
                [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))],
            )
            return [body]
        if service not in LOCKED_SERVICES:
            return self.moto_app(environ, start_response)
        with lifecycle.LOCK:
            # The body is produced inside the lock: moto may build it lazily.
            result = self.moto_app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                if hasattr(result, "close"):
                    result.close()

    def kit_route(self, environ, start_response, path):
        method = environ.get("REQUEST_METHOD", "GET")
        status, payload = "200 OK", None
        if path == "/_testkit/health" and method == "GET":
            payload = {"ok": True}
        elif path == "/_testkit/lifecycle-actions" and method == "GET":
            payload = lifecycle.records()
        elif path == "/_testkit/lifecycle-pending" and method == "GET":
            payload = lifecycle.pending()
        elif path == "/_testkit/outage" and method == "GET":
            payload = self.outages.describe()
        elif path == "/_testkit/outage" and method == "POST":
            try:
                request = json.loads(get_input_stream(environ).read() or b"{}")
                services = [str(s) for s in request["services"]]
                seconds = float(request.get("seconds", 0))
                error = request.get("error", "unavailable")
                if error not in ("unavailable", "throttling"):
                    raise ValueError(f"unknown error {error!r}")
                self.outages.set(services, seconds, error)
                payload = {"ok": True, "outages": self.outages.describe()}
            except (KeyError, TypeError, ValueError) as err:
                status, payload = "400 Bad Request", {"ok": False, "error": str(err)}
        else:
            status, payload = "404 Not Found", {"ok": False, "error": f"no route {method} {path}"}
        body = json.dumps(payload).encode()
        start_response(
            status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def write_ready(path: str, content: dict) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(content, f)
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--imds-port", type=int, default=0, help="0: a free port")
    parser.add_argument("--ready-file", help="written once the endpoint listens")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args()

    if not args.verbose:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
    lifecycle.install()
    imds_port = args.imds_port or free_port(args.host)

    outages = Outages()
    app = KitApp(DomainDispatcherApplication(create_backend_app), outages)
    server = make_server(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)
    port = server.server_port
    serving = threading.Thread(target=server.serve_forever, name="moto", daemon=True)
    serving.start()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    ready = {"port": port, "imds_port": imds_port, "pid": os.getpid()}
    if args.ready_file:
        write_ready(args.ready_file, ready)
    print(f"aws emulator ready: http://{args.host}:{port} imds port {imds_port}", flush=True)

    fleet = imds.Fleet(imds_port)
    while not stop.wait(POLL_SECONDS):
        try:
            lifecycle.tick()
            fleet.sync()
        except Exception as err:  # a bad round is logged; the next one runs
            print(f"poller: {err!r}", file=sys.stderr, flush=True)

    fleet.stop_all()
    server.shutdown()
    serving.join(timeout=5)
    print("aws emulator stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
