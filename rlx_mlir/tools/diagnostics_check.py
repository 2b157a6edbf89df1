"""``--verify-diagnostics``: match emitted errors (and their notes) against
``expected-error`` / ``expected-note`` / ``expected-warning`` comments.

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
    r"//\s*expected-(?P<kind>error|warning|note|remark)(?P<re>-re)?\s*"
    r"(?:@(?P<where>above|below|unknown|[+-]\d+|\d+))?\s*\{\{(?P<text>.*)\}\}"
)
"""The text runs from the first ``{{`` to the last ``}}`` of the line (as MLIR's), so an
``-re`` expectation may hold ``{{regex}}`` parts."""


@dataclass
class Expectation:
    kind: str
    line: int | None  # None: @unknown, a diagnostic without a location
    text: str
    comment_line: int
    comment_col: int = 1
    matched: bool = False
    regex: re.Pattern | None = None  # expected-*-re: literal text with {{regex}} parts

    def matches(self, message: str) -> bool:
        return self.regex.search(message) is not None if self.regex else self.text in message


def _pattern(text: str) -> re.Pattern:
    """An ``-re`` expectation's text: literal, except its ``{{regex}}`` parts."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?:{p})"
                              for i, p in enumerate(parts)))


def expectations(text: str, line_offset: int = 0) -> list[Expectation]:
    """Every expected-* comment of ``text``, with the (absolute) line it targets:
    ``@below`` / ``@above`` the next / previous line holding no expectation (as MLIR's),
    ``@+N`` / ``@-N`` relative, ``@N`` absolute, ``@unknown`` no location."""
    lines = text.splitlines()
    designator = [bool(_EXPECT.search(line)) for line in lines]
    found = []
    for index, source_line in enumerate(lines):
        line = index + 1 + line_offset
        for m in _EXPECT.finditer(source_line):
            where = m.group("where")
            target: int | None = line
            if where == "unknown":
                target = None
            elif where == "above":
                target = _plain_line(designator, index, -1) + 1 + line_offset
            elif where == "below":
                target = _plain_line(designator, index, +1) + 1 + line_offset
            elif where and where[0] in "+-":
                target = line + int(where)
            elif where:
                target = int(where) + line_offset
            regex = _pattern(m.group("text")) if m.group("re") else None
            found.append(Expectation(m.group("kind"), target, m.group("text"), line,
                                     m.start() + 1, regex=regex))
    return found


def _plain_line(designator: list[bool], index: int, step: int) -> int:
    """The nearest line from ``index`` in direction ``step`` holding no expectation."""
    at = index + step
    while 0 <= at < len(designator) and designator[at]:
        at += step
    return at


_NOTE_AT = re.compile(r":(\d+):\d+$")


def _note_line(error: RlxError, note: str) -> int | None:
    """A note is at the location it ends with (``@f is first defined at m.mlir:3:1``),
    else at its error's."""
    at = _NOTE_AT.search(note)
    if at:
        return int(at.group(1))
    return error.loc.line if error.loc is not None else None


def _match(expected: list[Expectation], kind: str, line: int | None,
           message: str) -> Expectation | None:
    """The first unmatched expectation of ``kind`` at ``line`` whose text is in
    ``message`` (marked matched)."""
    hit = next((e for e in expected if not e.matched and e.kind == kind
                and e.line == line and e.matches(message)), None)
    if hit is not None:
        hit.matched = True
    return hit


def check(expected: list[Expectation], errors: list[RlxError], filename: str) -> list[str]:
    """Problems (unexpected errors, missing errors, notes and warnings); empty when
    everything matched. An expected note must match a note of an emitted error at its
    line; rlx emits no warnings or remarks, so expecting one is always a problem. As with
    mlir-opt, a note nobody expected is a problem too."""
    problems = []
    for error in errors:
        line = error.loc.line if error.loc is not None else None
        if _match(expected, "error", line, error.message) is None:
            at = str(error.loc) if error.loc is not None else filename
            problems.append(f"{at}: error: unexpected error: {error.message}")
        for note in error.notes:
            if _match(expected, "note", _note_line(error, note), note) is None:
                where = _note_line(error, note)
                at = f"{filename}:{where}" if where is not None else filename
                problems.append(f"{at}: error: unexpected note: {note}")
    for e in expected:
        if not e.matched:
            problems.append(
                f"{filename}:{e.comment_line}:{e.comment_col}: error: expected {e.kind} "
                f"\"{e.text}\" "
                f"{'at an unknown location' if e.line is None else f'at line {e.line}'} "
                "was not produced"
            )
    return problems
