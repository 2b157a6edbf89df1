// An input that ends too early is an error just after its last token, as in MLIR, not
// on a line past the end of the file (which no expected-error could name).
// RUN: not rlx-opt %s 2>&1 | FileCheck %s
// RUN: not rlx-run %s 2>&1 | FileCheck %s
// RUN: rlx-opt %s --verify-diagnostics
// CHECK: eof-location.mlir:[[@LINE+2]]:14: error: Expected argument or type
// expected-error @+1 {{Expected argument or type}}
func.func @h(
// a trailing comment
