"""Each conformance check's proof, one module per checks module.

``proofs/<area>.py`` holds ``PROOFS = {check_id: Proof(...)}`` for the checks in
``pytest_infer/conformance/checks/<area>.py``: adding a check means editing those two files. A
pass must be earned, so a proof shows its check passing on the fake server made complete
(``deviations.BASE``) and failing on the one deviation it exists for, saying why; it pins what the
check sends and how it ends on servers that answer nothing right. ``test_mutations.py`` and
``test_check_requests_and_outcomes.py`` run every proof through the functions below, and a check
without one fails there, naming the file to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_infer import conformance
from pytest_infer.outcomes import Inconclusive, NotExercised, Unsupported
from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body, wrong_model

from ..deviations import BASE, answers, compose

SKIPPED = pytest.skip.Exception  # a check that stops with a plain pytest.skip
Branch = tuple[str, Deviation, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Proof:
    """How one check is shown able to fail, and what it claims."""

    mutation: Deviation  # breaks exactly what the check judges
    says: str  # words its failure on ``mutation`` must say: a failure for another reason is caught
    sends: dict[str, str]  # {route: its top-level request fields} on a correct server
    # broken server (BROKEN) -> how the check gives up there; every other one must fail it
    gives_up: dict[str, type[BaseException]] = field(default_factory=dict)
    # (name, deviation, text of the server's the failure quotes): one per further condition
    branches: list[Branch] = field(default_factory=list)
    # a deviation showing, correctly, what a correct server shows only when it goes wrong
    exercised_by: Deviation | None = None


def model_proof(route: str, fields: str, streamed: str = "") -> Proof:
    """The proof of a route's ``<api>.model`` check: another model's name in the answer fails it
    (and, with ``streamed``, the failure's words on a stream that alone names another model); a
    route a server lacks or refuses is unsupported."""
    return Proof(
        mutation=wrong_model(),
        says="got:      another-model",
        sends={"GET /v1/models": "", f"POST {route}": fields},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[("stream-only", Deviation(events=wrong_model().events), streamed)]
        * bool(streamed),
    )


CHECKS_PACKAGE = "pytest_infer.conformance.checks"
# areas whose checks need another server: the parser checks force scripted text
PROVEN_ELSEWHERE = {"parsers": "tests/conformance/test_parsers.py"}
ROOT = Path(__file__).resolve().parents[3]


def area(check: conformance.Check) -> str:
    return check.func.__module__.rpartition(".")[2]


def bundled_checks() -> list[conformance.Check]:
    return [
        c
        for c in conformance.REGISTRY
        if c.func.__module__.startswith(CHECKS_PACKAGE + ".") and area(c) not in PROVEN_ELSEWHERE
    ]


def _file(package: str, name: str) -> str:
    folder = Path(importlib.import_module(package).__path__[0])
    path = folder / f"{name}.py"
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def collect(
    checks: Iterable[conformance.Check], package: str = __name__
) -> tuple[dict[str, Proof], list[str]]:
    """Each check's proof, from its area's module in ``package``; and one line per gap, naming the
    file to edit."""
    by_area: dict[str, list[str]] = {}
    for check in checks:
        by_area.setdefault(area(check), []).append(check.id)
    proofs: dict[str, Proof] = {}
    gaps: list[str] = []
    for name, ids in sorted(by_area.items()):
        file = _file(package, name)
        try:
            module = importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as missing:
            if missing.name != f"{package}.{name}":
                raise
            gaps.append(f"create {file} with PROOFS = {{check_id: Proof(...)}} for {sorted(ids)}")
            continue
        table: dict[str, Proof] = getattr(module, "PROOFS", {})
        gaps += [f"add PROOFS[{i!r}] to {file}" for i in sorted(set(ids) - set(table))]
        gaps += [
            f"remove PROOFS[{i!r}] from {file}: no such check"
            for i in sorted(set(table) - set(ids))
        ]
        proofs |= {i: table[i] for i in ids if i in table}
    folder = importlib.import_module(package).__path__
    gaps += [
        f"remove {_file(package, m.name)}: no checks module of that name"
        for m in pkgutil.iter_modules(folder)
        if m.name not in by_area
    ]
    return proofs, gaps


CHECKS = bundled_checks()
PROOFS, GAPS = collect(CHECKS)
CHECK_IDS = [c.id for c in CHECKS]
MUTATIONS = {check_id: proof.mutation for check_id, proof in PROOFS.items()}


def proof_of(check_id: str) -> Proof:
    if check_id not in PROOFS:
        pytest.fail(f"{check_id} has no proof: {'; '.join(GAPS)}")
    return PROOFS[check_id]


# --- the proving, shared by every proof ----------------------------------------------------------
def passes_on_the_correct_server(
    check_id: str, proof: Proof, ctx: conformance.CheckContext, fake: FakeServer
) -> str:
    """The fake server offers every feature and answers every probe: a check that gives up on it
    (unsupported, inconclusive) has broken, not skipped. A pass names what it judged."""
    try:
        if proof.exercised_by is not None:
            with pytest.raises(NotExercised):  # nothing to judge is never a pass
                conformance.run(check_id, ctx)
            fake.set_deviation(compose(proof.exercised_by))
        evidence = conformance.run(check_id, ctx)
    except (Unsupported, Inconclusive) as gave_up:
        pytest.fail(f"{check_id} gave up on the correct server: {gave_up.msg}")
    assert isinstance(evidence, str) and len(evidence.strip()) >= 10, (
        f"{check_id} passed with the evidence {evidence!r}"
    )
    return evidence


def fails_on(
    check_id: str,
    deviation: Deviation,
    quoted: str,
    ctx: conformance.CheckContext,
    fake: FakeServer,
) -> conformance.CheckFailure:
    """The check fails on ``deviation``, naming itself and quoting ``quoted``."""
    fake.set_deviation(compose(deviation))
    with (
        answers(),
        pytest.raises(conformance.CheckFailure) as info,
    ):  # giving up (a skip) is no failure
        conformance.run(check_id, ctx)
    failure = info.value
    assert failure.check_id == check_id and quoted in str(failure), str(failure)
    return failure


def fails_on_its_mutation(
    check_id: str, proof: Proof, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    failure = fails_on(check_id, proof.mutation, proof.says, ctx, fake)
    text = str(failure)
    assert f"[{check_id}]" in text and "expected: " in text and "got: " in text, text
    if failure.curl:
        assert failure.curl.startswith("curl -sS") and fake.base_url in failure.curl


RESPONSE_ID = re.compile(r"resp-\d+")  # numbered in test order


def sends_what_it_states(
    check_id: str, proof: Proof, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A check's requests are its claim: a probe that no longer carries the field it exists for
    tests nothing."""
    try:
        conformance.run(check_id, ctx)
    except NotExercised:
        pass
    sent: dict[str, set[str]] = {}
    for method, path, body in fake.requests:
        route = f"{method} {RESPONSE_ID.sub('resp-<id>', path)}"
        sent.setdefault(route, set()).update(body if isinstance(body, dict) else ())
    assert {route: " ".join(sorted(fields)) for route, fields in sent.items()} == proof.sends, (
        f"{check_id} sends what its Proof.sends does not state: put the new routes and fields there"
        " if the check is meant to send them"
    )


# servers that answer nothing right: a check that passes on one has judged nothing
BROKEN = {
    "no-route": Deviation(
        request=lambda path, body: (404, error_body(f"no route {path}", "not_found_error"))
    ),
    "refuses": Deviation(
        request=lambda path, body: (400, error_body(f"{path} refuses {sorted(body)}"))
    ),
    "not-an-object": Deviation(request=lambda path, body: (200, "not an object")),
    "empty-object": Deviation(request=lambda path, body: (200, {})),
}
GIVING_UP = (Unsupported, Inconclusive, NotExercised, SKIPPED)


def ends_on_a_broken_server(
    check_id: str, proof: Proof, broken: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A failure by default, or the stated way of giving up, each naming the check or what
    stopped it."""
    fake.set_deviation(BROKEN[broken])
    expected = proof.gives_up.get(broken, conformance.CheckFailure)
    try:
        evidence = conformance.run(check_id, ctx)
    except (conformance.CheckFailure, pytest.skip.Exception) as stopped:
        assert type(stopped) is expected, (
            f"{check_id} on {broken!r}: {type(stopped).__name__}: {stopped}"
        )
        text = str(stopped)
    else:
        pytest.fail(f"{check_id} passed on the {broken!r} server, judging: {evidence}")
    if expected is conformance.CheckFailure:
        assert f"[{check_id}]" in text and "expected: " in text and "got: " in text, text
    else:
        assert text.strip(), f"{check_id} gave up on {broken!r} without saying why"


def prove(check_id: str, proof: Proof, ctx: conformance.CheckContext, fake: FakeServer) -> None:
    """Everything the parametrized tests do to one check, in one call (the walk-through uses it)."""
    passes_on_the_correct_server(check_id, proof, ctx, fake)
    fails_on_its_mutation(check_id, proof, ctx, fake)
    for _, deviation, quoted in proof.branches:
        fails_on(check_id, deviation, quoted, ctx, fake)
    fake.set_deviation(BASE)
    fake.forget()
    sends_what_it_states(check_id, proof, ctx, fake)
    for broken in BROKEN:
        ends_on_a_broken_server(check_id, proof, broken, ctx, fake)
