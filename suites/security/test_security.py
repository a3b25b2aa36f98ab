"""Security: does the server refuse callers without the key on every route, do its error answers keep its internals
to itself, and can one valid request stall it for everyone?

The route check needs an API key (``--infer-api-key`` or ``$PYTEST_INFER_API_KEY``): a launched server gets it in
its environment or a private file, never on its command line. The disclosure check judges every error answer this
process's clients read, from every suite, plus a few it provokes itself; it runs last, after the other suites.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from pytest_infer import Inconclusive, InferClient
from pytest_infer.client.answers import CHAT, completion_problem
from pytest_infer.client.curl import curl_command
from pytest_infer.client.errors import ERRORS, envelope_problem
from pytest_infer.client.tls import tls
from pytest_infer.outcomes import NotExercised
from pytest_infer.security import (
    HOSTILE,
    PROTECTED,
    discover,
    environment_secrets,
    last_answered_before_silence,
    measure,
    probe_all,
    response_format,
    scan_body,
    scan_headers,
    sent_strings,
)
from pytest_infer.structured import AnswerClass, classify_output

pytestmark = pytest.mark.security

DEFAULT_CONTEXT = 131_072


@pytest.fixture(scope="session")
def security_routes(infer_server, infer_endpoint, security_known_routes, security_record):
    """Every route probed once per target: with the right key, without one, with a wrong one; and whether the server
    still answers afterwards (None), or where it went silent."""
    if not infer_endpoint.api_key:
        raise NotExercised(
            "no API key is set (--infer-api-key or $PYTEST_INFER_API_KEY): every route is open by design"
        )
    with InferClient(infer_endpoint) as client:
        routes, note = discover(client, security_known_routes)
    probes = probe_all(
        infer_endpoint.base_url, infer_endpoint.api_key, routes, infer_endpoint.model
    )
    security_record["routes"].update({f"{p.method} {p.path}": p.to_json() for p in probes})
    return probes, note, _silence(infer_server, probes)


def _still_answers(infer_server) -> bool:
    """The server answers HTTP (any status) and, where launched, its process lives: an endpoint has no pid to watch."""
    try:
        httpx.get(infer_server.base_url, timeout=10, verify=tls())
    except httpx.HTTPError:
        return False
    return infer_server.alive()


def _silence(infer_server, probes) -> str | None:
    """Why the server no longer answers after the probes, naming the route it went silent after; None if it answers."""
    if _still_answers(infer_server):
        return None
    last = last_answered_before_silence(probes)
    after = (
        f"after {last.method} {last.path} [{last.kind}] with the key (HTTP {last.keyed}); every later route could not "
        f"connect; reproduce: {last.keyed_reproducer}"
        if last
        else "before the first route"
    )
    return (
        f"the server stopped answering during the route check, {after}\nlast lines of its"
        f" log:\n{infer_server.log_tail()}"
    )


def test_every_route_refuses_a_caller_without_the_key(security_routes, infer_record):
    probes, note, silence = security_routes
    if silence:
        pytest.fail(silence, pytrace=False)
    reached = [p for p in probes if p.verdict != "not reached"]
    if not any(p.kind in PROTECTED for p in reached):
        raise Inconclusive(
            f"{note}; with the right key no protected route answered the harmless request "
            f"({', '.join(f'{p.path} {p.keyed}' for p in probes[:8])}): the positive control failed"
        )
    open_ = [p for p in reached if p.verdict == "open" and p.kind in PROTECTED]
    if open_:
        infer_record("infer_reproducer", open_[0].reproducer)
        lines = [
            f"{p.method} {p.path} [{p.kind}]: HTTP {p.no_key} without a key, {p.wrong_key} with a wrong one; "
            f"{p.body_no_key[:120]!r}\n  reproduce: {p.reproducer}"
            for p in open_
        ]
        pytest.fail(
            f"{len(open_)} route(s) answer a caller without the key:"
            f" {', '.join(f'{p.path} [{p.kind}]' for p in open_)}\n" + "\n".join(lines),
            pytrace=False,
        )
    unclear = [
        f"{p.path} ({p.no_key}/{p.wrong_key})"
        for p in reached
        if p.verdict == "unclear" and p.kind in PROTECTED
    ]
    if unclear:
        raise Inconclusive(f"neither served nor refused without the key: {', '.join(unclear)}")
    refused = [p for p in reached if p.kind in PROTECTED]
    infer_record(
        "infer_evidence",
        f"{len(refused)} protected routes answered with the key and refused without it and with a wrong one "
        f"({', '.join(f'{p.method} {p.path} {p.keyed}->{p.no_key}/{p.wrong_key}' for p in refused)}); {note}",
    )


def test_refusals_carry_the_error_envelope(security_routes, infer_record):
    """Under /v1 the OpenAI API defines the error envelope, a 401 included: clients parse ``error.message``."""
    probes, _, _ = security_routes
    refused = [p for p in probes if p.verdict == "refused" and p.path.startswith("/v1/")]
    if not any(
        p.kind in PROTECTED for p in refused
    ):  # a read route's control is any 2xx: too weak alone
        raise NotExercised(
            "no protected /v1 route that answered with the key refused a caller without it"
        )
    bad = [
        f"{p.path}: {why}; body {p.body_no_key[:100]!r}"
        for p in refused
        if (why := envelope_problem(p.body_no_key))
    ]
    assert not bad, (
        f"{len(bad)} of {len(refused)} refusals under /v1 lack the error envelope:\n"
        + "\n".join(bad)
    )
    infer_record(
        "infer_evidence",
        f"{len(refused)} refusals under /v1 carry the error envelope: "
        + ", ".join(f"{p.method} {p.path} {p.no_key}" for p in refused),
    )


# requests that must be refused, each for its own reason: what a client can make the server say about itself
def _context(infer_server, infer_endpoint, infer_target) -> int:
    """A size for the hostile requests, never a limit judged: the known context, else a built-in model's assumed
    one, else a large default."""
    assumed = infer_target.builtin.known_context if infer_target.builtin else DEFAULT_CONTEXT
    return infer_server.known_context(infer_endpoint)[0] or assumed


def _conforms(schema: dict, text: str | None, finish_reason: str | None) -> str | None:
    """Why a hostile answer breaks the schema it was asked under, by the structured suite's classifier: None for a
    valid answer, or one cut at the token limit that can still become valid (the grammar bomb asks for 8 tokens of
    a much longer object)."""
    found = classify_output(schema, text, finish_reason)
    return (
        None
        if found.outcome in (AnswerClass.VALID, AnswerClass.TRUNCATED)
        else f"{found.outcome.value}: {found.message}"
    )


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_one_hostile_request_does_not_stall_the_others(
    kind,
    infer_live_server,
    infer_endpoint,
    infer_target,
    security_limits,
    security_record,
    infer_record,
):
    """Judged only where the hostile request ran: refused before any light request met it, it is not exercised."""
    _, build = HOSTILE[kind]
    body = build(
        infer_endpoint.model,
        _context(infer_live_server, infer_endpoint, infer_target),
        response_format,
    )
    stall = measure(infer_endpoint, kind, body, security_limits, _conforms)
    security_record["stalls"][kind] = stall.to_json()
    if stall.verdict == "inconclusive":
        raise Inconclusive(f"hostile request {kind!r}: {stall.why}")
    if stall.verdict == "not_exercised":
        raise NotExercised(f"hostile request {kind!r}: {stall.why}")
    if stall.verdict == "failed":
        pytest.fail(f"hostile request '{kind}' ({HOSTILE[kind][0]}): {stall.why}", pytrace=False)
    infer_record("infer_evidence", stall.why)


def _prompt_of(model: str, words: int) -> dict[str, Any]:
    """A one-token chat whose prompt is ``words`` x "a " (one token or two each, under any tokenizer)."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": "a " * words}],
        "max_tokens": 1,
    }


# The refusal of a prompt over the context: the status of a request the server judged invalid (400: OpenAI's, vLLM's,
# SGLang's, llama.cpp's; 422: a FastAPI validation error, as the conformance suite's context-overflow check takes it)
# with the error envelope. Its words are not judged: each engine words it its own way, and the control (the same
# request under the limit, answered) already pins the refusal on the prompt's length.
CONTEXT_REFUSALS = (400, 422)
NOT_A_CONTEXT_REFUSAL = {
    413: "a refusal of the body's size (a proxy's limit), not of the model's context",
    429: "a rate limit, which the same request passes later",
}


def refusal_problem(status: int, text: str) -> str | None:
    """Why an answer to a prompt over the context is not its refusal, or None."""
    if status < 400:
        return f"HTTP {status}: served, not refused (truncated or run past the context)"
    if status >= 500:
        return f"HTTP {status}: a server error for a request the client can fix, not a refusal"
    if status not in CONTEXT_REFUSALS:
        return f"HTTP {status}, not 400: {NOT_A_CONTEXT_REFUSAL.get(status, 'not a refusal of the request as invalid')}"
    if (why := envelope_problem(text)) is not None:
        return f"HTTP {status} without the error envelope ({why})"
    return None


def test_a_request_over_the_context_is_refused(infer_live_server, infer_endpoint, infer_record):
    """The documented limit: a prompt longer than the model's context must be refused (400 with the error envelope),
    not truncated or served; judged only once the same request under the limit got a chat completion, and only where
    the server's context is known (advertised, or set by the plugin's launch): over an assumed one, a prompt may be
    well inside the server's own."""
    context, where = infer_live_server.known_context(infer_endpoint)
    if context is None:
        raise Inconclusive(
            f"the server's context is unknown ({where}): no prompt is known to be over it"
        )
    with InferClient(infer_endpoint) as client:
        under = _prompt_of(client.model, max(16, context // 2 - 32))
        near = client.post(CHAT, json=under)
        if (why := completion_problem(CHAT, near.status_code, near.text)) is not None:
            raise Inconclusive(
                f"the positive control, the same request with a prompt of half the {context}-token context, got no chat"
                f" completion: {why}\ncontrol: {client.curl('POST', CHAT, under)}"
            )
        body = _prompt_of(client.model, context + 64)
        over = client.post(CHAT, json=body)
    if (problem := refusal_problem(over.status_code, over.text)) is not None:
        infer_record("infer_reproducer", client.curl("POST", CHAT, body))
        pytest.fail(
            f"a request over the documented limit 'prompt over the {context}-token context' got {problem}:"
            f" {over.text[:200]!r}",
            pytrace=False,
        )
    infer_record(
        "infer_evidence",
        f"a prompt over the {context}-token context: HTTP {over.status_code} {over.json()['error']['message'][:120]!r};"
        f" the same request at half the context: a chat completion",
    )


def _provocations(model: str) -> list[tuple[str, str, Any]]:
    chat = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    return [
        ("POST", "/v1/chat/completions", {**chat, "model": "pytest-infer-no-such-model"}),
        ("POST", "/v1/chat/completions", b'{"model": "x", "messages": [,]}'),
        ("POST", "/v1/chat/completions", {**chat, "max_tokens": -1}),
        ("POST", "/v1/chat/completions", {**chat, "messages": [{"role": "wizard", "content": 5}]}),
        ("POST", "/v1/chat/completions", {**chat, "temperature": "hot", "n": "many"}),
        ("POST", "/v1/chat/completions", {**chat, **response_format({"type": "strnig"})}),
        ("POST", "/v1/completions", {"model": model, "prompt": [[-5, 10**12]], "max_tokens": 4}),
        ("GET", "/v1/chat/completions", None),
        ("GET", "/pytest-infer-no-such-route", None),
    ]


def test_error_answers_disclose_nothing(
    infer_live_server, infer_endpoint, security_record, infer_record
):
    with InferClient(infer_endpoint) as client:
        control = client.post(
            CHAT,
            json={
                "model": client.model,
                "messages": [{"role": "user", "content": "Hi"}],
                "max_tokens": 2,
            },
        )
        if (why := completion_problem(CHAT, control.status_code, control.text)) is not None:
            raise Inconclusive(
                f"a normal request got no chat completion ({why}): no error answer can be told from it"
            )
        unanswered = []
        for method, path, body in _provocations(client.model):
            try:
                if isinstance(body, bytes):
                    client.request(
                        method, path, content=body, headers={"Content-Type": "application/json"}
                    ).read()
                else:
                    client.request(method, path, json=body).read()
            except httpx.HTTPError as exc:
                command = curl_command(
                    method,
                    infer_endpoint.base_url + path,
                    body,
                    authenticated=bool(infer_endpoint.api_key),
                )
                unanswered.append(f"{type(exc).__name__} for: {command}")
    died = ""
    if unanswered and not _still_answers(infer_live_server):
        died = (
            f"the server died on a bad request instead of refusing it; the first left unanswered: {unanswered[0]}\n"
            f"last lines of its log:\n{infer_live_server.log_tail()}\n"
        )
    mine = [e for e in ERRORS.snapshot() if e.origin == infer_endpoint.base_url.rstrip("/")]
    if not mine:
        if died:
            pytest.fail(died, pytrace=False)
        raise Inconclusive("no request was refused: no error answer to judge")
    secrets = [infer_endpoint.api_key or "", *environment_secrets()]
    leaks = []
    for answer in mine:
        public = [
            infer_endpoint.model,
            *sent_strings(answer.sent),
        ]  # what the client sent or reads in /v1/models anyway
        for leak in [
            *scan_body(answer.body, secrets, public),
            *scan_headers(answer.headers, secrets),
        ]:
            leaks.append(
                {
                    "what": leak.what,
                    "where": leak.where,
                    "excerpt": leak.excerpt,
                    "request": f"{answer.method} {answer.path} -> {answer.status}",
                }
            )
    security_record["errors_judged"] = len(mine)
    security_record["leaks"] = [dict(t) for t in {tuple(sorted(d.items())) for d in leaks}]
    if leaks:
        kinds = sorted({leak["what"] for leak in leaks})
        shown = sorted(
            {
                f"{leak['what']} in {leak['where']} of {leak['request']}: {leak['excerpt']!r}"
                for leak in leaks
            }
        )
        pytest.fail(
            f"{died}{len(mine)} error answers judged; error answers disclose {', '.join(kinds)}:\n"
            + "\n".join(shown[:20]),
            pytrace=False,
        )
    if died:
        pytest.fail(died, pytrace=False)
    routes = sorted({f"{a.method} {a.path} {a.status}" for a in mine})
    infer_record(
        "infer_evidence",
        f"{len(mine)} error answers judged, none discloses a trace, path, module, exception name or secret: "
        + ", ".join(routes[:12])
        + (f" and {len(routes) - 12} more" if len(routes) > 12 else ""),
    )
