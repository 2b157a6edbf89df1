// RUN: rlx-opt %s --split-input-file --verify-diagnostics --autodiff
// RUN: not rlx-opt %s --split-input-file --autodiff 2>&1 | FileCheck %s
// CHECK: errors.mlir:7:1: error: no gradient reaches 'b'

// A parameter the loss does not depend on is an error in strict mode.
// expected-error @below {{no gradient reaches 'b': the loss of @unused does not depend on it}}
func.func @unused(%w: tensor<3xf32> {rlx.name = "w", rlx.param}, %b: tensor<3xf32> {rlx.name = "b", rlx.param}) -> tensor<3xf32> {
  %y = rlx.tanh %w : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// Only float arguments can be differentiated.
// expected-error @below {{cannot differentiate with respect to 'n': it has non-float type tensor<3xi64>}}
func.func @int_wrt(%n: tensor<3xi64> {rlx.name = "n", rlx.param}) -> tensor<3xi64> {
  func.return %n : tensor<3xi64>
}

// -----

// The loss must be a float tensor.
// expected-error @below {{the loss (result 0 of @int_loss) must be a float tensor}}
func.func @int_loss(%w: tensor<3xf32> {rlx.name = "w", rlx.param}) -> tensor<3xi1> {
  %p = rlx.compare %w, %w {predicate = "lt"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  func.return %p : tensor<3xi1>
}
