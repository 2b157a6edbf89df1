// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS

// Reverse over reverse: a function that calls rlx.attention_backward (the gradient of an
// attention loss, e.g. inside a gradient penalty) is differentiated through the op's
// decomposition into primitive ops, whose VJPs the second reverse walk emits.
func.func @double_backward(%q: tensor<1x3x8xf32> {rlx.name = "q", rlx.param}, %k: tensor<1x5x8xf32> {rlx.name = "k", rlx.param},
                           %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<f32> {
  %dq = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %sq = rlx.mul %dq, %dq : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %penalty = rlx.reduce_sum %sq {axes = array<i64: 0, 1, 2>} : (tensor<1x3x8xf32>) -> tensor<f32>
  func.return %penalty : tensor<f32>
}

// CHECK-LABEL: func.func @double_backward_grad(
// CHECK-SAME:    -> (tensor<f32>, tensor<1x3x8xf32>, tensor<1x5x8xf32>)
// CHECK:         rlx.attention_backward
// CHECK:         rlx.softmax
// CHECK:         rlx.matmul
// CHECK-NOT:     rlx.attention_backward
// CHECK:         func.return

// GRADS: check-grads @double_backward: OK (checked @double_backward_grad)
// GRADS-NEXT: d/dq: max relative error {{.*}}: ok
// GRADS-NEXT: d/dk: max relative error {{.*}}: ok
