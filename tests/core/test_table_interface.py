"""The core ``Table`` knows no SLO: what only a measuring suite has (limits, invalid measurements, timing modes,
drift figures, benchmark series) is the ``Measured`` protocol, which the gate and the reports ask of each table,
never a suite by name."""

from __future__ import annotations

from results_factory import session

from pytest_infer.gating.compare import compare
from pytest_infer.results.views import build_views
from pytest_infer.suite import installed
from pytest_infer.table import Limits, Measured, Pairing, Table, TargetTable

MEASURING = {
    "limits",
    "unmeasured",
    "timing_mode",
    "verdict_note",
    "history_note",
    "session_figures",
    "benchmarks",
}


def test_the_core_table_has_none_of_the_measuring_hooks_and_only_the_slo_table_declares_them():
    assert MEASURING <= set(dir(Measured)) and MEASURING.isdisjoint(dir(Table))
    assert {s.name for s in installed() if issubclass(s.table_type(), Measured)} == {"slo"}


class Probe(TargetTable):
    """A table with a measuring suite's two hooks the gate and the views read, but no ``Measured``."""

    invalid = ""  # the node id it calls unmeasured

    def limits(self) -> list[Limits]:
        return [Limits("vllm", "probe point", "invalid", invalid="the client fell behind")]

    def unmeasured(self, target: str) -> set[str]:
        return {self.invalid}


class MeasuredProbe(Probe, Measured):
    """The same hooks, declared: the protocol's other members answer that there is nothing to add."""

    def timing_mode(self, baseline: Table, pairing: Pairing) -> str | None:
        return None

    def verdict_note(self, findings: list) -> str | None:
        return None

    @classmethod
    def history_note(cls, settings) -> str | None:
        return None

    def session_figures(self, source: str) -> dict:
        return {}

    def benchmarks(self) -> list:
        return []


def with_probe(kind: type[Probe]):
    results = session()
    probe = kind()
    probe.invalid = results.tests[0].nodeid
    results.tables["probe"] = probe
    return results


def test_the_gate_and_the_reports_read_only_a_table_that_declares_measured():
    """A declared probe's invalid measurement leaves its test uncompared and its limits reach the reports; the same
    hooks on a table that is not ``Measured`` are never read."""
    declared = compare(with_probe(MeasuredProbe), with_probe(MeasuredProbe))
    assert [u.split(" on ")[0] for u in declared.unmeasured] == [
        with_probe(MeasuredProbe).tests[0].check
    ]
    assert declared.incomplete
    assert [
        lim.title for lim in build_views(with_probe(MeasuredProbe)).limits if lim.suite == "probe"
    ] == ["probe point"]

    undeclared = compare(with_probe(Probe), with_probe(Probe))
    assert undeclared.unmeasured == [] and not undeclared.incomplete and not undeclared.failed
    assert [lim for lim in build_views(with_probe(Probe)).limits if lim.suite == "probe"] == []
