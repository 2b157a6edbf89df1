// Location aliases defined after their uses, as `mlir-opt --mlir-print-debuginfo`
// prints them at the end of a file, are read; errors are reported at the aliased
// location, and the other lines keep their numbers.
// RUN: not rlx-opt %s --split-input-file 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err
// CHECK: func.func @ok
// CHECK-NEXT: rlx.relu
// ERR: model.py:12:5: error: 'rlx.tanh' op result type mismatch
// ERR-NEXT: location-aliases.mlir:[[@LINE+17]]:3: error: 'rlx.relu' op result type mismatch
func.func @ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = rlx.relu %x : (tensor<4xf32>) -> tensor<4xf32> loc(#loc1)
  return %y : tensor<4xf32> loc(#loc2)
} loc(#loc)
#loc = loc("model.py":1:1)
#loc1 = loc("model.py":2:3)
#loc2 = loc("model.py":3:3)
// -----
func.func @bad(%x: tensor<4xf32>) -> tensor<5xf32> {
  %y = rlx.tanh %x : (tensor<4xf32>) -> tensor<5xf32> loc(#loc1)
  %z = rlx.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
#loc1 = loc("model.py":12:5)
// -----
func.func @unlocated(%x: tensor<4xf32>) -> tensor<5xf32> {
  %y = rlx.relu %x : (tensor<4xf32>) -> tensor<5xf32>
  return %y : tensor<5xf32> loc(#loc9)
}
#loc9 = loc("model.py":30:1)
