// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: attention-backward-invalid.mlir:7:3: error: 'rlx.attention_backward' op missing required attribute 'wrt'

func.func @missing_wrt(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{missing required attribute 'wrt'}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @unknown_wrt(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{unknown wrt 'query' (expected one of q, k, v, bias)}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, wrt = "query"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @bias_wrt_without_bias(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>, %m: tensor<1x5xi1>) -> tensor<1x5xi1> {
  // expected-error @below {{wrt 'bias' needs mask_kind 'bias', not 'custom'}}
  %0 = rlx.attention_backward %q, %k, %v, %dy, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom", wrt = "bias"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>, tensor<1x5xi1>) -> tensor<1x5xi1>
  func.return %0 : tensor<1x5xi1>
}

// -----

func.func @wrong_result_for_wrt(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{result type mismatch: expected tensor<1x5x8xf32>, got tensor<1x3x8xf32>}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, wrt = "k"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @dy_not_like_q(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{dy must have the type of q (tensor<1x3x8xf32>), got tensor<1x5x8xf32>}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @dy_dtype(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf64>) -> tensor<1x3x8xf32> {
  // expected-error @below {{dy must have the type of q (tensor<1x3x8xf32>), got tensor<1x3x8xf64>}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf64>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @missing_dy(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{Expected 4 or 5 operands, but got 3}}
  %0 = rlx.attention_backward %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64, wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @missing_bias(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{mask_kind 'bias' needs a mask operand (q, k, v, mask)}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @mask_for_causal(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>, %m: tensor<1x5xi1>) -> tensor<1x3x8xf32> {
  // expected-error @below {{mask_kind 'causal' takes no mask operand, got 4 operands}}
  %0 = rlx.attention_backward %q, %k, %v, %dy, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>, tensor<1x5xi1>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @bias_shape(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>, %b: tensor<1x1x3x5xf32>) -> tensor<1x1x3x5xf32> {
  // expected-error @below {{'bias' mask must have shape [1, 2, 3, 5], got [1, 1, 3, 5]}}
  %0 = rlx.attention_backward %q, %k, %v, %dy, %b {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", wrt = "bias"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>, tensor<1x1x3x5xf32>) -> tensor<1x1x3x5xf32>
  func.return %0 : tensor<1x1x3x5xf32>
}

// -----

func.func @gqa_width(%q: tensor<1x3x16xf32>, %k: tensor<1x5x16xf32>, %v: tensor<1x5x16xf32>, %dy: tensor<1x3x16xf32>) -> tensor<1x5x16xf32> {
  // expected-error @below {{k width 16 is not num_kv_heads * head_dim = 2 * 4}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, wrt = "k"} : (tensor<1x3x16xf32>, tensor<1x5x16xf32>, tensor<1x5x16xf32>, tensor<1x3x16xf32>) -> tensor<1x5x16xf32>
  func.return %0 : tensor<1x5x16xf32>
}

// -----

func.func @bad_softcap(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{attribute 'softcap' must be > 0, got 0.0}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, softcap = 0.0 : f32, wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @window_needs_sliding(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{attribute 'window' only applies to mask_kind 'sliding_window', not 'causal'}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", window = 2 : i64, wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}

// -----

func.func @unknown_attr(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // expected-error @below {{unknown attribute 'layout'}}
  %0 = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, layout = "bshd", wrt = "q"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}
