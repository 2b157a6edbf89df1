// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: nn-invalid.mlir:7:3: error: 'rlx.softmax' op axis 2 is out of range for rank 2

func.func @softmax_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = rlx.softmax %x {axis = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @softmax_int(%x: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // expected-error @below {{'rlx.log_softmax' op operand must be f32 or f64, got tensor<4x8xi64>}}
  %0 = rlx.log_softmax %x : (tensor<4x8xi64>) -> tensor<4x8xi64>
  func.return %0 : tensor<4x8xi64>
}

// -----

func.func @softmax_axis_kind(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{attribute 'axis' must be an i64 integer, got 1.0}}
  %0 = rlx.softmax %x {axis = 1.0 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_gamma(%x: tensor<4x8xf32>, %g: tensor<7xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'rlx.layer_norm' op gamma must be tensor<8xf32> (the last dim of x), got tensor<7xf32>}}
  %0 = rlx.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<7xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_beta_dtype(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf64>) -> tensor<4x8xf32> {
  // expected-error @below {{'rlx.layer_norm' op beta must be tensor<8xf32> (the last dim of x), got tensor<8xf64>}}
  %0 = rlx.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf64>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_axis(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'rlx.layer_norm' op normalises the last axis only: axis 0 is axis 0 of a rank-2 operand (transpose first)}}
  %0 = rlx.layer_norm %x, %g, %b {axis = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_eps_kind(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{attribute 'eps' must be an f32 float, got 1}}
  %0 = rlx.layer_norm %x, %g, %b {eps = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @rms_norm_eps_negative(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{attribute 'eps' must be >= 0, got -1.0}}
  %0 = rlx.rms_norm %x, %g {eps = -1.0 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @rms_norm_axis(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @below {{'rlx.rms_norm' op normalises the last axis only: axis -2 is axis 1 of a rank-3 operand}}
  %0 = rlx.rms_norm %x, %g {axis = -2 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  func.return %0 : tensor<2x4x8xf32>
}

// -----

func.func @rms_norm_beta(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<1x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'rlx.rms_norm' op beta must be tensor<8xf32> (the last dim of x), got tensor<1x8xf32>}}
  %0 = rlx.rms_norm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @rms_norm_unknown_attr(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{unknown attribute 'epsilon' (allowed: axis, eps)}}
  %0 = rlx.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @group_norm_groups(%x: tensor<2x6x5xf32>, %g: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<2x6x5xf32> {
  // expected-error @below {{'rlx.group_norm' op num_groups = 4 must be positive and divide C = 6}}
  %0 = rlx.group_norm %x, %g, %b {num_groups = 4 : i64} : (tensor<2x6x5xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x6x5xf32>
  func.return %0 : tensor<2x6x5xf32>
}

// -----

func.func @group_norm_missing_groups(%x: tensor<2x6x5xf32>, %g: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<2x6x5xf32> {
  // expected-error @below {{missing required attribute 'num_groups'}}
  %0 = rlx.group_norm %x, %g, %b : (tensor<2x6x5xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x6x5xf32>
  func.return %0 : tensor<2x6x5xf32>
}

// -----

func.func @group_norm_rank(%x: tensor<6x5xf32>, %g: tensor<5xf32>, %b: tensor<5xf32>) -> tensor<6x5xf32> {
  // expected-error @below {{'rlx.group_norm' op operand x ([N, C, L] or [N, C, H, W]) must have rank 3 or 4, got tensor<6x5xf32>}}
  %0 = rlx.group_norm %x, %g, %b {num_groups = 1 : i64} : (tensor<6x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  func.return %0 : tensor<6x5xf32>
}

// -----

func.func @group_norm_gamma(%x: tensor<2x6x5xf32>, %g: tensor<5xf32>, %b: tensor<6xf32>) -> tensor<2x6x5xf32> {
  // expected-error @below {{'rlx.group_norm' op gamma must be tensor<6xf32> (one per channel, dim 1 of x), got tensor<5xf32>}}
  %0 = rlx.group_norm %x, %g, %b {num_groups = 2 : i64} : (tensor<2x6x5xf32>, tensor<5xf32>, tensor<6xf32>) -> tensor<2x6x5xf32>
  func.return %0 : tensor<2x6x5xf32>
}

// -----

func.func @batch_norm_var(%x: tensor<2x3x4xf32>, %c: tensor<4xf32>, %v: tensor<3xf32>) -> tensor<2x3x4xf32> {
  // expected-error @below {{'rlx.batch_norm_inference' op var must be tensor<4xf32> (one per channel, the last dim of x), got tensor<3xf32>}}
  %0 = rlx.batch_norm_inference %x, %c, %c, %c, %v : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}

// -----

func.func @batch_norm_scalar(%x: tensor<f32>, %c: tensor<1xf32>) -> tensor<f32> {
  // expected-error @below {{'rlx.batch_norm_inference' op operand x needs a channel (last) axis, got tensor<f32>}}
  %0 = rlx.batch_norm_inference %x, %c, %c, %c, %c : (tensor<f32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @sce_logits_rank(%z: tensor<2x4x10xf32>, %t: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @below {{'rlx.softmax_cross_entropy' op logits ([N, C]) must have rank 2, got tensor<2x4x10xf32>}}
  %0 = rlx.softmax_cross_entropy %z, %t : (tensor<2x4x10xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @sce_labels_rank(%z: tensor<4x10xf32>, %t: tensor<4x1xi64>) -> tensor<4xf32> {
  // expected-error @below {{'rlx.softmax_cross_entropy' op labels must be [N] = [4] (one class per row), got tensor<4x1xi64>}}
  %0 = rlx.softmax_cross_entropy %z, %t : (tensor<4x10xf32>, tensor<4x1xi64>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @sce_labels_length(%z: tensor<4x10xf32>, %t: tensor<3xi32>) -> tensor<4xf32> {
  // expected-error @below {{labels must be [N] = [4] (one class per row), got tensor<3xi32>}}
  %0 = rlx.softmax_cross_entropy %z, %t : (tensor<4x10xf32>, tensor<3xi32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @sce_labels_dtype(%z: tensor<4x10xf32>, %t: tensor<4xi1>) -> tensor<4xf32> {
  // expected-error @below {{'rlx.softmax_cross_entropy' op labels must be i32, i64 or f32-encoded integers, got tensor<4xi1>}}
  %0 = rlx.softmax_cross_entropy %z, %t : (tensor<4x10xf32>, tensor<4xi1>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @sce_int_logits(%z: tensor<4x10xi64>, %t: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @below {{'rlx.softmax_cross_entropy' op logits must be f32 or f64, got tensor<4x10xi64>}}
  %0 = rlx.softmax_cross_entropy %z, %t : (tensor<4x10xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

func.func @sce_result(%z: tensor<4x10xf64>, %t: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @below {{result type mismatch: expected tensor<4xf64>, got tensor<4xf32>}}
  %0 = rlx.softmax_cross_entropy %z, %t : (tensor<4x10xf64>, tensor<4xi64>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @rope_odd(%x: tensor<3x6xf32>, %c: tensor<3x1xf32>) -> tensor<3x6xf32> {
  // expected-error @below {{'rlx.rope' op head_dim = 3 must be positive, even and divide the hidden size 6}}
  %0 = rlx.rope %x, %c, %c {head_dim = 3 : i64} : (tensor<3x6xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x6xf32>
  func.return %0 : tensor<3x6xf32>
}

// -----

func.func @rope_not_dividing(%x: tensor<3x6xf32>, %c: tensor<3x2xf32>) -> tensor<3x6xf32> {
  // expected-error @below {{'rlx.rope' op head_dim = 4 must be positive, even and divide the hidden size 6}}
  %0 = rlx.rope %x, %c, %c {head_dim = 4 : i64} : (tensor<3x6xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x6xf32>
  func.return %0 : tensor<3x6xf32>
}

// -----

func.func @rope_missing_head_dim(%x: tensor<3x8xf32>, %c: tensor<3x2xf32>) -> tensor<3x8xf32> {
  // expected-error @below {{missing required attribute 'head_dim'}}
  %0 = rlx.rope %x, %c, %c : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @rope_n_rot(%x: tensor<3x8xf32>, %c: tensor<3x2xf32>) -> tensor<3x8xf32> {
  // expected-error @below {{'rlx.rope' op n_rot = 6 must be positive, even and <= head_dim = 4}}
  %0 = rlx.rope %x, %c, %c {head_dim = 4 : i64, n_rot = 6 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @rope_n_rot_odd(%x: tensor<3x8xf32>, %c: tensor<3x2xf32>) -> tensor<3x8xf32> {
  // expected-error @below {{'rlx.rope' op n_rot = 3 must be positive, even and <= head_dim = 4}}
  %0 = rlx.rope %x, %c, %c {head_dim = 4 : i64, n_rot = 3 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @rope_table_shape(%x: tensor<2x3x8xf32>, %c: tensor<3x2xf32>, %s: tensor<3x4xf32>) -> tensor<2x3x8xf32> {
  // expected-error @below {{'rlx.rope' op sin table must be tensor<3x2xf32> ([S, head_dim/2]), got tensor<3x4xf32>}}
  %0 = rlx.rope %x, %c, %s {head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x3x8xf32>
  func.return %0 : tensor<2x3x8xf32>
}

// -----

func.func @rope_table_positions(%x: tensor<2x3x8xf32>, %c: tensor<2x2xf32>) -> tensor<2x3x8xf32> {
  // expected-error @below {{'rlx.rope' op cos table must be tensor<3x2xf32> ([S, head_dim/2]), got tensor<2x2xf32>}}
  %0 = rlx.rope %x, %c, %c {head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x3x8xf32>
  func.return %0 : tensor<2x3x8xf32>
}

// -----

func.func @rope_rank(%x: tensor<8xf32>, %c: tensor<1x2xf32>) -> tensor<8xf32> {
  // expected-error @below {{'rlx.rope' op operand x ([S, hidden] or [B, S, hidden]) must have rank 2 or 3, got tensor<8xf32>}}
  %0 = rlx.rope %x, %c, %c {head_dim = 4 : i64} : (tensor<8xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
