// mlir-opt's spellings work: one-dash long options and passes (-split-input-file, -cse,
// -o=FILE, -o - for stdout), --mlir-print-op-generic, --pass-pipeline='builtin.module(...)'; a usage
// error exits 1 as mlir-opt does (not argparse's 2); --version names rlx-opt.
// RUN: rlx-opt -split-input-file -cse %s -o - | FileCheck %s
// RUN: rlx-opt %s -canonicalize -o=%t.out.mlir && FileCheck %s < %t.out.mlir
// CHECK: func.func @f
// RUN: rlx-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// GENERIC: "func.func"() <{sym_name = "f"
// RUN: rlx-opt %s --pass-pipeline='builtin.module(autodiff{wrt=x},cse)' | FileCheck %s --check-prefix=PIPE
// RUN: rlx-opt %s --pass-pipeline 'autodiff{wrt=x}' | FileCheck %s --check-prefix=PIPE
// PIPE: func.func @f_grad{{.*}}rlx.wrt = ["x"]
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(func.func(cse))' 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: error: invalid pass pipeline 'builtin.module(func.func(cse))': rlx-opt runs passes on the module only
// RUN: not rlx-opt %s -autodif 2>&1 | FileCheck %s --check-prefix=TYPO
// TYPO: error: unknown pass or option '-autodif' (did you mean --autodiff?)
// RUN: sh -c 'rlx-opt %s --no-such-option 2>/dev/null; echo "status $?"' | FileCheck %s --check-prefix=USAGE
// RUN: sh -c 'rlx-run --no-such-option %s 2>/dev/null; echo "status $?"' | FileCheck %s --check-prefix=USAGE
// USAGE: status 1
// RUN: rlx-opt --version | FileCheck %s --check-prefix=VERSION
// VERSION: rlx-opt (rlx-mlir {{.*}}) built on xdsl
func.func @f(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
