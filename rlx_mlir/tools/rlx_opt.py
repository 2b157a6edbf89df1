"""``rlx-opt``: the rlx optimizer driver, with mlir-opt conventions.

    rlx-opt model.mlir --autodiff --canonicalize -o out.mlir
    rlx-opt bad.mlir --split-input-file --verify-diagnostics
    rlx-opt model.mlir -p 'autodiff{wrt=w1},cse' --print-op-generic

Pass flags (``--<pass>[=options]`` or ``-p PIPELINE``) run in the order given.
Every failure is printed as ``file:line:col: error: ...`` with exit status 1.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.metadata
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from io import StringIO
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ArgSpecParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from rlx_mlir.diagnostics import RlxError, SourceLoc
from rlx_mlir.ir import (
    VerifyErrors,
    check_signature_types,
    make_context,
    parse,
    to_text,
    verify,
)
from rlx_mlir.tools import diagnostics_check
from rlx_mlir.tools.rlx_opt_hooks import HOOKS_WITH_OPTIONS, STAGE_HOOKS, TEXT_STAGES, stage_help
from rlx_mlir.transforms import all_passes

# xDSL driver options that rlx-opt does not honour: rejected rather than ignored.
UNSUPPORTED = ("--print-debuginfo", "--allow-unregistered-dialect", "--disable-verify", "-t",
               "--target", "--time-passes", "--parsing-diagnostics", "--no-implicit-module",
               "--shrink")

VERIFY_DIAGNOSTICS_HELP = ("check the errors (and their notes) against the file's "
                           "'// expected-error @below {{...}}' (expected-note, "
                           "expected-warning) comments; exit 0 when they all match")


# rlx-opt's own long options: mlir-opt also accepts them with one dash (-cse, -o=f).
LONG_OPTIONS = ("--output-file", "--passes", "--print-between-passes", "--verify-diagnostics",
                "--split-input-file", "--print-op-generic", "--print-no-properties",
                "--syntax-highlight", "--version", "--help", "--frontend", "--pass-pipeline",
                "--mlir-print-op-generic", *UNSUPPORTED)

# mlir-opt spellings of rlx-opt options.
ALIASES = {"--mlir-print-op-generic": "--print-op-generic"}


def mlir_opt_spellings(argv: Sequence[str], stage_names: Sequence[str]) -> list[str]:
    """mlir-opt's spellings as rlx-opt's: a long option or pass with one dash
    (``-split-input-file``, ``-cse``, ``-o=out.mlir``), ``--mlir-print-op-generic``, and
    ``--pass-pipeline='builtin.module(a,b{x=1})'`` (as ``-p 'a,b{x=1}'``).

    >>> mlir_opt_spellings(["-cse", "-o=x", "-verify-diagnostics", "-", "-pcse"], ["cse"])
    ['--cse', '-o', 'x', '--verify-diagnostics', '-', '-pcse']
    >>> mlir_opt_spellings(["--pass-pipeline=builtin.module(cse,dce)"], ["cse", "dce"])
    ['-p', 'cse,dce']
    """
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":  # the rest are file names
            out.extend(args[i:])
            break
        name, eq, value = arg.partition("=")
        if len(name) > 2 and name[0] == "-" and name[1] != "-" and \
                ("-" + name in LONG_OPTIONS or name[1:] in stage_names):
            name = "-" + name
        elif name in ("-o", "-p") and eq:  # -o=out.mlir
            out += [name, value]
            i += 1
            continue
        name = ALIASES.get(name, name)
        if name == "--pass-pipeline":
            if not eq:
                if i + 1 >= len(args):
                    raise RlxError("--pass-pipeline expects a pipeline, such as "
                                   "'builtin.module(autodiff,cse)'")
                i += 1
                value = args[i]
            out += ["-p", _unanchored(value)]
        else:
            out.append(name + eq + value)
        i += 1
    return out


def _unanchored(spec: str) -> str:
    """``builtin.module(a,b)`` -> ``a,b``: rlx passes run on the module; a pipeline
    nested on another op (``func.func(cse)``) is an error."""
    text = spec.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module("):-1]
    if "(" in text:
        raise RlxError(f"invalid pass pipeline '{spec}': rlx-opt runs passes on the "
                       "module only (builtin.module(a,b)); nested pipelines are not supported")
    return text


def check_options(args: Sequence[str], stage_names: Sequence[str]) -> None:
    """An option rlx-opt ignores is an error, and a mistyped pass names the nearest one.

    >>> check_options(["--autodif"], ["autodiff"])
    Traceback (most recent call last):
    rlx_mlir.diagnostics.RlxError: error: unknown pass or option '--autodif' (did you mean --autodiff?)
    """
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in UNSUPPORTED:
            raise RlxError(f"option '{flag}' is not supported by rlx-opt")
        # -autodif as mlir-opt spells it (not -pcse, -ofile: -p cse, -o file)
        single = flag[:1] == "-" and flag[1:2] not in ("-", *"opfvht") and len(flag) > 4
        if (flag.startswith("--") and flag != "--") or single:
            hint = _pass_hint(flag.lstrip("-"), stage_names)
            if hint:
                raise RlxError(f"unknown pass or option '{flag}'{hint}")


def _pass_hint(name: str, stage_names: Sequence[str]) -> str:
    """`` (did you mean --autodiff?)`` for a name close to a stage, else empty."""
    close = difflib.get_close_matches(name, stage_names, n=1, cutoff=0.75)
    return f" (did you mean --{close[0]}?)" if close and close[0] != name else ""


def split_pass_flags(argv: Sequence[str], pass_names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Pull ``--<pass>[=opts]`` and ``-p PIPE`` out of argv, keeping their order.

    >>> split_pass_flags(["f.mlir", "--cse", "-p", "dce", "-o", "x"], ["cse", "dce"])
    (['cse', 'dce'], ['f.mlir', '-o', 'x'])
    """
    stages: list[str] = []
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-p", "--passes") and i + 1 < len(args):
            stages.extend(s for s in _split_pipeline(args[i + 1]) if s)
            i += 2
            continue
        if arg.startswith("--passes=") or arg.startswith("-p="):
            stages.extend(s for s in _split_pipeline(arg.split("=", 1)[1]) if s)
        elif arg.startswith("--") and _flag_name(arg) in pass_names:
            name, _, opts = arg[2:].partition("=")
            stages.append(f"{name}{{{opts}}}" if opts else name)
        else:
            rest.append(arg)
        i += 1
    return stages, rest


def _flag_name(arg: str) -> str:
    return arg[2:].split("=", 1)[0]


def _split_pipeline(spec: str) -> list[str]:
    """Split ``a{x=1,y=2},b`` at top-level commas."""
    parts, depth, current = [], 0, ""
    for ch in spec:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return parts


def stage_name(stage: str) -> str:
    """``autodiff{wrt=w}`` -> ``autodiff``."""
    return stage.split("{", 1)[0]


def check_stage_order(stages: Sequence[str]) -> None:
    """A stage that prints text instead of a module (``TEXT_STAGES``) must be the last."""
    for stage, later in zip(stages, stages[1:], strict=False):
        if stage_name(stage) in TEXT_STAGES:
            raise after_text_stage_error(stage_name(stage), stage_name(later))


def after_text_stage_error(text_stage: str, later: str) -> RlxError:
    reason = TEXT_STAGES.get(text_stage, f"--{text_stage} prints text, not a module; make it "
                                          "the last stage")
    return RlxError(f"--{later} after --{text_stage}: {reason}")


def parse_pass_spec(passes: Mapping[str, Callable[[], type[ModulePass]]],
                    stage: str) -> PassPipeline:
    """The xDSL pipeline of one stage; bad options are an RlxError, never a traceback."""
    name = stage_name(stage)
    if name not in passes:
        hint = _pass_hint(name, [*passes, *STAGE_HOOKS])
        raise RlxError(f"invalid pass specification '{stage}': Unrecognized passes: "
                       f"['{name}']{hint}")
    _refuse_repeated_options(stage)
    try:
        return PassPipeline.parse_spec(passes, stage)
    except (Exception, ArgSpecParseError) as e:  # ArgSpecParseError is a BaseException
        raise RlxError(f"invalid pass specification '{stage}': {_spec_reason(e)}") from None


def _refuse_repeated_options(stage: str) -> None:
    """An option given twice (``autodiff{wrt=x wrt=w}``) is an error, not last-wins."""
    body = stage[stage.find("{") + 1: stage.rfind("}")] if "{" in stage else ""
    body = re.sub(r'"[^"]*"', '""', body)  # quoted values may hold anything
    names = re.findall(r"(?:^|\s)([\w-]+)\s*=", body)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise RlxError(f"invalid pass specification '{stage}': option "
                       f"{', '.join(repr(n) for n in twice)} given more than once")


def _spec_reason(error: BaseException) -> str:
    """xDSL's message without its header: the reason, then the spec with a caret."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    if not isinstance(error, ArgSpecParseError) or len(lines) < 5:
        # option names as the command line spells them: zero-missing-wrt, not zero_missing_wrt
        return re.sub(r'"(\w+)"', lambda m: '"' + m.group(1).replace("_", "-") + '"',
                      " ".join(line.strip() for line in lines))
    # header, "pass-pipeline:L:C", spec, caret, reason...
    reason = " ".join(line.strip() for line in lines[4:])
    return f"{reason}\n  {lines[2]}\n  {lines[3].rstrip()}"


def _rlx_version() -> str:
    try:
        return importlib.metadata.version("rlx-mlir")
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


class RlxOptMain(xDSLOptMain):
    """xDSL's opt driver with rlx's dialects, passes, ordering and diagnostics."""

    version_format = "rlx-opt (rlx-mlir " + _rlx_version() + ") built on xdsl {xdsl_version}"

    def __init__(self, args: Sequence[str] | None = None):
        self.passes = all_passes()  # also imports the modules that add STAGE_HOOKS
        names = [*self.passes, *STAGE_HOOKS]
        argv = mlir_opt_spellings(sys.argv[1:] if args is None else args, names)
        self.stages, rest = split_pass_flags(argv, names)
        check_options(rest, names)
        super().__init__(description="rlx optimizer driver", args=rest)
        self.ctx = make_context()

    def register_all_dialects(self):
        self.ctx = make_context()

    def register_all_passes(self):
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.description = __doc__
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.epilog = ("stages (run in the order given; also -p 'a{opt=v},b'):\n"
                             + stage_help([*self.passes, *STAGE_HOOKS]))
        for action in arg_parser._actions:
            if set(action.option_strings) & set(UNSUPPORTED):
                action.help = argparse.SUPPRESS
            if "--verify-diagnostics" in action.option_strings:
                action.help = VERIFY_DIAGNOSTICS_HELP
            if "--passes" in action.option_strings:  # the stages below take -p too
                names = ",".join([*self.passes, *STAGE_HOOKS])
                action.help = f"Comma-separated pipeline (a{{opt=v}},b) of: {names}"

    def setup_pipeline(self):
        self.pipeline = PassPipeline(())

    # -- the run loop ----------------------------------------------------------
    def run(self) -> int:  # type: ignore[override]
        """Process each chunk (the whole input without ``--split-input-file``); a failing
        chunk is reported and the others still processed, like mlir-opt; exit 1 if any
        failed (or, with ``--verify-diagnostics``, if a diagnostic did not match)."""
        self.pipelines = self.parse_stages()  # bad options or order: fail before any work
        filename = input_name(self.args.input_file)
        text = read_source(self.args.input_file)
        chunks = _chunks(text) if self.args.split_input_file else [(text, 0)]
        outputs: list[str] = []
        problems: list[str] = []
        for chunk, offset in chunks:
            errors = self.process_into(outputs, chunk, filename, offset)
            if self.args.verify_diagnostics:
                expected = diagnostics_check.expectations(chunk, offset)
                problems += diagnostics_check.check(expected, errors, filename)
            else:
                problems += [str(error) for error in errors]
        if problems:
            print("\n".join(problems), file=sys.stderr)
        if outputs and not (problems and not self.args.split_input_file):
            self._write("// -----\n".join(outputs))
        return 1 if problems else 0

    def process_into(self, outputs: list[str], chunk: str, filename: str,
                     offset: int) -> list[RlxError]:
        """Process one chunk, appending its output; the errors it raised (each op
        verification failure under ``--verify-diagnostics``)."""
        try:
            outputs.append(self.process(chunk, filename, offset))
        except VerifyErrors as errors:
            return errors.errors
        except RlxError as error:
            return [error]
        return []

    def parse_stages(self) -> list[PassPipeline | None]:
        """Each stage's xDSL pipeline (None for a ``STAGE_HOOKS`` stage), checked."""
        check_stage_order(self.stages)
        return [None if stage_name(s) in STAGE_HOOKS else parse_pass_spec(self.passes, s)
                for s in self.stages]

    def process(self, chunk: str, filename: str, offset: int) -> str:
        """Parse, verify, run the stages and print one chunk."""
        module = parse_source(chunk, filename, offset, all_errors=self.args.verify_diagnostics)
        stages = list(zip(self.stages, self.pipelines, strict=True))
        for index, (stage, pipeline) in enumerate(stages):
            result = self.run_stage(stage, pipeline, module)
            if isinstance(result, str):
                if index + 1 < len(stages):
                    raise after_text_stage_error(stage_name(stage),
                                                 stage_name(stages[index + 1][0]))
                return result
        return module_text(module, self.args)

    def run_stage(self, stage: str, pipeline: PassPipeline | None,
                  module: ModuleOp) -> str | None:
        """Run one pass (or text-producing stage such as lower-to-llvm)."""
        name = stage_name(stage)
        if pipeline is None:
            if stage.strip() != name and name not in HOOKS_WITH_OPTIONS:
                raise RlxError(f"--{name} takes no options, got '{stage.strip()}'")
            return STAGE_HOOKS[name](stage, module, self.args)
        try:
            pipeline.apply(self.ctx, module)
        except VerifyException as e:
            check_signature_types(module)  # the usual cause, located at the function
            raise RlxError(f"after pass '{name}': {e}", op=module) from None
        if self.args.print_between_passes:
            print(f"// -----// IR after {name} //----- //\n{module_text(module, self.args)}",
                  file=sys.stderr)
        verify(module)
        return None

    def _write(self, text: str) -> None:
        path = self.args.output_file
        if not path or path == "-":  # -o - is stdout, as in mlir-opt
            sys.stdout.write(text)
            sys.stdout.flush()  # a closed pipe raises here, not at interpreter exit
            return
        try:
            with open(path, "w") as out:
                out.write(text)
        except OSError as e:
            raise RlxError(f"could not write output file '{path}': {e.strerror or e}") from None


def module_text(module: ModuleOp, args: argparse.Namespace) -> str:
    """``module`` printed as the printing options ask: ``--print-op-generic``,
    ``--print-no-properties`` (properties as attributes), ``--syntax-highlight``."""
    if not (args.print_no_properties or args.syntax_highlight):
        return to_text(module, generic=args.print_op_generic)
    from xdsl.syntax_printer import SyntaxPrinter

    out = StringIO()
    printer_class = SyntaxPrinter if args.syntax_highlight else Printer
    printer_class(stream=out, print_generic_format=args.print_op_generic,
                  print_properties_as_attributes=args.print_no_properties).print_op(module)
    return out.getvalue() + "\n"


def parse_source(text: str, filename: str, line_offset: int = 0,
                 all_errors: bool = False) -> ModuleOp:
    """:func:`rlx_mlir.ir.parse`, with an error at the end of the input (``func.func @f(``
    then nothing) reported just after the last token, as MLIR does, rather than on a line
    past the end of the file that no ``expected-error`` can name."""
    try:
        return parse(text, filename, line_offset=line_offset, all_errors=all_errors)
    except RlxError as error:
        end = _end_of_input(error.loc, text, filename, line_offset)
        if end is None:
            raise
        raise RlxError(error.message, loc=end, notes=error.notes) from None


def _end_of_input(loc: SourceLoc | None, text: str, filename: str,
                  line_offset: int) -> SourceLoc | None:
    r"""Just after the last token of ``text`` when ``loc`` is at its end (only blanks and
    comments after it), else None.

    >>> str(_end_of_input(SourceLoc("f", 3, 1), "func.func @f(\n// c\n", "f", 0))
    'f:1:14'
    >>> _end_of_input(SourceLoc("f", 1, 11), "func.func @f(\n", "f", 0) is None
    True
    """
    if loc is None or loc.file != filename:
        return None
    lines = text.split("\n")
    row = loc.line - line_offset - 1
    code = [_without_comment(line).rstrip() for line in lines]
    if row < 0 or (row < len(lines) and code[row][loc.col - 1:].strip()) or \
            any(code[row + 1:]):
        return None
    last = max((i for i in range(min(row, len(lines) - 1) + 1) if code[i]), default=None)
    if last is None or (last == row and loc.col - 1 <= len(code[last])):
        return None
    return SourceLoc(filename, last + 1 + line_offset, len(code[last]) + 1)


def _without_comment(line: str) -> str:
    """``line`` up to a ``//`` comment (not one inside a string literal)."""
    quoted = False
    i = 0
    while i < len(line):
        if line[i] == "\\" and quoted:
            i += 2
            continue
        if line[i] == '"':
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            return line[:i]
        i += 1
    return line


def read_source(path: str | None) -> str:
    """The UTF-8 text of ``path`` (stdin when None), newlines normalised.

    ``-`` also means stdin. A missing, unreadable or non-UTF-8 input is an
    :class:`RlxError`.
    """
    path = None if path == "-" else path
    name = path or "<stdin>"
    try:
        data = sys.stdin.buffer.read() if path is None else Path(path).read_bytes()
    except OSError as e:
        raise RlxError(f"could not open input file '{name}': {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RlxError(f"invalid UTF-8 byte 0x{data[e.start]:02x}: the input must be MLIR "
                       "text", loc=_byte_loc(name, data, e.start)) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def input_name(path: str | None) -> str:
    """The name diagnostics use for an input path (``<stdin>`` for none or ``-``)."""
    return "<stdin>" if path in (None, "-") else path


def _byte_loc(name: str, data: bytes, offset: int) -> SourceLoc:
    line_start = data.rfind(b"\n", 0, offset) + 1
    return SourceLoc(name, data.count(b"\n", 0, offset) + 1, offset - line_start + 1)


def broken_pipe_exit() -> int:
    """stdout's reader went away: exit quietly with 141 (128 + SIGPIPE), like Unix tools."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
    except (OSError, ValueError):
        pass
    return 141


def os_error_message(error: OSError) -> str:
    """``error: <file>: <reason>`` for an I/O failure outside the input and output."""
    if error.filename is not None:
        return f"error: {error.filename}: {error.strerror or error}"
    return f"error: {error.strerror or error}"


def _chunks(text: str) -> list[tuple[str, int]]:
    """Split at ``// -----`` lines, keeping each chunk's line offset."""
    pieces = text.split("// -----")
    out, offset = [], 0
    for piece in pieces:
        out.append((piece, offset))
        offset += piece.count("\n")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: exit status 0 on success, 1 with a diagnostic on any error."""
    try:
        return RlxOptMain(argv).run()
    except RlxError as error:
        print(error, file=sys.stderr)
        return 1
    except SystemExit as e:  # --help, --version (0); a usage error: 1, as mlir-opt
        return 0 if not e.code else 1
    except BrokenPipeError:
        return broken_pipe_exit()
    except OSError as e:  # e.g. --view-graph into a missing folder
        print(os_error_message(e), file=sys.stderr)
        return 1
    except Exception as e:  # never a traceback for the user
        if os.environ.get("RLX_DEBUG"):
            raise
        print(f"error: internal compiler error: {type(e).__name__}: {e} "
              "(set RLX_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
