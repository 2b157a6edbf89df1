// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: conv-invalid.mlir:7:3: error: 'rlx.conv2d' op input x [N, C_in, H, W] must have rank 4, got tensor<3x8x8xf32>

func.func @x_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{input x [N, C_in, H, W] must have rank 4}}
  %0 = rlx.conv2d %x, %w : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @w_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{weight w [C_out, C_in/groups, kH, kW] must have rank 4}}
  %0 = rlx.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @cin_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{weight [4, 2, 3, 3] must have C_in/groups = 3 input channels}}
  %0 = rlx.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @groups_cin_mismatch(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{weight [4, 4, 3, 3] must have C_in/groups = 2 input channels (x [1, 4, 8, 8], groups 2), got 4}}
  %0 = rlx.conv2d %x, %w {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @groups_not_dividing_cin(%x: tensor<1x3x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{groups 2 must divide both C_in 3 and C_out 4}}
  %0 = rlx.conv2d %x, %w {groups = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @groups_not_dividing_cout(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32> {
  // expected-error @below {{groups 2 must divide both C_in 4 and C_out 3}}
  %0 = rlx.conv2d %x, %w {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
  func.return %0 : tensor<1x3x6x6xf32>
}

// -----

func.func @groups_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{attribute 'groups' must be >= 1, got 0}}
  %0 = rlx.conv2d %x, %w {groups = 0 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_output_too_small(%x: tensor<1x3x2x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32> {
  // expected-error @below {{output spatial size [0, 6] is < 1 for input [2, 8], kernel [3, 3]}}
  %0 = rlx.conv2d %x, %w : (tensor<1x3x2x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  func.return %0 : tensor<1x4x1x6xf32>
}

// -----

func.func @dilation_too_big(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32> {
  // expected-error @below {{output spatial size [-2, -2] is < 1}}
  %0 = rlx.conv2d %x, %w {dilation = array<i64: 3, 3>} : (tensor<1x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  func.return %0 : tensor<1x4x1x1xf32>
}

// -----

func.func @stride_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @below {{attribute 'stride' must have 2 entries (h, w), got [2]}}
  %0 = rlx.conv2d %x, %w {stride = array<i64: 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @stride_zero(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{attribute 'stride' entries must be >= 1, got [0, 1]}}
  %0 = rlx.conv2d %x, %w {stride = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @stride_not_array(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @below {{attribute 'stride' must be an array<i64: ...>, got 2}}
  %0 = rlx.conv2d %x, %w {stride = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @negative_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x6xf32> {
  // expected-error @below {{attribute 'padding' entries must be >= 0, got [-1, 0]}}
  %0 = rlx.conv2d %x, %w {padding = array<i64: -1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x6xf32>
  func.return %0 : tensor<1x4x4x6xf32>
}

// -----

func.func @bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{bias must have shape [4] (C_out), got tensor<3xf32>}}
  %0 = rlx.conv2d %x, %w, %b : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @dtype_mix(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf64>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{'rlx.conv2d' op operands must share one element type}}
  %0 = rlx.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf64>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @bias_dtype_mix(%x: tensor<1x3x8x8xf64>, %w: tensor<4x3x3x3xf64>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf64> {
  // expected-error @below {{'rlx.conv2d' op operands must share one element type}}
  %0 = rlx.conv2d %x, %w, %b : (tensor<1x3x8x8xf64>, tensor<4x3x3x3xf64>, tensor<4xf32>) -> tensor<1x4x6x6xf64>
  func.return %0 : tensor<1x4x6x6xf64>
}

// -----

func.func @int_conv(%x: tensor<1x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32> {
  // expected-error @below {{input x must be f32 or f64, got tensor<1x3x8x8xi32>}}
  %0 = rlx.conv2d %x, %w : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>
  func.return %0 : tensor<1x4x6x6xi32>
}

// -----

func.func @conv_bad_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{result type mismatch: expected tensor<1x4x4x4xf32>, got tensor<1x4x6x6xf32>}}
  %0 = rlx.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_unknown_attr(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @below {{unknown attribute 'kernel'}}
  %0 = rlx.conv2d %x, %w {kernel = array<i64: 3, 3>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @pool_missing_kernel(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @below {{missing required attribute 'kernel'}}
  %0 = rlx.max_pool2d %x : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @pool_kernel_length(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @below {{attribute 'kernel' must have 2 entries (h, w), got [2, 2, 2]}}
  %0 = rlx.avg_pool2d %x {kernel = array<i64: 2, 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @pool_rank(%x: tensor<3x8x8xf32>) -> tensor<3x4x4xf32> {
  // expected-error @below {{input x [N, C, H, W] must have rank 4}}
  %0 = rlx.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<3x8x8xf32>) -> tensor<3x4x4xf32>
  func.return %0 : tensor<3x4x4xf32>
}

// -----

func.func @pool_pad_too_big(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @below {{padding [2, 1] must be at most half the kernel [3, 3]}}
  %0 = rlx.max_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 2, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @pool_negative_padding(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @below {{attribute 'padding' entries must be >= 0, got [0, -1]}}
  %0 = rlx.avg_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 0, -1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @pool_stride_length(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @below {{attribute 'stride' must have 2 entries (h, w), got [1]}}
  %0 = rlx.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @pool_output_too_small(%x: tensor<1x3x2x8xf32>) -> tensor<1x3x1x1xf32> {
  // expected-error @below {{output spatial size [0, 1] is < 1}}
  %0 = rlx.avg_pool2d %x {kernel = array<i64: 3, 8>} : (tensor<1x3x2x8xf32>) -> tensor<1x3x1x1xf32>
  func.return %0 : tensor<1x3x1x1xf32>
}

// -----

func.func @pool_int(%x: tensor<1x3x8x8xi64>) -> tensor<1x3x4x4xi64> {
  // expected-error @below {{input x must be f32 or f64, got tensor<1x3x8x8xi64>}}
  %0 = rlx.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x3x8x8xi64>) -> tensor<1x3x4x4xi64>
  func.return %0 : tensor<1x3x4x4xi64>
}

// -----

func.func @pool_bad_result(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @below {{result type mismatch: expected tensor<1x3x4x4xf32>, got tensor<1x3x7x7xf32>}}
  %0 = rlx.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @pool_unknown_attr(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @below {{unknown attribute 'dilation'}}
  %0 = rlx.max_pool2d %x {kernel = array<i64: 2, 2>, dilation = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}
