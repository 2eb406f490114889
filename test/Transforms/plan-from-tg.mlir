// RUN: mlperf-opt %s --tg-autodiff --tg-optimizer --tg-train-step=accumulation-steps=2 --plan-from-tg="precision=fp32 accumulation-steps=2" | FileCheck %s

// Tests the plan of a one-parameter train step: persistent buffers per parameter (value,
// gradient, f32 master and moments) and for the inputs and scalars, the parameter record
// and its optimizer state by the roles @optimizer_step gives it,
// programs whose inputs and outputs are those buffers, one command per tg op with its
// attributes, numbered activation buffers, and the model metadata. Offsets come later.
// CHECK-LABEL: plan.plan @tiny.plan attributes {format_version = 10 : i64, model = {
// CHECK-SAME: global_batch_size = 2 : i64, gradient_accumulation_steps = 2 : i64
// CHECK-SAME: precision = "fp32"
// CHECK: plan.arena @persistent persistent
// CHECK: plan.arena @activations activations
// CHECK: plan.buffer @embed : tensor<16x8xf32> in @persistent{{$}}
// CHECK: plan.buffer @grad.embed : tensor<16x8xf32> in @persistent{{$}}
// CHECK: plan.buffer @optimizer.master.embed : tensor<16x8xf32> in @persistent{{$}}
// CHECK: plan.buffer @optimizer.exp_avg.embed
// CHECK: plan.buffer @optimizer.exp_avg_sq.embed
// CHECK: plan.parameter "embed" {grad = @grad.embed, init = "normal", std = 2.000000e-02 : f64, value = @embed}
// CHECK-NEXT: plan.state "optimizer.master.embed" @optimizer.master.embed {param = "embed", role = "master", starts_as_param}
// CHECK-NEXT: plan.state "optimizer.exp_avg.embed" @optimizer.exp_avg.embed {param = "embed", role = "exp_avg"}
// CHECK-NEXT: plan.state "optimizer.exp_avg_sq.embed" @optimizer.exp_avg_sq.embed {param = "embed", role = "exp_avg_sq"}
// CHECK: plan.buffer @input.tokens : tensor<1x4xi32> in @persistent{{$}}
// CHECK: plan.buffer @input.labels : tensor<1x4xi32> in @persistent{{$}}
// CHECK: plan.buffer @loss : tensor<f32> in @persistent
// CHECK: plan.buffer @step : tensor<i64> in @persistent
// CHECK: plan.buffer @lr : tensor<f32> in @persistent
// CHECK: plan.buffer @grad_norm : tensor<f32> in @persistent
// CHECK: plan.buffer @forward.embedding.0 : tensor<1x4x8xf32> in @activations{{$}}
// CHECK: plan.buffer @forward.matmul.0 : tensor<1x4x16xf32> in @activations{{$}}
// CHECK: plan.program @forward inputs [@input.tokens, @input.labels] outputs [@loss] {
// CHECK-NEXT: plan.command "embedding" [@embed, @input.tokens] -> [@forward.embedding.0]
// CHECK-NEXT: plan.command "matmul" [@forward.embedding.0, @embed] -> [@forward.matmul.0] {kernel_attrs = {transpose_rhs}}
// CHECK-NEXT: plan.command "cross_entropy" [@forward.matmul.0, @input.labels] -> [@loss]
// CHECK-NEXT: }
// A reshape's result is a view of its input's bytes; the last op writes the gradient buffer.
// CHECK: plan.buffer @forward_backward.view.0 : tensor<4x8xf32> in @activations view of @forward_backward.embedding.0
// With two micro-batches the backward adds its gradient to the sum in place: the gradient
// buffer is an input and an output.
// CHECK: plan.program @forward_backward inputs [@input.tokens, @input.labels, @grad.embed] outputs [@loss, @grad.embed] {
// CHECK: plan.command "cross_entropy_grad"
// CHECK: plan.command "reshape" [@forward_backward.embedding.0] -> [@forward_backward.view.0]
// CHECK: plan.command "add" [@forward_backward.matmul.2, @forward_backward.embedding_grad.0] -> [@forward_backward.add.0]
// CHECK-NEXT: plan.command "add" [@grad.embed, @forward_backward.add.0] -> [@grad.embed]
// CHECK: plan.program @optimizer_step inputs [@step, @grad.embed, @optimizer.master.embed, @optimizer.exp_avg.embed, @optimizer.exp_avg_sq.embed] outputs [@embed, @optimizer.master.embed, @optimizer.exp_avg.embed, @optimizer.exp_avg_sq.embed, @lr, @grad_norm] {
// CHECK: plan.command "lr_value" [@step] -> [@lr]
// The f32 parameter is its own master: returned twice, written once and copied once.
// CHECK: plan.command "elementwise" [@step] -> [@optimizer_step.elementwise.0, @optimizer_step.elementwise.1] {kernel_attrs = {arithmetic = "f64", program = "t = a0 1 +; r0 = 1 0.90000000000000002 t pow -; r1 = 1 0.94999999999999996 t pow -"}}
// CHECK: plan.command "elementwise" [@optimizer.master.embed, @optimizer.exp_avg.embed, @optimizer.exp_avg_sq.embed, @grad.embed, @lr, @optimizer_step.clip_coefficient.0, @optimizer_step.elementwise.0, @optimizer_step.elementwise.1] -> [@embed, @optimizer.exp_avg.embed, @optimizer.exp_avg_sq.embed] {kernel_attrs = {program = "g = a3 a5 *; {{.*}}"}}
// CHECK-NEXT: plan.command "copy" [@embed] -> [@optimizer.master.embed]
// The whole step: micro-batches sliced from the step's inputs (the first straight into the
// sub-program's input buffers), the gradient sum zeroed in place, one call per micro-batch
// with the next micro-batch copied in, the first loss saved before the second call
// overwrites it, the optimizer, and the loss vector.
// CHECK: plan.buffer @train_step.tokens : tensor<2x1x4xi32> in @persistent{{$}}
// CHECK: plan.buffer @losses : tensor<2xf32> in @persistent{{$}}
// CHECK: plan.program @train_step inputs [@train_step.tokens, @train_step.labels, @step, @optimizer.master.embed, @optimizer.exp_avg.embed, @optimizer.exp_avg_sq.embed] outputs [@embed, @optimizer.master.embed, @optimizer.exp_avg.embed, @optimizer.exp_avg_sq.embed, @lr, @grad_norm, @losses]
// CHECK-SAME: attributes {input_roles = ["tokens", "labels", "step", "master", "exp_avg", "exp_avg_sq"], output_roles = ["param", "master", "exp_avg", "exp_avg_sq", "lr", "grad_norm", "losses"]}
// CHECK-NEXT: plan.command "split" [@train_step.tokens] -> [@train_step.split.0, @train_step.split.1] {kernel_attrs = {dim = 0 : i64, sizes = array<i64: 1, 1>}}
// CHECK-NEXT: plan.command "reshape" [@train_step.split.0] -> [@input.tokens]
// CHECK-NEXT: plan.command "reshape" [@train_step.split.1] -> [@train_step.view.0]
// CHECK: plan.command "fill" [] -> [@grad.embed] {kernel_attrs = {value = 0.000000e+00 : f64}}
// CHECK-NEXT: plan.command "call" [] -> [] {kernel_attrs = {program = "forward_backward"}, micro_batch = 0 : i64}
// CHECK-NEXT: plan.command "copy" [@loss] -> [@train_step.saved.0] {micro_batch = 1 : i64}
// CHECK-NEXT: plan.command "copy" [@train_step.view.0] -> [@input.tokens] {micro_batch = 1 : i64}
// CHECK-NEXT: plan.command "copy" [@train_step.view.1] -> [@input.labels] {micro_batch = 1 : i64}
// CHECK-NEXT: plan.command "call" [] -> [] {kernel_attrs = {program = "forward_backward"}, micro_batch = 1 : i64}
// CHECK-NEXT: plan.command "call" [] -> [] {kernel_attrs = {program = "optimizer_step"}}
// CHECK-NEXT: plan.command "reshape" [@train_step.saved.0] -> [@train_step.view.2]
// CHECK-NEXT: plan.command "reshape" [@loss] -> [@train_step.view.3]
// CHECK-NEXT: plan.command "concat" [@train_step.view.2, @train_step.view.3] -> [@losses]
// Evaluation keeps its running mean in persistent memory between eval_step and eval_finish.
// CHECK: plan.buffer @eval_sum : tensor<2xf64> in @persistent
// CHECK: plan.program @eval_step inputs [@eval_step.tokens, @eval_step.labels, @eval_sum] outputs [@eval_sum] attributes {input_roles = ["tokens", "labels", "eval_sum"], output_roles = ["eval_sum"]} {
// CHECK-NEXT: plan.command "copy" [@eval_step.tokens] -> [@input.tokens]
// CHECK-NEXT: plan.command "copy" [@eval_step.labels] -> [@input.labels]
// CHECK-NEXT: plan.command "call" [] -> [] {kernel_attrs = {program = "forward"}}
// CHECK-NEXT: plan.command "mean_accumulate" [@eval_sum, @loss] -> [@eval_sum]
// CHECK: plan.buffer @eval_loss : tensor<f64> in @persistent
// CHECK-NEXT: plan.program @eval_finish inputs [@eval_sum] outputs [@eval_loss, @eval_sum] attributes {input_roles = ["eval_sum"], output_roles = ["loss", "eval_sum"]} {
// CHECK-NEXT: plan.command "mean_finish" [@eval_sum] -> [@eval_loss, @eval_sum]
tg.model @tiny {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16, target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 1, seq_len = 4}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05, weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04, warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<16x8xf32> {init = "normal", std = 0.02}
  func.func @forward(%tokens: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<16x8xf32>
    %h = tg.embedding %e, %tokens : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
    %logits = tg.matmul %h, %e {transpose_rhs} : tensor<1x4x8xf32>, tensor<16x8xf32> -> tensor<1x4x16xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x4x16xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

