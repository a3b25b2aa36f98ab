"""Every document the code cites is in the repository's docs/ (not only on some machine's disk).

A citation is any of ``docs/<name>.md``, ``docs: <name>``, ``docs (<name>.md)`` or a bare
``<name>.md`` (as in a check's ``reference="openai-conformance.md"``), found in pytest_infer/,
suites/, slo/, ARCHITECTURE.md and README.md. Each must name a file under docs/ that git tracks.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCANNED = ("pytest_infer", "suites", "slo", "ARCHITECTURE.md", "README.md")

_NAME = r"[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*"
_PATTERNS = (
    re.compile(
        rf"(?<![\w./-])docs/(?P<name>{_NAME})\.md\b"
    ),  # docs/structured-output.md (not a URL's /docs/)
    re.compile(rf"\bdocs:\s*(?P<name>{_NAME})(?:\.md)?\b"),  # docs: structured-output
    re.compile(rf"\bdocs\s*\(\s*(?P<name>{_NAME})\.md\s*\)"),  # docs (performance-slos.md)
    re.compile(r"(?<![\w./-])(?P<name>[A-Za-z0-9_-]+)\.md\b"),  # a bare openai-conformance.md
)
# Bare .md names that are not docs/ citations: the repository's own top-level files, and the
# Markdown report the plugin writes (``--infer-report`` -> summary.md).
NOT_DOCS = frozenset({"README", "ARCHITECTURE", "SCHEMA", "CHANGELOG", "CONTRIBUTING", "summary"})
# Reference material outside the repository must never be cited directly.
OUTSIDE = re.compile(r"shared/docs\b")


@dataclass(frozen=True, slots=True)
class Citation:
    source: str  # "path:line" of the citing text
    doc: str  # the cited path relative to the repository root, e.g. "docs/structured-output.md"


def find_citations(text: str, source: str = "<text>") -> list[Citation]:
    """The docs/ documents a text cites, each with the line it is cited on."""
    found: list[Citation] = []
    for number, line in enumerate(text.splitlines(), 1):
        hits = sorted(
            (m.start("name"), m["name"]) for pattern in _PATTERNS for m in pattern.finditer(line)
        )
        for name in dict.fromkeys(name for _, name in hits):
            if name.split("/")[-1] in NOT_DOCS or name == "docs":
                continue
            found.append(Citation(f"{source}:{number}", f"docs/{name}.md"))
    return found


def missing(citations: list[Citation], root: Path = ROOT) -> list[str]:
    """The citations whose document is not a file under ``root``, one message each."""
    return [
        f"{c.source} cites {c.doc}, which is not in the repository"
        for c in citations
        if not (root / c.doc).is_file()
    ]


def _scanned_files() -> list[Path]:
    files: list[Path] = []
    for entry in SCANNED:
        path = ROOT / entry
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
            )
    return files


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None  # binary or unreadable: cannot cite anything


def repository_citations() -> list[Citation]:
    citations: list[Citation] = []
    for path in _scanned_files():
        text = _read(path)
        if text is not None:
            citations += find_citations(text, str(path.relative_to(ROOT)))
    return citations


def _untracked(paths: set[str]) -> list[str] | None:
    """Of these repository paths, those git does not track; None when this is not a git work tree."""
    try:
        run = subprocess.run(
            ["git", "ls-files", "--", *sorted(paths)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if run.returncode != 0:
        return None
    tracked = set(run.stdout.split())
    return sorted(paths - tracked)


def test_every_cited_doc_is_in_the_repository():
    citations = repository_citations()
    assert citations, "no docs citation found at all: the finder or the scanned paths are broken"
    assert missing(citations) == []
    untracked = _untracked({c.doc for c in citations})
    assert not untracked, f"cited but not committed (git does not track them): {untracked}"


def test_nothing_cites_the_reference_notes_outside_the_repository():
    hits = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _scanned_files()
        for n, line in enumerate((_read(path) or "").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert hits == [], f"cite docs/<name>.md instead of the shared notes: {hits}"


def test_a_made_up_citation_is_reported_missing(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "real.md").write_text("# real\n")
    text = (
        '"""Metric definitions (docs/real.md)."""\n'
        "# outcome classes (docs: no-such-doc), worst first\n"
        'SPEC = "made-up-spec.md; vllm#1"\n'
        "see docs (another-fake.md) and docs/sub/nested-fake.md\n"
        "# not citations: https://docs.vllm.ai/en/latest/x.md, https://huggingface.co/docs/serving.md, summary.md\n"
    )
    citations = find_citations(text, "fake.py")
    assert [c.doc for c in citations] == [
        "docs/real.md",
        "docs/no-such-doc.md",
        "docs/made-up-spec.md",
        "docs/another-fake.md",
        "docs/sub/nested-fake.md",
    ]
    assert missing(citations, tmp_path) == [
        "fake.py:2 cites docs/no-such-doc.md, which is not in the repository",
        "fake.py:3 cites docs/made-up-spec.md, which is not in the repository",
        "fake.py:4 cites docs/another-fake.md, which is not in the repository",
        "fake.py:4 cites docs/sub/nested-fake.md, which is not in the repository",
    ]


def test_the_known_citations_are_found():
    """The finder sees the citation styles the code actually uses (a guard against a finder that finds nothing)."""
    cited = {c.doc for c in repository_citations()}
    assert {
        "docs/structured-output.md",
        "docs/performance-slos.md",
        "docs/openai-conformance.md",
    } <= cited


def test_the_docs_index_lists_every_doc():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    unlisted = [
        p.name
        for p in sorted(DOCS.glob("*.md"))
        if p.name != "README.md" and f"({p.name})" not in index
    ]
    assert unlisted == [], f"add a line for each to docs/README.md: {unlisted}"


def test_the_user_guide_builds_as_a_static_site_with_no_broken_link(tmp_path: Path):
    """mkdocs in strict mode: a link to a page or anchor that does not exist fails the build."""
    mkdocs = Path(sys.executable).with_name("mkdocs")
    run = subprocess.run([str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "site" / "guide" / "options" / "index.html").is_file()


def test_a_broken_link_fails_the_site_build(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# home\n\nSee [the missing page](missing.md).\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nstrict: true\n")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    run = subprocess.run(
        [str(mkdocs), "build", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode != 0 and "missing.md" in run.stdout + run.stderr


def _infer_options() -> list[str]:
    """Every long option of the ``infer`` group that ``pytest --help`` prints (the suites' options included)."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:randomly"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    group = run.stdout.split("\npytest-infer: ", 1)[1].split("\n\n", 1)[0]
    return sorted(set(re.findall(r"^\s{2}(--[a-z][a-z0-9-]+)", group, re.MULTILINE)))


def test_every_option_of_the_infer_group_is_in_the_user_guide():
    options = _infer_options()
    assert len(options) > 10, options
    guide = "\n".join(p.read_text(encoding="utf-8") for p in sorted((DOCS / "guide").glob("*.md")))
    assert [o for o in options if f"`{o}" not in guide] == []


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


# Figures the documents quote from stored runs: tests/core/test_quoted_figures.py.


def quick_start(text: str) -> str:
    start = text.index("| what | command |")
    return text[start : text.index("\n\n", start)]


def test_the_guides_commands_are_the_readmes():
    """The installation guide's quick start is the README's table, set-up, main job and what CI runs
    (``scripts/test.sh``, as ``.ci/run`` runs it)."""
    guide = (DOCS / "guide" / "installation.md").read_text(encoding="utf-8")
    assert quick_start(guide) == quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "scripts/test.sh" in (
        ROOT / ".ci" / "run"
    ).read_text() and "`scripts/test.sh` |" in quick_start(guide)


def test_the_guide_lists_every_extra():
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    guide = (DOCS / "guide" / "installation.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z]+)` \|", guide, re.MULTILINE))
    assert listed == extras - {"test", "mutation"}, "the extras table in docs/guide/installation.md"
