// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS

// GRADS: check-grads @causal_gqa: OK
// GRADS-NEXT: d/dq: max relative error
// GRADS-NEXT: d/dk: max relative error
// GRADS-NEXT: d/dv: max relative error
// GRADS: check-grads @bias_scale_softcap: OK
// GRADS-NEXT: d/dq: max relative error
// GRADS-NEXT: d/dk: max relative error
// GRADS-NEXT: d/dv: max relative error
// GRADS-NEXT: d/dbias: max relative error
// GRADS: check-grads @custom_mask: OK
// GRADS-NEXT: d/dq: max relative error
// GRADS-NEXT: d/dk: max relative error
// GRADS-NEXT: d/dv: max relative error
// GRADS: check-grads @causal_padding: OK
// GRADS-NEXT: d/dq: max relative error
// GRADS-NEXT: d/dk: max relative error
// GRADS-NEXT: d/dv: max relative error
// GRADS: check-grads @window_after_tanh: OK
// GRADS-NEXT: d/dx: max relative error
// GRADS-NOT: FAILED

// GQA (4 query heads on 2 kv heads), causal with S < S_kv: one backward op per
// operand, every forward attribute carried (incl. score_scale and softcap), operands
// q, k, v and the output cotangent; each result has its operand's type.
// CHECK-LABEL: func.func @causal_gqa_grad(
// CHECK-SAME: %d_output: tensor<2x3x16xf32>
// CHECK: %[[Y:.*]] = rlx.attention %q, %k, %v
// CHECK-DAG: %[[DQ:.*]] = rlx.attention_backward %q, %k, %v, %d_output {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", score_scale = 3.000000e-01 : f32, softcap = 2.000000e+00 : f32, wrt = "q"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
// CHECK-DAG: %[[DK:.*]] = rlx.attention_backward %q, %k, %v, %d_output {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", score_scale = 3.000000e-01 : f32, softcap = 2.000000e+00 : f32, wrt = "k"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x5x8xf32>
// CHECK-DAG: %[[DV:.*]] = rlx.attention_backward %q, %k, %v, %d_output {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", score_scale = 3.000000e-01 : f32, softcap = 2.000000e+00 : f32, wrt = "v"} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x3x16xf32>) -> tensor<2x5x8xf32>
// CHECK: func.return %[[Y]], %[[DQ]], %[[DK]], %[[DV]] : tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>
func.func @causal_gqa(%q: tensor<2x3x16xf32> {rlx.name = "q", rlx.param}, %k: tensor<2x5x8xf32> {rlx.name = "k", rlx.param},
                      %v: tensor<2x5x8xf32> {rlx.name = "v", rlx.param}) -> tensor<2x3x16xf32> {
  %y = rlx.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", score_scale = 0.3 : f32, softcap = 2.0 : f32} : (tensor<2x3x16xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x16xf32>
  func.return %y : tensor<2x3x16xf32>
}

// A learned additive bias gets its own gradient (wrt = "bias", SPEC 9.4); the
// loss is a scalar, so the cotangent of the attention output is an expanded seed.
// CHECK-LABEL: func.func @bias_scale_softcap_grad(
// CHECK: %[[SEED:.*]] = rlx.expand
// CHECK-DAG: %[[DQ:.*]] = rlx.attention_backward %q, %k, %v, %[[SEED]], %bias {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", score_scale = 5.000000e-01 : f32, softcap = 3.000000e+00 : f32, wrt = "q"}
// CHECK-DAG: %[[DK:.*]] = rlx.attention_backward %q, %k, %v, %[[SEED]], %bias {{{.*}}wrt = "k"}
// CHECK-DAG: %[[DV:.*]] = rlx.attention_backward %q, %k, %v, %[[SEED]], %bias {{{.*}}wrt = "v"}
// CHECK-DAG: %[[DB:.*]] = rlx.attention_backward %q, %k, %v, %[[SEED]], %bias {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", score_scale = 5.000000e-01 : f32, softcap = 3.000000e+00 : f32, wrt = "bias"} : (tensor<1x3x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x3x8xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK: func.return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]], %[[DB]] :
func.func @bias_scale_softcap(%q: tensor<1x3x8xf32> {rlx.name = "q", rlx.param}, %k: tensor<1x4x8xf32> {rlx.name = "k", rlx.param},
                              %v: tensor<1x4x8xf32> {rlx.name = "v", rlx.param}, %bias: tensor<1x2x3x4xf32> {rlx.name = "bias", rlx.param}) -> tensor<f32> {
  %y = rlx.attention %q, %k, %v, %bias {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", score_scale = 0.5 : f32, softcap = 3.0 : f32} : (tensor<1x3x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x2x3x4xf32>) -> tensor<1x3x8xf32>
  %l = rlx.reduce_sum %y {axes = array<i64: 0, 1, 2>} : (tensor<1x3x8xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// A custom key-padding mask is passed to every backward op but gets no gradient
// (it is an i1 input here; no fourth backward op is emitted).
// CHECK-LABEL: func.func @custom_mask_grad(
// CHECK-COUNT-3: rlx.attention_backward %q, %k, %v, %d_output, %m {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, mask_kind = "custom", wrt = "{{[qkv]}}"}
// CHECK-NOT: rlx.attention_backward
// CHECK: func.return
func.func @custom_mask(%q: tensor<2x4x8xf32> {rlx.name = "q", rlx.param}, %k: tensor<2x3x4xf32> {rlx.name = "k", rlx.param},
                       %v: tensor<2x3x4xf32> {rlx.name = "v", rlx.param}, %m: tensor<2x3xi1> {rlx.name = "m"}) -> tensor<2x4x8xf32> {
  %y = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<2x4x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3xi1>) -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// Causal plus key padding: the mask reaches each backward op, as for custom.
// CHECK-LABEL: func.func @causal_padding_grad(
// CHECK-COUNT-3: rlx.attention_backward %q, %k, %v, %d_output, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal_padding", wrt = "{{[qkv]}}"}
func.func @causal_padding(%q: tensor<2x4x8xf32> {rlx.name = "q", rlx.param}, %k: tensor<2x4x8xf32> {rlx.name = "k", rlx.param},
                          %v: tensor<2x4x8xf32> {rlx.name = "v", rlx.param}, %m: tensor<2x4xi1> {rlx.name = "m"}) -> tensor<2x4x8xf32> {
  %y = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal_padding"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xi1>) -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// Self-attention of one input: q, k and v are the same value, so the three
// backward results are summed into its gradient (then through tanh).
// CHECK-LABEL: func.func @window_after_tanh_grad(
// CHECK: %[[T:.*]] = rlx.tanh %x
// CHECK-DAG: %[[DV:.*]] = rlx.attention_backward %[[T]], %[[T]], %[[T]], %d_output {num_heads = 2 : i64, head_dim = 2 : i64, mask_kind = "sliding_window", window = 1 : i64, wrt = "v"}
// CHECK-DAG: %[[DK:.*]] = rlx.attention_backward %[[T]], %[[T]], %[[T]], %d_output {{{.*}}wrt = "k"}
// CHECK-DAG: %[[DQ:.*]] = rlx.attention_backward %[[T]], %[[T]], %[[T]], %d_output {{{.*}}wrt = "q"}
// CHECK: %[[S1:.*]] = rlx.add %[[DQ]], %[[DK]]
// CHECK: %[[S2:.*]] = rlx.add %[[S1]], %[[DV]]
// CHECK: rlx.activation_backward %x, %[[S2]] {kind = "tanh"}
func.func @window_after_tanh(%x: tensor<1x5x4xf32> {rlx.name = "x", rlx.param}) -> tensor<1x5x4xf32> {
  %t = rlx.tanh %x : (tensor<1x5x4xf32>) -> tensor<1x5x4xf32>
  %y = rlx.attention %t, %t, %t {num_heads = 2 : i64, head_dim = 2 : i64, mask_kind = "sliding_window", window = 1 : i64} : (tensor<1x5x4xf32>, tensor<1x5x4xf32>, tensor<1x5x4xf32>) -> tensor<1x5x4xf32>
  func.return %y : tensor<1x5x4xf32>
}
