// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// CHECK-LABEL: func.func @layout
// CHECK: rlx.reshape %{{.*}} : (tensor<2x6xf32>) -> tensor<3x4xf32>
// CHECK: rlx.transpose %{{.*}} {perm = array<i64: 1, -2>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK: rlx.expand %{{.*}} : (tensor<4x1xf32>) -> tensor<2x4x5xf32>
// CHECK: rlx.reshape %{{.*}} : (tensor<i1>) -> tensor<1x1xi1>
// CHECK: rlx.transpose %{{.*}} {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf64>) -> tensor<2x4x3xf64>
// UPSTREAM-LABEL: func.func @layout
// UPSTREAM: "rlx.reshape"(%{{.*}}) : (tensor<2x6xf32>) -> tensor<3x4xf32>
// UPSTREAM: "rlx.transpose"(%{{.*}}) {perm = array<i64: 1, -2>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
// UPSTREAM: "rlx.expand"(%{{.*}}) : (tensor<4x1xf32>) -> tensor<2x4x5xf32>
func.func @layout(%x: tensor<2x6xf32>, %c: tensor<4x1xf32>, %p: tensor<i1>, %d: tensor<2x3x4xf64>)
    -> (tensor<4x3xf32>, tensor<2x4x5xf32>, tensor<1x1xi1>, tensor<2x4x3xf64>) {
  %0 = rlx.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
  %1 = rlx.transpose %0 {perm = array<i64: 1, -2>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %2 = rlx.expand %c : (tensor<4x1xf32>) -> tensor<2x4x5xf32>
  %3 = rlx.reshape %p : (tensor<i1>) -> tensor<1x1xi1>
  %4 = rlx.transpose %d {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf64>) -> tensor<2x4x3xf64>
  func.return %1, %2, %3, %4 : tensor<4x3xf32>, tensor<2x4x5xf32>, tensor<1x1xi1>, tensor<2x4x3xf64>
}

// CHECK-LABEL: func.func @slicing
// CHECK: rlx.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<2x3xi64>, tensor<2x1xi64>, tensor<2x4xi64>) -> tensor<2x8xi64>
// CHECK: rlx.concat %{{.*}} {axis = 0 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK: rlx.narrow %{{.*}} {axis = 1 : i64, start = 2 : i64, length = 5 : i64} : (tensor<2x8xi64>) -> tensor<2x5xi64>
// UPSTREAM-LABEL: func.func @slicing
// UPSTREAM: "rlx.concat"(%{{.*}}, %{{.*}}, %{{.*}}) {axis = -1 : i64} : (tensor<2x3xi64>, tensor<2x1xi64>, tensor<2x4xi64>) -> tensor<2x8xi64>
// UPSTREAM: "rlx.narrow"(%{{.*}}) {axis = 1 : i64, length = 5 : i64, start = 2 : i64} : (tensor<2x8xi64>) -> tensor<2x5xi64>
func.func @slicing(%a: tensor<2x3xi64>, %b: tensor<2x1xi64>, %c: tensor<2x4xi64>) -> (tensor<2x5xi64>, tensor<2x3xi64>) {
  %0 = rlx.concat %a, %b, %c {axis = -1 : i64} : (tensor<2x3xi64>, tensor<2x1xi64>, tensor<2x4xi64>) -> tensor<2x8xi64>
  %1 = rlx.concat %a {axis = 0 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %2 = rlx.narrow %0 {axis = 1 : i64, start = 2 : i64, length = 5 : i64} : (tensor<2x8xi64>) -> tensor<2x5xi64>
  func.return %2, %1 : tensor<2x5xi64>, tensor<2x3xi64>
}

// CHECK-LABEL: func.func @indexing
// CHECK: rlx.gather %{{.*}}, %{{.*}} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK: rlx.gather %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<10x4xf32>, tensor<5xf32>) -> tensor<10x5xf32>
// CHECK: rlx.scatter_add %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<10x5xf32>, tensor<5xf32>) -> tensor<10x7xf32>
// CHECK: rlx.scatter_add %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<3xi32>) -> tensor<10x4xf32>
// UPSTREAM-LABEL: func.func @indexing
// UPSTREAM: "rlx.gather"(%{{.*}}, %{{.*}}) : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// UPSTREAM: "rlx.gather"(%{{.*}}, %{{.*}}) {axis = -1 : i64} : (tensor<10x4xf32>, tensor<5xf32>) -> tensor<10x5xf32>
// UPSTREAM: "rlx.scatter_add"(%{{.*}}, %{{.*}}) {axis = 1 : i64} : (tensor<10x5xf32>, tensor<5xf32>) -> tensor<10x7xf32>
// UPSTREAM: "rlx.scatter_add"(%{{.*}}, %{{.*}}) : (tensor<3x4xf32>, tensor<3xi32>) -> tensor<10x4xf32>
func.func @indexing(%w: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %cols: tensor<5xf32>,
                    %u: tensor<3x4xf32>, %rows: tensor<3xi32>)
    -> (tensor<2x3x4xf32>, tensor<10x7xf32>, tensor<10x4xf32>) {
  %0 = rlx.gather %w, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %1 = rlx.gather %w, %cols {axis = -1 : i64} : (tensor<10x4xf32>, tensor<5xf32>) -> tensor<10x5xf32>
  %2 = rlx.scatter_add %1, %cols {axis = 1 : i64} : (tensor<10x5xf32>, tensor<5xf32>) -> tensor<10x7xf32>
  %3 = rlx.scatter_add %u, %rows : (tensor<3x4xf32>, tensor<3xi32>) -> tensor<10x4xf32>
  func.return %0, %2, %3 : tensor<2x3x4xf32>, tensor<10x7xf32>, tensor<10x4xf32>
}
