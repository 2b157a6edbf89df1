// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: linalg-invalid.mlir:7:3: error: 'rlx.matmul' op contraction dims differ: lhs [4, 8] has K=8, rhs [7, 3] has K=7

func.func @contraction_mismatch(%a: tensor<4x8xf32>, %b: tensor<7x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{contraction dims differ: lhs [4, 8] has K=8, rhs [7, 3] has K=7}}
  %0 = rlx.matmul %a, %b : (tensor<4x8xf32>, tensor<7x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @batch_not_broadcastable(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x4x5xf32> {
  // expected-error @below {{batch dims [2] of lhs and [3] of rhs do not broadcast}}
  %0 = rlx.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x4x5xf32>
  func.return %0 : tensor<2x4x5xf32>
}

// -----

func.func @matmul_rank1(%a: tensor<8xf32>, %b: tensor<8x5xf32>) -> tensor<5xf32> {
  // expected-error @below {{'rlx.matmul' op lhs must have rank >= 2, got tensor<8xf32>}}
  %0 = rlx.matmul %a, %b : (tensor<8xf32>, tensor<8x5xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @matmul_rhs_rank1(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @below {{'rlx.matmul' op rhs must have rank >= 2, got tensor<8xf32>}}
  %0 = rlx.matmul %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @matmul_dtype_mix(%a: tensor<4x8xf32>, %b: tensor<8x5xf64>) -> tensor<4x5xf32> {
  // expected-error @below {{'rlx.matmul' op operands must share one element type}}
  %0 = rlx.matmul %a, %b : (tensor<4x8xf32>, tensor<8x5xf64>) -> tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}

// -----

func.func @matmul_bool(%a: tensor<4x8xi1>, %b: tensor<8x5xi1>) -> tensor<4x5xi1> {
  // expected-error @below {{'rlx.matmul' op does not support element type i1}}
  %0 = rlx.matmul %a, %b : (tensor<4x8xi1>, tensor<8x5xi1>) -> tensor<4x5xi1>
  func.return %0 : tensor<4x5xi1>
}

// -----

func.func @matmul_bad_result(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x4x5xf32> {
  // expected-error @below {{result type mismatch: expected tensor<2x3x4x5xf32>, got tensor<2x4x5xf32>}}
  %0 = rlx.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x4x5xf32>
  func.return %0 : tensor<2x4x5xf32>
}

// -----

func.func @missing_axes(%x: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error @below {{missing required attribute 'axes'}}
  %0 = rlx.reduce_sum %x : (tensor<2x3xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @empty_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @below {{attribute 'axes' must not be empty}}
  %0 = rlx.reduce_sum %x {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @axes_not_array(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @below {{attribute 'axes' must be an array<i64: ...>, got 0}}
  %0 = rlx.reduce_mean %x {axes = 0 : i64} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @duplicate_axes(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @below {{duplicate axis in axes [1, -1] for rank 2}}
  %0 = rlx.reduce_max %x {axes = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @below {{axis 2 is out of range for rank 2}}
  %0 = rlx.reduce_min %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @negative_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @below {{axis -3 is out of range for rank 2}}
  %0 = rlx.reduce_prod %x {axes = array<i64: -3>} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @keep_dims_not_bool(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @below {{attribute 'keep_dims' must be a bool, got 1}}
  %0 = rlx.reduce_sum %x {axes = array<i64: 1>, keep_dims = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return %0 : tensor<2x1xf32>
}

// -----

func.func @reduce_bad_result(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  // expected-error @below {{result type mismatch: expected tensor<1x3x1xf32>, got tensor<3xf32>}}
  %0 = rlx.reduce_sum %x {axes = array<i64: 0, 2>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @mean_of_ints(%x: tensor<2x3xi64>) -> tensor<2xi64> {
  // expected-error @below {{'rlx.reduce_mean' op does not support element type i64 (supported: f32, f64, c64, c128)}}
  %0 = rlx.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x3xi64>) -> tensor<2xi64>
  func.return %0 : tensor<2xi64>
}

// -----

func.func @reduce_unknown_attr(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @below {{unknown attribute 'keepdims' (allowed: axes, keep_dims)}}
  %0 = rlx.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @cumsum_axis_out_of_range(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{axis -3 is out of range for rank 2}}
  %0 = rlx.cumsum %x {axis = -3 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @cumsum_axis_not_int(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{attribute 'axis' must be an i64 integer}}
  %0 = rlx.cumsum %x {axis = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @cumsum_exclusive_not_bool(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{attribute 'exclusive' must be a bool, got 'yes'}}
  %0 = rlx.cumsum %x {exclusive = "yes"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @cumsum_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'rlx.cumsum' op operand must have rank >= 1, got tensor<f32>}}
  %0 = rlx.cumsum %x : (tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @cumsum_bad_result(%x: tensor<4x3xf32>) -> tensor<4xf32> {
  // expected-error @below {{result type mismatch: expected tensor<4x3xf32>, got tensor<4xf32>}}
  %0 = rlx.cumsum %x : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
