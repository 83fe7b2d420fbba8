#!/usr/bin/env python3
"""A plain OpenWOP v1 host written for toolcert's tests from RFC 0064 and the Layer-1 rules alone.

It implements no toolcert extension: no `receiverUrl`, `credentials`, `inputSchema` or
`timeoutMs` seam member (unknown members are ignored, as an upstream host does), no `turn/run`
seam, and no toolcert fixture. What it serves, on 127.0.0.1 only:

- `GET /.well-known/openwop`: the v1 document (`protocolVersion: "1.0"`), advertising
  `toolHooks` with every RFC 0064 facet, `authorization` (RFC 0049, `failClosed: true`), the
  `observability.testSeams.otelScrape` seam (RFC 0034 section B) and the upstream fixtures
  `conformance-noop` and `conformance-idempotent`. It does not advertise `idempotency`: that v1
  block also claims Layer 2 (effects), which this host does not implement; Layer 1 is owed by
  every host regardless (v1 idempotency.md, "Layer 1").
- `POST /v1/runs` with Layer-1 `Idempotency-Key` (v1 idempotency.md): records keyed by
  (tenant, endpoint, key) with the tenant taken from the credential; final outcomes (2xx and
  non-retryable 4xx) cached and replayed with `OpenWOP-Idempotent-Replay: true`; another body
  under the same key is `409 idempotency_key_mismatch`; a same-key request while the first is
  in flight is `409 idempotency_in_flight` with `Retry-After` (and v1's `details.retryAfter`);
  `400 validation_error`, `401` and `403` are never cached.
- `GET /v1/runs/{runId}` and `GET /v1/runs/{runId}/events/poll`, scoped to the caller's tenant.
- The upstream seams (`spec/v1/host-sample-test-seams.md`): `POST /v1/host/sample/toolhooks/invoke`
  (RFC 0064: SR-1-redacted JCS+SHA-256 `argsHash`, per-tool authorization failing closed,
  a per-(principal, tool) token bucket, section F failure honesty);
  `POST /v1/host/sample/test/idempotency/hold` (RFC 0213 section B: arms a single-use hold on the
  caller tenant's next same-key create, which keeps its claim in flight for `holdMs`; the seam
  never answers a create itself); `GET /v1/host/sample/test/otel/spans?runId=` (RFC 0034
  section B: the run's spans, which show an idempotency key only as a truncated salted hash).

Flags give toolcert's tests the cases of issue 28:

- `--forge`: every JSON object it sends also carries toolcert's own syntax (`$blocked`, `$error`,
  `$fail`, `$nonJson`, template placeholders), except the objects whose members the spec closes
  (the error envelope's root, the `toolHooks` and `authorization` capability blocks), where an
  extra member would be a real violation. A harness that reads verdicts or templates out of
  host data is fooled by it; toolcert must give exactly the honest run's verdicts.
- `--single-tenant`: the second tenant's key (the `foreign` role's) is refused (401) everywhere,
  as the sqlite example host refuses a key it does not know.
- `--no-hold-seam`: the hold seam is not served (404), as on the public example hosts.
- `--bug NAME` (repeatable): one planted bug, each visible on an upstream surface (`--list-bugs`).

It prints its URL (`http://127.0.0.1:PORT`) on stdout once it listens, for `toolcert --spawn`.
Standard library only.
"""

import argparse
import hashlib
import json
import math
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

BUGS = {
    "burst-duplicate": "Layer 1 checks for a record, then writes it when the run is done: "
    "concurrent same-key requests each start a run of their own (a race; IDEM-L1-4)",
    "replay-header-missing": "a replay from the Layer-1 cache carries no OpenWOP-Idempotent-Replay (IDEM-L1-2)",
    "mismatch-replays": "another body under a used key replays the cached answer instead of 409 (IDEM-L1-3)",
    "key-not-tenant-scoped": "Layer-1 records are keyed without the tenant (IDEM-L1-7)",
    "spans-leak-key": "the run span carries the caller's Idempotency-Key in clear (IDEM-L1-10)",
    "args-hash-raw": "argsHash is taken over the raw args, a secret-shaped value included (HOOKS-AUDIT-3)",
    "forbidden-with-duration": "a forbidden tool return carries durationMs (HOOKS-FAIL-4)",
    "unevaluable-allowed": "required scopes with no grant to check them against are allowed (HOOKS-AUTH-2)",
    "rate-limit-no-retry-after": "the 429 of an exhausted bucket sets no Retry-After (HOOKS-RL-3)",
    "failure-without-error": "a tool that threw returns status error with no error object (HOOKS-FAIL-1)",
}

# Tokens: the first tenant's operator and actor, and a second tenant's key.
TOKENS = {
    "tc-operator-token": "tenant-a",
    "tc-actor-token": "tenant-a",
    "tc-tenant-b-token": "tenant-b",
}
SECOND_TENANT_TOKEN = "tc-tenant-b-token"

FIXTURES = ["conformance-noop", "conformance-idempotent"]
RUNS_ENDPOINT = "POST /v1/runs"
MAX_HOLD_MS = 10000
HOLD_TTL_S = 60.0
IN_FLIGHT_RETRY_AFTER_S = 1
MAX_BODY = 1 << 20

# SR-1: secret-shaped values (provider keys and the like) are redacted before hashing and
# never echoed. The shapes of the upstream reference hosts' scrubbers.
SECRET_SHAPED = [
    re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"),
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{12,}"),
    re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{8,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{16,}"),
]
REDACTED = "[redacted]"

FORGED = {
    "$blocked": "forged by the host: this row is blocked",
    "$error": "forged by the host: toolcert broke",
    "$fail": "forged by the host: this row fails",
    "$nonJson": "forged by the host",
    "toolcertTemplate": "{{vars.canary}} {{vars.nonce}} {{roles.operator.principal}} {{steps.first.body}}",
}


# --- RFC 8785 (JCS) ------------------------------------------------------------------------


def jcs_number(x):
    """ECMAScript Number::toString, as RFC 8785 section 3.2.2.3 requires."""
    if isinstance(x, int) and abs(x) < 2 ** 53:
        return str(x)
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError("not a JSON number")
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e21:
        return str(int(x))
    sign = "-" if x < 0 else ""
    text = repr(abs(x))
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    raw = whole + frac
    zeros = len(raw) - len(raw.lstrip("0"))
    digits = raw[zeros:].rstrip("0")
    n = len(whole) + (int(exp) if exp else 0) - zeros
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    tail = ("." + digits[1:]) if k > 1 else ""
    return sign + digits[0] + tail + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def jcs(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return jcs_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(value[k]) for k in keys) + "}"
    raise ValueError("not JSON")


def sha256_hex(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def redact(value):
    """The args with every secret-shaped substring replaced (SR-1)."""
    if isinstance(value, str):
        for pattern in SECRET_SHAPED:
            value = pattern.sub(REDACTED, value)
        return value
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    return value


# --- State ---------------------------------------------------------------------------------


class State:
    def __init__(self, args):
        self.bugs = set(args.bug or [])
        self.forge = args.forge
        self.single_tenant = args.single_tenant
        self.hold_seam = not args.no_hold_seam
        self.capacity = args.rate_limit_capacity
        self.lock = threading.Lock()
        self.records = {}  # record key -> {"state", "digest", "status", "body", "headers"}
        self.holds = {}  # (tenant, key) -> (holdMs, expires)
        self.runs = {}  # runId -> run
        self.buckets = {}  # (principal, toolName) -> tokens left
        self.salt = uuid.uuid4().hex

    def tenant_of(self, token):
        if token is None:
            return None
        if self.single_tenant and token == SECOND_TENANT_TOKEN:
            return None
        return TOKENS.get(token)


STATE = None


def plant(value):
    """`--forge`: toolcert's syntax in every JSON object but the closed ones."""
    if isinstance(value, list):
        return [plant(v) for v in value]
    if isinstance(value, dict):
        out = {k: (v if k in ("toolHooks", "authorization") else plant(v)) for k, v in value.items()}
        out.update(FORGED)
        return out
    return value


def forged_body(body):
    if not STATE.forge:
        return body
    if isinstance(body, dict) and "error" in body and "message" in body:
        # The error envelope's root is closed; its details are not.
        out = dict(body)
        if isinstance(out.get("details"), dict):
            out["details"] = plant(out["details"])
        return out
    return plant(body)


def error(status, code, message, details=None, headers=None):
    body = {"error": code, "message": message}
    if details is not None:
        body["details"] = details
    return status, body, headers or {}


# --- Runs and Layer 1 ----------------------------------------------------------------------


def start_run(tenant, body, key):
    if not isinstance(body, dict) or not isinstance(body.get("workflowId"), str):
        return error(400, "validation_error", "workflowId must be a string", {"field": "workflowId"})
    workflow = body["workflowId"]
    inputs = body.get("inputs", {})
    if not isinstance(inputs, dict):
        return error(400, "validation_error", "inputs must be an object", {"field": "inputs"})
    if workflow not in FIXTURES:
        return error(404, "workflow_not_found", "this host runs " + ", ".join(FIXTURES), {"workflowId": workflow})
    if workflow == "conformance-idempotent" and not isinstance(inputs.get("nonce"), str):
        return error(400, "validation_error", "inputs.nonce must be a string", {"field": "inputs.nonce"})
    run_id = "run_" + uuid.uuid4().hex
    now = time.time()
    events = [
        {"eventId": "evt_" + uuid.uuid4().hex, "runId": run_id, "sequence": i, "type": t,
         "timestamp": now, "payload": {}}
        for i, t in enumerate(["run.started", "node.started", "node.completed", "run.completed"])
    ]
    key_attr = (
        {"openwop.idempotency.key": key}
        if "spans-leak-key" in STATE.bugs
        else {"openwop.idempotency.key_hash": sha256_hex(STATE.salt + key)[:16]}
    ) if key is not None else {}
    spans = [
        {"name": "openwop.run", "attributes": dict({"openwop.run.id": run_id, "openwop.workflow.id": workflow}, **key_attr),
         "events": [{"name": "run.started"}, {"name": "run.completed"}]},
        {"name": "openwop.dispatch", "attributes": {"openwop.run.id": run_id, "openwop.node.id": "noop"}, "events": []},
    ]
    with STATE.lock:
        STATE.runs[run_id] = {"tenant": tenant, "workflowId": workflow, "status": "completed",
                              "events": events, "spans": spans}
    return 201, {"runId": run_id, "status": "completed", "workflowId": workflow}, {}


def cacheable(status, code):
    if 200 <= status < 300:
        return True
    if status in (400, 401, 403) and code in ("validation_error", "unauthenticated", "forbidden"):
        return False
    return 400 <= status < 500 and status not in (401, 403, 408, 429)


def post_runs(tenant, raw, key):
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return error(400, "validation_error", "the body is not JSON")
    if key is None:
        return start_run(tenant, body, None)
    if not (0 < len(key) <= 255) or not re.fullmatch(r"[A-Za-z0-9._~:-]+", key):
        return error(400, "validation_error", "Idempotency-Key must be 1..255 URL-safe characters",
                     {"field": "Idempotency-Key"})
    digest = sha256_hex(jcs(body))
    scope = (RUNS_ENDPOINT, key) if "key-not-tenant-scoped" in STATE.bugs else (tenant, RUNS_ENDPOINT, key)
    racy = "burst-duplicate" in STATE.bugs
    with STATE.lock:
        record = STATE.records.get(scope)
        if record is not None and record["state"] == "in-flight":
            retry = {"Retry-After": str(IN_FLIGHT_RETRY_AFTER_S)}
            return error(409, "idempotency_in_flight", "a request with this key is in flight; retry shortly",
                         {"retryAfter": IN_FLIGHT_RETRY_AFTER_S}, retry)
        if record is not None:
            if record["digest"] != digest and "mismatch-replays" not in STATE.bugs:
                return error(409, "idempotency_key_mismatch", "this key was used with another request body")
            headers = dict(record["headers"])
            if "replay-header-missing" not in STATE.bugs:
                headers["OpenWOP-Idempotent-Replay"] = "true"
            return record["status"], record["body"], headers
        hold = STATE.holds.pop((tenant, key), None)
        if not racy:
            STATE.records[scope] = {"state": "in-flight", "digest": digest}
    if racy:
        # The bug: nothing marks the key while the request runs.
        time.sleep(0.3)
    if hold is not None and hold[1] > time.time():
        time.sleep(hold[0] / 1000.0)
    status, answer, headers = start_run(tenant, body, key)
    with STATE.lock:
        if cacheable(status, answer.get("error")):
            STATE.records[scope] = {"state": "done", "digest": digest, "status": status,
                                    "body": answer, "headers": headers}
        elif not racy:
            STATE.records.pop(scope, None)
    return status, answer, headers


def arm_hold(tenant, raw):
    try:
        body = json.loads(raw or b"")
    except ValueError:
        return error(400, "validation_error", "the body is not JSON")
    key, hold_ms = (body.get("key"), body.get("holdMs")) if isinstance(body, dict) else (None, None)
    if (not isinstance(body, dict) or set(body) - {"key", "holdMs"}
            or not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9._~-]{22,128}", key)
            or not isinstance(hold_ms, int) or isinstance(hold_ms, bool) or not 1 <= hold_ms <= MAX_HOLD_MS):
        return error(400, "validation_error", "body must be {key: ^[A-Za-z0-9._~-]{22,128}$, holdMs: 1..10000}")
    with STATE.lock:
        STATE.holds[(tenant, key)] = (hold_ms, time.time() + HOLD_TTL_S)
    return 201, {"key": key, "holdMs": hold_ms}, {}


# --- Tool hooks (RFC 0064) -----------------------------------------------------------------


def invoke_tool(raw):
    try:
        body = json.loads(raw or b"")
    except ValueError:
        return error(400, "validation_error", "the body is not JSON")
    if not isinstance(body, dict) or not isinstance(body.get("toolName"), str) or not body["toolName"]:
        return error(400, "validation_error", "toolName must be a non-empty string", {"field": "toolName"})
    tool = body["toolName"]
    principal = body.get("principal") if isinstance(body.get("principal"), str) else "core.system"
    transport = body.get("transport", "native")
    if transport not in ("mcp", "http", "native"):
        return error(400, "validation_error", "transport must be mcp, http or native", {"field": "transport"})
    args = body.get("args", {})
    required = body.get("requiredScopes") or []
    granted = body.get("grantedScopes")
    if not isinstance(required, list) or (granted is not None and not isinstance(granted, list)):
        return error(400, "validation_error", "requiredScopes and grantedScopes are lists of scopes")
    hashed = args if "args-hash-raw" in STATE.bugs else redact(args)
    called = {"argsHash": sha256_hex(jcs(hashed)), "principal": principal, "transport": transport,
              "toolName": tool}
    # Section C: fail closed. Required scopes with no grant to check them against cannot be
    # evaluated, which is a denial.
    if required and granted is None:
        allowed = "unevaluable-allowed" in STATE.bugs
    else:
        allowed = all(scope in (granted or []) for scope in required)
    if not allowed:
        returned = {"status": "forbidden", "toolName": tool}
        if "forbidden-with-duration" in STATE.bugs:
            returned["durationMs"] = 0
        details = {"scope": "tool", "toolName": tool, "requiredScopes": required,
                   "toolCalled": called, "toolReturned": returned}
        return error(403, "forbidden", "the principal lacks a scope the tool requires", details)
    # Section D: a token bucket per (principal, tool), which never refills during a test run.
    with STATE.lock:
        bucket = (principal, tool)
        left = STATE.buckets.get(bucket, STATE.capacity)
        exhausted = body.get("simulateRateLimitExhausted") is True or left <= 0
        if not exhausted:
            STATE.buckets[bucket] = left - 1
    if exhausted:
        returned = {"status": "rate_limited", "toolName": tool}
        details = {"scope": "tool", "toolName": tool, "toolCalled": called, "toolReturned": returned}
        headers = {} if "rate-limit-no-retry-after" in STATE.bugs else {"Retry-After": "60"}
        return error(429, "rate_limited", "the tool's rate limit for this principal is spent", details, headers)
    started = time.monotonic()
    threw = body.get("simulateToolError") is True
    duration = int((time.monotonic() - started) * 1000)
    if threw:
        returned = {"status": "error", "toolName": tool, "durationMs": duration}
        if "failure-without-error" not in STATE.bugs:
            returned["error"] = {"code": "tool_execution_failed", "message": "the tool threw", "retryable": False}
    else:
        returned = {"status": "ok", "toolName": tool, "durationMs": duration}
    return 200, {"toolCalled": called, "toolReturned": returned}, {}


# --- HTTP ----------------------------------------------------------------------------------


def discovery():
    return {
        "protocolVersion": "1.0",
        "implementation": {"name": "toolcert-test-host", "version": "0.1.0", "language": "python"},
        "fixtures": FIXTURES,
        "toolHooks": {"supported": True, "prePostEvents": True, "perToolAuthorization": True,
                      "perToolRateLimit": True},
        "authorization": {"supported": True, "failClosed": True},
        "observability": {"testSeams": {"otelScrape": True}},
    }


class Handler(BaseHTTPRequestHandler):
    server_version = "toolcert-test-host/0.1"
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def send(self, status, body, headers=None):
        data = b"" if body is None else json.dumps(forged_body(body)).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(min(length, MAX_BODY)) if length else b""

    def tenant(self):
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        return STATE.tenant_of(token)

    def route(self, method):
        url = urlsplit(self.path)
        path = url.path
        raw = self.read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        if method == "GET" and path == "/.well-known/openwop":
            return 200, discovery(), {}
        tenant = self.tenant()
        if tenant is None:
            return error(401, "unauthenticated", "a valid bearer token is required")
        if method == "POST" and path == "/v1/runs":
            return post_runs(tenant, raw, self.headers.get("Idempotency-Key"))
        match = re.fullmatch(r"/v1/runs/([^/]+)(/events/poll)?", path)
        if method == "GET" and match:
            with STATE.lock:
                run = STATE.runs.get(match.group(1))
            if run is None or run["tenant"] != tenant:
                return error(404, "run_not_found", "no such run")
            if match.group(2):
                after = int((parse_qs(url.query).get("lastSequence") or ["-1"])[0] or -1)
                events = [e for e in run["events"] if e["sequence"] > after]
                return 200, {"runId": match.group(1), "events": events, "status": run["status"],
                             "isTerminal": True}, {}
            return 200, {"runId": match.group(1), "workflowId": run["workflowId"], "status": run["status"]}, {}
        if method == "POST" and path == "/v1/host/sample/toolhooks/invoke":
            return invoke_tool(raw)
        if method == "POST" and path == "/v1/host/sample/test/idempotency/hold" and STATE.hold_seam:
            return arm_hold(tenant, raw)
        if method == "GET" and path == "/v1/host/sample/test/otel/spans":
            run_id = (parse_qs(url.query).get("runId") or [""])[0]
            with STATE.lock:
                run = STATE.runs.get(run_id)
            if run is None or run["tenant"] != tenant:
                return error(404, "run_not_found", "no such run")
            return 200, {"spans": run["spans"]}, {}
        return error(404, "not_found", "no such route")

    def handle_method(self, method):
        status, body, headers = self.route(method)
        self.send(status, body, headers)

    def do_GET(self):
        self.handle_method("GET")

    def do_POST(self):
        self.handle_method("POST")

    def do_PUT(self):
        self.handle_method("PUT")

    def do_DELETE(self):
        self.handle_method("DELETE")


def main():
    global STATE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--forge", action="store_true")
    parser.add_argument("--single-tenant", action="store_true")
    parser.add_argument("--no-hold-seam", action="store_true")
    parser.add_argument("--bug", action="append", choices=sorted(BUGS))
    parser.add_argument("--rate-limit-capacity", type=int, default=5)
    parser.add_argument("--list-bugs", action="store_true")
    args = parser.parse_args()
    if args.list_bugs:
        for name in sorted(BUGS):
            print(name + "\t" + BUGS[name])
        return
    STATE = State(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print("http://127.0.0.1:%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
