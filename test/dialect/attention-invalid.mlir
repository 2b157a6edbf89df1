// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: attention-invalid.mlir:7:3: error: 'rlx.attention' op mask_kind 'custom' needs a mask operand

func.func @missing_custom_mask(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{mask_kind 'custom' needs a mask operand (q, k, v, mask)}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @missing_bias(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{mask_kind 'bias' needs a mask operand}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @mask_for_none(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %m: tensor<1x5xi1>) -> tensor<1x3x8xf32> {
  // expected-error @below {{mask_kind 'none' takes no mask operand, got 4 operands}}
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5xi1>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @mask_for_causal(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %m: tensor<1x5xi1>) -> tensor<1x3x8xf32> {
  // expected-error @below {{mask_kind 'causal' takes no mask operand, got 4 operands}}
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5xi1>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @custom_mask_shape(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %m: tensor<1x3xi1>) -> tensor<1x3x8xf32> {
  // expected-error @below {{'custom' mask must have shape [1, 5], got [1, 3]}}
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3xi1>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @causal_padding_mask_shape(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %m: tensor<1x3x5xi1>) -> tensor<1x3x8xf32> {
  // expected-error @below {{'causal_padding' mask must have shape [1, 5], got [1, 3, 5]}}
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal_padding"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x5xi1>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @causal_padding_needs_a_mask(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{mask_kind 'causal_padding' needs a mask operand (q, k, v, mask)}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal_padding"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @bias_shape(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %m: tensor<1x1x3x5xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{'bias' mask must have shape [1, 2, 3, 5], got [1, 1, 3, 5]}}
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x1x3x5xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @bias_dtype(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %m: tensor<1x2x3x5xf64>) -> tensor<1x3x8xf32> {
  // expected-error @below {{'bias' mask must be f32 (the dtype of q), got tensor<1x2x3x5xf64>}}
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x2x3x5xf64>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @custom_int_mask(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %m: tensor<1x5xi64>) -> tensor<1x3x8xf32> {
  // expected-error @below {{'custom' mask must be i1 or f32 (the dtype of q), got tensor<1x5xi64>}}
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5xi64>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @bad_mask_kind(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{unknown mask_kind 'alibi' (expected one of none, causal, sliding_window, custom, causal_padding, bias)}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "alibi"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @kv_heads_not_dividing(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{num_kv_heads 3 does not divide num_heads 4}}
  %0 = rlx.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 2 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @q_width(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{q width 8 is not num_heads * head_dim = 2 * 3}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 3 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @kv_width(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{k width 8 is not num_kv_heads * head_dim = 1 * 4}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @kv_length(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %w: tensor<1x4x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{k and v lengths differ: k has 5 keys, v has 4}}
  %0 = rlx.attention %q, %k, %w {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x4x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @batch(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %p: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  // expected-error @below {{batch sizes differ: q 2, k 1, v 1}}
  %0 = rlx.attention %p, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<2x3x8xf32>
  func.return %0 : tensor<2x3x8xf32>
}

// -----

func.func @window_missing(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{missing required attribute 'window'}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "sliding_window"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @window_negative(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{attribute 'window' must be >= 0, got -1}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "sliding_window", window = -1 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @window_without_sliding(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{attribute 'window' only applies to mask_kind 'sliding_window', not 'causal'}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", window = 2 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @dtype_mix(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %d: tensor<1x5x8xf64>) -> tensor<1x3x8xf32> {
  // expected-error @below {{q, k and v must share one element type}}
  %0 = rlx.attention %q, %k, %d {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf64>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @int_operands(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %i: tensor<1x3x8xi32>, %i2: tensor<1x5x8xi32>) -> tensor<1x3x8xi32> {
  // expected-error @below {{q must be f32 or f64, got tensor<1x3x8xi32>}}
  %0 = rlx.attention %i, %i2, %i2 {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x3x8xi32>, tensor<1x5x8xi32>, tensor<1x5x8xi32>) -> tensor<1x3x8xi32>
  func.return %0 : tensor<1x3x8xi32>
}

// -----

func.func @softcap_zero(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{attribute 'softcap' must be > 0, got 0.0}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, softcap = 0.0 : f32} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @softcap_negative(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{attribute 'softcap' must be > 0, got -2.0}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, softcap = -2.0 : f32} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @score_scale_int(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{attribute 'score_scale' must be an f32 float, got 2}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, score_scale = 2 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @num_heads_missing(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{missing required attribute 'num_heads'}}
  %0 = rlx.attention %q, %k, %v {head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @num_heads_zero(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{attribute 'num_heads' must be positive, got 0}}
  %0 = rlx.attention %q, %k, %v {num_heads = 0 : i64, head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @rank(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %r: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @below {{q must have rank 3, got tensor<3x8xf32>}}
  %0 = rlx.attention %r, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @unknown_attr(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{unknown attribute 'layout'}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, layout = "bhsd"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @result_type(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x5x8xf32> {
  // expected-error @below {{result type mismatch: expected tensor<1x3x8xf32>, got tensor<1x5x8xf32>}}
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x5x8xf32>
  func.return %0 : tensor<1x5x8xf32>
}
