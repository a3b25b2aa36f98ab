"""The shape of every answer the conformance suite saw, and the API drift between two versions.

A client breaks when a field it reads disappears, is renamed or changes type, whatever the checks
say about the rest of the answer (vLLM's rename of ``reasoning_content`` broke several client
libraries while every check still passed). So each 200 answer and each streamed chunk is recorded as
its field paths (``choices[].message.content``) with the JSON types seen there, and a short digest
of each value seen, per endpoint and mode (``POST /v1/chat/completions``, ``... stream``). Comparing
two versions lists the fields added, removed, renamed (a removed field's value seen under a new name
beside it) and retyped (a type clients never saw there before); a removed, renamed or retyped field
the baseline served is a regression, unless a typed rule makes it a change: the reference keeps that
field out of the route and mode (``reference.not_in_mode``), or a check that named that exact field
failed in the baseline and passes now (``deviation_ended``). A field the reference requires
(``reference.required``) is never excused.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Sequence
from itertools import takewhile
from typing import Any

from ..client.curl import curl_request
from ..table import Cell, Finding, Fixed, Pairing, Section, Table, TargetTable
from . import reference

DONE = "[DONE]"  # the stream's terminator, recorded as a field of its own: {"[DONE]": true}
# an array seen only empty: its items' fields were not seen, so none can be missing
EMPTY_ARRAY = "empty-array"
# value digests kept per path: enough to recognise a renamed field, small in the results file
MAX_VALUES = 8
# endpoint key prefix of what a server did with each request field: {field: {"status": ...}}
REQUEST = "request "
APPLIED = "honoured"


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array" if value else EMPTY_ARRAY
    return "object"


def digest(value: Any) -> str:
    return hashlib.blake2b(json.dumps(value, sort_keys=True).encode(), digest_size=6).hexdigest()


def flatten(value: Any, path: str = "") -> list[tuple[str, str, Any]]:
    """``(path, JSON type, value)`` of every node below the root; list items share the path
    ``name[]``.
    """
    out: list[tuple[str, str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            out.append((child, json_type(item), item))
            out += flatten(item, child)
    elif isinstance(value, list):
        for item in value:
            out.append((f"{path}[]", json_type(item), item))
            out += flatten(item, f"{path}[]")
    return out


def resource(endpoint: str) -> str:
    """The endpoint an answer's route is an instance of: ``POST /v1/responses/resp_1a2b/cancel`` ->
    ``POST /v1/responses/{id}/cancel``."""
    return re.sub(r"^(\w+ /v1/responses)/(?!\{id\})[^/ ]+", r"\1/{id}", endpoint)


def parent(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else ""


class ShapeTable(TargetTable):
    """``{target: {endpoint: {path: {"types": [...], "values": [...]}}}}``: what each server's
    answers looked like.
    """

    kind = "shape table"

    def record(self, target: str, endpoint: str, answer: Any) -> None:
        paths = self.counts.setdefault(target, {}).setdefault(resource(endpoint), {})
        for path, kind, value in flatten(answer):
            seen = paths.setdefault(path, {"types": [], "values": []})
            if kind not in seen["types"]:
                seen["types"].append(kind)
            if (
                kind not in ("object", "array", EMPTY_ARRAY)
                and len(seen["values"]) < MAX_VALUES
                and (d := digest(value)) not in seen["values"]
            ):
                seen["values"].append(d)

    def record_fields(self, target: str, endpoint: str, statuses: dict[str, str]) -> None:
        """What the server did with each request field: honoured, ignored (200 and no effect),
        refused (4xx) or error."""
        self.counts.setdefault(target, {})[REQUEST + endpoint] = {
            name: {"status": status} for name, status in statuses.items()
        }

    @classmethod
    def from_json(cls, data: Any) -> ShapeTable:
        """Endpoints recorded per resource (``GET /v1/responses/resp_1a2b``) are read as the one
        endpoint they are.
        """
        if not isinstance(data, dict):
            raise ValueError(f"the {cls.kind} is a {type(data).__name__}, not an object")
        table = cls()
        table.merge(TargetTable(data))
        return table

    def merge(self, other: Table) -> None:
        for target, endpoints in other.to_json().items():
            for endpoint, paths in endpoints.items():
                if endpoint.startswith(REQUEST):
                    self.counts.setdefault(target, {})[endpoint] = copy.deepcopy(paths)
                    continue
                mine = self.counts.setdefault(target, {}).setdefault(resource(endpoint), {})
                for path, seen in paths.items():
                    into = mine.setdefault(path, {"types": [], "values": []})
                    into["types"] += [t for t in seen.get("types", []) if t not in into["types"]]
                    into["values"] += [
                        v for v in seen.get("values", []) if v not in into["values"]
                    ][: max(0, MAX_VALUES - len(into["values"]))]

    def sections(self) -> list[Section]:
        rows: dict[str, dict[str, Cell]] = {}
        for target, endpoints in self.counts.items():
            for endpoint, paths in endpoints.items():
                if endpoint.startswith(REQUEST):
                    left = sorted(f for f, seen in paths.items() if seen.get("status") != APPLIED)
                    text = f"{len(paths) - len(left)} of {len(paths)} applied" + (
                        f"; not: {', '.join(left)}" if left else ""
                    )
                    rows.setdefault(endpoint, {})[target] = Cell(
                        text,
                        detail=", ".join(
                            f"{f}: {seen.get('status')}" for f, seen in sorted(paths.items())
                        ),
                    )
                    continue
                rows.setdefault(endpoint, {})[target] = Cell(
                    f"{len(paths)} fields", detail=", ".join(sorted(paths))
                )
        return (
            [Section("API shape: fields seen per endpoint", "endpoint", dict(sorted(rows.items())))]
            if rows
            else []
        )

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        before = (
            baseline.to_json().get(pairing.baseline, {}) if isinstance(baseline, ShapeTable) else {}
        )
        after = self.counts.get(pairing.candidate, {})
        found: list[Finding] = []
        # an endpoint one run never called says nothing
        for endpoint in sorted(set(before) & set(after)):
            if endpoint.startswith(REQUEST):
                found += field_drift(endpoint, before[endpoint], after[endpoint], pairing.label)
            else:
                found += drift(
                    endpoint, before[endpoint], after[endpoint], pairing.label, pairing.fixed
                )
        return found


def field_drift(
    endpoint: str, before: dict[str, Any], after: dict[str, Any], pair: str
) -> list[Finding]:
    """A request field the baseline applied and the candidate does not is a regression; the reverse
    an improvement.
    """
    found = []
    for name in sorted(set(before) & set(after)):
        old, new = before[name].get("status"), after[name].get("status")
        if old == new:
            continue
        kind = "regression" if old == APPLIED else "improvement" if new == APPLIED else "change"
        found.append(
            Finding(
                kind,
                "api",
                pair,
                f"{endpoint}: {name}",
                str(old),
                str(new),
                f"request field {name}: {old} -> {new}",
            )
        )
    return found


def ancestors(path: str) -> list[str]:
    """``choices[].message.content`` -> ``choices[].message``, ``choices[]``, ``choices``."""
    out = []
    while path:
        path = path[:-2] if path.endswith("[]") else parent(path)
        if path:
            out.append(path)
    return out


def _unseen(path: str, mine: dict[str, Any]) -> bool:
    """``path`` is missing from ``mine`` as a field of its own, not as part of a bigger difference:
    no ancestor is missing too (the ancestor is reported), and no ancestor array was only ever seen
    empty in ``mine``."""
    return path not in mine and not any(
        a not in mine or mine[a].get("types") == [EMPTY_ARRAY] for a in ancestors(path)
    )


def _types(seen: dict[str, Any]) -> set[str]:
    return {"array" if t == EMPTY_ARRAY else t for t in seen.get("types", [])}


def _calls(reproducer: str, endpoint: str) -> bool:
    """Whether a reproducer repeats a request to ``endpoint`` (``POST /v1/responses stream``), under
    any base path.
    """
    request = curl_request(reproducer)
    if request is None:
        return False
    method, path, streamed = request
    wanted = endpoint.removesuffix(" stream")
    # a base URL may put a prefix before the route
    tails = [path[i:] for i, ch in enumerate(path) if ch == "/"]
    return streamed == endpoint.endswith(" stream") and any(
        resource(f"{method} {t}") == wanted for t in tails
    )


def _own_words(message: str) -> str:
    """What a check's failure says in its own words: its title and what it expected, and a declared
    deviation's reason; not what it got (often the server's answer, which names every field the
    answer held) nor its request."""
    lines = message.splitlines()
    head = list(takewhile(lambda line: not line.lstrip().startswith(("got:", "reproduce:")), lines))
    return "\n".join(
        head + [line for line in lines if line.lstrip().startswith("known deviation:")]
    )


def _names(text: str, path: str) -> bool:
    """Whether ``text`` names the field at ``path`` exactly: its whole path as the table spells it
    (``usage``, ``choices[].delta.tool_calls[].function.name``), not a key that happens to be a word
    of the text (``name`` in a title is no tool call's ``function.name``)."""
    return re.search(rf"(?<![\w.\[\]]){re.escape(path)}(?![\w\[])", text) is not None


def deviation_ended(endpoint: str, paths: Sequence[str], fixed: Sequence[Fixed]) -> str | None:
    """The check whose deviation in the baseline this difference ends, None where no failure
    accounts for it.

    The link is what the baseline recorded of the failure: the check failed there and passes on the
    candidate (the gate's check comparison), the request it failed on (its reproducer) went to this
    endpoint, and the failure names one of the fields (``paths``) in its own words (``_own_words``).
    A field no such failure names is a real removal."""
    return next(
        (
            f.check
            for f in fixed
            if _calls(f.reproducer, endpoint)
            and any(_names(_own_words(f.message), p) for p in paths)
        ),
        None,
    )


def _on_other_items(endpoint: str, path: str, before: dict[str, Any]) -> str | None:
    """Why ``path`` was served on items the reference does not define it on, None where it may have
    been on its own: the baseline's items of that route showed no kind the reference gives the field
    (by their values' digests)."""
    if (kinds := reference.defined_only_on(endpoint, path)) is None:
        return None
    kind_path, defined_on = kinds
    seen = set(before.get(kind_path, {}).get("values", []))
    if any(digest(kind) in seen for kind in defined_on):
        return None
    return (
        f"the reference defines it on {', '.join(sorted(defined_on))} items only, and the "
        "baseline served none"
    )


def _client_change(
    endpoint: str,
    paths: Sequence[str],
    why: str,
    impact: str,
    fixed: Sequence[Fixed],
    before: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """``(kind, detail)`` of a difference that breaks a client reading the field (``paths[0]``, as
    the baseline served it): a regression, unless a typed rule makes it a change: the reference
    keeps that field out of this route and mode, or a check that named that exact field failed in
    the baseline and passes now (listed with ``impact``, what such a client sees now). A field the
    reference requires is a regression whatever else holds."""
    if reference.required(endpoint, paths[0]):
        return "regression", f"{why}; the reference requires it in every answer"
    if rule := reference.not_in_mode(endpoint, paths[0]) or _on_other_items(
        endpoint, paths[0], before or {}
    ):
        return "change", f"{why}; the end of a deviation: {rule}; {impact}"
    check = deviation_ended(endpoint, paths, fixed)
    if check is None:
        return "regression", why
    return (
        "change",
        f"{why}; the end of a deviation: {check} failed on it in the baseline and passes now; "
        f"{impact}",
    )


def drift(
    endpoint: str,
    before: dict[str, Any],
    after: dict[str, Any],
    pair: str,
    fixed: Sequence[Fixed] = (),
) -> list[Finding]:
    """The fields of one endpoint that were added, removed, renamed or retyped from ``before`` to
    ``after``; ``fixed``: the checks whose deviation in the baseline is gone (``Pairing.fixed``)."""
    removed = [p for p in before if _unseen(p, after)]
    added = [p for p in after if _unseen(p, before)]
    found: list[Finding] = []
    renamed: set[str] = set()
    for old in removed:
        values = set(before[old].get("values", []))
        new = next(
            (
                p
                for p in added
                if p not in renamed
                and parent(p) == parent(old)
                and values & set(after[p].get("values", []))
            ),
            None,
        )
        if new is not None:
            renamed.add(new)
            kind, why = _client_change(
                endpoint,
                (old, new),
                f"renamed: the same values now come as {new}",
                f"clients that read {old} will find it as {new}",
                fixed,
                before,
            )
            found.append(Finding(kind, "api", pair, f"{endpoint}: {old}", old, new, why))
        else:
            empty = set(before[old].get("types", [])) <= {EMPTY_ARRAY, "null"}
            served = (
                " (always empty: a client reading it by key breaks, one reading a value loses none)"
            )
            kind, why = _client_change(
                endpoint,
                (old,),
                "removed: the baseline served it" + (served if empty else ""),
                f"clients that read {old} without asking for it will miss it",
                fixed,
                before,
            )
            found.append(
                Finding(kind, "api", pair, f"{endpoint}: {old}", _shown(before[old]), "absent", why)
            )
    for new in added:
        if new not in renamed:
            found.append(
                Finding(
                    "change",
                    "api",
                    pair,
                    f"{endpoint}: {new}",
                    "absent",
                    _shown(after[new]),
                    "added",
                )
            )
    for path in sorted(set(before) & set(after)):
        old_types, new_types = _types(before[path]), _types(after[path])
        if old_types == new_types:
            continue
        was, now = _shown(before[path]), _shown(after[path])
        # its values are gone: a client reading one gets null now
        emptied = new_types <= {"null"} < old_types
        kind, why = (
            ("change", "types seen narrowed: every type now seen was seen before")
            if new_types <= old_types and not emptied
            else _client_change(
                endpoint,
                (path,),
                "retyped",
                f"clients that read {path} as {was} now get {now}",
                fixed,
                before,
            )
        )
        found.append(Finding(kind, "api", pair, f"{endpoint}: {path}", was, now, why))
    return found


def _shown(seen: dict[str, Any]) -> str:
    return "|".join(sorted(_types(seen)))
