"""Parsing, printing and located verification of rlx modules.

>>> m = parse('''
... func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
...   %y = rlx.relu %x : (tensor<2xf32>) -> tensor<2xf32>
...   func.return %y : tensor<2xf32>
... }''')
>>> "rlx.relu" in str(m)
True
"""

from __future__ import annotations

import difflib
import re
from io import StringIO

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, builtin, func, linalg, math, scf, tensor
from xdsl.dialects.builtin import ModuleOp, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from rlx_mlir.diagnostics import RlxError, SourceLoc, make_loc
from rlx_mlir.dialects import Rlx


def make_context(allow_unregistered: bool = False) -> Context:
    """A context with the rlx dialect and the upstream dialects we lower to."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for dialect in (
        builtin.Builtin, func.Func, arith.Arith, tensor.Tensor, linalg.Linalg,
        math.Math, scf.Scf, bufferization.Bufferization, Rlx,
    ):
        ctx.load_dialect(dialect)
    return ctx


class LocatingParser(Parser):
    """xDSL's parser, recording each op's ``file:line:col`` as its location."""

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            where = start.get_location()
            op.location = make_loc(where.file, where.line, where.col)
        return op


def _span_loc(error: ParseError) -> SourceLoc:
    where = error.span.get_location()
    return SourceLoc(where.file, where.line, where.col)


_UNKNOWN_OP = re.compile(r"Operation (\S+) is not registered")


def _unknown_op_column(loc: SourceLoc, message: str, text: str) -> SourceLoc:
    """An unknown op is reported at its name (xDSL's span ends after it)."""
    found = _UNKNOWN_OP.search(message)
    lines = text.splitlines()
    if not found or not 0 < loc.line <= len(lines):
        return loc
    column = lines[loc.line - 1].find(found.group(1))
    return SourceLoc(loc.file, loc.line, column + 1) if column >= 0 else loc


def _op_name_hint(message: str) -> str:
    """For an unknown op name, the nearest registered ones: ``rlx.sum`` ->
    ``(did you mean rlx.reduce_sum, rlx.cumsum?)``; else an empty string."""
    found = _UNKNOWN_OP.search(message)
    if not found:
        return ""
    name = found.group(1)
    known = [op.name for op in Rlx.operations]
    short = name.rpartition(".")[2]
    suffixed = [k for k in known if k.endswith("_" + short) or k.endswith("." + short)]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.75)
    hints = list(dict.fromkeys(suffixed + close))[:3]
    return f" (did you mean {', '.join(hints)}?)" if hints else ""


def parse(text: str, filename: str = "<string>", line_offset: int = 0) -> ModuleOp:
    """Parse and verify rlx text; :class:`RlxError` with a location on failure."""
    try:
        module = LocatingParser(make_context(), text, filename).parse_module()
    except ParseError as e:
        loc = _unknown_op_column(_span_loc(e), e.msg, text)
        raise RlxError(e.msg + _op_name_hint(e.msg),
                       loc=SourceLoc(loc.file, loc.line + line_offset, loc.col)) from None
    if line_offset:
        _shift_lines(module, line_offset)
    verify(module)
    return module


def _shift_lines(module: ModuleOp, offset: int) -> None:
    for op in module.walk():
        loc = op.location
        if hasattr(loc, "line"):
            op.location = make_loc(loc.filename.data, loc.line.data + offset, loc.column.data)


def verify(module: Operation) -> None:
    """Verify every op, nested ops before the op holding them, in source order: the first
    failure in the file is reported, at its location."""
    for op in module.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            raise RlxError(f"'{op.name}' op {e}", op=op) from None
    try:
        module.verify()
    except VerifyException as e:
        raise RlxError(str(e), op=module) from None


def as_module(module_or_text: ModuleOp | str) -> ModuleOp:
    """Accept a module or rlx text."""
    if isinstance(module_or_text, ModuleOp):
        return module_or_text
    if isinstance(module_or_text, str):
        return parse(module_or_text)
    raise TypeError(f"expected an rlx module or its text, got {type(module_or_text).__name__}")


def to_text(module: Operation, generic: bool = False) -> str:
    """Print a module (custom syntax by default, generic on request)."""
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue() + "\n"


def find_func(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function called ``name``, or the first public one when None."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if name is None:
        public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data == "public"]
        if not public:
            raise RlxError("module has no public function to run", op=module)
        return public[0]
    for f in funcs:
        if f.sym_name.data == name:
            return f
    known = ", ".join(f.sym_name.data for f in funcs) or "none"
    raise RlxError(f"no function named '{name}' (functions: {known})", op=module)
