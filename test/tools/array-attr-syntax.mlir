// An array attribute written as [...] where array<i64: ...> is due: the message shows
// the attribute in MLIR syntax (not a Python repr) and names the syntax to use.
// RUN: rlx-opt %s --verify-diagnostics

func.func @g(%x: tensor<3xf32>) -> tensor<f32> {
  // expected-error @below {{attribute 'axes' must be an array<i64: ...>, got [0 : i64] (write array<i64: ...>, not [...])}}
  %s = rlx.reduce_sum %x {axes = [0]} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
