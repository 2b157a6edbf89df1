"""Upstream MLIR calls that release the GIL: parse, pass manager, transform interpreter.

The Python bindings hold the GIL for the whole of ``Module.parse``, ``PassManager.run``
and ``apply_named_sequence``, so two threads compiling in two contexts ran one after the
other. These helpers make the same calls through the C API with ``ctypes`` (which releases
the GIL around a foreign call): the parts of a split module (:mod:`.split`) then run their
pipelines on two cores at once. A failure is an :class:`RlxError` holding the diagnostics
upstream reported while the call ran::

    module = parse_module(text)                 # in the current ir.Context
    run_pass_manager(PassManager.parse("builtin.module(canonicalize)"), module.operation)
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rlx_mlir.diagnostics import RlxError

_void_p = ctypes.c_void_p


class _StringRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("length", ctypes.c_size_t)]


_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int8, _void_p, _void_p)  # (MlirDiagnostic, userData)
_PRINT = ctypes.CFUNCTYPE(None, _StringRef, _void_p)  # (MlirStringRef, userData)


@functools.cache
def _lib() -> ctypes.CDLL:
    """``libMLIRPythonCAPI.so`` (the library the bindings use) with the signatures used here."""
    from rlx_mlir.runtime.native import _mlir_capi

    lib = _mlir_capi()
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "mlirModuleCreateParse": (_void_p, [_void_p, _StringRef]),
        "mlirPassManagerRunOnOp": (ctypes.c_int8, [_void_p, _void_p]),
        "mlirTransformOptionsCreate": (_void_p, []),
        "mlirTransformOptionsEnableExpensiveChecks": (None, [_void_p, ctypes.c_bool]),
        "mlirTransformOptionsDestroy": (None, [_void_p]),
        "mlirTransformApplyNamedSequence": (ctypes.c_int8, [_void_p, _void_p, _void_p, _void_p]),
        "mlirContextAttachDiagnosticHandler": (ctypes.c_uint64,
                                               [_void_p, _HANDLER, _void_p, _void_p]),
        "mlirContextDetachDiagnosticHandler": (None, [_void_p, ctypes.c_uint64]),
        "mlirDiagnosticPrint": (None, [_void_p, _PRINT, _void_p]),
        "mlirDiagnosticGetLocation": (_void_p, [_void_p]),
        "mlirLocationPrint": (None, [_void_p, _PRINT, _void_p]),
        "mlirDialectRegistryCreate": (_void_p, []),
        "mlirRegisterAllDialects": (None, [_void_p]),
        "mlirContextCreateWithThreading": (_void_p, [ctypes.c_bool]),
        "mlirContextAppendDialectRegistry": (None, [_void_p, _void_p]),
        "mlirRegisterAllLLVMTranslations": (None, [_void_p]),
        "mlirContextDestroy": (None, [_void_p]),
        "mlirModuleGetOperation": (_void_p, [_void_p]),
        "mlirModuleDestroy": (None, [_void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
    ctypes.pythonapi.PyCapsule_New.argtypes = [_void_p, ctypes.c_char_p, _void_p]
    return lib


def capsule_pointer(handle: Any, kind: str) -> int:
    """The C pointer inside a bindings object (``ir.Context``, ``ir.Operation``, ...),
    ``kind`` its capsule's name (``"mlir.ir.Context._CAPIPtr"``)."""
    ctypes.pythonapi.PyCapsule_GetPointer.restype = _void_p
    ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return ctypes.pythonapi.PyCapsule_GetPointer(handle._CAPIPtr, kind.encode())


def _context_pointer(context: Any) -> int:
    return capsule_pointer(context, "mlir.ir.Context._CAPIPtr")


def _operation_pointer(op: Any) -> int:
    return capsule_pointer(op, "mlir.ir.Operation._CAPIPtr")


@contextmanager
def _diagnostics(context: Any) -> Iterator[list[str]]:
    """The messages upstream reports in ``context`` (an ``ir.Context`` or a C pointer)
    meanwhile (collected, not printed)."""
    messages: list[str] = []
    chunks: list[str] = []

    def take_chunk(text: _StringRef, _user: int | None) -> None:
        chunks.append(ctypes.string_at(text.data, text.length).decode(errors="replace"))

    printer = _PRINT(take_chunk)

    def handle(diagnostic: int, _user: int | None) -> int:
        lib = _lib()
        chunks.clear()
        lib.mlirLocationPrint(lib.mlirDiagnosticGetLocation(diagnostic), printer, None)
        chunks.append(": ")
        lib.mlirDiagnosticPrint(diagnostic, printer, None)
        messages.append("".join(chunks))
        return 1  # handled: nothing reaches stderr

    handler = _HANDLER(handle)
    lib = _lib()
    pointer = context if isinstance(context, int) else _context_pointer(context)
    handler_id = lib.mlirContextAttachDiagnosticHandler(pointer, handler, None, None)
    try:
        yield messages
    finally:
        lib.mlirContextDetachDiagnosticHandler(pointer, handler_id)


def _failure(what: str, messages: list[str]) -> RlxError:
    detail = "\n".join(messages) or "no diagnostic"
    return RlxError(f"{what} failed: {detail}")


def parse_module(text: str) -> Any:
    """``ir.Module.parse(text)`` in the current context, without the GIL.

    >>> module = parse_module("module {}")   # doctest: +SKIP
    """
    from mlir import ir

    context = ir.Context.current
    data = text.encode()
    with _diagnostics(context) as messages:
        module = _lib().mlirModuleCreateParse(_context_pointer(context), _StringRef(data, len(data)))
    if not module:
        raise _failure("parsing the module", messages)
    capsule = ctypes.pythonapi.PyCapsule_New(module, b"mlir.ir.Module._CAPIPtr", None)
    return ir.Module._CAPICreate(capsule)


_REGISTRY_LOCK = threading.Lock()


@functools.cache
def _all_dialects() -> int:
    """A dialect registry holding every upstream dialect (made once, only read after)."""
    registry = _lib().mlirDialectRegistryCreate()
    _lib().mlirRegisterAllDialects(registry)
    return registry


@contextmanager
def bare_context() -> Iterator[int]:
    """A single-threaded MLIR context as a C pointer, made and destroyed without the GIL:
    every dialect registered but loaded only when first used, LLVM IR translations
    registered. (The bindings' ``ir.Context()`` loads every dialect while holding the GIL:
    4 ms, against 0.1 ms.)

    >>> with bare_context() as context:   # doctest: +SKIP
    ...     module = parse_in(context, text)
    """
    lib = _lib()
    with _REGISTRY_LOCK:
        registry = _all_dialects()
    context = lib.mlirContextCreateWithThreading(False)
    try:
        lib.mlirContextAppendDialectRegistry(context, registry)
        lib.mlirRegisterAllLLVMTranslations(context)
        yield context
    finally:
        lib.mlirContextDestroy(context)


@contextmanager
def parsed_in(context: int, text: str) -> Iterator[int]:
    """The operation of ``text`` parsed as a module in a :func:`bare_context` (a C
    pointer, valid in the block); an :class:`RlxError` with upstream's diagnostics if it
    does not parse."""
    lib, data = _lib(), text.encode()
    with _diagnostics(context) as messages:
        module = lib.mlirModuleCreateParse(context, _StringRef(data, len(data)))
    if not module:
        raise _failure("parsing the module", messages)
    try:
        yield lib.mlirModuleGetOperation(module)
    finally:
        lib.mlirModuleDestroy(module)


def run_pass_manager(pm: Any, op: Any) -> None:
    """``pm.run(op)`` without the GIL; an :class:`RlxError` with the diagnostics on failure.

    >>> run_pass_manager(PassManager.parse("builtin.module(cse)"), module.operation)  # doctest: +SKIP
    """
    pm_pointer = capsule_pointer(pm, "mlir.passmanager.PassManager._CAPIPtr")
    _checked(op, "the pass pipeline",
             lambda: _lib().mlirPassManagerRunOnOp(pm_pointer, _operation_pointer(op)))


def apply_named_sequence(payload: Any, entry: Any, transform_module: Any,
                         expensive_checks: bool = False) -> None:
    """The transform interpreter (``interpreter.apply_named_sequence``) without the GIL.

    >>> apply_named_sequence(module.operation, entry, script)   # doctest: +SKIP
    """
    lib = _lib()
    options = lib.mlirTransformOptionsCreate()
    lib.mlirTransformOptionsEnableExpensiveChecks(options, expensive_checks)
    try:
        _checked(payload, "the transform script", lambda: lib.mlirTransformApplyNamedSequence(
            _operation_pointer(payload), _operation_pointer(entry),
            _operation_pointer(transform_module.operation), options))
    finally:
        lib.mlirTransformOptionsDestroy(options)


def _checked(op: Any, what: str, call: Callable[[], int]) -> None:
    with _diagnostics(op.context) as messages:
        succeeded = call()
    if not succeeded:
        raise _failure(what, messages)
