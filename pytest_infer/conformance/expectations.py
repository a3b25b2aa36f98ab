"""Known deviations and missing features per framework and version range, loaded from YAML.

A file names one framework; each entry names a check (``deviations``) or a
feature (``unsupported``), a version range (PEP 440 specifier; absent = all
versions), a reason and a public reference. A declared deviation makes its check
an expected failure, so the day it passes it shows as "fixed". The bundled files
are the ones the adapters name (``Adapter.expectations``).

    framework: vllm
    deviations:
      - check: errors.envelope-types
        versions: ">=0.10.1"
        reason: error.code is the HTTP status as an integer
        reference: https://github.com/vllm-project/vllm/issues/12886
    unsupported:
      - feature: echo
        reason: ...
        reference: ...
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..adapters import registry as adapters
from ..outcomes import InferError
from .registry import FEATURES


class ExpectationsError(InferError, ValueError):
    """An expectations file that cannot be used; names the file and the entry."""


@dataclass(frozen=True, slots=True)
class Entry:
    framework: str
    name: str  # a check id (deviation) or a feature (unsupported)
    reason: str
    reference: str
    versions: str = ""
    source: str = ""

    def applies(self, framework: str, version: str | None) -> bool:
        """An unknown version matches every range: the framework is known to deviate, the version is not known."""
        if framework != self.framework:
            return False
        if not self.versions or version is None:
            return True
        try:
            return Version(version) in SpecifierSet(self.versions, prereleases=True)
        except InvalidVersion:
            return True

    def describe(self) -> str:
        where = f" ({self.framework} {self.versions})" if self.versions else f" ({self.framework})"
        return f"{self.reason}{where}; see {self.reference}"


@dataclass(slots=True)
class Expectations:
    deviations: list[Entry] = field(default_factory=list)
    unsupported: list[Entry] = field(default_factory=list)

    def deviation(self, check_id: str, framework: str, version: str | None) -> Entry | None:
        return next((e for e in self.deviations if e.name == check_id and e.applies(framework, version)), None)

    def unsupported_features(self, framework: str, version: str | None) -> dict[str, str]:
        return {e.name: e.describe() for e in self.unsupported if e.applies(framework, version)}

    def merge(self, other: Expectations) -> None:
        self.deviations += other.deviations
        self.unsupported += other.unsupported


def _entries(path: Path, framework: str, items: object, key: str, known: Iterable[str] | None) -> list[Entry]:
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
        missing = [k for k in (name_key, "reason", "reference") if not item.get(k)]
        if missing:
            raise ExpectationsError(f"{where} lacks {', '.join(missing)} (every entry needs a reason and a public reference)")
        name = str(item[name_key])
        if known is not None and name not in known:
            raise ExpectationsError(f"{where}: unknown {name_key} {name!r}; known: {', '.join(sorted(known))}")
        versions = str(item.get("versions") or "")
        try:
            SpecifierSet(versions)
        except InvalidSpecifier:
            raise ExpectationsError(f"{where}: versions {versions!r} is not a PEP 440 range such as '>=0.10,<0.12'") from None
        out.append(Entry(framework, name, str(item["reason"]), str(item["reference"]), versions, str(path)))
    return out


def load_file(path: Path, check_ids: Iterable[str] | None = None, framework: str | None = None) -> Expectations:
    """Parse one file; ``check_ids`` (the registry's) makes an unknown check id an error, not a silent no-op.

    ``framework`` is the adapter that bundles the file: a file that names another framework is an error.
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
        raise ExpectationsError(f"{path}: names framework {data['framework']!r}, but the {framework} adapter bundles it")
    framework = data["framework"]
    ids = set(check_ids) if check_ids is not None else None
    return Expectations(
        deviations=_entries(path, framework, data.get("deviations"), "deviations", ids),
        unsupported=_entries(path, framework, data.get("unsupported"), "unsupported", FEATURES),
    )


def bundled_files() -> list[tuple[Path, str]]:
    """Each adapter's expectations file, with the framework it must name."""
    try:
        return [(a.expectations, a.name) for a in adapters.ADAPTERS.values() if a.expectations is not None]
    except adapters.AdapterLoadError as exc:
        raise ExpectationsError(f"bundled expectations: {exc}") from exc


def load(paths: Iterable[Path] = (), check_ids: Iterable[str] | None = None, *, bundled: bool = True) -> Expectations:
    """The adapters' bundled files, then each of ``paths`` (a file or a folder of ``*.yaml``)."""
    ids = list(check_ids) if check_ids is not None else None
    files: list[tuple[Path, str | None]] = list(bundled_files()) if bundled else []
    for p in map(Path, paths):
        files += [(f, None) for f in (sorted(p.glob("*.yaml")) if p.is_dir() else [p])]
    result = Expectations()
    for f, framework in files:
        result.merge(load_file(f, ids, framework))
    return result
