// RUN: not rlx-opt %s --lower-to-llvm 2>&1 | FileCheck %s
// RUN: not rlx-run %s 2>&1 | FileCheck %s --check-prefix=EXEC

// Native code is built from the top-level functions: a nested module is refused at its
// location instead of passing through unlowered.
// CHECK: nested-module-invalid.mlir:[[# @LINE + 3]]:3: error: nested 'builtin.module' is not supported by the LLVM lowering: put its functions in the top-level module
// EXEC: nested-module-invalid.mlir:[[# @LINE + 1]]:1: error: module has no public function to run
builtin.module {
  builtin.module {
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = rlx.neg %x : (tensor<2xf32>) -> tensor<2xf32>
      func.return %y : tensor<2xf32>
    }
  }
}
