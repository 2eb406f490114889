// RUN: not mlperf-opt %s --tg-simplify="max-iterations=0" 2>&1 | FileCheck %s

// Tests that a nonsensical iteration limit is an error naming the option, not a silent no-op.
// CHECK: error: tg-simplify: max-iterations must be >= 1, got 0
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
