// RUN: rlx-opt %s --check-grads | FileCheck %s
// rlx.round's gradient is straight-through (1), not its derivative (0): finite
// differences cannot check a gradient that flows through it (here inside a scan body), and
// the report says so instead of failing; the other arguments are checked.

// CHECK: check-grads @quantized: OK
// CHECK-NEXT: d/dx: max relative error {{.*}} ok
// CHECK-NEXT: d/dw: not checked: it flows through 'rlx.round' (straight-through: gradient 1, not its derivative 0)
func.func @quantized(%x: tensor<4xf32> {rlx.name = "x"}, %w: tensor<4xf32> {rlx.name = "w"}) -> tensor<f32> {
  %r = rlx.round %w : (tensor<4xf32>) -> tensor<4xf32>
  %m = rlx.mul %r, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = rlx.reduce_sum %m {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}

// CHECK: check-grads @scanned: OK
// CHECK-NEXT: d/dinit: max relative error {{.*}} ok
// CHECK-NEXT: d/dxs: not checked: it flows through 'rlx.round'
func.func @scanned(%init: tensor<3xf32> {rlx.name = "init"}, %xs: tensor<4x3xf32> {rlx.name = "xs"}) -> tensor<f32> {
  %c = rlx.scan %init, %xs {length = 4 : i64, num_xs = 1 : i64} : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<3xf32> ({
  ^bb0(%carry: tensor<3xf32>, %x: tensor<3xf32>):
    %r = rlx.round %x : (tensor<3xf32>) -> tensor<3xf32>
    %a = rlx.add %carry, %r : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %n = rlx.tanh %a : (tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : (tensor<3xf32>) -> ()
  })
  %s = rlx.reduce_sum %c {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
