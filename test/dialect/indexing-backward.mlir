// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// cumsum_backward: the result type (x's) is caller-given and equals dy's; every axis
// and both inclusivities; integers too.
// CHECK-LABEL: func.func @cumsum_backward
// CHECK: rlx.cumsum_backward %{{.*}} : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK: rlx.cumsum_backward %{{.*}} {axis = 0 : i64, exclusive = true} : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK: rlx.cumsum_backward %{{.*}} {axis = -1 : i64} : (tensor<3xf64>) -> tensor<3xf64>
// CHECK: rlx.cumsum_backward %{{.*}} {axis = 1 : i64, exclusive = false} : (tensor<2x2x2xi32>) -> tensor<2x2x2xi32>
// UPSTREAM-LABEL: func.func @cumsum_backward
// UPSTREAM: "rlx.cumsum_backward"(%{{.*}}) {axis = 0 : i64, exclusive = true} : (tensor<2x5xf32>) -> tensor<2x5xf32>
func.func @cumsum_backward(%dy: tensor<2x5xf32>, %d64: tensor<3xf64>, %di: tensor<2x2x2xi32>)
    -> (tensor<2x5xf32>, tensor<2x5xf32>, tensor<3xf64>, tensor<2x2x2xi32>) {
  %0 = rlx.cumsum_backward %dy : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %1 = rlx.cumsum_backward %dy {axis = 0 : i64, exclusive = true} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %2 = "rlx.cumsum_backward"(%d64) {axis = -1 : i64} : (tensor<3xf64>) -> tensor<3xf64>
  %3 = rlx.cumsum_backward %di {axis = 1 : i64, exclusive = false} : (tensor<2x2x2xi32>) -> tensor<2x2x2xi32>
  func.return %0, %1, %2, %3 : tensor<2x5xf32>, tensor<2x5xf32>, tensor<3xf64>, tensor<2x2x2xi32>
}

// gather_backward: dy has gather's result shape, the table shape is caller-given (the
// same dy fits tables of any extent along the axis); i64 / i32 / f32-encoded indices,
// any rank, any axis.
// CHECK-LABEL: func.func @gather_backward
// CHECK: rlx.gather_backward %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
// CHECK: rlx.gather_backward %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<3x4xf32>
// CHECK: rlx.gather_backward %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<3x5x2xf64>, tensor<5xf32>) -> tensor<3x7x2xf64>
// CHECK: rlx.gather_backward %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<4xf32>, tensor<i32>) -> tensor<4x6xf32>
// UPSTREAM-LABEL: func.func @gather_backward
// UPSTREAM: "rlx.gather_backward"(%{{.*}}, %{{.*}}) {axis = 1 : i64} : (tensor<3x5x2xf64>, tensor<5xf32>) -> tensor<3x7x2xf64>
func.func @gather_backward(%dy: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>, %d2: tensor<3x5x2xf64>,
                           %f: tensor<5xf32>, %d3: tensor<4xf32>, %s: tensor<i32>)
    -> (tensor<10x4xf32>, tensor<3x4xf32>, tensor<3x7x2xf64>, tensor<4x6xf32>) {
  %0 = rlx.gather_backward %dy, %ids : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  %1 = rlx.gather_backward %dy, %ids {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<3x4xf32>
  %2 = "rlx.gather_backward"(%d2, %f) {axis = 1 : i64} : (tensor<3x5x2xf64>, tensor<5xf32>) -> tensor<3x7x2xf64>
  %3 = rlx.gather_backward %d3, %s {axis = -1 : i64} : (tensor<4xf32>, tensor<i32>) -> tensor<4x6xf32>
  func.return %0, %1, %2, %3 : tensor<10x4xf32>, tensor<3x4xf32>, tensor<3x7x2xf64>, tensor<4x6xf32>
}
