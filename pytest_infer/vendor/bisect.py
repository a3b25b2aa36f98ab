"""``pytest-infer bisect ENGINE GOOD BAD --check CHECK``: the first release where one check went
bad, found by halving the releases between a good one and a bad one, running only that check on each
release it visits (and installing or building only those).

"Good" and "bad" are the gate's own judgement, not a reading of outcomes here: a release is bad when
the gate, comparing GOOD with it, finds the check regressed, and good when the gate, comparing it
with BAD, finds the check regressed there. A release that could not be installed, or whose run
judged nothing of the check (inconclusive, not exercised, a server that never started), is neither:
it is skipped, and when skipped releases lie between the last good and the first bad, the answer
names them as the range in which the first bad one is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..gating.compare import compare
from ..outcomes import Outcome
from ..results.model import SessionResults
from ..results.views import check_matrix
from .engines import VendorError
from .runner import Runner
from .store import Store

GOOD, BAD, INCONCLUSIVE, INSTALL_FAILED = "good", "bad", "inconclusive", "install failed"
# a check's outcomes that judged the server right or wrong (an xfail: a known deviation)
JUDGING = frozenset(o for o in Outcome if o.passes or o.deviates)


@dataclass(slots=True)
class Visit:
    version: str
    outcome: str  # GOOD, BAD, INCONCLUSIVE, INSTALL_FAILED
    detail: str = ""
    label: str = ""  # the version the server reported (llama.cpp's bNNNN)
    commit: str = ""
    wall_s: float | None = None


@dataclass(slots=True)
class Bisection:
    versions: list[str]  # GOOD .. BAD, in release order
    visits: list[Visit] = field(default_factory=list)  # in the order visited
    last_good: Visit | None = None
    first_bad: Visit | None = None
    # releases between them that judged nothing
    skipped_between: list[str] = field(default_factory=list)
    error: str = ""  # why there is no answer (an end that is not what it was said to be)

    @property
    def exact(self) -> bool:
        return bool(
            self.first_bad and self.last_good and not self.skipped_between and not self.error
        )


def bisect(
    versions: Sequence[str], visit: Callable[[str], Visit], ends: Sequence[Visit] = ()
) -> Bisection:
    """Halve ``versions`` (release order: the first said good, the last said bad). ``visit`` judges
    one release; ``ends`` are judgements of the two ends already at hand (a stored history), which
    are then not visited."""
    out = Bisection(list(versions))
    if len(versions) < 2:
        out.error = "need two releases, GOOD before BAD"
        return out
    known = {v.version: v for v in ends}

    def judged(i: int) -> Visit:
        if versions[i] in known:
            return known[versions[i]]
        v = visit(versions[i])
        out.visits.append(v)
        return v

    lo, hi = 0, len(versions) - 1
    for i, want in ((lo, GOOD), (hi, BAD)):
        end = judged(i)
        known[versions[i]] = end
        if end.outcome != want:
            out.error = f"{versions[i]} was given as {want} but is {end.outcome}" + (
                f" ({end.detail})" if end.detail else ""
            )
            return out
    visits = {lo: known[versions[lo]], hi: known[versions[hi]]}
    skipped: set[int] = set()
    while candidates := [i for i in range(lo + 1, hi) if i not in skipped]:
        mid = (lo + hi) / 2
        i = min(candidates, key=lambda j: (abs(j - mid), j))
        v = visits[i] = judged(i)
        if v.outcome == GOOD:
            lo = i
        elif v.outcome == BAD:
            hi = i
        else:
            skipped.add(i)
    out.last_good, out.first_bad = visits[lo], visits[hi]
    out.skipped_between = [versions[i] for i in sorted(skipped) if lo < i < hi]
    return out


def judge_check(
    check: str, good: SessionResults, bad: SessionResults, candidate: SessionResults
) -> tuple[str, str]:
    """``(outcome, why)`` of a release's results for one check, by the gate: BAD where
    ``compare(good, candidate)`` finds the check regressed, GOOD where ``compare(candidate, bad)``
    does, else INCONCLUSIVE (the gate's verdict says why: nothing of the check judged, a side not
    judged)."""
    cell = check_matrix(candidate).get(check, {})
    outcomes = sorted({c.outcome for c in cell.values()})
    if not outcomes or any(o not in JUDGING for o in outcomes):
        return (
            INCONCLUSIVE,
            f"{check}: {', '.join(outcomes) or 'not run'}: nothing judged, neither good nor bad",
        )
    down = compare(good, candidate)
    if hit := _regressed(down.findings, check):
        return BAD, hit
    up = compare(candidate, bad)
    if hit := _regressed(up.findings, check):
        return GOOD, f"the gate against the bad release: {hit}"
    return INCONCLUSIVE, f"the gate judged neither way on {check}: {down.verdict} / {up.verdict}"


def _regressed(findings, check: str) -> str:
    return next(
        (
            f"{f.before} -> {f.after}" + (f" ({f.detail})" if f.detail else "")
            for f in findings
            if f.kind == "regression" and f.area == "check" and f.subject == check
        ),
        "",
    )


def bisect_releases(
    check: str, versions: Sequence[str], store: Store, runner: Runner, work: Path
) -> tuple[Bisection, list[Visit]]:
    """Bisect ``check`` over ``versions`` (GOOD first, BAD last), each release from the stored
    history where it is judged there, else installed and run with only ``check`` selected. Returns
    the bisection and the ends that had to be run (visited too, before the halving). The gate must
    find the check regressed from GOOD to BAD."""
    stored = {x.version: x for x in store.judged()}
    ran: list[Visit] = []

    def run(version: str) -> tuple[SessionResults | None, Visit]:
        if version in stored:
            return store.results(stored[version]), Visit(version, "", "from the stored history")
        started = time.monotonic()
        installed = runner.install(version)
        if not installed.ok:
            tail = installed.log.strip().splitlines()[-1:] or [""]
            return None, Visit(version, INSTALL_FAILED, tail[0], wall_s=installed.wall_s)
        results, done = runner.run(version, work / version, select=check)
        wall = round(time.monotonic() - started, 1)
        if results is None:
            return None, Visit(
                version, INCONCLUSIVE, f"the run wrote no results: {done.log[-300:]}", wall_s=wall
            )
        return results, Visit(version, "", wall_s=wall)

    def judged(
        version: str, results: SessionResults, outcome: str, detail: str, wall: float | None
    ) -> Visit:
        target = next(iter(results.targets.values()))
        return Visit(version, outcome, detail, target.version or "", target.commit or "", wall)

    (good, good_visit), (bad, bad_visit) = run(versions[0]), run(versions[-1])
    for results, v in ((good, good_visit), (bad, bad_visit)):
        if results is None:
            raise VendorError(f"{v.version}: {v.outcome}: {v.detail}")
    assert good is not None and bad is not None
    outcome, regressed = judge_check(check, good, bad, bad)
    if outcome != BAD:
        raise VendorError(
            f"the gate finds no regression of {check} from {versions[0]} to {versions[-1]}: "
            f"{regressed}"
        )
    ends = [
        judged(versions[0], good, GOOD, good_visit.detail or "given", good_visit.wall_s),
        judged(versions[-1], bad, BAD, regressed, bad_visit.wall_s),
    ]
    ran = [e for e, v in zip(ends, (good_visit, bad_visit), strict=True) if v.version not in stored]

    def visit(version: str) -> Visit:
        results, v = run(version)
        if results is None:
            return v
        outcome, detail = judge_check(check, good, bad, results)
        return judged(version, results, outcome, detail, v.wall_s)

    return bisect(versions, visit, ends), ran


def summary(engine: str, check: str, b: Bisection) -> list[str]:
    """The answer in lines: each visit, then the first bad and last good release, with the source
    range between.
    """
    lines = [
        f"bisect {engine} {check}: {len(b.versions)} releases, {b.versions[0]} .. {b.versions[-1]}"
    ]
    lines += [
        f"  visited {v.version}"
        + (f" ({v.label})" if v.label and v.label != v.version else "")
        + f": {v.outcome}"
        + (f" in {v.wall_s} s" if v.wall_s is not None else "")
        + (f": {v.detail}" if v.detail else "")
        for v in b.visits
    ]
    if b.error:
        return [*lines, f"no answer: {b.error}"]
    assert b.first_bad and b.last_good
    lines.append(f"last good: {_name(b.last_good)}")
    lines.append(f"first bad: {_name(b.first_bad)}")
    if b.skipped_between:
        lines.append(
            f"not judged between them: {', '.join(b.skipped_between)} (the first bad is "
            "one of these or "
            f"{b.first_bad.version})"
        )
    if b.last_good.commit and b.first_bad.commit:
        lines.append(f"source range: {b.last_good.commit}..{b.first_bad.commit}")
    return lines


def _name(v: Visit) -> str:
    return v.version + (
        f" ({v.label}" + (f", commit {v.commit}" if v.commit else "") + ")" if v.label else ""
    )
