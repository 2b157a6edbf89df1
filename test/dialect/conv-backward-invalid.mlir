// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: conv-backward-invalid.mlir:7:3: error: 'rlx.conv2d_backward_input' op conv2d of x [1, 3, 8, 8] with w [4, 3, 3, 3] gives [1, 4, 6, 6], but dy has shape [1, 4, 5, 5]

func.func @input_dy_shape(%dy: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @below {{conv2d of x [1, 3, 8, 8] with w [4, 3, 3, 3] gives [1, 4, 6, 6], but dy has shape [1, 4, 5, 5]}}
  %0 = rlx.conv2d_backward_input %dy, %w : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----

// The caller-given x has 2 channels but w expects 3.
func.func @input_channels(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x2x8x8xf32> {
  // expected-error @below {{weight [4, 3, 3, 3] must have C_in/groups = 2 input channels}}
  %0 = rlx.conv2d_backward_input %dy, %w : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x2x8x8xf32>
  func.return %0 : tensor<1x2x8x8xf32>
}

// -----

func.func @input_dy_rank(%dy: tensor<4x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @below {{cotangent dy [N, C_out, H_out, W_out] must have rank 4, got tensor<4x6x6xf32>}}
  %0 = rlx.conv2d_backward_input %dy, %w : (tensor<4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----

func.func @input_result_rank(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<3x8x8xf32> {
  // expected-error @below {{result dx [N, C_in, H, W] must have rank 4, got tensor<3x8x8xf32>}}
  %0 = rlx.conv2d_backward_input %dy, %w : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<3x8x8xf32>
  func.return %0 : tensor<3x8x8xf32>
}

// -----

func.func @input_dtype(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf64>) -> tensor<1x3x8x8xf32> {
  // expected-error @below {{'rlx.conv2d_backward_input' op operands and result must share one element type}}
  %0 = rlx.conv2d_backward_input %dy, %w : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf64>) -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----

func.func @input_result_dtype(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf64> {
  // expected-error @below {{'rlx.conv2d_backward_input' op operands and result must share one element type}}
  %0 = rlx.conv2d_backward_input %dy, %w : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf64>
  func.return %0 : tensor<1x3x8x8xf64>
}

// -----

func.func @input_int(%dy: tensor<1x4x6x6xi32>, %w: tensor<4x3x3x3xi32>) -> tensor<1x3x8x8xi32> {
  // expected-error @below {{'rlx.conv2d_backward_input' op operand 0 must be f32 or f64, got tensor<1x4x6x6xi32>}}
  %0 = rlx.conv2d_backward_input %dy, %w : (tensor<1x4x6x6xi32>, tensor<4x3x3x3xi32>) -> tensor<1x3x8x8xi32>
  func.return %0 : tensor<1x3x8x8xi32>
}

// -----

func.func @input_stride_zero(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @below {{attribute 'stride' entries must be >= 1, got [0, 1]}}
  %0 = rlx.conv2d_backward_input %dy, %w {stride = array<i64: 0, 1>} : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----

func.func @input_unknown_attr(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error @below {{unknown attribute 'kernel' (allowed: stride, padding, dilation, groups)}}
  %0 = rlx.conv2d_backward_input %dy, %w {kernel = array<i64: 3, 3>} : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}

// -----

func.func @weight_dy_shape(%x: tensor<2x4x6x6xf32>, %dy: tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32> {
  // expected-error @below {{conv2d of x [2, 4, 6, 6] with w [6, 2, 3, 3] gives [2, 6, 6, 6], but dy has shape [2, 6, 4, 4]}}
  %0 = rlx.conv2d_backward_weight %x, %dy {groups = 2 : i64, padding = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32>
  func.return %0 : tensor<6x2x3x3xf32>
}

// -----

func.func @weight_groups(%x: tensor<2x4x6x6xf32>, %dy: tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32> {
  // expected-error @below {{weight [6, 2, 3, 3] must have C_in/groups = 4 input channels (x [2, 4, 6, 6], groups 1), got 2}}
  %0 = rlx.conv2d_backward_weight %x, %dy : (tensor<2x4x6x6xf32>, tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32>
  func.return %0 : tensor<6x2x3x3xf32>
}

// -----

func.func @weight_groups_zero(%x: tensor<2x4x6x6xf32>, %dy: tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32> {
  // expected-error @below {{attribute 'groups' must be >= 1, got 0}}
  %0 = rlx.conv2d_backward_weight %x, %dy {groups = 0 : i64} : (tensor<2x4x6x6xf32>, tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32>
  func.return %0 : tensor<6x2x3x3xf32>
}

// -----

func.func @weight_x_rank(%x: tensor<4x6x6xf32>, %dy: tensor<2x6x4x4xf32>) -> tensor<6x4x3x3xf32> {
  // expected-error @below {{input x [N, C_in, H, W] must have rank 4, got tensor<4x6x6xf32>}}
  %0 = rlx.conv2d_backward_weight %x, %dy : (tensor<4x6x6xf32>, tensor<2x6x4x4xf32>) -> tensor<6x4x3x3xf32>
  func.return %0 : tensor<6x4x3x3xf32>
}

// -----

func.func @weight_result_rank(%x: tensor<2x4x6x6xf32>, %dy: tensor<2x6x4x4xf32>) -> tensor<6x4x9xf32> {
  // expected-error @below {{result dw [C_out, C_in/groups, kH, kW] must have rank 4, got tensor<6x4x9xf32>}}
  %0 = rlx.conv2d_backward_weight %x, %dy : (tensor<2x4x6x6xf32>, tensor<2x6x4x4xf32>) -> tensor<6x4x9xf32>
  func.return %0 : tensor<6x4x9xf32>
}

// -----

func.func @weight_dtype(%x: tensor<2x4x6x6xf64>, %dy: tensor<2x6x4x4xf32>) -> tensor<6x4x3x3xf32> {
  // expected-error @below {{'rlx.conv2d_backward_weight' op operands and result must share one element type}}
  %0 = rlx.conv2d_backward_weight %x, %dy : (tensor<2x4x6x6xf64>, tensor<2x6x4x4xf32>) -> tensor<6x4x3x3xf32>
  func.return %0 : tensor<6x4x3x3xf32>
}

// -----

func.func @pool_dy_shape(%x: tensor<1x2x8x6xf32>, %dy: tensor<1x2x4x4xf32>) -> tensor<1x2x8x6xf32> {
  // expected-error @below {{max_pool2d of x [1, 2, 8, 6] gives [1, 2, 4, 3], but dy has shape [1, 2, 4, 4]}}
  %0 = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x8x6xf32>
  func.return %0 : tensor<1x2x8x6xf32>
}

// -----

func.func @pool_result_shape(%x: tensor<1x2x8x6xf32>, %dy: tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32> {
  // expected-error @below {{result type mismatch: expected tensor<1x2x8x6xf32>, got tensor<1x2x4x3xf32>}}
  %0 = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32>
  func.return %0 : tensor<1x2x4x3xf32>
}

// -----

func.func @pool_missing_kernel(%x: tensor<1x2x8x6xf32>, %dy: tensor<1x2x4x3xf32>) -> tensor<1x2x8x6xf32> {
  // expected-error @below {{missing required attribute 'kernel'}}
  %0 = rlx.max_pool2d_backward %x, %dy : (tensor<1x2x8x6xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x8x6xf32>
  func.return %0 : tensor<1x2x8x6xf32>
}

// -----

func.func @pool_padding(%x: tensor<1x2x8x6xf32>, %dy: tensor<1x2x5x4xf32>) -> tensor<1x2x8x6xf32> {
  // expected-error @below {{padding [2, 2] must be at most half the kernel [2, 2]}}
  %0 = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>, padding = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x8x6xf32>
  func.return %0 : tensor<1x2x8x6xf32>
}

// -----

func.func @pool_rank(%x: tensor<2x8x6xf32>, %dy: tensor<2x4x3xf32>) -> tensor<2x8x6xf32> {
  // expected-error @below {{input x [N, C, H, W] must have rank 4, got tensor<2x8x6xf32>}}
  %0 = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>} : (tensor<2x8x6xf32>, tensor<2x4x3xf32>) -> tensor<2x8x6xf32>
  func.return %0 : tensor<2x8x6xf32>
}

// -----

func.func @pool_dtype(%x: tensor<1x2x8x6xf32>, %dy: tensor<1x2x4x3xf64>) -> tensor<1x2x8x6xf32> {
  // expected-error @below {{'rlx.max_pool2d_backward' op operands must share one element type}}
  %0 = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xf32>, tensor<1x2x4x3xf64>) -> tensor<1x2x8x6xf32>
  func.return %0 : tensor<1x2x8x6xf32>
}

// -----

func.func @pool_int(%x: tensor<1x2x8x6xi32>, %dy: tensor<1x2x4x3xi32>) -> tensor<1x2x8x6xi32> {
  // expected-error @below {{input x must be f32 or f64, got tensor<1x2x8x6xi32>}}
  %0 = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>} : (tensor<1x2x8x6xi32>, tensor<1x2x4x3xi32>) -> tensor<1x2x8x6xi32>
  func.return %0 : tensor<1x2x8x6xi32>
}
