// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS
// RUN: rlx-opt %s --autodiff="func=max_pool_twice" | FileCheck %s --check-prefix=TWICE

// GRADS: check-grads @conv_bias: OK
// GRADS-NEXT: d/dx: max relative error
// GRADS-NEXT: d/dw: max relative error
// GRADS-NEXT: d/db: max relative error
// GRADS: check-grads @max_pool: OK
// GRADS: check-grads @avg_pool: OK
// GRADS: check-grads @avg_pool_f64: OK
// GRADS: check-grads @double_backward_input: OK
// GRADS-NEXT: d/ddy: max relative error
// GRADS-NEXT: d/dw: max relative error
// GRADS: check-grads @double_backward_weight: OK
// GRADS-NEXT: d/dx: max relative error
// GRADS-NEXT: d/ddy: max relative error
// GRADS-NOT: FAILED

// The second derivative of max_pool2d: dy's gradient gathers g at each window's argmax.
// TWICE-LABEL: func.func @max_pool_twice_grad(
// TWICE: %[[G:.*]] = rlx.max_pool2d_jvp %x, %d_output {kernel = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
// TWICE: func.return %{{.*}}, %[[G]]

// dx = conv2d_backward_input(g, w), dw = conv2d_backward_weight(x, g), both with conv2d's
// attributes and the caller-given x / w shapes; db = g summed over N, H, W.
// CHECK-LABEL: func.func @conv_bias_grad(
// CHECK-SAME: -> (tensor<2x6x3x7xf32>, tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>)
// CHECK: %[[Y:.*]] = rlx.conv2d %x, %w, %b
// CHECK-NEXT: %[[DX:.*]] = rlx.conv2d_backward_input %d_output, %w {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<2x6x3x7xf32>, tensor<6x2x3x2xf32>) -> tensor<2x4x7x6xf32>
// CHECK-NEXT: %[[DW:.*]] = rlx.conv2d_backward_weight %x, %d_output {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<2x6x3x7xf32>) -> tensor<6x2x3x2xf32>
// CHECK-NEXT: %[[DB:.*]] = rlx.reduce_sum %d_output {axes = array<i64: 0, 2, 3>} : (tensor<2x6x3x7xf32>) -> tensor<6xf32>
// CHECK-NEXT: func.return %[[Y]], %[[DX]], %[[DW]], %[[DB]]
func.func @conv_bias(%x: tensor<2x4x7x6xf32> {rlx.name = "x", rlx.param}, %w: tensor<6x2x3x2xf32> {rlx.name = "w", rlx.param},
                     %b: tensor<6xf32> {rlx.name = "b", rlx.param}) -> tensor<2x6x3x7xf32> {
  %y = rlx.conv2d %x, %w, %b {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) -> tensor<2x6x3x7xf32>
  func.return %y : tensor<2x6x3x7xf32>
}

// CHECK-LABEL: func.func @max_pool_grad(
// CHECK: %[[Y:.*]] = rlx.max_pool2d %x
// CHECK-NEXT: %[[DX:.*]] = rlx.max_pool2d_backward %x, %d_output {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK-NEXT: func.return %[[Y]], %[[DX]]
func.func @max_pool(%x: tensor<1x2x5x5xf32> {rlx.name = "x", rlx.param}) -> tensor<1x2x3x3xf32> {
  %y = rlx.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// A depthwise (groups = C) conv2d_backward_input with the uniform kernel 1/(kh kw) = 1/6.
// CHECK-LABEL: func.func @avg_pool_grad(
// CHECK: %[[K:.*]] = rlx.constant {value = dense<0.166666672> : tensor<3x1x3x2xf32>}
// CHECK-NEXT: %[[DX:.*]] = rlx.conv2d_backward_input %d_output, %[[K]] {stride = array<i64: 1, 2>, padding = array<i64: 1, 1>, groups = 3 : i64} : (tensor<1x3x5x3xf32>, tensor<3x1x3x2xf32>) -> tensor<1x3x5x4xf32>
// CHECK-NEXT: func.return %{{.*}}, %[[DX]]
func.func @avg_pool(%x: tensor<1x3x5x4xf32> {rlx.name = "x", rlx.param}) -> tensor<1x3x5x3xf32> {
  %y = rlx.avg_pool2d %x {kernel = array<i64: 3, 2>, stride = array<i64: 1, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x5x4xf32>) -> tensor<1x3x5x3xf32>
  func.return %y : tensor<1x3x5x3xf32>
}

// Windows that tile x (stride = kernel, no padding): each window's g / (kh kw) broadcast
// over it, no transposed conv; the scale has x's dtype (SPEC 9.9: no f32 bytes in f64
// graphs).
// CHECK-LABEL: func.func @avg_pool_f64_grad(
// CHECK: %[[S:.*]] = rlx.constant {value = dense<2.500000e-01> : tensor<f64>}
// CHECK-NEXT: %[[G:.*]] = rlx.mul %d_output, %[[S]] : (tensor<2x2x2x2xf64>, tensor<f64>) -> tensor<2x2x2x2xf64>
// CHECK-NEXT: %[[V:.*]] = rlx.reshape %[[G]] : (tensor<2x2x2x2xf64>) -> tensor<2x2x2x1x2x1xf64>
// CHECK-NEXT: %[[B:.*]] = rlx.expand %[[V]] : (tensor<2x2x2x1x2x1xf64>) -> tensor<2x2x2x2x2x2xf64>
// CHECK-NEXT: %[[DX:.*]] = rlx.reshape %[[B]] : (tensor<2x2x2x2x2x2xf64>) -> tensor<2x2x4x4xf64>
// CHECK-NEXT: func.return %{{.*}}, %[[DX]]
func.func @avg_pool_f64(%x: tensor<2x2x4x4xf64> {rlx.name = "x", rlx.param}) -> tensor<2x2x2x2xf64> {
  %y = rlx.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<2x2x4x4xf64>) -> tensor<2x2x2x2xf64>
  func.return %y : tensor<2x2x2x2xf64>
}

// Double backward: conv2d_backward_input is linear in dy (-> conv2d(g, w)) and in w
// (-> conv2d_backward_weight(g, dy)).
// CHECK-LABEL: func.func @double_backward_input_grad(
// CHECK: %[[DX:.*]] = rlx.conv2d_backward_input %dy, %w
// CHECK-NEXT: %[[DDY:.*]] = rlx.conv2d %d_output, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT: %[[DW:.*]] = rlx.conv2d_backward_weight %d_output, %dy {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<1x4x3x3xf32>) -> tensor<4x2x3x3xf32>
// CHECK-NEXT: func.return %[[DX]], %[[DDY]], %[[DW]]
func.func @double_backward_input(%dy: tensor<1x4x3x3xf32> {rlx.name = "dy", rlx.param}, %w: tensor<4x2x3x3xf32> {rlx.name = "w", rlx.param}) -> tensor<1x4x6x6xf32> {
  %dx = rlx.conv2d_backward_input %dy, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %dx : tensor<1x4x6x6xf32>
}

// Double backward: conv2d_backward_weight(x, dy) -> x: conv2d_backward_input(dy, g),
// -> dy: conv2d(x, g).
// CHECK-LABEL: func.func @double_backward_weight_grad(
// CHECK: %[[DW:.*]] = rlx.conv2d_backward_weight %x, %dy
// CHECK-NEXT: %[[DX:.*]] = rlx.conv2d_backward_input %dy, %d_output {stride = array<i64: 2, 1>, padding = array<i64: 0, 1>, dilation = array<i64: 1, 1>} : (tensor<2x4x3x5xf32>, tensor<4x3x2x3xf32>) -> tensor<2x3x6x5xf32>
// CHECK-NEXT: %[[DDY:.*]] = rlx.conv2d %x, %d_output {stride = array<i64: 2, 1>, padding = array<i64: 0, 1>, dilation = array<i64: 1, 1>} : (tensor<2x3x6x5xf32>, tensor<4x3x2x3xf32>) -> tensor<2x4x3x5xf32>
// CHECK-NEXT: func.return %[[DW]], %[[DX]], %[[DDY]]
func.func @double_backward_weight(%x: tensor<2x3x6x5xf32> {rlx.name = "x", rlx.param}, %dy: tensor<2x4x3x5xf32> {rlx.name = "dy", rlx.param}) -> tensor<4x3x2x3xf32> {
  %dw = rlx.conv2d_backward_weight %x, %dy {stride = array<i64: 2, 1>, padding = array<i64: 0, 1>, dilation = array<i64: 1, 1>} : (tensor<2x3x6x5xf32>, tensor<2x4x3x5xf32>) -> tensor<4x3x2x3xf32>
  func.return %dw : tensor<4x3x2x3xf32>
}

// Private, so only the TWICE run (func=max_pool_twice) differentiates it.
func.func private @max_pool_twice(%x: tensor<1x1x4x4xf32> {rlx.name = "x"}, %dy: tensor<1x1x2x2xf32> {rlx.name = "dy", rlx.param}) -> tensor<1x1x4x4xf32> {
  %dx = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return %dx : tensor<1x1x4x4xf32>
}
