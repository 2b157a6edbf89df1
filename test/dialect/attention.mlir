// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// CHECK-LABEL: func.func @no_mask
// CHECK: rlx.attention %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x8xf32>
// GENERIC-LABEL: "no_mask"
// GENERIC: "rlx.attention"(%{{.*}}, %{{.*}}, %{{.*}}) {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x8xf32>
// GENERIC-LABEL: "custom"
// GENERIC: "rlx.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom"}
// UPSTREAM-LABEL: func.func @no_mask
// UPSTREAM: "rlx.attention"(%{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, num_heads = 2 : i64} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x8xf32>
func.func @no_mask(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>) -> tensor<2x3x8xf32> {
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x8xf32>
  func.return %0 : tensor<2x3x8xf32>
}

// CHECK-LABEL: func.func @causal_gqa
// CHECK: rlx.attention %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal"} : (tensor<1x3x16xf64>, tensor<1x6x8xf64>, tensor<1x6x8xf64>) -> tensor<1x3x16xf64>
// UPSTREAM-LABEL: func.func @causal_gqa
// UPSTREAM: "rlx.attention"({{.*}}) {head_dim = 4 : i64, mask_kind = "causal", num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x3x16xf64>, tensor<1x6x8xf64>, tensor<1x6x8xf64>) -> tensor<1x3x16xf64>
func.func @causal_gqa(%q: tensor<1x3x16xf64>, %k: tensor<1x6x8xf64>, %v: tensor<1x6x8xf64>) -> tensor<1x3x16xf64> {
  %0 = rlx.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal"} : (tensor<1x3x16xf64>, tensor<1x6x8xf64>, tensor<1x6x8xf64>) -> tensor<1x3x16xf64>
  func.return %0 : tensor<1x3x16xf64>
}

// CHECK-LABEL: func.func @sliding_window
// CHECK: rlx.attention %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "sliding_window", window = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x8xf32>
// UPSTREAM-LABEL: func.func @sliding_window
// UPSTREAM: "rlx.attention"({{.*}}) {head_dim = 2 : i64, mask_kind = "sliding_window", num_heads = 4 : i64, num_kv_heads = 1 : i64, window = 2 : i64}
func.func @sliding_window(%q: tensor<2x4x8xf32>, %k: tensor<2x4x2xf32>, %v: tensor<2x4x2xf32>) -> tensor<2x4x8xf32> {
  %0 = rlx.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "sliding_window", window = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<2x4x8xf32>
  func.return %0 : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @custom
// CHECK: rlx.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5xi1>) -> tensor<1x3x8xf32>
// CHECK: rlx.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5xf32>) -> tensor<1x3x8xf32>
// UPSTREAM-LABEL: func.func @custom
// UPSTREAM: "rlx.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 4 : i64, mask_kind = "custom", num_heads = 2 : i64} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5xi1>) -> tensor<1x3x8xf32>
func.func @custom(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %m: tensor<1x5xi1>, %f: tensor<1x5xf32>) -> tensor<1x3x8xf32> {
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5xi1>) -> tensor<1x3x8xf32>
  %1 = rlx.attention %0, %k, %v, %f {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5xf32>) -> tensor<1x3x8xf32>
  func.return %1 : tensor<1x3x8xf32>
}

// Causal and key padding together: one op, the [B, S_kv] mask as for custom.
// CHECK-LABEL: func.func @causal_padding
// CHECK: rlx.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal_padding"} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5xi1>) -> tensor<2x5x8xf32>
func.func @causal_padding(%q: tensor<2x5x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>, %m: tensor<2x5xi1>) -> tensor<2x5x8xf32> {
  %0 = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal_padding"} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5xi1>) -> tensor<2x5x8xf32>
  func.return %0 : tensor<2x5x8xf32>
}

// CHECK-LABEL: func.func @bias_scale_softcap
// CHECK: rlx.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", score_scale = 5.000000e-01 : f32, softcap = 3.000000e+01 : f32} : (tensor<2x3x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x3x4xf32>) -> tensor<2x3x8xf32>
// UPSTREAM-LABEL: func.func @bias_scale_softcap
// UPSTREAM: "rlx.attention"({{.*}}) {head_dim = 4 : i64, mask_kind = "bias", num_heads = 2 : i64, score_scale = 5.000000e-01 : f32, softcap = 3.000000e+01 : f32} : (tensor<2x3x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x3x4xf32>) -> tensor<2x3x8xf32>
func.func @bias_scale_softcap(%q: tensor<2x3x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %b: tensor<2x2x3x4xf32>) -> tensor<2x3x8xf32> {
  %0 = rlx.attention %q, %k, %v, %b {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", score_scale = 0.5 : f32, softcap = 30.0 : f32} : (tensor<2x3x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x3x4xf32>) -> tensor<2x3x8xf32>
  func.return %0 : tensor<2x3x8xf32>
}

// The mask kind spelled out as "none" parses; the generic form keeps it.
// CHECK-LABEL: func.func @explicit_none
// CHECK: rlx.attention %{{.*}} {num_heads = 1 : i64, head_dim = 8 : i64, mask_kind = "none"} : (tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x1x8xf32>
func.func @explicit_none(%q: tensor<1x1x8xf32>, %k: tensor<1x7x8xf32>, %v: tensor<1x7x8xf32>) -> tensor<1x1x8xf32> {
  %0 = rlx.attention %q, %k, %v {num_heads = 1 : i64, head_dim = 8 : i64, mask_kind = "none"} : (tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x7x8xf32>) -> tensor<1x1x8xf32>
  func.return %0 : tensor<1x1x8xf32>
}
