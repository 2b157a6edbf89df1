// RUN: rlx-opt %s --autodiff="zero-missing-wrt=true" | FileCheck %s
// RUN: rlx-opt %s --autodiff="wrt=w grad-only=true" | FileCheck %s --check-prefix=ONLY

// With zero-missing-wrt the unused parameter gets zeros of its shape and dtype.
// CHECK-LABEL: func.func @unused_grad
// CHECK: %[[Z:.*]] = rlx.constant {value = dense<0.000000e+00> : tensor<3xf64>} : () -> tensor<3xf64>
// CHECK: func.return %{{.*}}, %{{.*}}, %[[Z]] : tensor<3xf32>, tensor<3xf32>, tensor<3xf64>

// grad-only drops the loss; wrt selects the arguments.
// ONLY-LABEL: func.func @unused_grad
// ONLY-SAME: -> tensor<3xf32>
// ONLY: %[[D:.*]] = rlx.activation_backward %w, %d_output {kind = "tanh"}
// ONLY: func.return %[[D]] : tensor<3xf32>
func.func @unused(%w: tensor<3xf32> {rlx.name = "w", rlx.param}, %b: tensor<3xf64> {rlx.name = "b", rlx.param}) -> tensor<3xf32> {
  %y = rlx.tanh %w : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
