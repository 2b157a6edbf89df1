// A function without its closing brace names the missing '}'.
// RUN: not rlx-opt %s 2>&1 | FileCheck %s
// CHECK: error: unexpected end of input: a '}' is missing (in block definition)
func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  func.return %x : tensor<4x3xf32>
