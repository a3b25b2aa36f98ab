r"""The declarations: known deviations and missing features per framework and version range, loaded
from YAML.

A file names one framework; each entry names a check (``deviations``) or a feature
(``unsupported``), a version range (a PEP 440 specifier, required: an open end is written out,
">=0.10.1"; llama.cpp's builds by number, ">=b11000,<b11400"), a reason and a public reference. A
deviation also names the failure it excuses: ``matches``, a regular expression searched in the
failure's "expected: ...\ngot: ..." lines. A failure it matches is an expected failure (xfail), a
pass shows as "fixed", and any other failure of the check stays a failure that says the declaration
did not match. A server whose version is unknown or neither PEP 440 nor a llama.cpp build gets no
declaration at all, and a failure says so. The suite bundles one file per built-in framework,
``expectations/<framework>.yaml``; a third party's adapter names its own (``Adapter.expectations``).

    framework: vllm
    deviations:
      - check: errors.envelope-types
        versions: ">=0.10.1"
        matches: 'error\.code is \d+, not a string or null'
        reason: error.code is the HTTP status as an integer
        reference: https://github.com/vllm-project/vllm/issues/12886
    unsupported:
      - feature: echo
        versions: ">=0.10"
        reason: ...
        reference: ...
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from packaging.specifiers import InvalidSpecifier
from packaging.version import Version

from ..adapters import registry as adapters
from ..outcomes import InferError
from ..results.views import release_range, release_version
from .registry import FEATURES


class ExpectationsError(InferError, ValueError):
    """An expectations file that cannot be used; names the file and the entry."""


@dataclass(frozen=True, slots=True)
class Entry:
    framework: str
    name: str  # a check id (deviation) or a feature (unsupported)
    reason: str
    reference: str
    versions: str
    source: str = ""
    matches: str = ""  # deviations: the regex a failure must match to be excused

    def applies(self, framework: str, version: str | None) -> bool:
        """A version outside the range, unknown or not PEP 440 gets no declaration: what is known to
        deviate is a range of versions, and a server of unknown version may be any of them or none.
        """
        parsed = parse_version(version)
        return (
            framework == self.framework
            and parsed is not None
            and parsed in release_range(self.versions)
        )

    def excuses(self, failure: str) -> bool:
        return re.search(self.matches, failure) is not None

    def describe(self) -> str:
        return f"{self.reason} ({self.framework} {self.versions}); see {self.reference}"


def parse_version(version: str | None) -> Version | None:
    """PEP 440, or a llama.cpp build ``bN`` as the release N (``results.views.release_version``)."""
    return release_version(version)


@dataclass(frozen=True, slots=True)
class DeclarationMatch:
    """What the declarations say of one failure: the entry that excuses it, or why none does
    (``note``).
    """

    entry: Entry | None
    note: str = ""


@dataclass(slots=True)
class Expectations:
    deviations: list[Entry] = field(default_factory=list)
    unsupported: list[Entry] = field(default_factory=list)

    def deviation(self, check_id: str, framework: str, version: str | None) -> Entry | None:
        """The first declared deviation of ``check_id`` whose range holds ``version``."""
        return next(iter(self.deviations_of(check_id, framework, version)), None)

    def deviations_of(self, check_id: str, framework: str, version: str | None) -> list[Entry]:
        return [e for e in self.deviations if e.name == check_id and e.applies(framework, version)]

    def judge(
        self, check_id: str, framework: str, version: str | None, failure: str
    ) -> DeclarationMatch:
        """The declaration that excuses ``failure`` (a ``CheckFailure.judged`` text), or a note on
        why none does.
        """
        declared = [e for e in self.deviations if e.name == check_id and e.framework == framework]
        if not declared:
            return DeclarationMatch(None)
        if parse_version(version) is None:
            ranges = ", ".join(e.versions for e in declared)
            return DeclarationMatch(
                None,
                f"no declared deviation applies: the {framework} version is unknown or not PEP 440 "
                f"({version!r});"
                f" declared for {ranges}",
            )
        in_range = [e for e in declared if e.applies(framework, version)]
        if not in_range:
            ranges = ", ".join(e.versions for e in declared)
            return DeclarationMatch(
                None,
                f"no declared deviation applies: declared for {framework} {ranges}, not {version}",
            )
        entry = next((e for e in in_range if e.excuses(failure)), None)
        if entry is not None:
            return DeclarationMatch(entry)
        shown = "; ".join(f"{e.reason} (matches {e.matches!r}, {e.source})" for e in in_range)
        return DeclarationMatch(
            None,
            f"the declared deviation did not match this failure, so it stays a failure: {shown}",
        )

    def unsupported_features(self, framework: str, version: str | None) -> dict[str, str]:
        return {e.name: e.describe() for e in self.unsupported if e.applies(framework, version)}

    def merge(self, other: Expectations) -> None:
        self.deviations += other.deviations
        self.unsupported += other.unsupported


def _entries(
    path: Path, framework: str, items: object, key: str, known: Iterable[str] | None
) -> list[Entry]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise ExpectationsError(f"{path}: '{key}' must be a list")
    out = []
    name_key = "check" if key == "deviations" else "feature"
    for i, item in enumerate(items):
        where = f"{path}: {key}[{i}]"
        if not isinstance(item, dict):
            raise ExpectationsError(f"{where} is not a mapping")
        required = (name_key, "versions", "reason", "reference") + (
            ("matches",) if key == "deviations" else ()
        )
        missing = [k for k in required if not item.get(k)]
        if missing:
            raise ExpectationsError(
                f"{where} ({item.get(name_key, '?')}) lacks {', '.join(missing)}: every entry "
                "needs a version range (an"
                " open end written out, '>=0.10.1'), a reason and a public reference, and a "
                "deviation a 'matches'"
                " regex of the failure it excuses"
            )
        stray = set(item) - set(required)
        if stray:
            raise ExpectationsError(
                f"{where}: unknown key(s) {sorted(stray)}; known: {', '.join(required)}"
            )
        name = str(item[name_key])
        if known is not None and name not in known:
            raise ExpectationsError(
                f"{where}: unknown {name_key} {name!r}; known: {', '.join(sorted(known))}"
            )
        versions = str(item["versions"])
        try:
            release_range(versions)
        except InvalidSpecifier:
            raise ExpectationsError(
                f"{where}: versions {versions!r} is not a PEP 440 range such as '>=0.10,<0.12' "
                "(llama.cpp builds:"
                " '>=b11000,<b11400')"
            ) from None
        matches = str(item.get("matches") or "")
        try:
            re.compile(matches)
        except re.error as exc:
            raise ExpectationsError(
                f"{where}: matches {matches!r} is not a regular expression: {exc}"
            ) from None
        out.append(
            Entry(
                framework,
                name,
                str(item["reason"]),
                str(item["reference"]),
                versions,
                f"{path}: {key}[{i}]",
                matches,
            )
        )
    return out


def load_file(
    path: Path, check_ids: Iterable[str] | None = None, framework: str | None = None
) -> Expectations:
    """Parse one file; ``check_ids`` (the registry's) makes an unknown check id an error, not a
    silent no-op.

    ``framework`` is the adapter that bundles the file: a file that names another framework is an
    error.
    """
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ExpectationsError(f"{path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("framework"), str):
        raise ExpectationsError(f"{path}: expected a mapping with 'framework: NAME'")
    stray = set(data) - {"framework", "deviations", "unsupported"}
    if stray:
        raise ExpectationsError(f"{path}: unknown key(s) {sorted(stray)}")
    if framework is not None and data["framework"] != framework:
        raise ExpectationsError(
            f"{path}: names framework {data['framework']!r}, but the {framework} adapter bundles it"
        )
    framework = data["framework"]
    ids = set(check_ids) if check_ids is not None else None
    return Expectations(
        deviations=_entries(path, framework, data.get("deviations"), "deviations", ids),
        unsupported=_entries(path, framework, data.get("unsupported"), "unsupported", FEATURES),
    )


BUNDLED = Path(__file__).resolve().parent / "expectations"


def bundled_files() -> list[tuple[Path, str]]:
    """The suite's files (``expectations/<framework>.yaml``), then each adapter's own, with the
    framework it must name."""
    files = [(path, path.stem) for path in sorted(BUNDLED.glob("*.yaml"))]
    try:
        return files + [
            (a.expectations, a.name)
            for a in adapters.ADAPTERS.values()
            if a.expectations is not None
        ]
    except adapters.AdapterLoadError as exc:
        raise ExpectationsError(f"bundled expectations: {exc}") from exc


def load(
    paths: Iterable[Path] = (), check_ids: Iterable[str] | None = None, *, bundled: bool = True
) -> Expectations:
    """The adapters' bundled files, then each of ``paths`` (a file or a folder of ``*.yaml``)."""
    ids = list(check_ids) if check_ids is not None else None
    files: list[tuple[Path, str | None]] = list(bundled_files()) if bundled else []
    for p in map(Path, paths):
        files += [(f, None) for f in (sorted(p.glob("*.yaml")) if p.is_dir() else [p])]
    result = Expectations()
    for f, framework in files:
        result.merge(load_file(f, ids, framework))
    return result
