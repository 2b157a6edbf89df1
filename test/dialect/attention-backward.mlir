// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// The result has the type of the wrt operand: q, k or v (GQA: k and v are narrower).
// CHECK-LABEL: func.func @qkv_gqa
// CHECK: rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "q"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
// CHECK: rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "k"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x5x8xf32>
// CHECK: rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "v"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x5x8xf32>
// GENERIC-LABEL: "qkv_gqa"
// GENERIC: "rlx.attention_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "q"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
// UPSTREAM-LABEL: func.func @qkv_gqa
// UPSTREAM: "rlx.attention_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, mask_kind = "causal", num_heads = 4 : i64, num_kv_heads = 2 : i64, wrt = "k"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x5x8xf32>
func.func @qkv_gqa(%q: tensor<2x3x16xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>, %dy: tensor<2x3x16xf32>) -> (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) {
  %dq = rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "q"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  %dk = rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "k"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x5x8xf32>
  %dv = rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "v"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x5x8xf32>
  func.return %dq, %dk, %dv : tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>
}

// wrt = "bias": the result has the bias type; score_scale and softcap are kept.
// CHECK-LABEL: func.func @bias_scale_softcap
// CHECK: rlx.attention_backward %q, %k, %v, %dy, %b {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", score_scale = 5.000000e-01 : f32, softcap = 3.000000e+01 : f32, wrt = "bias"} : (tensor<1x3x8xf64>, tensor<1x4x8xf64>, tensor<1x4x8xf64>, tensor<1x3x8xf64>, tensor<1x2x3x4xf64>) -> tensor<1x2x3x4xf64>
// GENERIC-LABEL: "bias_scale_softcap"
// GENERIC: "rlx.attention_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", score_scale = 5.000000e-01 : f32, softcap = 3.000000e+01 : f32, wrt = "bias"}
// UPSTREAM-LABEL: func.func @bias_scale_softcap
// UPSTREAM: "rlx.attention_backward"({{.*}}) {head_dim = 4 : i64, mask_kind = "bias", num_heads = 2 : i64, score_scale = 5.000000e-01 : f32, softcap = 3.000000e+01 : f32, wrt = "bias"} : (tensor<1x3x8xf64>, tensor<1x4x8xf64>, tensor<1x4x8xf64>, tensor<1x3x8xf64>, tensor<1x2x3x4xf64>) -> tensor<1x2x3x4xf64>
func.func @bias_scale_softcap(%q: tensor<1x3x8xf64>, %k: tensor<1x4x8xf64>, %v: tensor<1x4x8xf64>, %dy: tensor<1x3x8xf64>, %b: tensor<1x2x3x4xf64>) -> tensor<1x2x3x4xf64> {
  %db = rlx.attention_backward %q, %k, %v, %dy, %b {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", score_scale = 0.5 : f32, softcap = 30.0 : f32, wrt = "bias"} : (tensor<1x3x8xf64>, tensor<1x4x8xf64>, tensor<1x4x8xf64>, tensor<1x3x8xf64>, tensor<1x2x3x4xf64>) -> tensor<1x2x3x4xf64>
  func.return %db : tensor<1x2x3x4xf64>
}

// A custom key-padding mask (i1) and a sliding window, each with its operands.
// CHECK-LABEL: func.func @custom_and_window
// CHECK: rlx.attention_backward %q, %k, %v, %dy, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom", wrt = "k"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>, tensor<1x5xi1>) -> tensor<1x5x8xf32>
// CHECK: rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "sliding_window", window = 1 : i64, wrt = "v"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x5x8xf32>
// UPSTREAM-LABEL: func.func @custom_and_window
// UPSTREAM: "rlx.attention_backward"({{.*}}) {head_dim = 4 : i64, mask_kind = "custom", num_heads = 2 : i64, wrt = "k"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>, tensor<1x5xi1>) -> tensor<1x5x8xf32>
func.func @custom_and_window(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x8xf32>, %m: tensor<1x5xi1>) -> (tensor<1x5x8xf32>, tensor<1x5x8xf32>) {
  %dk = rlx.attention_backward %q, %k, %v, %dy, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom", wrt = "k"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>, tensor<1x5xi1>) -> tensor<1x5x8xf32>
  %dv = rlx.attention_backward %q, %k, %v, %dy {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "sliding_window", window = 1 : i64, wrt = "v"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>) -> tensor<1x5x8xf32>
  func.return %dk, %dv : tensor<1x5x8xf32>, tensor<1x5x8xf32>
}
