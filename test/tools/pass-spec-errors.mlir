// Malformed pass options are a one-line error (with the spec and a caret), exit 1,
// reported before the input is read; never a Python traceback.
// RUN: not rlx-opt %s -p 'autodiff{wrt=w' 2>&1 | FileCheck %s --check-prefix=BRACE --implicit-check-not=Traceback
// RUN: not rlx-opt %s '--vmap=func=f batched= size=3' 2>&1 | FileCheck %s --check-prefix=VALUE --implicit-check-not=Traceback
// RUN: not rlx-opt %s --vmap=func=f 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not rlx-opt %s '--autodiff=grad-only=maybe' 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not rlx-opt %s -p nosuchpass 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not rlx-opt %t.does-not-exist.mlir -p 'cse{' 2>&1 | FileCheck %s --check-prefix=BRACE2

// BRACE: error: invalid pass specification 'autodiff{wrt=w': Malformed pass arguments, expected either a space or `}` here
// BRACE-NEXT: {{^  autodiff\{wrt=w$}}
// BRACE-NEXT: {{^                \^$}}
// VALUE: error: invalid pass specification 'vmap{func=f batched= size=3}': Unknown argument value
// MISSING: error: invalid pass specification 'vmap{func=f}': vmap requires argument "batched"
// TYPE: error: invalid pass specification 'autodiff{grad-only=maybe}': Incompatible types
// UNKNOWN: error: invalid pass specification 'nosuchpass': Unrecognized passes: ['nosuchpass']
// BRACE2: error: invalid pass specification 'cse{'

func.func @f(%x: tensor<3xf32> {rlx.param}) -> tensor<3xf32> {
  func.return %x : tensor<3xf32>
}
