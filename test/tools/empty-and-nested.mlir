// Empty and comment-only input is an empty module, as for mlir-opt; `-` is stdin.
// RUN: printf '' | rlx-opt - | FileCheck %s --check-prefix=EMPTY
// RUN: printf '// only a comment\n\n' | rlx-opt | FileCheck %s --check-prefix=EMPTY
// EMPTY: builtin.module {
// EMPTY-NEXT: }

// A symbol redefined in a nested module is located at the second definition.
// RUN: not rlx-opt %s 2>&1 | FileCheck %s
// CHECK: empty-and-nested.mlir:[[@LINE+7]]:5: error: redefinition of symbol @f
// CHECK-NEXT: empty-and-nested.mlir:[[@LINE+6]]:5: note: @f is first defined at {{.*}}empty-and-nested.mlir:[[@LINE+3]]:5
module @outer {
  module @inner {
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      func.return %x : tensor<4xf32>
    }
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      func.return %x : tensor<4xf32>
    }
  }
}
