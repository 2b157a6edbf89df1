// A second function of the same name is located, with a note at the first.
// RUN: not rlx-opt %s 2>&1 | FileCheck %s
func.func @g(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  func.return %x : tensor<4x3xf32>
}
// CHECK: redefinition.mlir:[[@LINE+2]]:1: error: redefinition of symbol @g
// CHECK-NEXT: redefinition.mlir:[[@LINE+1]]:1: note: @g is first defined at {{.*}}redefinition.mlir:3:1
func.func @g(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  func.return %x : tensor<4x3xf32>
}
