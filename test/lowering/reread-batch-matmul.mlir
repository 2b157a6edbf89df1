// rlx-opt re-reads its own --lower-to-linalg output, linalg.batch_matmul included (xDSL
// does not define that op; rlx registers it), in custom and generic form, and lowers it on.
// RUN: rlx-opt %s --lower-to-linalg | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | rlx-opt --lower-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @bmm(
// CHECK:         linalg.batch_matmul ins(%a, %b : tensor<3x4x5xf32>, tensor<3x5x2xf32>) outs(%{{.*}} : tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
// LLVM: llvm.func @bmm(
func.func @bmm(%a: tensor<3x4x5xf32>, %b: tensor<3x5x2xf32>) -> tensor<3x4x2xf32> {
  %c = rlx.matmul %a, %b : (tensor<3x4x5xf32>, tensor<3x5x2xf32>) -> tensor<3x4x2xf32>
  func.return %c : tensor<3x4x2xf32>
}
