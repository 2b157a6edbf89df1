// Native (JIT) results of rlx.attention and rlx.attention_backward on constants, checked
// against hand-computed values; the same CHECK lines hold for the interpreter.
// RUN: rlx-run %s --entry forward | FileCheck %s --check-prefix=FWD
// RUN: rlx-run %s --entry forward --interpret | FileCheck %s --check-prefix=FWD
// RUN: rlx-run %s --entry backward | FileCheck %s --check-prefix=BWD
// RUN: rlx-run %s --entry backward --interpret | FileCheck %s --check-prefix=BWD
// RUN: rlx-run %s --entry causal_padding | FileCheck %s --check-prefix=CP
// RUN: rlx-run %s --entry causal_padding --interpret | FileCheck %s --check-prefix=CP

// K rows [1, -2], [0.5, 3], [4, 1]; V rows [1, 2], [3, 4], [5, 9]. With q = 0 every score
// is 0, so each query averages the V rows it may see.
// 0: no mask: (V0 + V1 + V2) / 3 = [3, 5].
// FWD: result 0: tensor<1x2x2xf32>
// FWD-NEXT: {{\[\[\[}}3.000000, 5.000000],
// FWD-NEXT: [3.000000, 5.000000]]]
// 1: causal with S = 3 > S_kv = 2 (q_off = -1): query 0 sees no key and outputs zeros.
// FWD: result 1: tensor<1x3x2xf32>
// FWD-NEXT: {{\[\[\[}}0.000000, 0.000000],
// FWD-NEXT: [1.000000, 2.000000],
// FWD-NEXT: [2.000000, 3.000000]]]
// 2: sliding window 1, S = S_kv = 3: query i sees keys i-1 and i.
// FWD: result 2: tensor<1x3x2xf32>
// FWD-NEXT: {{\[\[\[}}1.000000, 2.000000],
// FWD-NEXT: [2.000000, 3.000000],
// FWD-NEXT: [4.000000, 6.500000]]]
// 3: custom i1 [1, 0, 1] keeps keys 0 and 2; 4: float [0.2, 0.5, 0.9] keeps 1 and 2.
// FWD: result 3: tensor<1x2x2xf32>
// FWD-NEXT: {{\[\[\[}}3.000000, 5.500000],
// FWD-NEXT: [3.000000, 5.500000]]]
// FWD: result 4: tensor<1x2x2xf32>
// FWD-NEXT: {{\[\[\[}}4.000000, 6.500000],
// FWD-NEXT: [4.000000, 6.500000]]]
// 5: bias = log(w): w = [1, 1, 2] gives (V0 + V1 + 2 V2) / 4 = [3.5, 6]; w = [1, 1, 0]
// (a -inf bias entry) drops key 2: [2, 3]; w = 0 everywhere: a fully masked row, zeros.
// FWD: result 5: tensor<1x3x2xf64>
// FWD-NEXT: {{\[\[\[}}3.500000, 6.000000],
// FWD-NEXT: [2.000000, 3.000000],
// FWD-NEXT: [0.000000, 0.000000]]]
// 6: GQA, 2 query heads on 1 kv head (D = 1, scale 1): head 0 has q = 0, (10 + 20) / 2;
// head 1 has q = 1, scores [0, ln 3], weights 1:3 -> 17.5.
// FWD: result 6: tensor<1x1x2xf64>
// FWD-NEXT: {{\[\[\[}}15.000000, 17.500000]]]
// 7: softcap 1 squashes the scores [0, 100 * 0.5] (score_scale 0.5) to [0, tanh(50) = 1]:
// O = e / (1 + e).
// FWD: result 7: tensor<1x1x1xf32>
// FWD-NEXT: {{\[\[\[}}0.731059]]]
func.func @forward() -> (tensor<1x2x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x3x2xf64>, tensor<1x1x2xf64>, tensor<1x1x1xf32>) {
  %q2 = rlx.constant {value = dense<0.0> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %q3 = rlx.constant {value = dense<0.0> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %k2 = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0]]]> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %v2 = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0]]]> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %none = rlx.attention %q2, %k, %v {num_heads = 1 : i64, head_dim = 2 : i64} : (tensor<1x2x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x2x2xf32>
  %causal = rlx.attention %q3, %k2, %v2 {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "causal"} : (tensor<1x3x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x3x2xf32>
  %window = rlx.attention %q3, %k, %v {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "sliding_window", window = 1 : i64} : (tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %m = rlx.constant {value = dense<[[true, false, true]]> : tensor<1x3xi1>} : () -> tensor<1x3xi1>
  %f = rlx.constant {value = dense<[[0.2, 0.5, 0.9]]> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
  %custom = rlx.attention %q2, %k, %v, %m {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "custom"} : (tensor<1x2x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3xi1>) -> tensor<1x2x2xf32>
  %customf = rlx.attention %q2, %k, %v, %f {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "custom"} : (tensor<1x2x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3xf32>) -> tensor<1x2x2xf32>
  %q64 = rlx.constant {value = dense<0.0> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %k64 = rlx.cast %k : (tensor<1x3x2xf32>) -> tensor<1x3x2xf64>
  %v64 = rlx.cast %v : (tensor<1x3x2xf32>) -> tensor<1x3x2xf64>
  %w = rlx.constant {value = dense<[[[[1.0, 1.0, 2.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]]> : tensor<1x1x3x3xf64>} : () -> tensor<1x1x3x3xf64>
  %b = rlx.log %w : (tensor<1x1x3x3xf64>) -> tensor<1x1x3x3xf64>
  %bias = rlx.attention %q64, %k64, %v64, %b {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "bias"} : (tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x1x3x3xf64>) -> tensor<1x3x2xf64>
  %gq = rlx.constant {value = dense<[[[0.0, 1.0]]]> : tensor<1x1x2xf64>} : () -> tensor<1x1x2xf64>
  %gk = rlx.constant {value = dense<[[[0.0], [1.0986122886681098]]]> : tensor<1x2x1xf64>} : () -> tensor<1x2x1xf64>
  %gv = rlx.constant {value = dense<[[[10.0], [20.0]]]> : tensor<1x2x1xf64>} : () -> tensor<1x2x1xf64>
  %gqa = rlx.attention %gq, %gk, %gv {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 1 : i64} : (tensor<1x1x2xf64>, tensor<1x2x1xf64>, tensor<1x2x1xf64>) -> tensor<1x1x2xf64>
  %sq = rlx.constant {value = dense<1.0> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %sk = rlx.constant {value = dense<[[[0.0], [100.0]]]> : tensor<1x2x1xf32>} : () -> tensor<1x2x1xf32>
  %sv = rlx.constant {value = dense<[[[0.0], [1.0]]]> : tensor<1x2x1xf32>} : () -> tensor<1x2x1xf32>
  %softcap = rlx.attention %sq, %sk, %sv {num_heads = 1 : i64, head_dim = 1 : i64, score_scale = 0.5 : f32, softcap = 1.0 : f32} : (tensor<1x1x1xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> tensor<1x1x1xf32>
  func.return %none, %causal, %window, %custom, %customf, %bias, %gqa, %softcap : tensor<1x2x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x3x2xf64>, tensor<1x1x2xf64>, tensor<1x1x1xf32>
}

// Gradients with bias = log(w), w rows [1, 1, 1], [1, 1, 0], [0, 0, 0] and score_scale 1:
// P rows [1/3, 1/3, 1/3], [1/2, 1/2, 0], 0 (fully masked). dO rows [1, 0], [0, 1], [1, 1]
// give dP = dO V^T rows [1, 3, 5], [2, 4, 9], [3, 7, 14] and rowsum(dP P) = 3, 3, 0, so
// dS = P (dP - rowsum) rows [-2/3, 0, 2/3], [-1/2, 1/2, 0], 0.
// 0: dBias = dS.
// BWD: result 0: tensor<1x1x3x3xf64>
// BWD-NEXT: {{\[\[\[\[}}-0.666667,  0.000000,  0.666667],
// BWD-NEXT: [-0.500000,  0.500000,  0.000000],
// BWD-NEXT: [ 0.000000,  0.000000,  0.000000]]]]
// 1: dQ = dS K (q = 0): [-2/3 K0 + 2/3 K2, -1/2 K0 + 1/2 K1, 0].
// BWD: result 1: tensor<1x3x2xf64>
// BWD-NEXT: {{\[\[\[}} 2.000000,  2.000000],
// BWD-NEXT: [-0.250000,  2.500000],
// BWD-NEXT: [ 0.000000,  0.000000]]]
// 2: dV = P^T dO: keys 0 and 1 get dO0 / 3 + dO1 / 2, key 2 gets dO0 / 3.
// BWD: result 2: tensor<1x3x2xf64>
// BWD-NEXT: {{\[\[\[}}0.333333, 0.500000],
// BWD-NEXT: [0.333333, 0.500000],
// BWD-NEXT: [0.333333, 0.000000]]]
// 3: dK = dS^T Q with k = 0 (same P) and q rows [1, 2], [3, -1], [5, 5]:
// [-2/3 q0 - 1/2 q1, 1/2 q1, 2/3 q0].
// BWD: result 3: tensor<1x3x2xf64>
// BWD-NEXT: {{\[\[\[}}-2.166667, -0.833333],
// BWD-NEXT: [ 1.500000, -0.500000],
// BWD-NEXT: [ 0.666667,  1.333333]]]
// 4: GQA dV (the forward's gqa case, dO = [1, 2] per head): P rows [1/2, 1/2] and
// [1/4, 3/4] summed over the two query heads: [1/2 + 2/4, 1/2 + 6/4] = [1, 2].
// BWD: result 4: tensor<1x2x1xf64>
// BWD-NEXT: {{\[\[\[}}1.000000],
// BWD-NEXT: [2.000000]]]
func.func @backward() -> (tensor<1x1x3x3xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x2x1xf64>) {
  %q0 = rlx.constant {value = dense<0.0> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %q = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, -1.0], [5.0, 5.0]]]> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %dy = rlx.constant {value = dense<[[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %w = rlx.constant {value = dense<[[[[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]]> : tensor<1x1x3x3xf64>} : () -> tensor<1x1x3x3xf64>
  %b = rlx.log %w : (tensor<1x1x3x3xf64>) -> tensor<1x1x3x3xf64>
  %db = rlx.attention_backward %q0, %k, %v, %dy, %b {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "bias", score_scale = 1.0 : f32, wrt = "bias"} : (tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x1x3x3xf64>) -> tensor<1x1x3x3xf64>
  %dq = rlx.attention_backward %q0, %k, %v, %dy, %b {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "bias", score_scale = 1.0 : f32, wrt = "q"} : (tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x1x3x3xf64>) -> tensor<1x3x2xf64>
  %dv = rlx.attention_backward %q0, %k, %v, %dy, %b {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "bias", score_scale = 1.0 : f32, wrt = "v"} : (tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x1x3x3xf64>) -> tensor<1x3x2xf64>
  %k0 = rlx.constant {value = dense<0.0> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %dk = rlx.attention_backward %q, %k0, %v, %dy, %b {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "bias", score_scale = 1.0 : f32, wrt = "k"} : (tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x1x3x3xf64>) -> tensor<1x3x2xf64>
  %gq = rlx.constant {value = dense<[[[0.0, 1.0]]]> : tensor<1x1x2xf64>} : () -> tensor<1x1x2xf64>
  %gk = rlx.constant {value = dense<[[[0.0], [1.0986122886681098]]]> : tensor<1x2x1xf64>} : () -> tensor<1x2x1xf64>
  %gv = rlx.constant {value = dense<[[[10.0], [20.0]]]> : tensor<1x2x1xf64>} : () -> tensor<1x2x1xf64>
  %gdy = rlx.constant {value = dense<[[[1.0, 2.0]]]> : tensor<1x1x2xf64>} : () -> tensor<1x1x2xf64>
  %gdv = rlx.attention_backward %gq, %gk, %gv, %gdy {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 1 : i64, wrt = "v"} : (tensor<1x1x2xf64>, tensor<1x2x1xf64>, tensor<1x2x1xf64>, tensor<1x1x2xf64>) -> tensor<1x2x1xf64>
  func.return %db, %dq, %dv, %dk, %gdv : tensor<1x1x3x3xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x2x1xf64>
}

// causal_padding: query i sees keys <= i that the mask [1, 0, 1] keeps; with q = 0 each
// averages its V rows [1, 2], [3, 4], [5, 9]: q0 and q1 see key 0, q2 keys 0 and 2.
// CP: result 0: tensor<1x3x2xf32>
// CP-NEXT: {{\[\[\[}}1.000000, 2.000000],
// CP-NEXT: [1.000000, 2.000000],
// CP-NEXT: [3.000000, 5.500000]]]
func.func @causal_padding() -> tensor<1x3x2xf32> {
  %q = rlx.constant {value = dense<0.0> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %m = rlx.constant {value = dense<[[true, false, true]]> : tensor<1x3xi1>} : () -> tensor<1x3xi1>
  %y = rlx.attention %q, %k, %v, %m {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "causal_padding"} : (tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3xi1>) -> tensor<1x3x2xf32>
  func.return %y : tensor<1x3x2xf32>
}
