// Lowering of the conv family and its backward ops: rlx -> linalg on tensors, and on to LLVM.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM

// NORLX-NOT: {{= rlx\.}}
// LLVM-NOT: linalg.
// LLVM-NOT: memref.

// Grouped (17 channels per group, more than DIRECT_MAX_CHANNELS: im2col), strided, padded
// conv with bias: the bias (viewed as [G, C_out/G]) is broadcast
// into the accumulator; x is padded with tensor.pad (zeros, H only) and both x and w get a
// [G, C/G] channel split. im2col: one copy generic gathers the windows into
// patches[g, c, i, j, n, y, x] = xp[n, g, c, 2y + i, 2x + j] (a unit reduction loop
// over an unread tensor<1xf32> keeps fusion from folding it into its consumer); then one contraction generic,
// loops (n, g, o, y, x | c, i, j), sums w[g, o, c, i, j] * patches[g, c, i, j, n, y, x]
// (per group a [C_out/G, C*KH*KW] @ [C*KH*KW, N*Ho*Wo] matmul for the matmul schedules).
// CHECK-LABEL: func.func @conv_bias_groups
// CHECK: tensor.expand_shape %b {{\[}}[0 : i64, 1 : i64]] output_shape [2, 3]
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>]
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[XP:.*]] = tensor.pad %x low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK: tensor.yield %[[ZERO]] : f32
// CHECK: } : tensor<1x34x5x5xf32> to tensor<1x34x7x5xf32>
// CHECK: %[[XG:.*]] = tensor.expand_shape %[[XP]] {{.*}} into tensor<1x2x17x7x5xf32>
// CHECK: %[[WG:.*]] = tensor.expand_shape %w {{.*}} into tensor<2x3x17x3x3xf32>
// CHECK: %[[PATCHES:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d4, d0, d1, ((d5 * 2) + d2), ((d6 * 2) + d3))>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4, d5, d6)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[XG]], %{{.*}} : tensor<1x2x17x7x5xf32>, tensor<1xf32>) outs(%{{.*}} : tensor<2x17x3x3x1x3x2xf32>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[V]] : f32
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d6, d7, d0, d3, d4)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[WG]], %[[PATCHES]] : tensor<2x3x17x3x3xf32>, tensor<2x17x3x3x1x3x2xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x6x3x2xf32>
// LLVM-LABEL: llvm.func @conv_bias_groups
func.func @conv_bias_groups(%x: tensor<1x34x5x5xf32>, %w: tensor<6x17x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x3x2xf32> {
  %y = rlx.conv2d %x, %w, %b {groups = 2 : i64, padding = array<i64: 1, 0>, stride = array<i64: 2, 2>} : (tensor<1x34x5x5xf32>, tensor<6x17x3x3xf32>, tensor<6xf32>) -> tensor<1x6x3x2xf32>
  func.return %y : tensor<1x6x3x2xf32>
}

// Dilation (2, 3) without padding or bias: no tensor.pad, a zero-filled accumulator;
// the patches read xp[n, 0, c, y + 2i, x + 3j].
// CHECK-LABEL: func.func @conv_dilated
// CHECK-NOT: tensor.pad
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<2x1x4x5x6xf64>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d4, d0, d1, (d5 + (d2 * 2)), (d6 + (d3 * 3)))>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4, d5, d6)>]
// CHECK-SAME: outs(%{{.*}} : tensor<1x3x3x2x2x5x6xf64>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d6, d7, d0, d3, d4)>
// CHECK: tensor.collapse_shape {{.*}} into tensor<2x4x5x6xf64>
func.func @conv_dilated(%x: tensor<2x3x9x9xf64>, %w: tensor<4x3x3x2xf64>) -> tensor<2x4x5x6xf64> {
  %y = rlx.conv2d %x, %w {dilation = array<i64: 2, 3>} : (tensor<2x3x9x9xf64>, tensor<4x3x3x2xf64>) -> tensor<2x4x5x6xf64>
  func.return %y : tensor<2x4x5x6xf64>
}

// Max pool: -inf padding (never wins), maximumf from -inf over the (i, j) window, whose
// bounds come from an unread tensor.empty operand. Avg pool: sum from 0, then / (kh kw).
// CHECK-LABEL: func.func @pools
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK: tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[NEG_INF]] : f32
// CHECK: tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x2x3x3xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, ((d2 * 2) + d4), ((d3 * 2) + d5))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK: arith.maximumf
// CHECK: tensor.empty() : tensor<2x2xf32>
// CHECK: linalg.generic {{.*}} ins(%x, %{{.*}} : tensor<1x2x5x5xf32>, tensor<2x2xf32>)
// CHECK: arith.addf
// the average of 2x2 taps: a product by 1/4 (exact for a power-of-two window)
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: arith.mulf
func.func @pools(%x: tensor<1x2x5x5xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x2x2xf32>) {
  %m = rlx.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  %a = rlx.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32>
  func.return %m, %a : tensor<1x2x3x3xf32>, tensor<1x2x2x2xf32>
}

// conv2d_backward_input at stride 2 through im2col (17 channels per group): one correlation per output phase
// (rh, rw) of dx, with that phase's taps of the kernel (a strided tensor.extract_slice of w:
// rows 1 only for rh = 0, rows 0 and 2 for rh = 1) over dy itself (no zero-spread grid),
// zero-padded where a tap reads past dy's edge; each phase result goes into dx at
// stride 2. The contraction reads the weight transposed in its map (w[g, c, o, i, j]).
// conv2d_backward_weight: patches of padded x, then a contraction, loops
// (g, o, c, i, j | n, y, x), of patches[g, c, i, j, n, y, x] and dy[n, g, o, y, x].
// CHECK-LABEL: func.func @conv_backward
// CHECK: %[[DX0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x34x8x8xf32>)
// CHECK: tensor.extract_slice %w[0, 0, 1, 1] [34, 17, 1, 1] [1, 1, 2, 2] : tensor<34x17x3x3xf32> to tensor<34x17x1x1xf32>
// CHECK: tensor.expand_shape %dy {{.*}} into tensor<1x2x17x4x4xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d4, d0, d1, (d5 + (d2 * -1)), (d6 + (d3 * -1)))>,
// CHECK-SAME: outs(%{{.*}} : tensor<2x17x1x1x1x4x4xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d6, d7, d0, d3, d4)>
// CHECK: %[[DX1:.*]] = tensor.insert_slice %{{.*}} into %[[DX0]][0, 0, 0, 0] [1, 34, 4, 4] [1, 1, 2, 2]
// CHECK: tensor.pad %dy low[0, 0, 0, 0] high[0, 0, 0, 1]
// CHECK: tensor.extract_slice %w[0, 0, 1, 0] [34, 17, 1, 2] [1, 1, 2, 2] : tensor<34x17x3x3xf32> to tensor<34x17x1x2xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d4, d0, d1, (d5 + (d2 * -1)), ((d6 + (d3 * -1)) + 1))>,
// CHECK: %[[DX2:.*]] = tensor.insert_slice %{{.*}} into %[[DX1]][0, 0, 0, 1] [1, 34, 4, 4] [1, 1, 2, 2]
// CHECK: tensor.extract_slice %w[0, 0, 0, 1] [34, 17, 2, 1] [1, 1, 2, 2]
// CHECK: %[[DX3:.*]] = tensor.insert_slice %{{.*}} into %[[DX2]][0, 0, 1, 0] [1, 34, 4, 4] [1, 1, 2, 2]
// CHECK: tensor.extract_slice %w[0, 0, 0, 0] [34, 17, 2, 2] [1, 1, 2, 2]
// CHECK: tensor.insert_slice %{{.*}} into %[[DX3]][0, 0, 1, 1] [1, 34, 4, 4] [1, 1, 2, 2]
// CHECK: tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[X_PATCHES:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d4, d0, d1, ((d5 * 2) + d2), ((d6 * 2) + d3))>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4, d5, d6)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<2x17x3x3x1x4x4xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d2, d3, d4, d5, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X_PATCHES]], %{{.*}} :
// CHECK: tensor.collapse_shape {{.*}} {{\[}}[0 : i64, 1 : i64], [2 : i64], [3 : i64], [4 : i64]] : tensor<2x17x17x3x3xf32> into tensor<34x17x3x3xf32>
func.func @conv_backward(%x: tensor<1x34x8x8xf32>, %w: tensor<34x17x3x3xf32>, %dy: tensor<1x34x4x4xf32>) -> (tensor<1x34x8x8xf32>, tensor<34x17x3x3xf32>) {
  %dx = rlx.conv2d_backward_input %dy, %w {groups = 2 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x34x4x4xf32>, tensor<34x17x3x3xf32>) -> tensor<1x34x8x8xf32>
  %dw = rlx.conv2d_backward_weight %x, %dy {groups = 2 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x34x8x8xf32>, tensor<1x34x4x4xf32>) -> tensor<34x17x3x3xf32>
  func.return %dx, %dw : tensor<1x34x8x8xf32>, tensor<34x17x3x3xf32>
}

// Depthwise conv and its backward ops (at most DIRECT_MAX_CHANNELS = 2 reduced channels per
// group): no im2col. conv2d and conv2d_backward_input are one direct generic each, loops
// (n, g, o, y, x | c, i, j); the input gradient reads the flipped taps of the spread dy
// and the weight as w[g, c, o, i, j]. conv2d_backward_weight sums per-column partials
// p[g, o, c, i, j, x] over (n, y) -- loops (g | n | o, c | y | i, j, x), the row
// innermost -- then reduces p over x.
// CHECK-LABEL: func.func @depthwise
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, (d3 + d6), (d4 + d7))>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<2x3x1x8x8xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, ((d3 + (d6 * -1)) + 2), ((d4 + (d7 * -1)) + 2))>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<2x3x1x8x8xf32>)
// CHECK: tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d0, d3, (d4 + d5), (d7 + d6))>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d0, d2, d4, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d2, d3, d5, d6, d7)>], iterator_types = ["parallel", "reduction", "parallel", "parallel", "reduction", "parallel", "parallel", "parallel"]}
// CHECK-SAME: outs(%{{.*}} : tensor<3x1x1x3x3x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]] : tensor<3x1x1x3x3x8xf32>) outs(%{{.*}} : tensor<3x1x1x3x3xf32>)
// CHECK: tensor.collapse_shape {{.*}} into tensor<3x1x3x3xf32>
// LLVM-LABEL: llvm.func @depthwise
func.func @depthwise(%x: tensor<2x3x8x8xf32>, %w: tensor<3x1x3x3xf32>, %dy: tensor<2x3x8x8xf32>) -> (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<3x1x3x3xf32>) {
  %y = rlx.conv2d %x, %w {groups = 3 : i64, padding = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x8x8xf32>
  %dx = rlx.conv2d_backward_input %dy, %w {groups = 3 : i64, padding = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x8x8xf32>
  %dw = rlx.conv2d_backward_weight %x, %dy {groups = 3 : i64, padding = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) -> tensor<3x1x3x3xf32>
  func.return %y, %dx, %dw : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<3x1x3x3xf32>
}

// max_pool2d_backward: (1) one generic with two outputs folds (window max, first tap), loops
// (n, c | i, j | y, x) so that each tap sweeps whole output rows, over
// -inf-padded x, i1 in-bounds masks of the padded rows/cols and the tap numbers i*kw + j;
// (2) dy and the winning taps are spread at stride positions; (3) a gather generic adds
// dy where the window's winning tap is this position's tap.
// CHECK-LABEL: func.func @max_pool_backward
// CHECK: %[[XP:.*]] = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[MASK_H:.*]] = arith.constant dense<[false, true, true, true, true, true, false]> : tensor<7xi1>
// CHECK: %[[MASK_W:.*]] = arith.constant dense<[false, true, true, true, true, true, false]> : tensor<7xi1>
// CHECK: %[[TAPS:.*]] = arith.constant dense<{{\[\[}}0, 1, 2], [3, 4, 5], [6, 7, 8]]> : tensor<3x3xi32>
// CHECK: arith.constant 9 : i32
// CHECK: %{{.*}}, %[[BEST:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, ((d4 * 2) + d2), ((d5 * 2) + d3))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (((d4 * 2) + d2))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (((d5 * 2) + d3))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d2, d3)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>], iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel", "parallel"]} ins(%[[XP]], %[[MASK_H]], %[[MASK_W]], %[[TAPS]] : {{.*}}) outs({{.*}} : tensor<1x2x3x3xf32>, tensor<1x2x3x3xi32>)
// CHECK: arith.cmpf une
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK: arith.select
// CHECK: %[[ZDY:.*]] = tensor.insert_slice %dy into %{{.*}}[0, 0, 1, 1] [1, 2, 3, 3] [1, 1, 2, 2]
// CHECK: arith.constant -1 : i32
// CHECK: %[[ZBEST:.*]] = tensor.insert_slice %[[BEST]] into %{{.*}}[0, 0, 1, 1] [1, 2, 3, 3] [1, 1, 2, 2]
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, ((d2 + (d4 * -1)) + 2), ((d3 + (d5 * -1)) + 2))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, ((d2 + (d4 * -1)) + 2), ((d3 + (d5 * -1)) + 2))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[ZDY]], %[[ZBEST]], %{{.*}} : tensor<1x2x7x7xf32>, tensor<1x2x7x7xi32>, tensor<3x3xi32>)
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK: arith.addf
// LLVM-LABEL: llvm.func @max_pool_backward
func.func @max_pool_backward(%x: tensor<1x2x5x5xf32>, %dy: tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  %dx = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  func.return %dx : tensor<1x2x5x5xf32>
}
