// RUN: rlx-opt %s --verify-diagnostics --autodiff
// RUN: not rlx-opt %s --autodiff 2>&1 | FileCheck %s
// CHECK: attention-errors.mlir:10:3: error: 'rlx.attention_backward' has no vjp (reverse-mode autodiff) rule

// There is no double backward through attention (SPEC 5.17): differentiating a
// function that calls rlx.attention_backward is a located error naming the op.
func.func @double_backward(%q: tensor<1x3x8xf32> {rlx.name = "q", rlx.param}, %k: tensor<1x5x8xf32>,
                           %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{'rlx.attention_backward' has no vjp (reverse-mode autodiff) rule}}
  %dq = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  func.return %dq : tensor<1x3x8xf32>
}
