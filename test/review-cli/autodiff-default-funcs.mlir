// --autodiff's default functions skip result-less functions and the JVPs (and gradients)
// other passes derived: after --jvp, @f is differentiated, not @f_jvp, and @nothing is left
// alone. (A @f_vmap is differentiated: test/control/captures-customfn.mlir.)
// RUN: rlx-opt %s --jvp --autodiff | FileCheck %s
// RUN: rlx-opt %s --jvp --check-grads | FileCheck %s --check-prefix=CHECKS

// CHECK-LABEL: func.func @f(
// CHECK: func.func @f_grad(%x: tensor<3xf32>, %d_output: tensor<f32>
// CHECK-SAME: rlx.grad_of = "f"
// CHECK-NOT: rlx.grad_of = "f_jvp"
// CHECK-NOT: func.func @nothing_grad
// CHECKS: check-grads @f: OK
// CHECKS-NOT: check-grads @f_jvp
func.func @f(%x: tensor<3xf32>) -> tensor<f32> {
  %y = rlx.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %s = rlx.reduce_sum %y {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}

func.func @nothing(%x: tensor<3xf32>) {
  func.return
}
