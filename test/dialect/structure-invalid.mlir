// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: structure-invalid.mlir:9:3: error: operand #0 of 'rlx.add' does not dominate this use

// A value used before (or in) its own definition: mlir-opt's "operand #0 does not
// dominate this use", at the use.
func.func @self_use(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @below {{operand #0 of 'rlx.add' does not dominate this use}}
  %a = rlx.add %a, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %a : tensor<3xf32>
}

// -----

func.func @use_before_definition(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @below {{operand #0 of 'rlx.add' does not dominate this use}}
  %b = rlx.add %a, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %a = rlx.add %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %b : tensor<3xf32>
}

// -----

// A region may read the values defined before its op, not after it.
func.func @region_reads_a_later_value(%p: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %y = rlx.if %p, %x : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    // expected-error @below {{operand #1 of 'rlx.add' does not dominate this use}}
    %s = rlx.add %a, %later : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %s : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>):
    rlx.yield %a : (tensor<3xf32>) -> ()
  })
  %later = rlx.neg %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// rlx has no external functions.
// expected-error @below {{function @g has no body: declarations of external functions are not supported}}
func.func private @g(%x: tensor<3xf32>) -> tensor<f32>

// -----

func.func @yield_ends_a_function(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @below {{function @yield_ends_a_function must end with 'func.return', got 'rlx.yield'}}
  rlx.yield %x : (tensor<3xf32>) -> ()
}

// -----

// expected-error @below {{function @dynamic: dynamic dimensions are not supported: tensor<?xf32>}}
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  func.return %x : tensor<?xf32>
}
