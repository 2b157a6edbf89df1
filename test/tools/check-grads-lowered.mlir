// --check-grads runs on rlx ops (the interpreter's, in f64): on IR already lowered to
// linalg it is a located error naming the first foreign op, not a crash.
// RUN: not rlx-opt %s --lower-to-linalg --check-grads 2>&1 | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg -o %t.linalg.mlir
// RUN: not rlx-opt %t.linalg.mlir --check-grads 2>&1 | FileCheck %s --check-prefix=TEXT
// CHECK: error: gradient checks run on rlx ops, before --lower-to-linalg: @f holds 'tensor.empty'
// TEXT: linalg.mlir:{{[0-9]+}}:{{[0-9]+}}: error: gradient checks run on rlx ops, before --lower-to-linalg: @f holds
func.func @f(%x: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
