// RUN: rlx-run %s --entry uniform --interpret | FileCheck %s --check-prefix=UNIFORM
// RUN: rlx-run %s --entry causal --interpret | FileCheck %s --check-prefix=CAUSAL
// RUN: rlx-run %s --entry causal_decode --interpret | FileCheck %s --check-prefix=DECODE
// RUN: rlx-run %s --entry causal_long_query --interpret | FileCheck %s --check-prefix=LONGQ
// RUN: rlx-run %s --entry sliding_window --interpret | FileCheck %s --check-prefix=WINDOW
// RUN: rlx-run %s --entry custom --interpret | FileCheck %s --check-prefix=CUSTOM
// RUN: rlx-run %s --entry bias --interpret | FileCheck %s --check-prefix=BIAS
// RUN: rlx-run %s --entry gqa --interpret | FileCheck %s --check-prefix=GQA
// RUN: rlx-run %s --entry softcap --interpret | FileCheck %s --check-prefix=SOFTCAP

// q = 0 makes every score 0: each query averages the rows of V
// ([1, 2], [3, 4], [5, 9] -> [3, 5]).
// UNIFORM: result 0: tensor<1x2x2xf32>
// UNIFORM-NEXT: {{\[\[\[}}3.000000, 5.000000],
// UNIFORM-NEXT: [3.000000, 5.000000]]]
func.func @uniform() -> tensor<1x2x2xf32> {
  %q = rlx.constant {value = dense<0.0> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %o = rlx.attention %q, %k, %v {num_heads = 1 : i64, head_dim = 2 : i64} : (tensor<1x2x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x2x2xf32>
  func.return %o : tensor<1x2x2xf32>
}

// Causal, S = S_kv: row i averages V rows 0..i; the first row is V row 0.
// CAUSAL: result 0: tensor<1x3x2xf32>
// CAUSAL-NEXT: {{\[\[\[}}1.000000, 2.000000],
// CAUSAL-NEXT: [2.000000, 3.000000],
// CAUSAL-NEXT: [3.000000, 5.000000]]]
func.func @causal() -> tensor<1x3x2xf32> {
  %q = rlx.constant {value = dense<0.0> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %o = rlx.attention %q, %k, %v {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "causal"} : (tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  func.return %o : tensor<1x3x2xf32>
}

// Causal decode (S = 1 < S_kv = 3): the last query is aligned with the last key and
// sees all of them.
// DECODE: result 0: tensor<1x1x2xf32>
// DECODE-NEXT: {{\[\[\[}}3.000000, 5.000000]]]
func.func @causal_decode() -> tensor<1x1x2xf32> {
  %q = rlx.constant {value = dense<0.0> : tensor<1x1x2xf32>} : () -> tensor<1x1x2xf32>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %o = rlx.attention %q, %k, %v {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "causal"} : (tensor<1x1x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x1x2xf32>
  func.return %o : tensor<1x1x2xf32>
}

// Causal with S = 3 > S_kv = 2: q_off = -1, so query 0 sees no key and outputs zeros.
// LONGQ: result 0: tensor<1x3x2xf32>
// LONGQ-NEXT: {{\[\[\[}}0.000000, 0.000000],
// LONGQ-NEXT: [1.000000, 2.000000],
// LONGQ-NEXT: [2.000000, 3.000000]]]
func.func @causal_long_query() -> tensor<1x3x2xf32> {
  %q = rlx.constant {value = dense<0.0> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0]]]> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0]]]> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %o = rlx.attention %q, %k, %v {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "causal"} : (tensor<1x3x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x3x2xf32>
  func.return %o : tensor<1x3x2xf32>
}

// Sliding window 1: query i sees keys i-1 and i.
// WINDOW: result 0: tensor<1x3x2xf32>
// WINDOW-NEXT: {{\[\[\[}}1.000000, 2.000000],
// WINDOW-NEXT: [2.000000, 3.000000],
// WINDOW-NEXT: [4.000000, 6.500000]]]
func.func @sliding_window() -> tensor<1x3x2xf32> {
  %q = rlx.constant {value = dense<0.0> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %o = rlx.attention %q, %k, %v {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "sliding_window", window = 1 : i64} : (tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  func.return %o : tensor<1x3x2xf32>
}

// Custom key-padding masks: i1 [1, 0, 1] keeps keys 0 and 2; float [0.2, 0.5, 0.9]
// keeps keys 1 and 2 (>= 0.5); every query of a batch row shares the mask.
// CUSTOM: result 0: tensor<1x2x2xf32>
// CUSTOM-NEXT: {{\[\[\[}}3.000000, 5.500000],
// CUSTOM-NEXT: [3.000000, 5.500000]]]
// CUSTOM: result 1: tensor<1x2x2xf32>
// CUSTOM-NEXT: {{\[\[\[}}4.000000, 6.500000],
// CUSTOM-NEXT: [4.000000, 6.500000]]]
func.func @custom() -> (tensor<1x2x2xf32>, tensor<1x2x2xf32>) {
  %q = rlx.constant {value = dense<0.0> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %m = rlx.constant {value = dense<[[true, false, true]]> : tensor<1x3xi1>} : () -> tensor<1x3xi1>
  %f = rlx.constant {value = dense<[[0.2, 0.5, 0.9]]> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
  %o = rlx.attention %q, %k, %v, %m {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "custom"} : (tensor<1x2x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3xi1>) -> tensor<1x2x2xf32>
  %p = rlx.attention %q, %k, %v, %f {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "custom"} : (tensor<1x2x2xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3xf32>) -> tensor<1x2x2xf32>
  func.return %o, %p : tensor<1x2x2xf32>, tensor<1x2x2xf32>
}

// Additive bias [0, 0, ln 2] gives weights 1:1:2, so (V0 + V1 + 2 V2) / 4 = [3.5, 6];
// the second query's bias [ln 3, 0, 0] gives 3:1:1, (3 V0 + V1 + V2) / 5 = [2.2, 3.8].
// BIAS: result 0: tensor<1x2x2xf64>
// BIAS-NEXT: {{\[\[\[}}3.500000, 6.000000],
// BIAS-NEXT: [2.200000, 3.800000]]]
func.func @bias() -> tensor<1x2x2xf64> {
  %q = rlx.constant {value = dense<0.0> : tensor<1x2x2xf64>} : () -> tensor<1x2x2xf64>
  %k = rlx.constant {value = dense<[[[1.0, -2.0], [0.5, 3.0], [4.0, 1.0]]]> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %v = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]]> : tensor<1x3x2xf64>} : () -> tensor<1x3x2xf64>
  %b = rlx.constant {value = dense<[[[[0.0, 0.0, 0.69314718055994530942], [1.0986122886681098, 0.0, 0.0]]]]> : tensor<1x1x2x3xf64>} : () -> tensor<1x1x2x3xf64>
  %o = rlx.attention %q, %k, %v, %b {num_heads = 1 : i64, head_dim = 2 : i64, mask_kind = "bias"} : (tensor<1x2x2xf64>, tensor<1x3x2xf64>, tensor<1x3x2xf64>, tensor<1x1x2x3xf64>) -> tensor<1x2x2xf64>
  func.return %o : tensor<1x2x2xf64>
}

// Grouped-query: 2 query heads share 1 kv head (D = 1, scale 1). Head 0 has q = 0 (uniform:
// (10 + 20) / 2 = 15); head 1 has q = 1, scores [0, ln 3], weights 1:3 -> 17.5.
// GQA: result 0: tensor<1x1x2xf64>
// GQA-NEXT: {{\[\[\[}}15.000000, 17.500000]]]
func.func @gqa() -> tensor<1x1x2xf64> {
  %q = rlx.constant {value = dense<[[[0.0, 1.0]]]> : tensor<1x1x2xf64>} : () -> tensor<1x1x2xf64>
  %k = rlx.constant {value = dense<[[[0.0], [1.0986122886681098]]]> : tensor<1x2x1xf64>} : () -> tensor<1x2x1xf64>
  %v = rlx.constant {value = dense<[[[10.0], [20.0]]]> : tensor<1x2x1xf64>} : () -> tensor<1x2x1xf64>
  %o = rlx.attention %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 1 : i64} : (tensor<1x1x2xf64>, tensor<1x2x1xf64>, tensor<1x2x1xf64>) -> tensor<1x1x2xf64>
  func.return %o : tensor<1x1x2xf64>
}

// softcap 1 squashes the scores [0, 100 * 0.5] to [0, tanh(50) = 1], so P = [1, e] / (1 + e)
// and O = e / (1 + e) = 0.731059 (without the cap it would be 1.0). score_scale 0.5
// replaces the default 1/sqrt(1).
// SOFTCAP: result 0: tensor<1x1x1xf32>
// SOFTCAP-NEXT: {{\[\[\[}}0.731059]]]
func.func @softcap() -> tensor<1x1x1xf32> {
  %q = rlx.constant {value = dense<1.0> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %k = rlx.constant {value = dense<[[[0.0], [100.0]]]> : tensor<1x2x1xf32>} : () -> tensor<1x2x1xf32>
  %v = rlx.constant {value = dense<[[[0.0], [1.0]]]> : tensor<1x2x1xf32>} : () -> tensor<1x2x1xf32>
  %o = rlx.attention %q, %k, %v {num_heads = 1 : i64, head_dim = 1 : i64, score_scale = 0.5 : f32, softcap = 1.0 : f32} : (tensor<1x1x1xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> tensor<1x1x1xf32>
  func.return %o : tensor<1x1x1xf32>
}
