// --verify-diagnostics sees every op verification failure of a chunk, and checks
// expected-note / expected-warning like errors.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics
// RUN: python -c "import sys; t = open(sys.argv[1]).read().replace('first defined at', 'wrong note text'); open(sys.argv[2], 'w').write(t)" %s %t.badnote.mlir
// RUN: not rlx-opt %t.badnote.mlir --split-input-file --verify-diagnostics 2>&1 | FileCheck %s --check-prefix=BADNOTE
// BADNOTE: expected note "wrong note text" at line {{[0-9]+}} was not produced
// A note nobody expected is a failure, as with mlir-opt.
// RUN: python -c "import sys; t = open(sys.argv[1]).read().replace('// expected-' + 'note', '// no-note'); open(sys.argv[2], 'w').write(t)" %s %t.nonote.mlir
// RUN: not rlx-opt %t.nonote.mlir --split-input-file --verify-diagnostics 2>&1 | FileCheck %s --check-prefix=NONOTE
// NONOTE: nonote.mlir:[[# @LINE + 21]]: error: unexpected note: @h is first defined at
// RUN: python -c "import sys; open(sys.argv[1], 'w').write('// expected-' + 'warning@+1 {' + '{never}' + '}\\nmodule {}\\n')" %t.warn.mlir
// RUN: not rlx-opt %t.warn.mlir --verify-diagnostics 2>&1 | FileCheck %s --check-prefix=WARN
// WARN: warn.mlir:1:{{[0-9]+}}: error: expected warning "never" at line 2 was not produced
// An error nobody expected is reported once, at its file:line:col.
// RUN: python -c "import sys; t = open(sys.argv[1]).read().replace('// expected-error@+1 {' + '{result type', '// {' + '{result type'); open(sys.argv[2], 'w').write(t)" %s %t.noerr.mlir
// RUN: not rlx-opt %t.noerr.mlir --split-input-file --verify-diagnostics 2>&1 | FileCheck %s --check-prefix=NOERR
// NOERR: noerr.mlir:[[# @LINE + 4]]:3: error: unexpected error: 'rlx.tanh' op result type mismatch
// NOERR-NOT: error: 'rlx.tanh'
func.func @f(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{result type mismatch}}
  %0 = rlx.tanh %x : (tensor<4xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}
func.func @g(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{result type mismatch}}
  %0 = rlx.relu %x : (tensor<4xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}
// -----
// expected-note@+1 {{first defined at}}
func.func @h(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// expected-error@+1 {{redefinition of symbol @h}}
func.func @h(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
