// --help lists every stage; options rlx-opt would ignore are refused; a mistyped pass
// gets a suggestion (exit 1); an unsupported element type is located at the function.
// RUN: rlx-opt --help | FileCheck %s --check-prefix=HELP
// HELP-NOT: --print-debuginfo
// HELP-DAG: --lower-to-llvm {{ *}}lower to the LLVM dialect
// HELP-DAG: --check-grads {{ *}}check gradient functions
// HELP-DAG: --view-graph {{ *}}draw
// HELP-DAG: --autodiff-report {{ *}}print
// HELP-DAG: --print-after-all-upstream {{ *}}dump
// RUN: not rlx-opt %s --print-debuginfo 2>&1 | FileCheck %s --check-prefix=UNSUP
// RUN: not rlx-opt %s --allow-unregistered-dialect 2>&1 | FileCheck %s --check-prefix=UNSUP2
// UNSUP: error: option '--print-debuginfo' is not supported by rlx-opt
// UNSUP2: error: option '--allow-unregistered-dialect' is not supported by rlx-opt
// RUN: not rlx-opt %s --autodif 2>&1 | FileCheck %s --check-prefix=TYPO
// RUN: not rlx-opt %s -p autodif 2>&1 | FileCheck %s --check-prefix=TYPO
// TYPO: {{unknown pass or option '--autodif'|Unrecognized passes: \['autodif'\]}} (did you mean --autodiff?)
// RUN: not rlx-run %s 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not rlx-opt %s --autodiff 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: options-and-types.mlir:[[@LINE+1]]:1: error: argument #0 of @f has element type f8E4M3FN, which rlx does not support (supported: f32, f64
func.func @f(%x: tensor<2xf8E4M3FN>) -> tensor<2xf8E4M3FN> {
  func.return %x : tensor<2xf8E4M3FN>
}
