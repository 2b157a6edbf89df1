// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s
// A dense literal that does not fit its element type is a located parse error (it was
// an internal compiler error).
// CHECK: bad-literals.mlir:6:30: error: a literal does not fit its element type: float too large
func.func @f32_overflow() -> tensor<f32> {
  %0 = rlx.constant {value = dense<1.0e40> : tensor<f32>} : () -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

// CHECK: bad-literals.mlir:14:30: error: a literal does not fit its element type: Integer value 99999999999 is out of range for type i32
func.func @i32_overflow() -> tensor<i32> {
  %0 = rlx.constant {value = dense<99999999999> : tensor<i32>} : () -> tensor<i32>
  func.return %0 : tensor<i32>
}

// -----

// CHECK: bad-literals.mlir:22:30: error: a literal does not fit its element type: Integer value 2 is out of range for type i1
func.func @bool_literal() -> tensor<3xi1> {
  %0 = rlx.constant {value = dense<[1, 2, 0]> : tensor<3xi1>} : () -> tensor<3xi1>
  func.return %0 : tensor<3xi1>
}

// -----

// Scalar integer attributes too (they were an internal compiler error with no location,
// and --split-input-file dropped the other chunks).
// CHECK: bad-literals.mlir:[[@LINE+2]]:31: error: a literal does not fit its element type: Integer value 300 is out of range for type i8
func.func @scan_length(%h0: tensor<3xf32>) -> tensor<3xf32> {
  %c = rlx.scan %h0 {length = 300 : i8} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%c0: tensor<3xf32>):
    rlx.yield %c0 : (tensor<3xf32>) -> ()
  })
  func.return %c : tensor<3xf32>
}

// -----

// CHECK: bad-literals.mlir:[[@LINE+2]]:31: error: a literal does not fit its element type: Integer value 99999999999999999999 is out of range for type i64
func.func @softmax_axis(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = rlx.softmax %x {axis = 99999999999999999999 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// The chunks that parse are still printed.
// CHECK: func.func @fine
func.func @fine(%x: tensor<3xf32>) -> tensor<3xf32> {
  func.return %x : tensor<3xf32>
}
