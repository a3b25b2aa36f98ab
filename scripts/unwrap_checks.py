"""Rewrite ``@check(...) def f`` as ``def f`` followed by ``check(...)(f)``, in the copy that mutation testing mutates.

mutmut mutates no decorated function, and every conformance check is registered by a decorator that
returns the function unchanged; the call after the def registers the same function, so the check
bodies, where each judged condition is written, get mutated too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst


def _registers_a_check(decorator: cst.Decorator) -> bool:
    call = decorator.decorator
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Name)
        and call.func.value == "check"
    )


def unwrap(source: str) -> tuple[str, int]:
    """The module's code with its check decorators turned into calls, and how many there were."""
    module = cst.parse_module(source)
    body: list[cst.CSTNode] = []
    for statement in module.body:
        if (
            isinstance(statement, cst.FunctionDef)
            and len(statement.decorators) == 1
            and _registers_a_check(statement.decorators[0])
        ):
            register = cst.Call(
                func=statement.decorators[0].decorator, args=[cst.Arg(statement.name)]
            )
            body += [
                statement.with_changes(decorators=[]),
                cst.SimpleStatementLine([cst.Expr(register)]),
            ]
        else:
            body.append(statement)
    return module.with_changes(body=body).code, len(body) - len(module.body)


def main(paths: list[str]) -> None:
    for path in map(Path, paths):
        code, count = unwrap(path.read_text())
        path.write_text(code)
        print(f"{path}: {count} check(s) registered after their def")


if __name__ == "__main__":
    main(sys.argv[1:])
