// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: nn-backward-invalid.mlir:7:3: error: 'rlx.layer_norm_backward_input' op dy must have the type of x (tensor<4x8xf32>), got tensor<4x7xf32>

func.func @ln_dy_shape(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %dy: tensor<4x7xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'rlx.layer_norm_backward_input' op dy must have the type of x (tensor<4x8xf32>), got tensor<4x7xf32>}}
  %0 = rlx.layer_norm_backward_input %x, %g, %dy : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x7xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @ln_gamma(%x: tensor<4x8xf32>, %g: tensor<4xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'rlx.layer_norm_backward_input' op gamma must be tensor<8xf32> (the last dim of x), got tensor<4xf32>}}
  %0 = rlx.layer_norm_backward_input %x, %g, %dy : (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @ln_axis(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'rlx.layer_norm_backward_input' op normalises the last axis only: axis 0 is axis 0 of a rank-2 operand}}
  %0 = rlx.layer_norm_backward_input %x, %g, %dy {axis = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @ln_gamma_result(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @below {{result type mismatch: expected tensor<8xf32>, got tensor<4xf32>}}
  %0 = rlx.layer_norm_backward_gamma %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @rms_int(%x: tensor<4x8xi32>, %g: tensor<8xi32>, %dy: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @below {{'rlx.rms_norm_backward_input' op operand x must be f32 or f64, got tensor<4x8xi32>}}
  %0 = rlx.rms_norm_backward_input %x, %g, %dy : (tensor<4x8xi32>, tensor<8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
  func.return %0 : tensor<4x8xi32>
}

// -----

func.func @rms_eps(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @below {{attribute 'eps' must be >= 0, got -1.0}}
  %0 = rlx.rms_norm_backward_gamma %x, %dy {eps = -1.0 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @rms_gamma_dtype(%x: tensor<4x8xf32>, %g: tensor<8xf64>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'rlx.rms_norm_backward_input' op gamma must be tensor<8xf32> (the last dim of x), got tensor<8xf64>}}
  %0 = rlx.rms_norm_backward_input %x, %g, %dy : (tensor<4x8xf32>, tensor<8xf64>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @gn_groups(%x: tensor<2x4x3xf32>, %g: tensor<4xf32>, %dy: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  // expected-error @below {{'rlx.group_norm_backward_input' op num_groups = 3 must be positive and divide C = 4}}
  %0 = rlx.group_norm_backward_input %x, %g, %dy {num_groups = 3 : i64} : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  func.return %0 : tensor<2x4x3xf32>
}

// -----

func.func @gn_unknown_attr(%x: tensor<2x4x3xf32>, %g: tensor<4xf32>, %dy: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  // expected-error @below {{unknown attribute 'axis' (allowed: num_groups, eps)}}
  %0 = rlx.group_norm_backward_input %x, %g, %dy {num_groups = 2 : i64, axis = 1 : i64} : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  func.return %0 : tensor<2x4x3xf32>
}

// -----

func.func @gn_gamma_missing_groups(%x: tensor<2x4x3xf32>, %dy: tensor<2x4x3xf32>) -> tensor<4xf32> {
  // expected-error @below {{missing required attribute 'num_groups'}}
  %0 = rlx.group_norm_backward_gamma %x, %dy : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @gn_beta_rank(%dy: tensor<4x3xf32>) -> tensor<3xf32> {
  // expected-error @below {{'rlx.group_norm_backward_beta' op operand dy ([N, C, ...]) must have rank 3 or 4, got tensor<4x3xf32>}}
  %0 = rlx.group_norm_backward_beta %dy : (tensor<4x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @bn_var_dtype(%g: tensor<3xf32>, %v: tensor<3xf64>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @below {{'rlx.batch_norm_inference_backward_input' op var must be tensor<3xf32> (one per channel, the last dim of dy), got tensor<3xf64>}}
  %0 = rlx.batch_norm_inference_backward_input %g, %v, %dy : (tensor<3xf32>, tensor<3xf64>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @bn_gamma_dy(%x: tensor<2x3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>, %dy: tensor<3x3xf32>) -> tensor<3xf32> {
  // expected-error @below {{'rlx.batch_norm_inference_backward_gamma' op dy must have the type of x (tensor<2x3xf32>), got tensor<3x3xf32>}}
  %0 = rlx.batch_norm_inference_backward_gamma %x, %m, %v, %dy : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @bn_beta_scalar(%dy: tensor<f32>) -> tensor<1xf32> {
  // expected-error @below {{'rlx.batch_norm_inference_backward_beta' op operand dy needs a channel (last) axis, got tensor<f32>}}
  %0 = rlx.batch_norm_inference_backward_beta %dy : (tensor<f32>) -> tensor<1xf32>
  func.return %0 : tensor<1xf32>
}

// -----

func.func @ce_d_loss(%z: tensor<4x10xf32>, %t: tensor<4xi64>, %dl: tensor<4xf64>) -> tensor<4x10xf32> {
  // expected-error @below {{'rlx.softmax_cross_entropy_backward' op d_loss must be tensor<4xf32> (one per row), got tensor<4xf64>}}
  %0 = rlx.softmax_cross_entropy_backward %z, %t, %dl : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf64>) -> tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}

// -----

func.func @ce_labels_dtype(%z: tensor<4x10xf32>, %t: tensor<4xi1>, %dl: tensor<4xf32>) -> tensor<4x10xf32> {
  // expected-error @below {{'rlx.softmax_cross_entropy_backward' op labels must be i32, i64 or f32-encoded integers, got tensor<4xi1>}}
  %0 = rlx.softmax_cross_entropy_backward %z, %t, %dl : (tensor<4x10xf32>, tensor<4xi1>, tensor<4xf32>) -> tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}

// -----

func.func @ce_labels_shape(%z: tensor<4x10xf32>, %t: tensor<3xi32>, %dl: tensor<4xf32>) -> tensor<4x10xf32> {
  // expected-error @below {{'rlx.softmax_cross_entropy_backward' op labels must be [N] = [4] (one class per row), got tensor<3xi32>}}
  %0 = rlx.softmax_cross_entropy_backward %z, %t, %dl : (tensor<4x10xf32>, tensor<3xi32>, tensor<4xf32>) -> tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}

// -----

func.func @ce_logits_rank(%z: tensor<2x4x10xf32>, %t: tensor<2xi32>, %dl: tensor<2xf32>) -> tensor<2x4x10xf32> {
  // expected-error @below {{'rlx.softmax_cross_entropy_backward' op logits ([N, C]) must have rank 2, got tensor<2x4x10xf32>}}
  %0 = rlx.softmax_cross_entropy_backward %z, %t, %dl : (tensor<2x4x10xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2x4x10xf32>
  func.return %0 : tensor<2x4x10xf32>
}

// -----

func.func @ce_result(%z: tensor<4x10xf32>, %t: tensor<4xi32>, %dl: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{result type mismatch: expected tensor<4x10xf32>, got tensor<4xf32>}}
  %0 = rlx.softmax_cross_entropy_backward %z, %t, %dl : (tensor<4x10xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @rope_n_rot(%dy: tensor<3x8xf32>, %c: tensor<3x2xf32>, %s: tensor<3x2xf32>) -> tensor<3x8xf32> {
  // expected-error @below {{'rlx.rope_backward' op n_rot = 3 must be positive, even and <= head_dim = 4}}
  %0 = rlx.rope_backward %dy, %c, %s {head_dim = 4 : i64, n_rot = 3 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @rope_table(%dy: tensor<3x8xf32>, %c: tensor<3x2xf32>, %s: tensor<4x2xf32>) -> tensor<3x8xf32> {
  // expected-error @below {{'rlx.rope_backward' op sin table must be tensor<3x2xf32> ([S, head_dim/2]), got tensor<4x2xf32>}}
  %0 = rlx.rope_backward %dy, %c, %s {head_dim = 4 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<4x2xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @rope_head_dim(%dy: tensor<3x8xf32>, %c: tensor<3x2xf32>, %s: tensor<3x2xf32>) -> tensor<3x8xf32> {
  // expected-error @below {{'rlx.rope_backward' op head_dim = 3 must be positive, even and divide the hidden size 8}}
  %0 = rlx.rope_backward %dy, %c, %s {head_dim = 3 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @rope_rank(%dy: tensor<8xf32>, %c: tensor<3x2xf32>, %s: tensor<3x2xf32>) -> tensor<8xf32> {
  // expected-error @below {{'rlx.rope_backward' op operand dy ([S, hidden] or [B, S, hidden]) must have rank 2 or 3, got tensor<8xf32>}}
  %0 = rlx.rope_backward %dy, %c, %s {head_dim = 4 : i64} : (tensor<8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
