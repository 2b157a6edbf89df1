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
from collections.abc import Callable, Iterator, Sequence
from io import StringIO
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, bufferization, builtin, complex, func, linalg, math, scf, tensor
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    BytesAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Dialect, Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.mlir_lexer import MLIRTokenKind

from rlx_mlir.diagnostics import RlxError, SourceLoc, loc_of, make_loc, op_message
from rlx_mlir.dialects import Rlx


def _with_ops(dialect: Dialect, added: Sequence[type[Operation]]) -> Dialect:
    """``dialect`` with some ops added."""
    attrs: list[type[Attribute]] = list(dialect.attributes)
    return Dialect(dialect.name, [*dialect.operations, *added], attrs)


def make_context(allow_unregistered: bool = False) -> Context:
    """A context with the rlx dialect and the upstream dialects we lower to, including the
    ``scf.forall`` and ``linalg.batch_matmul`` ops of ``--lower-to-linalg`` output (so
    rlx-opt re-reads it)."""
    from rlx_mlir.lowering.forall import ForallOp, InParallelOp, ParallelInsertSliceOp
    from rlx_mlir.lowering.linalg_ext import BatchMatmulOp

    ctx = Context(allow_unregistered=allow_unregistered)
    for dialect in (
        builtin.Builtin, func.Func, arith.Arith, math.Math, bufferization.Bufferization, Rlx,
        complex.Complex,
        _with_ops(tensor.Tensor, [ParallelInsertSliceOp]),
        _with_ops(linalg.Linalg, [BatchMatmulOp]),
        _with_ops(scf.Scf, [ForallOp, InParallelOp]),
    ):
        ctx.load_dialect(dialect)
    return ctx


def float_from_bits(bits: int, type: AnyFloat) -> float:
    """The float whose IEEE bit pattern (of ``type``'s width) is ``bits``, as MLIR reads a
    hex literal in a float dense attribute.

    >>> float_from_bits(0xFF800000, builtin.f32), float_from_bits(0x3FF0000000000000, builtin.f64)
    (-inf, 1.0)
    """
    width = type.bitwidth
    if bits >= 1 << width:
        raise ValueError(f"hexadecimal float literal 0x{bits:x} does not fit in {type}")
    if isinstance(type, BFloat16Type):
        return float(np.array([bits << 16], np.uint32).view(np.float32)[0])
    unsigned = {16: np.uint16, 32: np.uint32, 64: np.uint64}.get(width)
    if unsigned is None:
        raise ValueError(f"hexadecimal float literals of {type} are not supported")
    return float(np.array([bits], unsigned).view(f"f{width // 8}")[0])


class _HexElement(Parser._TensorLiteralElement):
    """A ``0x...`` dense literal element: for a float element type, a bit pattern."""

    def to_type(self, parser: Parser, type: Any) -> Any:  # noqa: A002 (xDSL names it)
        if not isinstance(type, AnyFloat):
            return super().to_type(parser, type)
        try:
            return float_from_bits(int(self.value), type)
        except ValueError as e:
            parser.raise_error(str(e), at_position=self.span)


class LocatingParser(Parser):
    """xDSL's parser, recording each op's ``file:line:col`` as its location, and reading
    a hex integer in a float dense literal as the element's bit pattern (as MLIR does).

    ``line_offset`` shifts the lines of the locations it makes (a ``--split-input-file``
    chunk's lines count from the top of the file); a written ``loc(...)`` is kept."""

    def __init__(self, ctx: Context, text: str, name: str = "<unknown>",
                 line_offset: int = 0) -> None:
        super().__init__(ctx, text, name)
        self.line_offset = line_offset

    def _parse_tensor_literal_element(self) -> Parser._TensorLiteralElement:
        token = self._current_token
        if token.kind == MLIRTokenKind.INTEGER_LIT and token.text[:2] in ("0x", "0X"):
            self._consume_token(MLIRTokenKind.INTEGER_LIT)
            return _HexElement(False, int(token.text, 16), token.span)
        return super()._parse_tensor_literal_element()

    def parse_comma_separated_list(self, delimiter: Parser.Delimiter,
                                   parse: Callable[[], Any], context_msg: str = "") -> list[Any]:
        """Also read ``-> (t1, t2)`` as two result types where an attribute list is parsed
        (xDSL's multi-result ``linalg.generic``); ``(t1) -> t2`` stays a function type."""
        if (delimiter is Parser.Delimiter.NONE and parse == self.parse_attribute
                and self._current_token.kind == MLIRTokenKind.L_PAREN):
            start = self.pos
            types = super().parse_comma_separated_list(Parser.Delimiter.PAREN, self.parse_type,
                                                       context_msg)
            if self._current_token.kind != MLIRTokenKind.ARROW:
                return types
            self._resume_from(start)
        return super().parse_comma_separated_list(delimiter, parse, context_msg)

    def _parse_optional_builtin_attr(self) -> Attribute | None:
        """A string literal whose escapes spell UTF-8 (``"f\\C3\\A9"``, how MLIR and xDSL
        print ``"fé"``) is a ``StringAttr``, as in MLIR, not xDSL's ``BytesAttr``: printed
        names round-trip."""
        start = self._current_token.span
        try:
            attr = super()._parse_optional_builtin_attr()
        except (OverflowError, ValueError, VerifyException) as e:  # dense<1e40> : f32, 300 : i8
            raise ParseError(start, f"a literal does not fit its element type: {e}") from None
        if isinstance(attr, BytesAttr):
            try:
                return StringAttr(attr.data.decode("utf-8"))
            except UnicodeDecodeError:
                return attr
        return attr

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            where = start.get_location()
            op.location = make_loc(where.file, where.line + self.line_offset, where.col)
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


class VerifyErrors(RlxError):
    """Several verification failures (``verify(..., all_errors=True)``), first one first;
    printed one after the other."""

    def __init__(self, errors: Sequence[RlxError]) -> None:
        super().__init__(errors[0].message, loc=errors[0].loc, notes=errors[0].notes)
        self.errors = list(errors)

    def __str__(self) -> str:
        return "\n".join(RlxError.__str__(e) for e in self.errors)


def _is_blank(text: str) -> bool:
    """Only whitespace and ``//`` comments: an empty module, as for mlir-opt."""
    return not re.sub(r"//[^\n]*", "", text).strip()


_LOC_ALIAS = re.compile(r"^#[A-Za-z_][\w$.-]* = loc\(.*\)[ \t]*$", re.MULTILINE)


def hoist_location_aliases(text: str) -> tuple[str, int]:
    r"""``(text, lines added)``: location aliases defined after their uses (``#loc3 =
    loc("a.py":2:3)`` at the end of the file, as ``mlir-opt --mlir-print-debuginfo``
    prints them) copied onto one first line, so a one-pass parser knows them; their
    original lines are blanked, so the other lines keep their numbers.

    >>> hoist_location_aliases('f loc(#l)\n#l = loc("a":1:2)\n')
    ('#l = loc("a":1:2)\nf loc(#l)\n\n', 1)
    """
    aliases = _LOC_ALIAS.findall(text)
    if not aliases:
        return text, 0
    return " ".join(aliases) + "\n" + _LOC_ALIAS.sub("", text), 1


def parse(text: str, filename: str = "<string>", line_offset: int = 0,
          all_errors: bool = False) -> ModuleOp:
    """Parse and verify rlx text; :class:`RlxError` with a location on failure (with
    ``all_errors``, a :class:`VerifyErrors` holding every op verification failure)."""
    if _is_blank(text):
        return ModuleOp([])
    text, added = hoist_location_aliases(text)
    line_offset -= added
    _refuse_hex_complex_literals(text, filename, line_offset)
    try:
        module = LocatingParser(make_context(), text, filename, line_offset).parse_module()
    except AssertionError as e:  # xDSL asserts on some malformed dense literals
        raise RlxError(f"malformed attribute literal: {e}".rstrip(": ") if str(e) else
                       "malformed attribute literal (a dense literal's nesting or element "
                       "count does not match its type?)",
                       loc=SourceLoc(filename, 1 + line_offset, 1)) from None
    except ParseError as e:
        loc = _unknown_op_column(_span_loc(e), e.msg, text)
        message, loc = _clearer(e.msg, loc, text)
        raise RlxError(message + _op_name_hint(message),
                       loc=SourceLoc(loc.file, loc.line + line_offset, loc.col)) from None
    verify(module, all_errors=all_errors)
    return module


_HEX_IN_COMPLEX = re.compile(r"\(\s*-?0x[0-9a-fA-F]+\s*,|,\s*-?0x[0-9a-fA-F]+\s*\)")


def _refuse_hex_complex_literals(text: str, filename: str, line_offset: int) -> None:
    """A hex float (bit pattern) inside a complex dense literal: the parser would read it
    as an integer value, so it is an error rather than a silently different constant."""
    for number, line in enumerate(text.splitlines(), start=1):
        match = _HEX_IN_COMPLEX.search(line) if "complex<" in line else None
        if match:
            raise RlxError("hex floats in complex constants are not supported (they would be "
                           "read as integers): write the parts in decimal",
                           loc=SourceLoc(filename, number + line_offset, match.start() + 1))


def verify(module: Operation, all_errors: bool = False) -> None:
    """Verify every op, nested ops before the op holding them, in source order: the first
    failure in the file is reported, at its location. With ``all_errors``, every failure
    is collected (the ops holding a failed op are not verified) into a
    :class:`VerifyErrors`."""
    errors = (_symbol_errors(module) or _function_body_errors(module)
              or _dominance_errors(module, not all_errors))
    if errors and not all_errors:
        raise errors[0]
    redefined_in = {id(e.op.parent_op()) for e in errors if e.op is not None}
    errors += _op_errors(module, stop_at_first=not all_errors, skip=redefined_in)
    if not errors:
        try:
            module.verify()
        except VerifyException as e:
            errors.append(RlxError(str(e), op=module))
    if errors:
        raise errors[0] if len(errors) == 1 else VerifyErrors(errors)


def _function_body_errors(module: Operation) -> list[RlxError]:
    """A ``func.func`` with a dynamic dimension in its signature, with no body (rlx has no
    external functions) or whose body does not end in ``func.return`` (``rlx.yield``
    ends the regions of rlx ops only)."""
    for op in module.walk():
        if not isinstance(op, func.FuncOp):
            continue
        name = op.sym_name.data
        ftype = op.function_type
        dynamic = next((t for t in (*ftype.inputs.data, *ftype.outputs.data)
                        if isinstance(t, TensorType) and min(t.get_shape(), default=0) < 0),
                       None)
        if dynamic is not None:
            return [RlxError(f"function @{name}: dynamic dimensions are not supported: "
                             f"{dynamic} (give every dimension a size)", op=op)]
        if not op.body.blocks:
            return [RlxError(f"function @{name} has no body: declarations of external "
                             "functions are not supported (define it in the module)", op=op)]
        last = op.body.blocks.last.last_op
        if last is None or last.name != "func.return":
            got = "nothing" if last is None else f"'{last.name}'"
            return [RlxError(f"function @{name} must end with 'func.return', got {got}",
                             op=last or op)]
    return []


def _dominance_errors(module: Operation, stop_at_first: bool) -> list[RlxError]:
    """Each use of a value that is not defined before it, in its block or a block that
    encloses it (MLIR's "operand does not dominate this use"); functions see only their
    own values. Regions of several blocks (a CFG) are not checked."""
    errors: list[RlxError] = []

    def visit(block: Block, outer: frozenset[int] | set[int]) -> None:
        visible = set(outer) | {id(a) for a in block.args}
        for op in block.ops:
            bad = next((i for i, v in enumerate(op.operands) if id(v) not in visible), None)
            if bad is not None:
                errors.append(RlxError(
                    f"operand #{bad} of '{op.name}' does not dominate this use: it is "
                    "defined after it, or inside a region that does not hold this op", op=op))
                if stop_at_first:
                    return
            isolated = op.name in ("func.func", "builtin.module")
            for region in op.regions:
                if len(region.blocks) == 1:
                    visit(region.blocks.first, frozenset() if isolated else visible)
                if errors and stop_at_first:
                    return
            visible.update(id(r) for r in op.results)

    for region in module.regions:
        if len(region.blocks) == 1:
            visit(region.blocks.first, frozenset())
    return errors


def _op_errors(module: Operation, stop_at_first: bool, skip: set[int]) -> list[RlxError]:
    """Each op's own verification failure, nested ops first; an op holding a failed op
    (or in ``skip``: ids of modules with a redefined symbol) is skipped, as its failure
    would only repeat the inner one."""
    errors: list[RlxError] = []
    holding_failed = set(skip)
    for op in module.walk(region_first=True):
        if id(op) in holding_failed:
            continue
        try:
            op.verify(verify_nested_ops=False)
            _check_tensor_sizes(op)
        except VerifyException as e:
            errors.append(RlxError(op_message(op.name, e), op=op))
            if stop_at_first:
                break
            holding_failed.update(id(parent) for parent in _ancestors(op))
    return errors


MAX_TENSOR_BYTES = (1 << 63) - 1
"""Sizes must fit MLIR's int64 dimensions and memref sizes (in bytes)."""


def _check_tensor_sizes(op: Operation) -> None:
    """A tensor type of ``op`` (a result, or a function's argument or result) whose size in
    bytes does not fit int64 is a verification error (lowering could not represent it)."""
    types = [r.type for r in op.results]
    function_type = getattr(op, "function_type", None)
    if function_type is not None:
        types += [*function_type.inputs.data, *function_type.outputs.data]
    for t in types:
        if not isinstance(t, TensorType):
            continue
        size = _element_bytes(t)
        for d in t.get_shape():
            size *= max(d, 1)
        if size > MAX_TENSOR_BYTES:
            raise VerifyException(f"type {t} is too large: its size in bytes does not fit "
                                  "a 64-bit integer")


def _element_bytes(t: TensorType) -> int:
    width = getattr(t.element_type, "bitwidth", None)
    return max(1, (width or 64) // 8)


def _ancestors(op: Operation) -> Iterator[Operation]:
    parent = op.parent_op()
    while parent is not None:
        yield parent
        parent = parent.parent_op()


def _symbol_errors(module: Operation) -> list[RlxError]:
    """A second op with the same ``sym_name`` in one symbol table (the module, a nested
    module...): located at it, with a note naming the first."""
    errors = []
    for table in module.walk():
        if not isinstance(table, ModuleOp):
            continue
        seen: dict[str, Operation] = {}
        for op in table.ops:
            name = getattr(op, "sym_name", None)
            if name is None:
                continue
            first = seen.setdefault(name.data, op)
            if first is not op:
                errors.append(RlxError(
                    f"redefinition of symbol @{name.data}", op=op,
                    notes=(f"@{name.data} is first defined at {loc_of(first)}",)))
    return errors


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


def check_signature_types(module: Operation, tensors_only: bool = False) -> None:
    """A function argument or result whose element type rlx cannot run or differentiate
    (f16, bf16, i8, index...), or with ``tensors_only`` one that is not a ranked tensor
    (what a run passes as numpy arrays): an :class:`RlxError` at the function, naming the
    type and the supported ones."""
    from rlx_mlir.dialects.base import DTYPES

    supported = {str(t): name for name, t in DTYPES.items()}
    for f in module.walk():
        if not isinstance(f, func.FuncOp):
            continue
        for what, types in (("argument", f.function_type.inputs),
                            ("result", f.function_type.outputs)):
            for index, t in enumerate(types):
                if tensors_only and not isinstance(t, builtin.TensorType):
                    raise RlxError(f"{what} #{index} of @{f.sym_name.data} has type {t}; a "
                                   f"function to run takes and returns ranked tensors "
                                   f"(tensor<{t}> for a scalar)", op=f)
                element = getattr(t, "element_type", t)
                if str(element) not in supported:
                    raise RlxError(f"{what} #{index} of @{f.sym_name.data} has element type "
                                   f"{element}, which rlx does not support (supported: "
                                   f"{', '.join(supported)})", op=f)


def find_func(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function called ``name``, or the first public one when None."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if name is None:
        public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data == "public"]
        if not public:
            private = ", ".join(f"@{f.sym_name.data}" for f in funcs) or "none"
            raise RlxError(f"module has no public function to run (private functions: "
                           f"{private}); name one (rlx-run --entry NAME, compile(m, NAME))",
                           op=module)
        return public[0]
    for f in funcs:
        if f.sym_name.data == name:
            return f
    known = ", ".join(f.sym_name.data for f in funcs) or "none"
    raise RlxError(f"no function named '{name}' (functions: {known})", op=module)
