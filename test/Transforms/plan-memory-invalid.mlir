// RUN: mlperf-opt %s --plan-memory --split-input-file --verify-diagnostics

// Tests that a plan without an activations arena is refused (nowhere to place @a).
// expected-error @below {{plan-memory: the plan needs a persistent and an activations arena}}
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.program @f inputs [@x] outputs [@x] {
    plan.command "copy" [@x] -> [@x]
  }
}

// -----

// Tests that two programs never share an activation buffer: the arena's bytes are reused
// from program to program, so @a's value would not survive from @first to @second.
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.arena @activations activations
  plan.buffer @x : tensor<4xf32> in @persistent
  plan.buffer @a : tensor<4xf32> in @activations
  plan.program @first inputs [@x] outputs [@x] {
    plan.command "copy" [@x] -> [@a]
  }
  plan.program @second inputs [@x] outputs [@x] {
    // expected-error @below {{plan-memory: activation buffer @a is used by programs @first and @second; programs share the arena, so they cannot}}
    plan.command "copy" [@a] -> [@x]
  }
}
