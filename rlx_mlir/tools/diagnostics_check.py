"""``--verify-diagnostics``: match emitted errors against ``expected-error`` comments.

MLIR's syntax::

    // expected-error @below {{result type mismatch}}
    // expected-error @+2 {{unknown predicate}}
    %y = rlx.relu %x ... // expected-error {{...}}
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlx_mlir.diagnostics import RlxError

_EXPECT = re.compile(
    r"//\s*expected-(?P<kind>error|warning|note|remark)\s*"
    r"(?:@(?P<where>above|below|[+-]\d+|\d+))?\s*\{\{(?P<text>.*?)\}\}"
)


@dataclass
class Expectation:
    kind: str
    line: int
    text: str
    comment_line: int
    matched: bool = False


def expectations(text: str, line_offset: int = 0) -> list[Expectation]:
    """Every expected-* comment of ``text``, with the (absolute) line it targets."""
    found = []
    for index, source_line in enumerate(text.splitlines()):
        line = index + 1 + line_offset
        for m in _EXPECT.finditer(source_line):
            where = m.group("where")
            target = line
            if where == "above":
                target = line - 1
            elif where == "below":
                target = line + 1
            elif where and where[0] in "+-":
                target = line + int(where)
            elif where:
                target = int(where) + line_offset
            found.append(Expectation(m.group("kind"), target, m.group("text"), line))
    return found


def check(expected: list[Expectation], errors: list[RlxError], filename: str) -> list[str]:
    """Problems (unexpected or missing diagnostics); empty when everything matched."""
    problems = []
    for error in errors:
        line = error.loc.line if error.loc is not None else None
        hit = next(
            (e for e in expected if not e.matched and e.kind == "error"
             and e.line == line and e.text in error.message),
            None,
        )
        if hit is None:
            problems.append(f"{error}\n{filename}: error: unexpected error: {error.message}")
        else:
            hit.matched = True
    for e in expected:
        if not e.matched and e.kind == "error":
            problems.append(
                f"{filename}:{e.comment_line}: error: expected error \"{e.text}\" "
                f"at line {e.line} was not produced"
            )
    return problems
