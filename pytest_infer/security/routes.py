"""Authentication on every route: list the server's routes, ask each without the key and with a
wrong one.

The routes are what ``/openapi.json`` lists (FastAPI servers publish one) plus what the framework's
adapter knows (``known_routes``), each classed by what it can do (``adapters.base.ROUTE_KINDS``).
Each route gets one harmless request, first with the right key (the positive control: the request
must reach the route), then without a key and with a wrong one. The harmless request never does what
the route is for:

- ``read`` and GET routes: the GET itself (a GET changes nothing);
- ``generate``: a one-token request (chat, completion, embedding, by the path);
- ``change-state`` and ``internals`` routes that take no GET: a GET, which the route's router
  refuses with 405 once the request has passed authentication. A 401/403 without the key is a
  refusal; a 405 is an open route (the request went past the key check to the router). A server that
  checks the key inside its handlers answers 405 either way and is reported open: the reproducer
  shows it.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..adapters.base import OPENAI_ROUTES, ROUTE_KINDS, KnownRoute
from ..client.curl import curl_command
from ..client.tls import tls

# kinds that must refuse a caller without the key
PROTECTED = ("generate", "change-state", "internals")
REFUSED = (401, 403)
UNROUTED = (404, 405)  # the request met no route: a generating or reading probe did not reach one
PROBE_TIMEOUT = 30.0
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

# Path words that say what an unknown route does, checked in this order; otherwise it reads.
_KIND_WORDS = (
    (
        "internals",
        re.compile(
            r"server_info|rpc|debug|config|internal|weights_by_name|weight_info|world_size|dump"
        ),
    ),
    (
        "change-state",
        re.compile(
            r"sleep|wake|reset|flush|load_|unload|update|pause|resume|continue|abort|profile|shutdown|"
            r"scale|release|init|open_session|close_session|slow_down|cancel|delete|register|start|stop"
        ),
    ),
    (
        "generate",
        re.compile(
            r"complet|chat|generat|invocation|embed|score|rerank|classif|pooling|respons|messages|encode|"
            r"transcri|translat|audio|images"
        ),
    ),
)


def classify(path: str, method: str = "POST") -> str:
    """What an unlisted route can do, from the words of its path (and a DELETE changes state)."""
    if method == "DELETE":
        return "change-state"
    for kind, words in _KIND_WORDS:
        if words.search(path.lower()):
            return kind
    return "read"


@dataclass(slots=True)
class Route:
    path: str
    kind: str
    methods: set[str] = field(default_factory=set)
    source: str = "openapi"  # or "adapter"


def _concrete(path: str) -> str:
    """A path template's parameters filled with a value no server holds (``/v1/responses/{id}`` ->
    ``.../pytest-infer-probe``)."""
    return re.sub(r"\{[^}]+\}", "pytest-infer-probe", path)


def discover(
    client: httpx.Client, known: tuple[KnownRoute, ...] = OPENAI_ROUTES
) -> tuple[list[Route], str]:
    """The routes to probe and where they came from (``client`` carries the right key)."""
    found: dict[str, Route] = {}
    note = "no /openapi.json"
    try:
        resp = client.get("/openapi.json", timeout=PROBE_TIMEOUT)
        paths = resp.json().get("paths") if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        paths = None
    if isinstance(paths, dict):
        note = f"/openapi.json lists {len(paths)} paths"
        for template, ops in paths.items():
            methods = (
                {m.upper() for m in ops if m.upper() in HTTP_METHODS}
                if isinstance(ops, dict)
                else set()
            )
            path = _concrete(template)
            if methods and path not in found:
                found[path] = Route(path, classify(path, next(iter(sorted(methods)))), methods)
    for route in known:
        mine = found.setdefault(route.path, Route(route.path, route.kind, set(), "adapter"))
        mine.kind = route.kind  # the adapter knows better than the path's words
        mine.methods.add(route.method)
    return sorted(found.values(), key=lambda r: (ROUTE_KINDS.index(r.kind), r.path)), note


UNSERVED_METHODS = ("GET", "DELETE", "PUT", "PATCH", "TRACE")


def probe_request(route: Route, model: str) -> tuple[str, dict[str, Any] | None]:
    """The harmless request for ``route``: (method, JSON body or None). A route that changes state
    or shows internals gets a method it does not serve, which its router refuses with 405 once past
    the key check: never acted on (a GET that SGLang 0.5.23's /start_expert_distribution_record
    serves takes the whole server down)."""
    if route.kind not in ("read", "generate"):
        return next((m for m in UNSERVED_METHODS if m not in route.methods), "TRACE"), None
    if "GET" in route.methods:
        return "GET", None
    if route.kind == "read":  # a read acts on nothing: ask it for real (tokenize, detokenize)
        return "POST", {"model": model, "prompt": "Hi", "tokens": [72, 105]}
    path = route.path
    if "embed" in path or "pooling" in path or "classif" in path or "encode" in path:
        return "POST", {"model": model, "input": "Hi"}
    if "responses" in path:
        return "POST", {"model": model, "input": "Hi", "max_output_tokens": 16}
    if path.endswith("/completions") and "chat" not in path or path.endswith("/generate"):
        return "POST", {
            "model": model,
            "prompt": "Hi",
            "text": "Hi",
            "max_tokens": 1,
            "sampling_params": {"max_new_tokens": 1},
        }
    return "POST", {
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 1,
    }


ANSWER_KEYS = (
    "choices",
    "data",
    "output",
    "text",
    "embedding",
    "content",
    "generated_text",
    "meta_info",
    "tokens",
    "count",
)


def _answered(status: int | str, body: str) -> bool:
    """A route's own answer to the harmless request: a 2xx that says something (not ``{}``), or its
    own validation error."""
    if status in (400, 422):
        return True
    if not isinstance(status, int) or not 200 <= status < 300:
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return bool(body.strip())
    return bool(data) and (
        not isinstance(data, dict) or any(k in data for k in ANSWER_KEYS) or "error" not in data
    )


@dataclass(slots=True)
class RouteProbe:
    """One route's answers: with the right key, without one, with a wrong one (HTTP status, or the
    transport error).
    """

    path: str
    kind: str
    method: str
    source: str
    keyed: int | str
    reached: bool  # the positive control: with the right key the harmless request reached the route
    # the probe used a method the route does not serve (its answer is the router's 405)
    wrong_method: bool = False
    no_key: int | str = ""
    wrong_key: int | str = ""
    body_no_key: str = ""
    reproducer: str = ""  # the request without the key
    keyed_reproducer: str = ""  # the harmless request itself, with the key

    def opened(self, answer: int | str) -> bool:
        """``answer`` (without the right key) is the route's own, not a refusal."""
        return (
            isinstance(answer, int)
            and answer not in REFUSED
            and (answer == self.keyed or answer not in UNROUTED)
        )

    @property
    def verdict(self) -> str:
        """``refused``, ``open`` (answers a caller without the key), ``not reached`` (the control
        failed) or ``unclear``."""
        if not self.reached:
            return "not reached"
        if self.opened(self.no_key) or self.opened(self.wrong_key):
            return "open"
        if self.no_key in REFUSED and self.wrong_key in REFUSED:
            return "refused"
        return "unclear"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "method": self.method,
            "source": self.source,
            "keyed": self.keyed,
            "no_key": self.no_key,
            "wrong_key": self.wrong_key,
            "verdict": self.verdict,
            "reproducer": self.reproducer,
        }


def _send(
    base_url: str, method: str, path: str, body: dict | None, headers: dict[str, str]
) -> tuple[int | str, str]:
    try:
        with httpx.Client(
            base_url=base_url, headers=headers, timeout=PROBE_TIMEOUT, verify=tls()
        ) as fresh:
            resp = (
                fresh.request(method, path, json=body)
                if body is not None
                else fresh.request(method, path)
            )
            return resp.status_code, resp.text[:4096]
    except httpx.HTTPError as exc:
        return type(exc).__name__, ""


def probe(base_url: str, api_key: str, route: Route, model: str) -> RouteProbe:
    method, body = probe_request(route, model)
    keyed, text = _send(base_url, method, route.path, body, {"Authorization": f"Bearer {api_key}"})
    wrong_method = method not in route.methods
    if wrong_method:
        reached = keyed == 405
    else:  # a read route may say nothing (an empty 200 from /health); a generating one must answer
        reached = (
            isinstance(keyed, int) and 200 <= keyed < 300
            if route.kind == "read"
            else _answered(keyed, text)
        )
    found = RouteProbe(route.path, route.kind, method, route.source, keyed, reached, wrong_method)
    found.keyed_reproducer = curl_command(
        method, f"{base_url}{route.path}", body, authenticated=True
    )
    if found.reached:
        found.no_key, found.body_no_key = _send(base_url, method, route.path, body, {})
        found.wrong_key, _ = _send(
            base_url,
            method,
            route.path,
            body,
            {"Authorization": f"Bearer wrong-{secrets.token_hex(8)}"},
        )
        found.reproducer = curl_command(
            method, f"{base_url}{route.path}", body, authenticated=False
        )
    return found


def last_answered_before_silence(probes: list[RouteProbe]) -> RouteProbe | None:
    """Where a server that stopped answering during the probes went silent: the route whose keyed
    request reached it and got no answer, at the start of the keyed requests that got none; else the
    last route it answered (None: it answered no keyed request). A dying process may still accept a
    connection and then drop it, so a later request can fail reading, not connecting."""
    silent_from = len(probes)
    while silent_from and isinstance(probes[silent_from - 1].keyed, str):
        silent_from -= 1
    if silent_from < len(probes) and probes[silent_from].keyed != "ConnectError":
        return probes[silent_from]
    return probes[silent_from - 1] if silent_from else None


def probe_all(
    base_url: str, api_key: str, routes: list[Route], model: str, pause_s: float = 0.0
) -> list[RouteProbe]:
    out = []
    for route in routes:
        out.append(probe(base_url, api_key, route, model))
        if pause_s:
            time.sleep(pause_s)
    return out
