// Lowering of the nn family and its backward ops: rlx -> linalg on tensors, and on to LLVM.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM

// NORLX-NOT: {{= rlx\.}}
// LLVM-NOT: linalg.
// LLVM-NOT: memref.

// Softmax along axis 0: a max linalg.reduce, then sum(exp(x - max)) as a generic with a
// reduction iterator reading the keep-dims max with (0, d1), 1 / sum once per column (a
// unit reduction loop keeps fusion from folding it into the last pass, once per element),
// then one parallel pass multiplying by it.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[MAX:.*]] = linalg.reduce ins(%x{{.*}}) dimensions = [0]
// CHECK: arith.maximumf
// CHECK: %[[PEAK:.*]] = tensor.expand_shape %[[MAX]] {{.*}} into tensor<1x8xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x, %[[PEAK]]
// CHECK: arith.subf
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: arith.divf
// CHECK: %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK-NOT: arith.divf
// Log-softmax (last axis, f64): (x - max) - log(sum), the log once per row.
// CHECK: linalg.reduce ins(%z{{.*}}) dimensions = [1]
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: math.log {{.*}} : f64
// CHECK: %l = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK: arith.subf {{.*}} : f64
// CHECK-NEXT: arith.subf
// CHECK-NEXT: linalg.yield
// LLVM-LABEL: llvm.func @softmax(
// LLVM: llvm.call @softmax_kernel_{{[0-9]+}}(
func.func @softmax(%x: tensor<4x8xf32>, %z: tensor<4x8xf64>) -> (tensor<4x8xf32>, tensor<4x8xf64>) {
  %y = rlx.softmax %x {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = rlx.log_softmax %z : (tensor<4x8xf64>) -> tensor<4x8xf64>
  func.return %y, %l : tensor<4x8xf32>, tensor<4x8xf64>
}

// Layer norm: sum, mean, sum of squares of (x - mean), sqrt(var + eps), its inverse once
// per row; one parallel pass reading the row statistics with (d0, 0) and gamma, beta with
// (d1), multiplying by the inverse.
// CHECK-LABEL: func.func @layer_norm
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x
// the mean over 8 columns: a product by the exact reciprocal 1/8
// CHECK: %[[EIGHTH:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT: arith.mulf {{.*}}, %[[EIGHTH]] : f32
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
// CHECK: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: arith.constant 1.000000e-05 : f32
// CHECK: math.sqrt
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.divf
// CHECK: %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %{{.*}}, %{{.*}}, %g, %b
// CHECK: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = rlx.layer_norm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// RMS norm with beta, rank 3: no mean, the sum of squares of x itself.
// CHECK-LABEL: func.func @rms_norm
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x
// CHECK-NEXT: ^{{.*}}
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.divf
// CHECK: %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK-NEXT: ^{{.*}}
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
func.func @rms_norm(%x: tensor<2x3x8xf64>, %g: tensor<8xf64>, %b: tensor<8xf64>) -> tensor<2x3x8xf64> {
  %y = rlx.rms_norm %x, %g, %b : (tensor<2x3x8xf64>, tensor<8xf64>, tensor<8xf64>) -> tensor<2x3x8xf64>
  func.return %y : tensor<2x3x8xf64>
}

// Group norm on the view [N, G, C/G, L]: reductions over the last two axes; gamma and
// beta viewed as [G, C/G, 1].
// CHECK-LABEL: func.func @group_norm
// CHECK: %[[V:.*]] = tensor.expand_shape %x {{\[}}[0 : i64], [1 : i64, 2 : i64], [3 : i64]] output_shape [2, 2, 2, 3]
// CHECK: tensor.expand_shape %g {{.*}} output_shape [2, 2, 1]
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[V]]
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK: %y = tensor.expand_shape {{.*}} output_shape [2, 4, 3]
func.func @group_norm(%x: tensor<2x4x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x3xf32> {
  %y = rlx.group_norm %x, %g, %b {num_groups = 2 : i64} : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3xf32>
  func.return %y : tensor<2x4x3xf32>
}

// Batch norm (inference): one parallel pass, the four [C] vectors read with (d2).
// CHECK-LABEL: func.func @batch_norm
// CHECK: %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %g, %b, %m, %v
// CHECK-NOT: linalg.{{generic|reduce}}
// CHECK: func.return %y
func.func @batch_norm(%x: tensor<2x5x3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x5x3xf32> {
  %y = rlx.batch_norm_inference %x, %g, %b, %m, %v : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x5x3xf32>
  func.return %y : tensor<2x5x3xf32>
}

// Cross-entropy with f32 labels: the row max, then one single-result reduction summing
// exp(z - max) (vectorizable), then one parallel generic over rows reading z[row, label]
// (tensor.extract at the truncated (fptosi), range-checked label; -max for a label out of
// range). The backward pass is one parallel generic subtracting the one-hot of an i32 label.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: %[[TOP:.*]] = linalg.reduce ins(%z{{.*}}) dimensions = [1]
// CHECK: %[[TOPC:.*]] = tensor.expand_shape %[[TOP]] {{.*}} into tensor<4x1xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%z, %[[TOPC]] :
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK: %[[PICK:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%t,
// CHECK: arith.cmpf ogt, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpf olt
// CHECK: arith.andi
// CHECK: arith.fptosi {{.*}} : f32 to i64
// CHECK: linalg.index 0 : index
// CHECK: tensor.extract %z[
// CHECK: arith.negf
// CHECK: arith.select
// CHECK: %l = linalg.generic {{.*}} ins(%[[SUM]], %[[PICK]]
// CHECK: arith.bitcast {{.*}} : f32 to i32
// CHECK: arith.constant 0x7fc00000 : f32
// CHECK-NEXT: %[[LOG:.*]] = arith.select
// CHECK-NEXT: arith.subf %[[LOG]]
// CHECK: tensor.expand_shape %ti {{.*}} into tensor<4x1xi32>
// CHECK: %dz = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: arith.extsi {{.*}} : i32 to i64
// CHECK: linalg.index 1 : index
// CHECK: arith.select {{.*}} : f32
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.divf
// CHECK-NEXT: arith.subf
// CHECK-NEXT: arith.mulf
func.func @cross_entropy(%z: tensor<4x10xf32>, %t: tensor<4xf32>, %ti: tensor<4xi32>, %dl: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x10xf32>) {
  %l = rlx.softmax_cross_entropy %z, %t : (tensor<4x10xf32>, tensor<4xf32>) -> tensor<4xf32>
  %dz = rlx.softmax_cross_entropy_backward %z, %ti, %dl : (tensor<4x10xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x10xf32>
  func.return %l, %dz : tensor<4xf32>, tensor<4x10xf32>
}

// Rope on the view [B, S, H, 2, half]: the two halves are read with the constant maps
// (.., 0, i) and (.., 1, i) (no negative coefficient: tileable) and swapped by linalg.index
// of the pair dim; the tables read with (s, i); no tensor.extract. With n_rot < head_dim
// (backward, signs +1 / -1) the rotated dims are a slice inserted back into x.
// CHECK-LABEL: func.func @rope
// CHECK: %[[V:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0 : i64], [1 : i64], [2 : i64], [3 : i64, 4 : i64]] output_shape [1, 3, 2, 2, 2]
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, 0, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, 1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[V]], %[[V]], %c, %s
// CHECK: ^bb0(%[[FIRST:.*]]: f32, %[[SECOND:.*]]: f32, %[[C:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK: linalg.index 3
// CHECK: %[[IS_FIRST:.*]] = arith.cmpi eq
// CHECK: %[[OWN:.*]] = arith.select %[[IS_FIRST]], %[[FIRST]], %[[SECOND]]
// CHECK: %[[OTHER:.*]] = arith.select %[[IS_FIRST]], %[[SECOND]], %[[FIRST]]
// CHECK: arith.constant -1.000000e+00
// CHECK: %[[SIGN:.*]] = arith.select %[[IS_FIRST]]
// CHECK: %[[OWN_C:.*]] = arith.mulf %[[OWN]], %[[C]]
// CHECK: %[[OTHER_S:.*]] = arith.mulf %[[OTHER]], %[[S]]
// CHECK: %[[TERM:.*]] = arith.mulf %[[SIGN]], %[[OTHER_S]]
// CHECK: arith.addf %[[OWN_C]], %[[TERM]]
// CHECK: %[[X4:.*]] = tensor.expand_shape {{.*}} output_shape [1, 3, 2, 4]
// CHECK: %[[ROT:.*]] = tensor.extract_slice %[[X4]][0, 0, 0, 0] [1, 3, 2, 2] [1, 1, 1, 1]
// CHECK: tensor.extract_slice %c[0, 0] [3, 1] [1, 1]
// CHECK: linalg.generic
// CHECK-SAME: tensor<1x3x2x2x1xf32>
// CHECK: arith.constant 1.000000e+00
// CHECK-NEXT: arith.constant -1.000000e+00
// CHECK: tensor.insert_slice %{{.*}} into %[[X4]][0, 0, 0, 0] [1, 3, 2, 2] [1, 1, 1, 1]
// CHECK-NOT: tensor.extract {{.*}}
// CHECK: func.return %y, %dx
func.func @rope(%x: tensor<1x3x8xf32>, %c: tensor<3x2xf32>, %s: tensor<3x2xf32>) -> (tensor<1x3x8xf32>, tensor<1x3x8xf32>) {
  %y = rlx.rope %x, %c, %s {head_dim = 4 : i64} : (tensor<1x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x3x8xf32>
  %dx = rlx.rope_backward %x, %c, %s {head_dim = 4 : i64, n_rot = 2 : i64} : (tensor<1x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x3x8xf32>
  func.return %y, %dx : tensor<1x3x8xf32>, tensor<1x3x8xf32>
}

// Layer/RMS norm backward: dx from two single-result row reductions (sum g, sum g * x_hat;
// RMS: only the latter; one result each, so both vectorize) and a parallel pass; dgamma
// reduces the rows (reduction, parallel).
// CHECK-LABEL: func.func @norm_backward
// CHECK: %[[SG:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %dy, %g, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[SGX:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %dy, %g, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: %dx = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: %dg = linalg.generic {{.*}} affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x, %dy
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %dy, %g
// CHECK: %rx = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: %rg = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
func.func @norm_backward(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  %dx = rlx.layer_norm_backward_input %x, %g, %dy {eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dg = rlx.layer_norm_backward_gamma %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  %rx = rlx.rms_norm_backward_input %x, %g, %dy : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %rg = rlx.rms_norm_backward_gamma %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  func.return %dx, %dg, %rx, %rg : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// Group norm backward on the view [N, G, C/G, H, W]: dgamma keeps the view's axes 1, 2;
// dbeta is a linalg.reduce over N and the spatial axes.
// CHECK-LABEL: func.func @group_norm_backward
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x2x2x3x2xf32>, tensor<2x2x2x3x2xf32>, tensor<2x2x1x1xf32>
// CHECK: %dx = tensor.expand_shape {{.*}} output_shape [2, 4, 3, 2]
// CHECK: affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>], iterator_types = ["reduction", "parallel", "parallel", "reduction", "reduction"]
// CHECK: %dg = tensor.collapse_shape {{.*}} into tensor<4xf32>
// CHECK: %db = linalg.reduce ins(%dy{{.*}}) dimensions = [0, 2, 3]
func.func @group_norm_backward(%x: tensor<2x4x3x2xf32>, %g: tensor<4xf32>, %dy: tensor<2x4x3x2xf32>) -> (tensor<2x4x3x2xf32>, tensor<4xf32>, tensor<4xf32>) {
  %dx = rlx.group_norm_backward_input %x, %g, %dy {num_groups = 2 : i64} : (tensor<2x4x3x2xf32>, tensor<4xf32>, tensor<2x4x3x2xf32>) -> tensor<2x4x3x2xf32>
  %dg = rlx.group_norm_backward_gamma %x, %dy {num_groups = 2 : i64} : (tensor<2x4x3x2xf32>, tensor<2x4x3x2xf32>) -> tensor<4xf32>
  %db = rlx.group_norm_backward_beta %dy : (tensor<2x4x3x2xf32>) -> tensor<4xf32>
  func.return %dx, %dg, %db : tensor<2x4x3x2xf32>, tensor<4xf32>, tensor<4xf32>
}

// Batch norm backward: dx one parallel pass; dgamma one generic reducing all but the
// channel; dbeta a linalg.reduce.
// CHECK-LABEL: func.func @batch_norm_backward
// CHECK: %dx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%dy, %g, %v
// CHECK: arith.mulf
// CHECK: math.sqrt
// CHECK: arith.divf
// CHECK: %dg = linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel"]} ins(%x, %m, %v, %dy
// CHECK: %db = linalg.reduce ins(%dy{{.*}}) dimensions = [0, 1]
// LLVM-LABEL: llvm.func @batch_norm_backward(
// Each kernel is its own function, after the public ones; softmax's exp is in one of its.
// LLVM: llvm.func @softmax_kernel_{{[0-9]+}}(
// LLVM-NOT: llvm.func @layer_norm_kernel
// LLVM: llvm.intr.exp
// LLVM: llvm.func @layer_norm_kernel_{{[0-9]+}}(
func.func @batch_norm_backward(%x: tensor<2x5x3xf32>, %g: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>, %dy: tensor<2x5x3xf32>) -> (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %dx = rlx.batch_norm_inference_backward_input %g, %v, %dy : (tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %dg = rlx.batch_norm_inference_backward_gamma %x, %m, %v, %dy : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<3xf32>
  %db = rlx.batch_norm_inference_backward_beta %dy : (tensor<2x5x3xf32>) -> tensor<3xf32>
  func.return %dx, %dg, %db : tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>
}
