// Parse errors are specific and located where the problem is.
// RUN: not rlx-opt %s 2>&1 | FileCheck %s

// An undefined value is reported at its use, not at the end of the input.
func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // CHECK: parse-errors.mlir:[[@LINE+1]]:17: error: values used but not defined: [%y]
  %0 = rlx.relu %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
