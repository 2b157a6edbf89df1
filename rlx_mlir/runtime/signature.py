"""Function signatures: argument names, kinds, and numpy argument checking.

Shared by the interpreter and the JIT so both accept the same calls::

    sig = Signature.of(func_op)
    arrays = sig.bind(x, w1=w1)     # ArgumentError naming the argument on mismatch
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, StringAttr, TensorType

from rlx_mlir.diagnostics import ArgumentError
from rlx_mlir.dialects.base import dtype_of, numpy_dtype, shape_of


@dataclass(frozen=True)
class Arg:
    """One function argument: its name, shape, dtype and whether it is a param."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    dtype_name: str
    is_param: bool


def arg_attr_dicts(f: func.FuncOp) -> list[dict[str, Any]]:
    if f.arg_attrs is None:
        return [{} for _ in f.function_type.inputs.data]
    return [
        dict(d.data) if isinstance(d, DictionaryAttr) else {} for d in f.arg_attrs.data
    ]


def arg_names(f: func.FuncOp) -> list[str]:
    """``rlx.name`` of each argument, else the SSA name hint, else ``arg<i>``."""
    names = []
    for i, attrs in enumerate(arg_attr_dicts(f)):
        name = attrs.get("rlx.name")
        if isinstance(name, StringAttr):
            names.append(name.data)
        elif f.body.blocks and f.body.block.args[i].name_hint:
            names.append(f.body.block.args[i].name_hint)
        else:
            names.append(f"arg{i}")
    return names


def argument_named(f: func.FuncOp, name: str, purpose: str) -> int | None:
    """The index of ``f``'s argument called ``name`` (None when there is none); two
    arguments of that name are an :class:`RlxError` (which one was meant is unknown).

    >>> argument_named(f, "x", "differentiate")  # doctest: +SKIP
    0
    """
    from rlx_mlir.diagnostics import RlxError

    names = arg_names(f)
    if names.count(name) > 1:
        raise RlxError(f"@{f.sym_name.data} has {names.count(name)} arguments named '{name}': "
                       f"rename one to {purpose} it by name", op=f)
    return names.index(name) if name in names else None


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_<n>`` with the first ``n`` not in ``taken`` (argument names of a
    derived function stay unique: the gradient of a gradient, a jvp of a jvp).

    >>> fresh_name("d_output", {"x", "d_output"})
    'd_output_1'
    """
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


@dataclass(frozen=True)
class Signature:
    name: str
    args: tuple[Arg, ...]
    results: tuple[TensorType, ...]

    @classmethod
    def of(cls, f: func.FuncOp) -> Signature:
        attrs = arg_attr_dicts(f)
        args = tuple(
            Arg(n, shape_of(t), numpy_dtype(t), dtype_of(t), "rlx.param" in a)
            for n, t, a in zip(arg_names(f), f.function_type.inputs.data, attrs, strict=True)
        )
        return cls(f.sym_name.data, args, tuple(f.function_type.outputs.data))

    def bind(self, positional: Sequence[Any], named: Mapping[str, Any]) -> list[np.ndarray]:
        """Match positional and named numpy arguments; :class:`ArgumentError` (an
        ``RlxError`` and a ``ValueError``) on any mismatch."""
        values = self.arrange(positional, named)
        return [self._check(a, v) for a, v in zip(self.args, values, strict=True)]

    def arrange(self, positional: Sequence[Any], named: Mapping[str, Any]) -> tuple[Any, ...]:
        """The arguments in order, unchecked (:class:`ArgumentError` if one is missing,
        unknown, given twice or too many)."""
        if len(positional) > len(self.args):
            raise ArgumentError(
                f"@{self.name} takes {len(self.args)} arguments, got {len(positional)}"
            )
        values: dict[int, Any] = dict(enumerate(positional))
        for key, value in named.items():
            index = self._index(key)
            if index in values:
                raise ArgumentError(f"argument '{key}' of @{self.name} given twice")
            values[index] = value
        if len(values) < len(self.args):
            missing = [a.name for i, a in enumerate(self.args) if i not in values]
            raise ArgumentError(f"@{self.name}: missing argument(s) {', '.join(missing)}")
        return tuple([values[i] for i in range(len(self.args))])

    @functools.cached_property
    def _positions(self) -> dict[str, list[int]]:
        positions: dict[str, list[int]] = {}
        for i, a in enumerate(self.args):
            positions.setdefault(a.name, []).append(i)
        return positions

    def _index(self, name: str) -> int:
        """The position of the argument called ``name`` (ArgumentError if none or
        ambiguous)."""
        hits = self._positions.get(name, [])
        if not hits:
            known = ", ".join(a.name for a in self.args)
            raise ArgumentError(f"@{self.name} has no argument '{name}' (arguments: {known})")
        if len(hits) > 1:
            raise ArgumentError(f"@{self.name} has {len(hits)} arguments named '{name}': "
                             "pass them by position")
        return hits[0]

    def _check(self, arg: Arg, value: Any) -> np.ndarray:
        array = np.asarray(value)
        if array.dtype != arg.dtype and array.dtype.newbyteorder("=") == arg.dtype:
            array = array.astype(arg.dtype)  # big-endian data: the same values, native order
        if array.dtype.kind == "V" and array.dtype.itemsize == arg.dtype.itemsize == 2 and \
                arg.dtype_name == "bf16" and array.dtype.names is None:
            array = array.view(arg.dtype)  # np.save of bf16 loads back as raw 2-byte void
        if array.dtype != arg.dtype:
            if np.isscalar(value) or isinstance(value, (list, tuple)):
                array = self._converted(arg, array)
            else:
                raise ArgumentError(
                    f"argument '{arg.name}' of @{self.name}: expected dtype {arg.dtype} "
                    f"({arg.dtype_name}), got {array.dtype}"
                )
        if array.shape != arg.shape:
            raise ArgumentError(
                f"argument '{arg.name}' of @{self.name}: expected shape {arg.shape}, "
                f"got {array.shape}"
            )
        return np.asarray(array, order="C")  # ascontiguousarray would make 0-d arrays 1-d

    def _converted(self, arg: Arg, array: np.ndarray) -> np.ndarray:
        """A Python scalar or list as ``arg``'s dtype; values it cannot hold (an integer
        out of range, a fraction for an integer argument) are an error, not wrapped."""
        if array.dtype.kind not in "iufb":  # strings, objects, complex: no conversion
            raise ArgumentError(
                f"argument '{arg.name}' of @{self.name}: expected dtype {arg.dtype} "
                f"({arg.dtype_name}), got {array.dtype} ({array.tolist()!r})")
        converted = array.astype(arg.dtype)
        if arg.dtype.kind in "iub" and array.dtype.kind in "iufb" and \
                np.any(converted.astype(array.dtype) != array):
            raise ArgumentError(
                f"argument '{arg.name}' of @{self.name}: {array.tolist()!r} does not fit "
                f"dtype {arg.dtype} ({arg.dtype_name})")
        return converted


def signature_to_json(sig: Signature) -> dict[str, Any]:
    """A JSON-able form of ``sig`` (the JIT's disk cache stores it next to the code)."""
    return {
        "name": sig.name,
        "args": [[a.name, list(a.shape), a.dtype_name, a.is_param] for a in sig.args],
        "results": [[list(shape_of(t)), dtype_of(t)] for t in sig.results],
    }


def signature_from_json(data: Mapping[str, Any]) -> Signature:
    """Inverse of :func:`signature_to_json`."""
    from rlx_mlir.dialects.base import NUMPY_DTYPES, tensor

    args = tuple(
        Arg(name, tuple(shape), NUMPY_DTYPES[dtype], dtype, bool(is_param))
        for name, shape, dtype, is_param in data["args"]
    )
    results = tuple(tensor(shape, dtype) for shape, dtype in data["results"])
    return Signature(data["name"], args, results)
