"""Every figure a tracked Markdown document quotes can be traced to a file a clone of main has, and is that file's.

Two checks over every Markdown file git tracks:

- **Cited data exists.** A data path in backticks (``benchmarks/results/gate_accuracy.json``, a folder such as
  ``benchmarks/results/interleaved-aa/``, a glob such as ``slo/*.yaml``) must name a tracked file or folder, from the
  repository's root or from the document's own folder. A path counts as a repository path when its first part is a
  tracked top-level entry (or an entry of the document's folder); placeholders (``OUT/x.json``, ``DIR/summary.md``)
  and the files a run writes under its own folder (``servers/vllm.log``) are not repository paths. No document may
  send a reader to another branch (``git show REF:PATH``, a ``study-data`` branch): only main reaches users.
- **Quoted figures are recomputed.** ``QUOTED_FIGURES`` lists each figure a document quotes from a stored run: the
  document, a pattern with the figures as named groups, the file, and how to read the figures from it. A drift of
  either side fails; so does a document that no longer says what the pattern finds.

A figure nobody can trace fails here: a snippet citing a missing file, or quoting a wrong figure, is caught (the
last tests feed both).
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"

# a data file: what runs write and documents cite (not code, not prose: .md and .py are not data)
DATA_SUFFIX = re.compile(
    r"\.(json|jsonl|csv|tsv|txt|log|yaml|yml|html|xml)(\.gz)?$|\.tar\.gz$|\.gz$"
)
_PATH = re.compile(r"^[A-Za-z0-9_.*-]+(/[A-Za-z0-9_.*@+-]+)*/?$")
# a cited folder is a data path under these (elsewhere ``slo/profiles/`` is a package folder, named in prose)
DATA_FOLDERS = ("benchmarks/results/", "tests/data/", "results/")
PLACEHOLDER = re.compile(r"(^|/)[A-Z][A-Z_]*(/|\.|$)")  # OUT/x.json, slo/NAME.yaml, DIR/history/
# another branch or a ref's file: what a clone of main cannot show
BRANCH_POINTER = re.compile(r"study-data|git show [\w.^~/-]+:|git worktree add")


@cache
def tracked() -> frozenset[str]:
    """The files git tracks on this checkout, and every folder above them (``a/b/`` for ``a/b/c.json``)."""
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    folders = {str(p) + "/" for f in files for p in PurePosixPath(f).parents if str(p) != "."}
    return frozenset(files) | frozenset(folders)


def cited_data_paths(text: str) -> list[tuple[int, str]]:
    """(line, path) of each data path a Markdown text cites in backticks: a file with a data suffix, or a folder
    (``.../``) of stored results, with at least one ``/`` (a bare name is a file of a run's own output, not a
    repository path); placeholders in capitals (``OUT/``, ``NAME.yaml``) are not paths."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for token in re.findall(r"`([^`\s]+)`", line):
            token = token.rstrip(".,;:")
            if "/" not in token.rstrip("/") or not _PATH.match(token) or PLACEHOLDER.search(token):
                continue
            if token.startswith(DATA_FOLDERS) if token.endswith("/") else DATA_SUFFIX.search(token):
                found.append((number, token))
    return found


def _resolves(path: str, folder: str, files: frozenset[str]) -> bool | None:
    """True: ``path`` names a tracked file or folder (a glob: at least one); False: it looks like a repository path
    and names nothing; None: not a repository path (its first part is no tracked entry here)."""
    for base in ("", f"{folder}/" if folder not in ("", ".") else ""):
        first = base + path.split("/", 1)[0] + "/"
        if first not in files:
            continue
        wanted = base + path
        if "*" in wanted:
            pattern = re.compile(re.escape(wanted).replace(r"\*", "[^/]*") + "$")
            return any(pattern.match(f) for f in files)
        return wanted in files
    return None


def missing_data(document: str, text: str, files: frozenset[str] | None = None) -> list[str]:
    """One message per data path ``text`` (the Markdown file ``document``) cites that a clone would not have, and per
    line that sends the reader to another branch."""
    files = tracked() if files is None else files
    folder = str(PurePosixPath(document).parent)
    problems = [
        f"{document}:{n}: cites `{path}`, which is not in the repository"
        for n, path in cited_data_paths(text)
        if _resolves(path, folder, files) is False
    ]
    problems += [
        f"{document}:{n}: points to another branch ({m.group(0)!r}); store what it needs on main"
        for n, line in enumerate(text.splitlines(), 1)
        for m in BRANCH_POINTER.finditer(line)
    ]
    return problems


def markdown_files() -> list[str]:
    return sorted(f for f in tracked() if f.endswith(".md") and not f.startswith("shared/"))


def test_every_data_path_the_markdown_cites_is_in_the_repository():
    problems = [
        p
        for doc in markdown_files()
        for p in missing_data(doc, (ROOT / doc).read_text(encoding="utf-8"))
    ]
    assert problems == []


# --- figures quoted from stored runs ------------------------------------------------------------------------------

PYTEST_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "xfail": "xfailed",
    "fixed": "xpassed",
}


def _json(source: Path):
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def results_counts(source: Path) -> Counter[str]:
    """A results file's outcome counts as pytest's summary line words them, with its root causes."""
    from pytest_infer.results.model import SessionResults
    from pytest_infer.results.views import build_views

    results = SessionResults.read(source)
    counts = Counter(PYTEST_WORDS.get(t.outcome, "skipped") for t in results.tests)
    counts.update(t.outcome for t in results.tests if t.outcome not in PYTEST_WORDS)
    counts["causes"] = len(build_views(results).problems)
    return counts


def findings_line(source: Path) -> dict[str, float]:
    """A stored Markdown summary's findings line."""
    found = re.search(
        r"Findings: (?P<causes>\d+) root causes of (?P<failed>\d+) failed tests", source.read_text()
    )
    assert found, f"{source}: no findings line"
    return {k: int(v) for k, v in found.groupdict().items()}


def raw_outcomes(source: Path) -> Counter[str]:
    """A results file in an older format the reader refuses: its ``tests`` counted by outcome, and in all."""
    tests = _json(source)["tests"]
    return Counter(tests=len(tests)) + Counter(t["outcome"] for t in tests)


def target_outcomes(source: Path, target: str | None = None) -> Counter[str]:
    """A results file's tests counted by outcome, and in all, for one target or every one."""
    tests = [t for t in _json(source)["tests"] if target is None or t["target"] == target]
    return Counter(tests=len(tests)) + Counter(t["outcome"] for t in tests)


def session_seconds(source: Path) -> dict[str, float]:
    """The wall time on the summary line pytest printed at the end of a stored session."""
    found = re.search(r" in (?P<seconds>[\d.]+)s \(", source.read_text())
    assert found, f"{source}: no pytest summary line"
    return {"seconds": float(found["seconds"])}


def import_cost(source: Path, plugin: str) -> dict[str, float]:
    """``benchmarks/import_cost.py --json``: one plugin's import in a pytest run, cold with pytest, cold alone (ms)."""
    row = _json(source)[plugin]
    return {
        "in_run": row["in_a_pytest_run_ms"],
        "cold": row["median_ms"],
        "alone": row["median_without_pytest_ms"],
    }


def fault_acted(source: Path, fault: str) -> dict[str, float]:
    """``benchmarks/gate_accuracy.py --json``: how many requests, answers or events the proxy changed for a fault."""
    (row,) = [r for r in _json(source)["rows"] if r["fault"] == fault]
    return {"changed": row["acted"]}


def aa_false_alarms(*sources: Path) -> dict[str, float]:
    """``benchmarks/gate_accuracy.py --json`` runs: the A/A gates (no fault) and how many of them failed."""
    rows = [r for s in sources for r in _json(s)["rows"] if r["fault"].startswith("none (A/A")]
    return {"gates": len(rows), "alarms": sum(not r["verdict"].startswith("PASS") for r in rows)}


@dataclass(frozen=True, slots=True)
class Quoted:
    """A figure a document quotes: the pattern finds it (named groups), ``read`` recomputes it from ``source``."""

    document: str
    pattern: str
    source: Path
    read: Callable[
        [Path], dict[str, float] | Counter[str]
    ]  # a Counter: an outcome it lacks counts 0

    def problems(self, text: str) -> list[str]:
        found = re.search(self.pattern, text)
        if not found:
            return [
                f"{self.document} no longer quotes what {self.pattern!r} finds: update QUOTED_FIGURES"
            ]
        if not self.source.is_file():
            return [
                f"{self.document} quotes a figure of {self.source.relative_to(ROOT)}, which is not there"
            ]
        actual = self.read(self.source)
        return [
            f"{self.document} quotes {name} = {quoted}; {self.source.relative_to(ROOT)} says {actual.get(name)}"
            for name, quoted in found.groupdict().items()
            if not _agrees(
                quoted, actual[name] if isinstance(actual, Counter) else actual.get(name)
            )
        ]


def _agrees(quoted: str, actual: float | None) -> bool:
    """The quoted text is the actual figure as rounded for print (to the quoted text's decimals)."""
    if actual is None:
        return False
    decimals = len(quoted.partition(".")[2])
    return abs(float(quoted) - actual) <= 0.5 * 10**-decimals + 1e-9


MAIN_JOB = RESULTS / "main-job" / "after.json"
UPGRADE_GATE = RESULTS / "upgrade-gate" / "summary.md"
GATE_ACCURACY = RESULTS / "gate_accuracy.json"
FAULTS = (
    "stream-no-done",
    "stream-no-usage",
    "ranges-not-validated",
    "n-ignored",
    "logprobs-dropped",
    "error-envelope-flat",
    "errors-as-500",
    "maxlength-loosened",
    "structured-refusal-500",
    "raw-tab-in-strings",
)
MATRIX = RESULTS / "real-model" / "matrix.json.gz"
MATRIX_SESSION = RESULTS / "real-model" / "matrix-session.txt"
REAL_MODEL = "benchmarks/results/real-model/README.md"

QUOTED_FIGURES = (
    Quoted(REAL_MODEL, r"\*\*(?P<tests>\d+) tests in [\d.]+ s\*\*", MATRIX, target_outcomes),
    Quoted(REAL_MODEL, r"tests in (?P<seconds>[\d.]+) s\*\*", MATRIX_SESSION, session_seconds),
    Quoted(REAL_MODEL, r"(?P<passed>\d+) passed, (?P<failed>\d+) failed, (?P<error>\d+) error, "
           r"(?P<not_exercised>\d+) not\s+exercised, (?P<inconclusive>\d+) inconclusive, (?P<not_run>\d+) "
           r"not run, (?P<unsupported>\d+) unsupported, (?P<skipped>\d+) skipped, (?P<xfail>\d+) xfail",
           MATRIX, target_outcomes),
    Quoted(REAL_MODEL, r"vLLM (?P<passed>\d+) passed, (?P<failed>\d+) failed, (?P<error>\d+) error;",
           MATRIX, partial(target_outcomes, target="vllm")),
    Quoted(REAL_MODEL, r"transformers serve (?P<passed>\d+) passed, (?P<failed>\d+) failed \((?P<not_exercised>"
           r"\d+) not\s+exercised\)", MATRIX, partial(target_outcomes, target="transformers")),
    Quoted(REAL_MODEL, r"llama.cpp (?P<passed>\d+) passed, (?P<failed>\d+) failed, (?P<not_run>\d+) not run",
           MATRIX, partial(target_outcomes, target="llamacpp")),
    Quoted("README.md", r"matrix is stored from one session \((?P<tests>\d+) tests in [\d.]+ s", MATRIX,
           target_outcomes),
    Quoted("README.md", r"\(\d+ tests in (?P<seconds>[\d.]+) s; no SGLang", MATRIX_SESSION, session_seconds),
    Quoted("docs/cpu-engines.md", r"three engines took (?P<seconds>[\d.]+) s in one session", MATRIX_SESSION,
           session_seconds),
    Quoted("docs/cpu-engines.md", r"\((?P<tests>\d+) tests\); the stored run", MATRIX, target_outcomes),
    Quoted("docs/guide/installation.md", r"(?P<failed>\d+) failed, (?P<passed>\d+) passed, (?P<skipped>\d+) "
           r"skipped, (?P<xfailed>\d+) xfailed; (?P<causes>\d+) root causes", MAIN_JOB, results_counts),
    Quoted("docs/guide/installation.md", r"the skips are (?P<unsupported>\d+) unsupported, (?P<not_exercised>\d+) "
           r"not exercised and (?P<inconclusive>\d+) inconclusive", MAIN_JOB, results_counts),
    Quoted("docs/guide/gate.md", r"reference run has (?P<failed>\d+) failures in\s+(?P<causes>\d+) root causes",
           MAIN_JOB, results_counts),
    Quoted("docs/guide/gate.md", r"upgrade gate's (?P<failed>\d+) are\s+(?P<causes>\d+)", UPGRADE_GATE,
           findings_line),
    Quoted("README.md", r"Findings: (?P<causes>\d+) root causes of (?P<failed>\d+) failed tests", UPGRADE_GATE,
           findings_line),
    Quoted("benchmarks/results/main-job/README.md", r"\| before \(aeec12e\) \| (?P<tests>\d+) \| (?P<passed>\d+) \| "
           r"(?P<failed>\d+) \| (?P<xfail>\d+) \| (?P<unsupported>\d+) \| (?P<skipped>\d+) \| "
           r"(?P<not_exercised>\d+) \| (?P<inconclusive>\d+) \|", RESULTS / "main-job" / "before-aeec12e.json.gz",
           raw_outcomes),
    Quoted("benchmarks/README.md", r"False alarms: (?P<alarms>\d+) in (?P<gates>\d+) A/A gates", GATE_ACCURACY,
           lambda source: aa_false_alarms(source, RESULTS / "gate_accuracy_run_2.json",
                                          RESULTS / "gate_accuracy_earlier_run.json")),
    *(Quoted("benchmarks/README.md", rf"\| {fault} \| (?P<changed>\d+) \|", GATE_ACCURACY,
             partial(fault_acted, fault=fault)) for fault in FAULTS),
    *(Quoted("benchmarks/README.md", rf"\| {label} \| \**(?P<in_run>[\d.]+)\** \| \**(?P<cold>[\d.]+)\** \| "
             rf"\**(?P<alone>[\d.]+)\** \|", RESULTS / source, partial(import_cost, plugin=plugin))
      for label, source, plugin in (
          ("pytest-infer with its five suites", "import_cost.json", "pytest-infer with its suites"),
          ("the same at ffe6217", "import_cost_ffe6217.json", "pytest-infer with its suites"),
          ("pytest-benchmark", "import_cost.json", "pytest-benchmark"),
          ("pytest-xdist", "import_cost.json", "pytest-xdist"))),
)  # fmt: skip


@pytest.mark.parametrize("quoted", QUOTED_FIGURES, ids=lambda q: f"{q.document}:{q.pattern[:40]}")
def test_every_figure_a_document_quotes_from_a_stored_run_is_that_runs(quoted: Quoted):
    assert quoted.problems((ROOT / quoted.document).read_text(encoding="utf-8")) == []


def test_every_quoted_figure_names_a_tracked_file():
    assert [
        q.source for q in QUOTED_FIGURES if str(q.source.relative_to(ROOT)) not in tracked()
    ] == []


# --- the checks catch what they are for ---------------------------------------------------------------------------

SNIPPET = """# A study

- **False alarms: 0 in 9 A/A gates** (`benchmarks/results/gate_accuracy.json`).
- The sweep (`benchmarks/results/gate_sweep_never_stored.json`, `benchmarks/results/no-such-study/`) found more.
- See `git show study-data:benchmarks/results/x.json`. Placeholders stay out: `OUT/interleaved_aa.json`.
"""


def test_a_snippet_citing_a_missing_file_or_another_branch_fails():
    problems = missing_data("benchmarks/NEW.md", SNIPPET)
    assert problems == [
        "benchmarks/NEW.md:4: cites `benchmarks/results/gate_sweep_never_stored.json`, which is not in the repository",
        "benchmarks/NEW.md:4: cites `benchmarks/results/no-such-study/`, which is not in the repository",
        "benchmarks/NEW.md:5: points to another branch ('git show study-data:'); store what it needs on main",
    ]


def test_a_path_relative_to_the_documents_folder_and_a_glob_resolve():
    text = "`results/gate_accuracy.json`, `slo/*.yaml`, `slo/*.nothing.yaml`, `results/gate_accuracy.json.gz`"
    assert missing_data("benchmarks/README.md", text) == [
        "benchmarks/README.md:1: cites `slo/*.nothing.yaml`, which is not in the repository",
        "benchmarks/README.md:1: cites `results/gate_accuracy.json.gz`, which is not in the repository",
    ]


def test_a_wrong_figure_fails():
    (aa,) = [q for q in QUOTED_FIGURES if "False alarms" in q.pattern]
    assert aa.problems(SNIPPET) == []
    assert aa.problems(SNIPPET.replace("0 in 9", "0 in 12")) == [
        "benchmarks/README.md quotes gates = 12; benchmarks/results/gate_accuracy.json says 9"
    ]
    assert aa.problems("no such sentence") != []


def test_a_rounded_figure_agrees_and_a_drifted_one_does_not():
    assert (
        _agrees("7.9", 7.94)
        and _agrees("142", 142.4)
        and not _agrees("7.9", 8.0)
        and not _agrees("3", None)
    )
