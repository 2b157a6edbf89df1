// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s

// GRADS: check-grads @mul_add: OK
// GRADS: d/dw: max relative error
// GRADS: d/db: max relative error

// The gradient function keeps @mul_add, appends %d_output and returns (loss, dw, db).
// CHECK-LABEL: func.func @mul_add(
// CHECK-LABEL: func.func @mul_add_grad(
// CHECK-SAME: %d_output: tensor<4x3xf32> {rlx.name = "d_output"}
// CHECK-SAME: -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK-SAME: rlx.grad_of = "mul_add"
// CHECK: %[[T:.*]] = rlx.tanh %x
// CHECK: %[[XW:.*]] = rlx.mul %[[T]], %w
// CHECK: %[[Y:.*]] = rlx.add %[[XW]], %b
// d(add)/db is summed over the broadcast axis 0 back to [3].
// CHECK: %[[DB:.*]] = rlx.reduce_sum %d_output {axes = array<i64: 0>, keep_dims = true} : (tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK: %[[DB2:.*]] = rlx.reshape %[[DB]] : (tensor<1x3xf32>) -> tensor<3xf32>
// d(mul)/dw = sum_rows(g * tanh(x))
// CHECK: %[[GW:.*]] = rlx.mul %d_output, %[[T]]
// CHECK: %[[DW:.*]] = rlx.reduce_sum %[[GW]] {axes = array<i64: 0>, keep_dims = true}
// CHECK: %[[DW2:.*]] = rlx.reshape %[[DW]]
// CHECK: func.return %[[Y]], %[[DW2]], %[[DB2]] : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
func.func @mul_add(%x: tensor<4x3xf32> {rlx.name = "x"}, %w: tensor<3xf32> {rlx.name = "w", rlx.param},
                   %b: tensor<3xf32> {rlx.name = "b", rlx.param}) -> tensor<4x3xf32> {
  %t = rlx.tanh %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %xw = rlx.mul %t, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %y = rlx.add %xw, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}
