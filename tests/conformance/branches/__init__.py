"""One failure branch per case, by check module: (branch name, the deviation that takes it, text of the server's it
quotes)."""

from __future__ import annotations

from pytest_infer.testing.fakeserver import Deviation

from . import (
    chat,
    completions,
    embeddings,
    errors,
    messages,
    models,
    reasoning,
    responses,
    sdk,
    stream,
    tokenize,
    tools,
)

BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {}
for module in (
    chat,
    completions,
    embeddings,
    errors,
    messages,
    models,
    reasoning,
    responses,
    sdk,
    stream,
    tokenize,
    tools,
):
    for check_id, cases in module.BRANCHES.items():
        BRANCHES.setdefault(check_id, []).extend(cases)
