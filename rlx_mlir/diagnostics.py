"""MLIR-style diagnostics: ``file:line:col: error: message``.

Every user-facing failure (parse error, verifier error, missing rule, bad
runtime argument) is an :class:`RlxError` carrying a location; the command-line
tools print it and exit with status 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
from xdsl.ir import Attribute, Operation


@dataclass(frozen=True)
class SourceLoc:
    """A position in a source file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def loc_from_attr(loc: Attribute | None) -> SourceLoc | None:
    if isinstance(loc, FileLineColLoc):
        return SourceLoc(loc.filename.data, loc.line.data, loc.column.data)
    return None


def loc_of(op: Operation | None) -> SourceLoc | None:
    """The source location recorded on ``op`` (or its nearest located parent)."""
    while op is not None:
        found = loc_from_attr(op.location)
        if found is not None:
            return found
        op = op.parent_op()
    return None


def make_loc(file: str, line: int, col: int) -> Attribute:
    return FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(col))


def op_message(op_name: str, error: Exception | str) -> str:
    """``'rlx.mul' op <what is wrong>``, MLIR's form of a verifier message (a message that
    already starts with the op's name does not repeat it).

    >>> op_message("rlx.mul", "'rlx.mul' does not support element type i1")
    "'rlx.mul' op does not support element type i1"
    """
    text, named = str(error), f"'{op_name}' "
    return f"'{op_name}' op {text[len(named):] if text.startswith(named) else text}"


class RlxError(Exception):
    """A located, user-facing error.

    >>> str(RlxError("bad shape", loc=SourceLoc("m.mlir", 3, 7)))
    'm.mlir:3:7: error: bad shape'
    """

    def __init__(
        self,
        message: str,
        *,
        op: Operation | None = None,
        loc: SourceLoc | None = None,
        notes: tuple[str, ...] = (),
    ):
        super().__init__(message)
        self.message = message
        self.op = op
        self.loc = loc if loc is not None else loc_of(op)
        self.notes = notes

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc is not None else ""
        text = f"{where}error: {self.message}"
        for note in self.notes:
            text += f"\n{where}note: {note}"
        return text


class ArgumentError(RlxError, ValueError):
    """A call with the wrong arguments (count, name, shape, dtype or value): an
    :class:`RlxError`, and a ``ValueError`` as numpy would raise.

    >>> isinstance(ArgumentError("@f takes 2 arguments, got 3"), ValueError)
    True
    """


def int_setting(name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    """An integer environment knob (``RLX_NUM_THREADS``...): ``default`` when unset or
    empty, an :class:`RlxError` naming the variable when it is not an integer in
    ``minimum..maximum`` (no upper bound when ``maximum`` is None).

    >>> int_setting("RLX_UNSET_EXAMPLE", 3)
    3
    """
    import os

    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum or (maximum is not None and value > maximum):
        expected = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise RlxError(f"{name}={text!r}: expected an integer {expected}")
    return value
