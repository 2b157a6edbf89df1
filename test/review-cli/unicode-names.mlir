// A non-ASCII function name survives printing and parsing: the printed string attributes
// ("f\C3\A9", MLIR's escapes of the UTF-8 bytes) read back as strings, so the gradient
// still names its function and --check-grads finds it.
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --autodiff | rlx-opt --check-grads | FileCheck %s --check-prefix=CHECKS
// CHECK: func.func @"f\C3\A9_grad"({{.*}} attributes {rlx.grad_of = "f\C3\A9"
// CHECKS: check-grads @fé: OK (checked @fé_grad)
func.func @"fé"(%x: tensor<3xf32>) -> tensor<f32> {
  %y = rlx.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %s = rlx.reduce_sum %y {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
