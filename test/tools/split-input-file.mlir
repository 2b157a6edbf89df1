// --split-input-file reports every failing chunk, prints the others and exits 1; a
// written loc(...) is kept while the parser's own locations count from the file's top.
// An empty chunk (after a trailing separator) is an empty module.
// RUN: not rlx-opt %s --split-input-file 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err
// CHECK: func.func @b
// CHECK: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT: }
// ERR: split-input-file.mlir:[[@LINE+2]]:3: error: 'rlx.tanh' op result type mismatch
func.func @a(%x: tensor<4xf32>) -> tensor<5xf32> {
  %0 = rlx.tanh %x : (tensor<4xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}
// -----
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// -----
// ERR-NEXT: model.py:3:1: error: 'rlx.relu' op result type mismatch
func.func @c(%x: tensor<4xf32>) -> tensor<5xf32> {
  %0 = rlx.relu %x : (tensor<4xf32>) -> tensor<5xf32> loc("model.py":3:1)
  func.return %0 : tensor<5xf32>
}
// -----
