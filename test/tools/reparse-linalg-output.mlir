// rlx-opt re-reads its own --lower-to-linalg output: multi-result linalg.generic
// (`} -> (tensor<4xf32>, tensor<4xf32>)`) and the scf.forall ops of tiled lowerings.
// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | rlx-opt --lower-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=FORALL
// RUN: rlx-opt %s --lower-to-linalg | rlx-opt | FileCheck %s --check-prefix=FORALL
// CHECK: } -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: func.return
// FORALL: scf.forall
// FORALL: scf.forall.in_parallel
// LLVM: llvm.func @two
// LLVM: llvm.func @attn
func.func @two(%a: tensor<4xf32>, %o: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%o, %o : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    linalg.yield %x, %x : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
func.func @attn(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>) -> tensor<2x3x8xf32> {
  %0 = rlx.attention %q, %k, %v {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x8xf32>
  func.return %0 : tensor<2x3x8xf32>
}
