// I/O problems are one-line errors with exit 1, not "internal compiler error".
// RUN: not rlx-opt %s -o %t.missing-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUT
// OUT: error: could not write output file '{{.*}}.missing-dir/out.mlir': No such file or directory
// RUN: not rlx-opt %S 2>&1 | FileCheck %s --check-prefix=DIR
// RUN: not rlx-run %S 2>&1 | FileCheck %s --check-prefix=DIR
// DIR: error: could not open input file '{{.*}}tools': Is a directory
// RUN: not rlx-opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: could not open input file '{{.*}}.does-not-exist.mlir': No such file or directory

// A non-UTF-8 input is located at its first bad byte.
// RUN: python -c "open(r'%t.bin', 'wb').write(b'func\n  \xd0 x')"
// RUN: not rlx-opt %t.bin 2>&1 | FileCheck %s --check-prefix=UTF8
// RUN: not rlx-run %t.bin 2>&1 | FileCheck %s --check-prefix=UTF8
// UTF8: .bin:2:3: error: invalid UTF-8 byte 0xd0: the input must be MLIR text

// A reader that goes away (`rlx-opt ... | head`) ends rlx-opt quietly with 141 (SIGPIPE).
// RUN: sh -c '(rlx-opt %s 2> %t.pipe-err; echo "status $?" > %t.status) | true'
// RUN: FileCheck %s --check-prefix=PIPE < %t.status
// RUN: FileCheck %s --allow-empty --check-prefix=NOERR < %t.pipe-err
// PIPE: status 141
// NOERR-NOT: {{.}}

// rlx-run's random inputs: --int-high and --seed out of range are errors, not numpy's.
// RUN: not rlx-run %s --int-high 0 2>&1 | FileCheck %s --check-prefix=HIGH
// RUN: not rlx-run %s --seed -1 2>&1 | FileCheck %s --check-prefix=SEED
// HIGH: error: --int-high must be at least 1 (random integers are drawn from [0, K)), got 0
// SEED: error: --seed must be a non-negative integer, got -1

func.func @f(%t: tensor<5x3xf32>, %i: tensor<4xi32>) -> tensor<4x3xf32> {
  %0 = rlx.gather %t, %i {axis = 0 : i64} : (tensor<5x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
