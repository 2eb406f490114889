// A valid model declaration (the tiny Llama 3.1 variant, copied from models/).
tg.model @llama31_8b_tiny {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 12288, eval_samples = 1024,
                target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 32, micro_batch_size = 1, seq_len = 32}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05,
                weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 0.0008, end_lr = 8.0e-05,
                  warmup_steps = 128, decay_steps = 1199872, max_steps = 1200000}

  tg.param @"model.embed_tokens.weight" : tensor<256x64xbf16> {init = "normal", std = 0.02}
  tg.param @"model.layers.{i}.input_layernorm.weight" : tensor<64xbf16> {init = "ones", repeat = 2}
  tg.param @"model.layers.{i}.self_attn.q_proj.weight" : tensor<64x64xbf16> {init = "normal", std = 0.02, repeat = 2}
  tg.param @"model.layers.{i}.self_attn.k_proj.weight" : tensor<32x64xbf16> {init = "normal", std = 0.02, repeat = 2}
  tg.param @"model.layers.{i}.self_attn.v_proj.weight" : tensor<32x64xbf16> {init = "normal", std = 0.02, repeat = 2}
  tg.param @"model.layers.{i}.self_attn.o_proj.weight" : tensor<64x64xbf16> {init = "scaled_normal", std = 0.02, repeat = 2}
  tg.param @"model.layers.{i}.post_attention_layernorm.weight" : tensor<64xbf16> {init = "ones", repeat = 2}
  tg.param @"model.layers.{i}.mlp.gate_proj.weight" : tensor<160x64xbf16> {init = "normal", std = 0.02, repeat = 2}
  tg.param @"model.layers.{i}.mlp.up_proj.weight" : tensor<160x64xbf16> {init = "normal", std = 0.02, repeat = 2}
  tg.param @"model.layers.{i}.mlp.down_proj.weight" : tensor<64x160xbf16> {init = "scaled_normal", std = 0.02, repeat = 2}
  tg.param @"model.norm.weight" : tensor<64xbf16> {init = "ones"}
  tg.param @"lm_head.weight" : tensor<256x64xbf16> {init = "normal", std = 0.02}

  // One micro-batch: token ids and next-token labels to the mean token cross-entropy.
  func.func @forward(%tokens: tensor<1x32xi32>, %labels: tensor<1x32xi32>) -> tensor<f32> {
    %embed = tg.param_ref @"model.embed_tokens.weight" : tensor<256x64xbf16>
    %h0 = tg.embedding %embed, %tokens : tensor<256x64xbf16>, tensor<1x32xi32> -> tensor<1x32x64xbf16>
    %h = tg.repeat_layers @decoder_layer(%h0) count 2 params [
        @"model.layers.{i}.input_layernorm.weight",
        @"model.layers.{i}.self_attn.q_proj.weight",
        @"model.layers.{i}.self_attn.k_proj.weight",
        @"model.layers.{i}.self_attn.v_proj.weight",
        @"model.layers.{i}.self_attn.o_proj.weight",
        @"model.layers.{i}.post_attention_layernorm.weight",
        @"model.layers.{i}.mlp.gate_proj.weight",
        @"model.layers.{i}.mlp.up_proj.weight",
        @"model.layers.{i}.mlp.down_proj.weight"] : tensor<1x32x64xbf16>
    %final_norm = tg.param_ref @"model.norm.weight" : tensor<64xbf16>
    %hn = tg.rms_norm %h, %final_norm {epsilon = 1.0e-05} : tensor<1x32x64xbf16>, tensor<64xbf16>
    %head = tg.param_ref @"lm_head.weight" : tensor<256x64xbf16>
    %logits = tg.matmul %hn, %head {transpose_rhs} : tensor<1x32x64xbf16>, tensor<256x64xbf16> -> tensor<1x32x256xbf16>
    %loss = tg.cross_entropy %logits, %labels : tensor<1x32x256xbf16>, tensor<1x32xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }

  // One decoder layer: h = x + attention(rms_norm(x)); out = h + mlp(rms_norm(h)).
  // Attention is grouped-query attention in primitive ops: scores in f32 from bf16 operands,
  // scaled by 1/sqrt(head_dim), causally masked, softmax in f32.
  func.func private @decoder_layer(%x: tensor<1x32x64xbf16>,
      %input_norm: tensor<64xbf16>, %q_proj: tensor<64x64xbf16>,
      %k_proj: tensor<32x64xbf16>, %v_proj: tensor<32x64xbf16>,
      %o_proj: tensor<64x64xbf16>, %post_norm: tensor<64xbf16>,
      %gate_proj: tensor<160x64xbf16>, %up_proj: tensor<160x64xbf16>,
      %down_proj: tensor<64x160xbf16>) -> tensor<1x32x64xbf16> {
    %xn = tg.rms_norm %x, %input_norm {epsilon = 1.0e-05} : tensor<1x32x64xbf16>, tensor<64xbf16>
    %q = tg.matmul %xn, %q_proj {transpose_rhs} : tensor<1x32x64xbf16>, tensor<64x64xbf16> -> tensor<1x32x64xbf16>
    %k = tg.matmul %xn, %k_proj {transpose_rhs} : tensor<1x32x64xbf16>, tensor<32x64xbf16> -> tensor<1x32x32xbf16>
    %v = tg.matmul %xn, %v_proj {transpose_rhs} : tensor<1x32x64xbf16>, tensor<32x64xbf16> -> tensor<1x32x32xbf16>
    %q4 = tg.reshape %q : tensor<1x32x64xbf16> -> tensor<1x32x4x16xbf16>
    %k4 = tg.reshape %k : tensor<1x32x32xbf16> -> tensor<1x32x2x16xbf16>
    %v4 = tg.reshape %v : tensor<1x32x32xbf16> -> tensor<1x32x2x16xbf16>
    %q_rope = tg.rope %q4 {theta = 500000.0, scaling_factor = 8.0, low_freq_factor = 1.0,
                     high_freq_factor = 4.0, original_max_position = 8192} : tensor<1x32x4x16xbf16>
    %k_rope = tg.rope %k4 {theta = 500000.0, scaling_factor = 8.0, low_freq_factor = 1.0,
                     high_freq_factor = 4.0, original_max_position = 8192} : tensor<1x32x2x16xbf16>
    %q_heads = tg.transpose %q_rope {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x32x4x16xbf16> -> tensor<1x4x32x16xbf16>
    %k_heads = tg.transpose %k_rope {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x32x2x16xbf16> -> tensor<1x2x32x16xbf16>
    %v_heads = tg.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x32x2x16xbf16> -> tensor<1x2x32x16xbf16>
    %k_groups = tg.repeat %k_heads {dim = 1, times = 2} : tensor<1x2x32x16xbf16> -> tensor<1x4x32x16xbf16>
    %v_groups = tg.repeat %v_heads {dim = 1, times = 2} : tensor<1x2x32x16xbf16> -> tensor<1x4x32x16xbf16>
    %scores = tg.matmul %q_heads, %k_groups {transpose_rhs} : tensor<1x4x32x16xbf16>, tensor<1x4x32x16xbf16> -> tensor<1x4x32x32xf32>
    %scaled = tg.scale %scores {factor = 0.25} : tensor<1x4x32x32xf32>
    %masked = tg.causal_mask %scaled : tensor<1x4x32x32xf32>
    %probs = tg.softmax %masked {dim = 3} : tensor<1x4x32x32xf32>
    %probs_bf16 = tg.convert %probs : tensor<1x4x32x32xf32> -> tensor<1x4x32x32xbf16>
    %context = tg.matmul %probs_bf16, %v_groups : tensor<1x4x32x32xbf16>, tensor<1x4x32x16xbf16> -> tensor<1x4x32x16xbf16>
    %context_tokens = tg.transpose %context {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x32x16xbf16> -> tensor<1x32x4x16xbf16>
    %context_flat = tg.reshape %context_tokens : tensor<1x32x4x16xbf16> -> tensor<1x32x64xbf16>
    %attn = tg.matmul %context_flat, %o_proj {transpose_rhs} : tensor<1x32x64xbf16>, tensor<64x64xbf16> -> tensor<1x32x64xbf16>
    %h = tg.add %x, %attn : tensor<1x32x64xbf16>
    %hn = tg.rms_norm %h, %post_norm {epsilon = 1.0e-05} : tensor<1x32x64xbf16>, tensor<64xbf16>
    %gate = tg.matmul %hn, %gate_proj {transpose_rhs} : tensor<1x32x64xbf16>, tensor<160x64xbf16> -> tensor<1x32x160xbf16>
    %up = tg.matmul %hn, %up_proj {transpose_rhs} : tensor<1x32x64xbf16>, tensor<160x64xbf16> -> tensor<1x32x160xbf16>
    %act = tg.silu %gate : tensor<1x32x160xbf16>
    %gated = tg.mul %act, %up : tensor<1x32x160xbf16>
    %mlp = tg.matmul %gated, %down_proj {transpose_rhs} : tensor<1x32x160xbf16>, tensor<64x160xbf16> -> tensor<1x32x64xbf16>
    %out = tg.add %h, %mlp : tensor<1x32x64xbf16>
    return %out : tensor<1x32x64xbf16>
  }
}
