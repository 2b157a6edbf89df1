// Lowering of rlx.attention and rlx.attention_backward: rlx -> linalg on tensors, and on
// to LLVM. An attention at the top of a function is one scf.forall over (batch, kv head);
// each iteration takes its head group's slices (extract_slice, no copy), views them grouped
// (expand_shape): q [1, S, 1, G, D], k and v [1, S_kv, 1, D]; scores and probabilities
// [1, 1, G, S, S_kv] stay per head. The contractions are linalg.generics that read the
// slices in place (no transpose, no repeated kv heads). The forward also writes P
// [B, Hkv, G, S, S_kv] when gradient ops of the same attention follow; their forall reads
// it. With RLX_CAUSAL_BLOCKS=2, causal heads of >= 256 rows are cut into row blocks that
// skip the keys no row of the block sees (@causal_blocks; the default is one block).
// RUN: env RLX_NUM_THREADS=1 RLX_CAUSAL_BLOCKS=2 rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: env RLX_NUM_THREADS=2 rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=CHUNK
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM

// NORLX-NOT: {{= rlx\.}}
// NORLX-NOT: linalg.transpose
// LLVM-NOT: linalg.
// LLVM-NOT: memref.

// GQA (4 query heads on 2 kv heads), causal with S = 3 < S_kv = 5: key t is kept iff
// t <= s + 2 (linalg.index 3 is the query, 4 the key); masked softmax over d4; O = P V.
// CHECK-LABEL: func.func @gqa_causal
// CHECK: "scf.forall"(%{{.*}}) <{staticLowerBound = array<i64: 0, 0>, staticUpperBound = array<i64: 2, 2>, staticStep = array<i64: 1, 1>, operandSegmentSizes = array<i32: 0, 0, 0, 1>}>
// CHECK-NEXT: ^bb0(%[[B:.*]]: index, %[[H:.*]]: index, %[[OUT:.*]]: tensor<2x3x32xf32>):
// CHECK: %[[QCOL:.*]] = arith.muli %[[H]], %{{.*}} : index
// CHECK: %[[KCOL:.*]] = arith.muli %[[H]], %{{.*}} : index
// CHECK: %[[QS:.*]] = tensor.extract_slice %q[%[[B]], 0, %[[QCOL]]] [1, 3, 16] [1, 1, 1] : tensor<2x3x32xf32> to tensor<1x3x16xf32>
// CHECK: %[[KS:.*]] = tensor.extract_slice %k[%[[B]], 0, %[[KCOL]]] [1, 5, 8] [1, 1, 1] : tensor<2x5x16xf32> to tensor<1x5x8xf32>
// CHECK: tensor.extract_slice %v[%[[B]], 0, %[[KCOL]]] [1, 5, 8]
// CHECK: %[[Q:.*]] = tensor.expand_shape %[[QS]] {{\[\[}}0 : i64], [1 : i64], [2 : i64, 3 : i64, 4 : i64]] output_shape [1, 3, 1, 2, 8] : tensor<1x3x16xf32> into tensor<1x3x1x2x8xf32>
// CHECK: %[[K:.*]] = tensor.expand_shape %[[KS]] {{\[\[}}0 : i64], [1 : i64], [2 : i64, 3 : i64]] output_shape [1, 5, 1, 8] : tensor<1x5x8xf32> into tensor<1x5x1x8xf32>
// CHECK: %[[V:.*]] = tensor.expand_shape
// CHECK: %[[QK:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d4, d1, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] : tensor<1x3x1x2x8xf32>, tensor<1x5x1x8xf32>) outs(%{{.*}} : tensor<1x1x2x3x5xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[LOGITS:.*]] = linalg.generic {{.*}} ins(%[[QK]] : tensor<1x1x2x3x5xf32>)
// CHECK: arith.constant 0.353553385 : f32
// CHECK: arith.mulf
// CHECK: %[[KEY:.*]] = linalg.index 4 : index
// CHECK: %[[QUERY:.*]] = linalg.index 3 : index
// CHECK: %[[QI:.*]] = arith.index_cast %[[QUERY]] : index to i64
// CHECK: %[[OFF:.*]] = arith.constant 2 : i64
// CHECK: %[[ABSQ:.*]] = arith.addi %[[QI]], %[[OFF]] : i64
// CHECK: arith.cmpi sle, %{{.*}}, %[[ABSQ]] : i64
// CHECK: arith.andi
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[LOGITS]] : tensor<1x1x2x3x5xf32>) outs(%{{.*}} : tensor<1x1x2x3xf32>)
// CHECK: arith.maximumf
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[LOGITS]], %[[MAX]] : tensor<1x1x2x3x5xf32>, tensor<1x1x2x3xf32>)
// f32 exp is the emitter's polynomial (2^n from the exponent bits)
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[W]] : tensor<1x1x2x3x5xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[SUM]] : tensor<1x1x2x3x5xf32>, tensor<1x1x2x3xf32>)
// CHECK: arith.cmpf ogt
// CHECK: arith.divf
// CHECK: %[[O:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d3, d1, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d2, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]], %[[V]] : tensor<1x1x2x3x5xf32>, tensor<1x5x1x8xf32>) outs(%{{.*}} : tensor<1x3x1x2x8xf32>)
// CHECK: %[[OT:.*]] = tensor.collapse_shape %[[O]] {{\[\[}}0 : i64], [1 : i64], [2 : i64, 3 : i64, 4 : i64]] : tensor<1x3x1x2x8xf32> into tensor<1x3x16xf32>
// CHECK: "scf.forall.in_parallel"() ({
// CHECK-NEXT: "tensor.parallel_insert_slice"(%[[OT]], %[[OUT]], %[[B]], %[[QCOL]]) <{static_offsets = array<i64: -9223372036854775808, 0, -9223372036854775808>, static_sizes = array<i64: 1, 3, 16>
// no gradient op in the block: P is not written out
// CHECK-NOT: "tensor.parallel_insert_slice"
// CHECK: func.return
// With 2 threads the (batch, kv head) space is 2 parallel tasks (one per thread), each two
// nested scf.for over its batch rows and their kv heads (not one loop split by / and %,
// whose addresses cost LLVM's loop strength reduction 0.1 s per attention kernel); a
// task's rows go in with one parallel insert. The loops start from the task's slice of the
// shared output, so bufferization writes the tiles in place (a tensor.empty part was a
// per-thread buffer copied out at the end).
// CHUNK-LABEL: func.func @gqa_causal
// CHUNK: "scf.forall"(%{{.*}}) <{staticLowerBound = array<i64: 0>, staticUpperBound = array<i64: 2>, staticStep = array<i64: 1>
// CHUNK-NEXT: ^{{.*}}(%[[T:.*]]: index, %[[SHARED:.*]]: tensor<2x3x32xf32>):
// CHUNK: %[[PART:.*]] = tensor.extract_slice %[[SHARED]][%{{.*}}, 0, 0] [1, 3, 32] [1, 1, 1] : tensor<2x3x32xf32> to tensor<1x3x32xf32>
// CHUNK: %[[ROWS:.*]] = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[PART]]) -> (tensor<1x3x32xf32>)
// CHUNK: %[[HEADS:.*]] = scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[INNER:.*]] = %[[ACC]]) -> (tensor<1x3x32xf32>)
// CHUNK-NOT: arith.divui
// CHUNK: %[[ROW:.*]] = arith.addi %[[T]], %[[I]] : index
// CHUNK: tensor.extract_slice %q[%[[ROW]], 0, %{{.*}}] [1, 3, 16]
// CHUNK: %[[NEXT:.*]] = tensor.insert_slice %{{.*}} into %[[INNER]][%[[I]], 0, %{{.*}}] [1, 3, 16] [1, 1, 1] : tensor<1x3x16xf32> into tensor<1x3x32xf32>
// CHUNK: scf.yield %[[NEXT]]
// CHUNK: scf.yield %[[HEADS]]
// CHUNK: "tensor.parallel_insert_slice"(%[[ROWS]], %[[SHARED]], %{{.*}}) <{static_offsets = array<i64: -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 3, 32>
// LLVM-LABEL: llvm.func @gqa_causal
// LLVM: llvm.intr.exp
func.func @gqa_causal(%q: tensor<2x3x32xf32>, %k: tensor<2x5x16xf32>, %v: tensor<2x5x16xf32>) -> tensor<2x3x32xf32> {
  %o = rlx.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, mask_kind = "causal"} : (tensor<2x3x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>) -> tensor<2x3x32xf32>
  func.return %o : tensor<2x3x32xf32>
}

// Sliding window 2 with S = 4 > S_kv = 3 (q_off = -1): abs_q - 2 <= t <= abs_q.
// CHECK-LABEL: func.func @sliding_window
// CHECK: linalg.index 4
// CHECK: linalg.index 3
// CHECK: %[[ABSQ:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK: arith.constant 2 : i64
// CHECK: %[[LOW:.*]] = arith.subi %[[ABSQ]], %{{.*}} : i64
// CHECK: arith.cmpi sge, %{{.*}}, %[[LOW]] : i64
// CHECK: arith.cmpi sle, %{{.*}}, %[[ABSQ]] : i64
// CHECK: arith.andi
// CHECK: arith.andi
func.func @sliding_window(%q: tensor<1x4x4xf64>, %k: tensor<1x3x4xf64>, %v: tensor<1x3x4xf64>) -> tensor<1x4x4xf64> {
  %o = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 2 : i64, mask_kind = "sliding_window", window = 2 : i64} : (tensor<1x4x4xf64>, tensor<1x3x4xf64>, tensor<1x3x4xf64>) -> tensor<1x4x4xf64>
  func.return %o : tensor<1x4x4xf64>
}

// Custom key-padding masks are sliced by batch row and read through (b, t) in the logits
// generic: i1 as is, float as mask >= 0.5. score_scale replaces 1/sqrt(D).
// CHECK-LABEL: func.func @custom_masks
// CHECK: %[[M:.*]] = tensor.extract_slice %m[%{{.*}}, 0] [1, 5] [1, 1] : tensor<2x5xi1> to tensor<1x5xi1>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], {{.*}} ins(%{{.*}}, %[[M]] : tensor<1x1x1x3x5xf32>, tensor<1x5xi1>)
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: arith.andi
// CHECK: %[[F:.*]] = tensor.extract_slice %f[%{{.*}}, 0] [1, 5] [1, 1] : tensor<2x5xf32> to tensor<1x5xf32>
// CHECK: affine_map<(d0, d1, d2, d3, d4) -> (d0, d4)>{{.*}} ins(%{{.*}}, %[[F]] : tensor<1x1x1x3x5xf32>, tensor<1x5xf32>)
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: arith.cmpf oge
func.func @custom_masks(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %m: tensor<2x5xi1>, %f: tensor<2x5xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %o = rlx.attention %q, %k, %v, %m {num_heads = 1 : i64, head_dim = 4 : i64, mask_kind = "custom", score_scale = 0.25 : f32} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5xi1>) -> tensor<2x3x4xf32>
  %p = rlx.attention %q, %k, %v, %f {num_heads = 1 : i64, head_dim = 4 : i64, mask_kind = "custom"} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5xf32>) -> tensor<2x3x4xf32>
  func.return %o, %p : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// An additive bias [B, Hq, S, S_kv] is sliced by head group and viewed as
// [1, 1, G, S, S_kv]; it is added after the softcap (cap * tanh(s / cap)).
// CHECK-LABEL: func.func @bias_softcap
// CHECK: %[[BS:.*]] = tensor.extract_slice %b[%{{.*}}, %{{.*}}, 0, 0] [1, 2, 3, 5] [1, 1, 1, 1] : tensor<1x2x3x5xf32> to tensor<1x2x3x5xf32>
// CHECK: %[[B:.*]] = tensor.expand_shape %[[BS]] {{\[\[}}0 : i64], [1 : i64, 2 : i64], [3 : i64], [4 : i64]] output_shape [1, 1, 2, 3, 5] : tensor<1x2x3x5xf32> into tensor<1x1x2x3x5xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[B]] : tensor<1x1x2x3x5xf32>, tensor<1x1x2x3x5xf32>)
// score scale 1/sqrt(4), then s / cap with cap = 2 as s * 0.5 (a power-of-two divisor
// becomes its exact reciprocal)
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[R:.*]] = arith.mulf %{{.*}}, %[[HALF]] : f32
// f32 tanh is the emitter's rational approximation on [-7.905, 7.905] (FMA Horner steps),
// clamped to [-1, 1], exactly +-1 from the clamp on
// CHECK-NEXT: %[[LO:.*]] = arith.constant -7.90531111 : f32
// CHECK-NEXT: arith.maximumf %[[R]], %[[LO]] : f32
// CHECK: math.fma
// CHECK: arith.divf
// CHECK: arith.maximumf
// CHECK: %[[RATIO:.*]] = arith.minimumf
// CHECK-NEXT: %[[ABS:.*]] = math.absf %[[R]] : f32
// CHECK-NEXT: %[[CLAMP:.*]] = arith.constant 7.90531111 : f32
// CHECK-NEXT: %[[BIG:.*]] = arith.cmpf oge, %[[ABS]], %[[CLAMP]] : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[SIGNED:.*]] = math.copysign %[[ONE]], %[[R]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.select %[[BIG]], %[[SIGNED]], %[[RATIO]] : f32
// CHECK-NEXT: %[[CAP:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: %[[CAPPED:.*]] = arith.mulf %[[T]], %[[CAP]]
// CHECK-NEXT: arith.addf %[[CAPPED]], %{{.*}} : f32
func.func @bias_softcap(%q: tensor<1x3x8xf32>, %k: tensor<1x5x4xf32>, %v: tensor<1x5x4xf32>, %b: tensor<1x2x3x5xf32>) -> tensor<1x3x8xf32> {
  %o = rlx.attention %q, %k, %v, %b {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, mask_kind = "bias", softcap = 2.0 : f32} : (tensor<1x3x8xf32>, tensor<1x5x4xf32>, tensor<1x5x4xf32>, tensor<1x2x3x5xf32>) -> tensor<1x3x8xf32>
  func.return %o : tensor<1x3x8xf32>
}

// A gradient op alone: the forward forall (here built for it) writes P [B, Hkv, G, S, S_kv]
// as a second result; the gradient forall reads its head's P and dO and computes
// dV = P^T dO summed over the group: one contraction reducing over (g, s), no dO V^T.
// CHECK-LABEL: func.func @grad_v
// CHECK: %{{.*}}, %[[PROBS:.*]] = "scf.forall"(%{{.*}}, %{{.*}}) <{{.*}}staticUpperBound = array<i64: 1, 2>
// CHECK: "tensor.parallel_insert_slice"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{static_offsets = array<i64: -9223372036854775808, -9223372036854775808, 0, 0, 0>, static_sizes = array<i64: 1, 1, 2, 3, 5>
// CHECK: "scf.forall"(%{{.*}}) <{{.*}}staticUpperBound = array<i64: 1, 2>
// CHECK: %[[P:.*]] = tensor.extract_slice %[[PROBS]][%{{.*}}, %{{.*}}, 0, 0, 0] [1, 1, 2, 3, 5] [1, 1, 1, 1, 1] : tensor<1x2x2x3x5xf32> to tensor<1x1x2x3x5xf32>
// CHECK: %[[DYS:.*]] = tensor.extract_slice %dy[%{{.*}}, 0, %{{.*}}] [1, 3, 8]
// CHECK-NOT: affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d4, d1, d5)>
// CHECK: %[[DY:.*]] = tensor.expand_shape %[[DYS]]
// CHECK: %[[DV:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d4, d5, d1)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d2, d4, d3)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[P]], %[[DY]] : tensor<1x1x2x3x5xf32>, tensor<1x3x1x2x4xf32>) outs(%{{.*}} : tensor<1x5x1x4xf32>)
// CHECK: %[[DVT:.*]] = tensor.collapse_shape %[[DV]] {{\[\[}}0 : i64], [1 : i64], [2 : i64, 3 : i64]] : tensor<1x5x1x4xf32> into tensor<1x5x4xf32>
// CHECK: "tensor.parallel_insert_slice"(%[[DVT]],
func.func @grad_v(%q: tensor<1x3x16xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x16xf32>) -> tensor<1x5x8xf32> {
  %d = rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, wrt = "v"} : (tensor<1x3x16xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x16xf32>) -> tensor<1x5x8xf32>
  func.return %d : tensor<1x5x8xf32>
}

// dQ = scale * dS' K: dP = dO V^T (same contraction maps as Q K^T), dS = P (dP - rowsum),
// the softcap derivative 1 - tanh^2 (Q K^T recomputed per head), then the keys contraction.
// CHECK-LABEL: func.func @grad_q
// CHECK: %{{.*}}, %{{.*}} = "scf.forall"
// CHECK: = "scf.forall"(%{{.*}}) <{{.*}}staticUpperBound = array<i64: 1, 2>
// CHECK: %[[P:.*]] = tensor.extract_slice %{{.*}}[%{{.*}}, %{{.*}}, 0, 0, 0] [1, 1, 2, 3, 5]
// CHECK: %[[DYS:.*]] = tensor.extract_slice %dy
// CHECK: %[[QK:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2, d5)>
// CHECK: %[[DYQ:.*]] = tensor.expand_shape %[[DYS]]
// CHECK: %[[DP:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d4, d1, d5)>, {{.*}} ins(%[[DYQ]], %[[V:.*]] : tensor<1x3x1x2x4xf64>, tensor<1x5x1x4xf64>)
// CHECK: %[[ROW:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[DP]], %[[P]] : tensor<1x1x2x3x5xf64>, tensor<1x1x2x3x5xf64>)
// CHECK: %[[DS:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[DP]], %[[ROW]] :
// CHECK: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK: %[[DSC:.*]] = linalg.generic {{.*}} ins(%[[DS]], %[[QK]] : tensor<1x1x2x3x5xf64>, tensor<1x1x2x3x5xf64>)
// CHECK: math.tanh
// CHECK: %[[DQ:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d3, d1, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d2, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>], {{.*}} ins(%[[DSC]], %{{.*}} : tensor<1x1x2x3x5xf64>, tensor<1x5x1x4xf64>)
// CHECK: tensor.collapse_shape %[[DQ]] {{.*}} into tensor<1x3x8xf64>
func.func @grad_q(%q: tensor<1x3x16xf64>, %k: tensor<1x5x8xf64>, %v: tensor<1x5x8xf64>, %dy: tensor<1x3x16xf64>) -> tensor<1x3x16xf64> {
  %d = rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, softcap = 2.0 : f32, wrt = "q"} : (tensor<1x3x16xf64>, tensor<1x5x8xf64>, tensor<1x5x8xf64>, tensor<1x3x16xf64>) -> tensor<1x3x16xf64>
  func.return %d : tensor<1x3x16xf64>
}

// dK = scale * dS'^T Q, summed over the group: reduction over (g, s) reading q in place.
// CHECK-LABEL: func.func @grad_k
// CHECK: %{{.*}}, %{{.*}} = "scf.forall"
// CHECK: = "scf.forall"(%{{.*}}) <{{.*}}staticUpperBound = array<i64: 1, 2>
// CHECK: %[[QS:.*]] = tensor.extract_slice %q
// CHECK: %[[Q:.*]] = tensor.expand_shape %[[QS]]
// CHECK: %[[DK:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d4, d5, d1)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d2, d4, d3)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %[[Q]] : tensor<1x1x2x3x5xf32>, tensor<1x3x1x2x4xf32>)
// CHECK: tensor.collapse_shape %[[DK]] {{.*}} into tensor<1x5x4xf32>
func.func @grad_k(%q: tensor<1x3x16xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x16xf32>) -> tensor<1x5x8xf32> {
  %d = rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "causal", wrt = "k"} : (tensor<1x3x16xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x16xf32>) -> tensor<1x5x8xf32>
  func.return %d : tensor<1x5x8xf32>
}

// dBias = dS (no softcap derivative, no final contraction), viewed back as [1, G, S, S_kv]
// and inserted at the head group's rows of [B, Hq, S, S_kv].
// CHECK-LABEL: func.func @grad_bias
// CHECK: %{{.*}}, %{{.*}} = "scf.forall"
// CHECK: = "scf.forall"(%{{.*}}) <{{.*}}staticUpperBound = array<i64: 1, 2>
// CHECK: %[[DS:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x1x2x3x5xf32>, tensor<1x1x2x3x5xf32>, tensor<1x1x2x3xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: linalg.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[DB:.*]] = tensor.collapse_shape %[[DS]] {{\[\[}}0 : i64], [1 : i64, 2 : i64], [3 : i64], [4 : i64]] : tensor<1x1x2x3x5xf32> into tensor<1x2x3x5xf32>
// CHECK: "tensor.parallel_insert_slice"(%[[DB]], %{{.*}}, %{{.*}}, %{{.*}}) <{static_offsets = array<i64: -9223372036854775808, -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 2, 3, 5>
func.func @grad_bias(%q: tensor<1x3x16xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x8xf32>, %dy: tensor<1x3x16xf32>, %b: tensor<1x4x3x5xf32>) -> tensor<1x4x3x5xf32> {
  %d = rlx.attention_backward %q, %k, %v, %dy, %b {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, mask_kind = "bias", softcap = 2.0 : f32, wrt = "bias"} : (tensor<1x3x16xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x16xf32>, tensor<1x4x3x5xf32>) -> tensor<1x4x3x5xf32>
  func.return %d : tensor<1x4x3x5xf32>
}

// Causal S = S_kv = 256: two row blocks. Rows 0..127 see keys 0..127 only: their scores
// are [1, 1, 1, 128, 128] (causal offset 0); rows 128..255 see all 256 keys (offset 128).
// Each block's output rows and P rows are inserted in place.
// CHECK-LABEL: func.func @causal_blocks
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x1x128x128xf32>)
// CHECK: %[[O0:.*]] = tensor.collapse_shape %{{.*}} : tensor<1x128x1x1x16xf32> into tensor<1x128x16xf32>
// CHECK: %[[OUT0:.*]] = tensor.insert_slice %[[O0]] into %{{.*}}[0, 0, 0] [1, 128, 16] [1, 1, 1] : tensor<1x128x16xf32> into tensor<1x256x16xf32>
// CHECK: %[[P0:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0, 0] [1, 1, 1, 128, 128] [1, 1, 1, 1, 1] : tensor<1x1x1x128x128xf32> into tensor<1x1x1x256x256xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x1x128x256xf32>)
// CHECK: %[[KEY:.*]] = linalg.index 4 : index
// CHECK: %[[QUERY:.*]] = linalg.index 3 : index
// CHECK: %[[QI:.*]] = arith.index_cast %[[QUERY]] : index to i64
// CHECK: %[[OFF:.*]] = arith.constant 128 : i64
// CHECK: arith.addi %[[QI]], %[[OFF]] : i64
// CHECK: tensor.insert_slice %{{.*}} into %[[OUT0]][0, 128, 0] [1, 128, 16]
// CHECK: tensor.insert_slice %{{.*}} into %[[P0]][0, 0, 0, 128, 0] [1, 1, 1, 128, 256]
// The gradients: dk of the first block only covers its 128 keys.
// CHECK: %[[DK:.*]] = linalg.fill {{.*}} -> tensor<1x256x1x16xf32>
// CHECK: tensor.extract_slice %[[DK]][0, 0, 0, 0] [1, 128, 1, 16]
func.func @causal_blocks(%q: tensor<1x256x16xf32>, %k: tensor<1x256x16xf32>, %v: tensor<1x256x16xf32>, %dy: tensor<1x256x16xf32>) -> (tensor<1x256x16xf32>, tensor<1x256x16xf32>) {
  %o = rlx.attention %q, %k, %v {num_heads = 1 : i64, head_dim = 16 : i64, mask_kind = "causal"} : (tensor<1x256x16xf32>, tensor<1x256x16xf32>, tensor<1x256x16xf32>) -> tensor<1x256x16xf32>
  %dk = rlx.attention_backward %q, %k, %v, %dy {num_heads = 1 : i64, head_dim = 16 : i64, mask_kind = "causal", wrt = "k"} : (tensor<1x256x16xf32>, tensor<1x256x16xf32>, tensor<1x256x16xf32>, tensor<1x256x16xf32>) -> tensor<1x256x16xf32>
  func.return %o, %dk : tensor<1x256x16xf32>, tensor<1x256x16xf32>
}
