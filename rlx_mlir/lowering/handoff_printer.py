"""A fast printer of xDSL modules in MLIR's generic form, for the hand-off to upstream.

xDSL's :class:`~xdsl.printer.Printer` prints every attribute again at each use and goes
through several Python calls per token; a lowered training step has thousands of ops
with the same few memref/tensor types, so the hand-off text cost 0.1-0.2 s of each cold
compile. This printer writes the same generic syntax into a list of strings, prints
each distinct attribute once (through xDSL's printer) and reuses the text.

>>> generic_text(module)[:21]              # doctest: +SKIP
'"builtin.module"() ({'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from io import StringIO
from typing import Any

from xdsl.dialects.builtin import FunctionType, UnitAttr, UnregisteredOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.printer import Printer

_INDENT = "  "


class _AttributeTexts:
    """Printed form of attributes, each distinct attribute printed once."""

    def __init__(self) -> None:
        self._sink = StringIO()
        self._printer = Printer(stream=self._sink, print_generic_format=True)
        self._by_id: dict[int, tuple[Attribute, str]] = {}
        self._by_value: dict[Attribute, str] = {}
        self._keys: dict[str, str] = {}

    def _render(self, print_fn: Callable[[Any], None], value: Any) -> str:
        self._sink.seek(0)
        self._sink.truncate()
        print_fn(value)
        return self._sink.getvalue()

    def text(self, attribute: Attribute) -> str:
        """``attribute`` as xDSL prints it (kept by object, and by value when hashable)."""
        known = self._by_id.get(id(attribute))
        if known is not None:
            return known[1]
        try:
            text = self._by_value.get(attribute)
            hashable = True
        except TypeError:  # e.g. a dictionary attribute
            text, hashable = None, False
        if text is None:
            text = self._render(self._printer.print_attribute, attribute)
            if hashable:
                self._by_value[attribute] = text
        self._by_id[id(attribute)] = (attribute, text)
        return text

    def key(self, name: str) -> str:
        """An attribute name: bare when it is an identifier, else a string literal."""
        text = self._keys.get(name)
        if text is None:
            text = self._render(self._printer.print_identifier_or_string_literal, name)
            self._keys[name] = text
        return text


class GenericPrinter:
    """Prints one operation (usually a module) in generic form; see :func:`generic_text`."""

    def __init__(self) -> None:
        self._out: list[str] = []
        self._values: dict[SSAValue, str] = {}
        self._blocks: dict[Block, str] = {}
        self._attributes = _AttributeTexts()

    def text(self) -> str:
        return "".join(self._out)

    def _value(self, value: SSAValue) -> str:
        name = self._values.get(value)
        if name is None:
            name = self._values[value] = f"%{len(self._values)}"
        return name

    def _block(self, block: Block) -> str:
        name = self._blocks.get(block)
        if name is None:
            name = self._blocks[block] = f"^bb{len(self._blocks)}"
        return name

    def _attr_dict(self, attributes: dict[str, Attribute]) -> str:
        entries = []
        for name, attribute in attributes.items():
            key = self._attributes.key(name)
            entries.append(key if isinstance(attribute, UnitAttr)
                           else f"{key} = {self._attributes.text(attribute)}")
        return "{" + ", ".join(entries) + "}"

    def _types(self, types: Iterable[Attribute]) -> str:
        return ", ".join(self._attributes.text(t) for t in types)

    def _function_type(self, op: Operation) -> str:
        inputs = f"({self._types(op.operand_types)}) -> "
        outputs = list(op.result_types)
        if len(outputs) == 1 and not isinstance(outputs[0], FunctionType):
            return inputs + self._attributes.text(outputs[0])
        return inputs + f"({self._types(outputs)})"

    def print_op(self, op: Operation, indent: str = "") -> None:
        write = self._out.append
        write(indent)
        if op.results:
            write(", ".join(self._value(r) for r in op.results) + " = ")
        attributes = dict(op.attributes)
        if isinstance(op, UnregisteredOp):
            name = attributes.pop("op_name__").data  # type: ignore[attr-defined]
        else:
            name = op.name
        write(f'"{name}"(' + ", ".join(self._value(o) for o in op.operands) + ")")
        if op.successors:
            write(" [" + ", ".join(self._block(b) for b in op.successors) + "]")
        if op.properties:
            write(" <" + self._attr_dict(op.properties) + ">")
        if op.regions:
            write(" (")
            for index, region in enumerate(op.regions):
                if index:
                    write(", ")
                self._region(region, indent)
            write(")")
        if attributes:
            write(" " + self._attr_dict(attributes))
        write(" : " + self._function_type(op))

    def _region(self, region: Region, indent: str) -> None:
        write = self._out.append
        for block in region.blocks:
            self._block(block)  # names in region order, before successors use them
        write("{")
        entry = region.blocks.first
        if entry is not None:
            inner = indent + _INDENT
            for block in region.blocks:
                if block is not entry or block.args or not block.ops:
                    self._block_label(block, indent)
                for op in block.ops:
                    write("\n")
                    self.print_op(op, inner)
        write("\n" + indent + "}")

    def _block_label(self, block: Block, indent: str) -> None:
        args = ", ".join(f"{self._value(a)}: {self._attributes.text(a.type)}"
                         for a in block.args)
        self._out.append(f"\n{indent}{self._block(block)}" + (f"({args})" if args else "") + ":")


def generic_text(op: Operation) -> str:
    """``op`` in MLIR's generic form, as ``Printer(print_generic_format=True)`` prints it
    up to value and block names (a trailing newline included)."""
    printer = GenericPrinter()
    printer.print_op(op)
    return printer.text() + "\n"
