// The lexer's message names the character it stopped at.
// RUN: not rlx-opt %s 2>&1 | FileCheck %s
// CHECK: parse-error-lexer.mlir:[[@LINE+1]]:9: error: Expected suffix identifier after '!'
garbage !!! {{
