// RUN: not mlperf-opt %s --split-input-file 2>&1 | FileCheck %s

// Tests that mlperf-opt registers only our dialects, func and arith: anything else is an
// error, so a lit test cannot silently depend on an unrelated dialect.
// CHECK: error: operation being parsed with an unregistered dialect
func.func @uses_linalg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "linalg.copy"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that arith constants are available for model files.
// CHECK-LABEL: func.func @uses_arith
// CHECK: arith.constant 1.000000e+00 : f32
func.func @uses_arith() -> f32 {
  %c = arith.constant 1.0 : f32
  return %c : f32
}
