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

from rlx_mlir.diagnostics import RlxError, SourceLoc, loc_of, make_loc
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


_UNDEFINED = re.compile(r"values used but not defined: \[(%[\w.$-]+)")


def _clearer(message: str, loc: SourceLoc, text: str) -> tuple[str, SourceLoc]:
    """xDSL's parse message and location, made specific: an unfilled ``{first_char}``
    gets the character, an empty "in block definition" names the missing ``}``, and an
    undefined value is reported at its first use rather than at the end of the file."""
    lines = text.splitlines()
    if "{first_char}" in message and 0 < loc.line <= len(lines):
        message = message.replace("{first_char}", repr(lines[loc.line - 1][loc.col - 1:loc.col]))
    if message.strip() == "in block definition":
        message = "unexpected end of input: a '}' is missing (in block definition)"
    undefined = _UNDEFINED.search(message)
    if undefined:
        loc = _first_use(undefined.group(1), lines, loc)
    return message, loc


def _first_use(name: str, lines: list[str], default: SourceLoc) -> SourceLoc:
    """Where ``%name`` first appears outside a ``//`` comment."""
    pattern = re.compile(re.escape(name) + r"(?![\w.$-])")
    for number, line in enumerate(lines, 1):
        found = pattern.search(line.split("//", 1)[0])
        if found:
            return SourceLoc(default.file, number, found.start() + 1)
    return default


def parse(text: str, filename: str = "<string>", line_offset: int = 0) -> ModuleOp:
    """Parse and verify rlx text; :class:`RlxError` with a location on failure."""
    try:
        module = LocatingParser(make_context(), text, filename).parse_module()
    except ParseError as e:
        loc = _unknown_op_column(_span_loc(e), e.msg, text)
        message, loc = _clearer(e.msg, loc, text)
        raise RlxError(message + _op_name_hint(message),
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
    _check_unique_symbols(module)
    for op in module.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            raise RlxError(f"'{op.name}' op {e}", op=op) from None
    try:
        module.verify()
    except VerifyException as e:
        raise RlxError(str(e), op=module) from None


def _check_unique_symbols(module: Operation) -> None:
    """A second top-level op with the same ``sym_name``: located at it."""
    seen: dict[str, Operation] = {}
    for op in module.regions[0].ops if module.regions else ():
        name = getattr(op, "sym_name", None)
        if name is None:
            continue
        first = seen.setdefault(name.data, op)
        if first is not op:
            raise RlxError(f"redefinition of symbol @{name.data}", op=op,
                           notes=(f"@{name.data} is first defined at {loc_of(first)}",))


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
