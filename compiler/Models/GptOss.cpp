//===- GptOss.cpp - The GPT-OSS-20B-shaped declaration ----------*- C++ -*-===//
//
// The MLPerf gpt_oss_20b reference (Primus on Megatron-LM; shared/reference/BENCHMARKS.md
// section 2) as tg IR: Llama-style pre-norm layers whose MLP is a dropless mixture of SwiGLU
// experts, attention with RMSNorm on q and k before RoPE, a query width (heads · head_dim)
// other than d_model, sliding-window attention on even layers and full causal attention on
// odd ones, and a loss that leaves out the positions whose input token is end-of-document.
// Semantics of each choice: docs/models.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/Models/Llama.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace mlperf::models {

namespace {

/// One layer function: `window` > 0 makes its causal mask a sliding window.
void emitLayer(llvm::raw_ostream &os, const LlamaConfig &c, llvm::StringRef name, int64_t window) {
  const std::string dt = c.dtype;
  const int64_t B = c.microBatch, S = c.seq, D = c.hidden, H = c.heads, KV = c.kvHeads;
  const int64_t HD = c.headDim(), F = c.ffn, E = c.experts, K = c.topK;
  const int64_t T = B * S, R = T * K; // tokens, routed (token, slot) rows
  auto t = [&](std::initializer_list<int64_t> shape, llvm::StringRef type = "") {
    return tensorType(shape, type.empty() ? llvm::StringRef(dt) : type);
  };
  const std::string x = t({B, S, D}), q3 = t({B, S, H * HD}), kv3 = t({B, S, KV * HD});
  const std::string eps = "{epsilon = " + formatModelNumber(c.normEps) + "}";
  const std::string rope = "{theta = " + formatModelNumber(c.ropeTheta) + "}";

  os << "  func.func private @" << name << "(%x: " << x << ",\n"
     << "      %input_norm: " << t({D}) << ", %q_proj: " << t({H * HD, D})
     << ", %k_proj: " << t({KV * HD, D}) << ",\n"
     << "      %v_proj: " << t({KV * HD, D}) << ", %q_norm: " << t({HD}) << ", %k_norm: " << t({HD})
     << ",\n"
     << "      %o_proj: " << t({D, H * HD}) << ", %post_norm: " << t({D})
     << ", %router: " << t({E, D}) << ",\n"
     << "      %fc1: " << t({E, 2 * F, D}) << ", %fc2: " << t({E, D, F}) << ") -> " << x << " {\n";
  os << "    %xn = tg.rms_norm %x, %input_norm " << eps << " : " << x << ", " << t({D}) << "\n";
  os << "    %q = tg.matmul %xn, %q_proj {transpose_rhs} : " << x << ", " << t({H * HD, D})
     << " -> " << q3 << "\n";
  os << "    %k = tg.matmul %xn, %k_proj {transpose_rhs} : " << x << ", " << t({KV * HD, D})
     << " -> " << kv3 << "\n";
  os << "    %v = tg.matmul %xn, %v_proj {transpose_rhs} : " << x << ", " << t({KV * HD, D})
     << " -> " << kv3 << "\n";
  emitAttentionCore(os, c, rope, window);
  os << "    %attn = tg.matmul %context_flat, %o_proj {transpose_rhs} : " << q3 << ", "
     << t({D, H * HD}) << " -> " << x << "\n";
  os << "    %h = tg.add %x, %attn : " << x << "\n";
  os << "    %hn = tg.rms_norm %h, %post_norm " << eps << " : " << x << ", " << t({D}) << "\n";

  // The MoE block: route the B·S tokens, sort the (token, slot) pairs by expert, run each
  // expert's SwiGLU on its rows, weight them by their probabilities before fc2, sum each
  // token's k outputs.
  const std::string tokens = t({T, D}), routed = t({R, D}), order = tensorType({R}, "i32");
  const std::string sizes = tensorType({E}, "i32");
  os << "    %tokens = tg.reshape %hn : " << x << " -> " << tokens << "\n";
  os << "    %logits = tg.matmul %tokens, %router {transpose_rhs} : " << tokens << ", " << t({E, D})
     << " -> " << tensorType({T, E}, "f32") << "\n";
  os << "    %route_probs, %experts = tg.moe_route %logits {top_k = " << K
     << " : i64} : " << tensorType({T, E}, "f32") << " -> " << tensorType({T, K}, "f32") << ", "
     << tensorType({T, K}, "i32") << "\n";
  os << "    %order, %group_sizes = tg.moe_sort %experts : " << tensorType({T, K}, "i32") << " -> "
     << order << ", " << sizes << "\n";
  os << "    %rows = tg.moe_permute %tokens, %order : " << tokens << ", " << order << " -> "
     << routed << "\n";
  os << "    %fc1_out = tg.grouped_matmul %rows, %fc1, %group_sizes {transpose_rhs} : " << routed
     << ", " << t({E, 2 * F, D}) << ", " << sizes << " -> " << t({R, 2 * F}) << "\n";
  os << "    %gate, %up = tg.split %fc1_out {dim = 1 : i64, sizes = array<i64: " << F << ", " << F
     << ">} : " << t({R, 2 * F}) << " -> " << t({R, F}) << ", " << t({R, F}) << "\n";
  os << "    %act = tg.silu %gate : " << t({R, F}) << "\n";
  os << "    %gated = tg.mul %act, %up : " << t({R, F}) << "\n";
  os << "    %pair_probs = tg.reshape %route_probs : " << tensorType({T, K}, "f32") << " -> "
     << tensorType({R, 1}, "f32") << "\n";
  os << "    %sorted_probs = tg.moe_permute %pair_probs, %order : " << tensorType({R, 1}, "f32")
     << ", " << order << " -> " << tensorType({R, 1}, "f32") << "\n";
  os << "    %row_probs = tg.reshape %sorted_probs : " << tensorType({R, 1}, "f32") << " -> "
     << tensorType({R}, "f32") << "\n";
  os << "    %weighted = tg.scale_rows %gated, %row_probs : " << t({R, F}) << ", "
     << tensorType({R}, "f32") << "\n";
  os << "    %fc2_out = tg.grouped_matmul %weighted, %fc2, %group_sizes {transpose_rhs} : "
     << t({R, F}) << ", " << t({E, D, F}) << ", " << sizes << " -> " << routed << "\n";
  os << "    %combined = tg.moe_unpermute %fc2_out, %order : " << routed << ", " << order << " -> "
     << tokens << "\n";
  os << "    %moe = tg.reshape %combined : " << tokens << " -> " << x << "\n";
  os << "    %out = tg.add %h, %moe : " << x << "\n";
  os << "    return %out : " << x << "\n";
  os << "  }\n";
}

} // namespace

std::string emitGptOss(const LlamaConfig &c, llvm::StringRef commandLine) {
  const std::string dt = c.dtype;
  const int64_t B = c.microBatch, S = c.seq, D = c.hidden, H = c.heads, KV = c.kvHeads;
  const int64_t HD = c.headDim(), F = c.ffn, V = c.vocab, L = c.layers, E = c.experts;
  auto t = [&](std::initializer_list<int64_t> shape) { return tensorType(shape, dt); };
  const std::string x = t({B, S, D}), tokens = tensorType({B, S}, "i32");

  std::string out = emitModelHeader(c, commandLine, "compiler/Models/GptOss.cpp");
  llvm::raw_string_ostream os(out);
  os << "\n";
  // Megatron's initialization: normal(0, std) for every matrix, the output-layer kind (o_proj,
  // fc2) scaled by 1/sqrt(2 · layers); norms (q_norm, k_norm included) start at one.
  const std::string normal = "init = \"normal\", std = " + formatModelNumber(c.initStd);
  const std::string scaled = "init = \"scaled_normal\", std = " + formatModelNumber(c.initStd);
  const std::string ones = "init = \"ones\"";
  const std::string rows = "[[\"tp\"], []]", columns = "[[], [\"tp\"]]";
  struct Param {
    std::string name, type, init, shard;
  };
  const std::string prefix = "model.layers.{i}.";
  // Expert tensor parallelism: fc1 [E, 2F, D] split by output features in its [gate; up]
  // blocks, fc2 [E, D, F] by input features.
  const std::vector<Param> layerParams = {
      {prefix + "input_layernorm.weight", t({D}), ones, ""},
      {prefix + "self_attn.q_proj.weight", t({H * HD, D}), normal, rows},
      {prefix + "self_attn.k_proj.weight", t({KV * HD, D}), normal, rows},
      {prefix + "self_attn.v_proj.weight", t({KV * HD, D}), normal, rows},
      {prefix + "self_attn.q_norm.weight", t({HD}), ones, ""},
      {prefix + "self_attn.k_norm.weight", t({HD}), ones, ""},
      {prefix + "self_attn.o_proj.weight", t({D, H * HD}), scaled, columns},
      {prefix + "post_attention_layernorm.weight", t({D}), ones, ""},
      {prefix + "mlp.router.weight", t({E, D}), normal, ""},
      {prefix + "mlp.experts.fc1.weight", t({E, 2 * F, D}), normal,
       "[[], [\"tp\"], []], shard_blocks = array<i64: " + std::to_string(F) + ", " +
           std::to_string(F) + ">"},
      {prefix + "mlp.experts.fc2.weight", t({E, D, F}), scaled, "[[], [], [\"tp\"]]"},
  };
  auto declare = [&](const Param &p, bool perLayer) {
    os << "  tg.param @\"" << p.name << "\" : " << p.type << " {" << p.init;
    if (perLayer) {
      os << ", repeat = " << L;
    }
    if (!p.shard.empty()) {
      os << ", shard = " << p.shard;
    }
    os << "}\n";
  };
  declare({"model.embed_tokens.weight", t({V, D}), normal, rows}, false);
  for (const Param &p : layerParams) {
    declare(p, true);
  }
  declare({"model.norm.weight", t({D}), ones, ""}, false);
  declare({"lm_head.weight", t({V, D}), normal, rows}, false);
  os << "\n";

  os << "  // One micro-batch: token ids and next-token labels to the mean token cross-entropy\n"
     << "  // over the positions whose input token is not end-of-document (" << c.eodToken << ").\n"
     << "  // Even layers attend through a sliding window of " << c.slidingWindow
     << " earlier keys, odd layers fully causally.\n";
  os << "  func.func @forward(%tokens: " << tokens << ", %labels: " << tokens
     << ") -> tensor<f32>\n"
     << "      attributes {tg.sequence_dim = 1 : i64} {\n";
  os << "    %embed = tg.param_ref @\"model.embed_tokens.weight\" : " << t({V, D}) << "\n";
  os << "    %h0 = tg.embedding %embed, %tokens : " << t({V, D}) << ", " << tokens << " -> " << x
     << "\n";
  os << "    %h = tg.repeat_layers @sliding_window_layer(%h0) count " << L
     << " alternating [@full_attention_layer] params [\n";
  for (size_t i = 0; i < layerParams.size(); ++i) {
    os << "        @\"" << layerParams[i].name << "\""
       << (i + 1 < layerParams.size() ? ",\n" : "]");
  }
  os << " : " << x << "\n";
  os << "    %final_norm = tg.param_ref @\"model.norm.weight\" : " << t({D}) << "\n";
  os << "    %hn = tg.rms_norm %h, %final_norm {epsilon = " << formatModelNumber(c.normEps)
     << "} : " << x << ", " << t({D}) << "\n";
  os << "    %head = tg.param_ref @\"lm_head.weight\" : " << t({V, D}) << "\n";
  os << "    %logits = tg.matmul %hn, %head {transpose_rhs} : " << x << ", " << t({V, D}) << " -> "
     << t({B, S, V}) << "\n";
  os << "    %loss_mask = tg.token_mask %tokens {masked_token = " << c.eodToken
     << " : i64} : " << tokens << " -> " << tensorType({B, S}, "f32") << "\n";
  os << "    %loss = tg.cross_entropy %logits, %labels, %loss_mask : " << t({B, S, V}) << ", "
     << tokens << ", " << tensorType({B, S}, "f32") << " -> tensor<f32>\n";
  os << "    return %loss : tensor<f32>\n";
  os << "  }\n\n";

  os << "  // A layer: h = x + attention(rms_norm(x)); out = h + moe(rms_norm(h)). Attention is\n"
     << "  // grouped-query attention with RMSNorm on each q and k head before RoPE; the MoE\n"
     << "  // routes each token to " << c.topK << " of " << E
     << " SwiGLU experts (top-k of the raw router logits, softmax\n"
     << "  // over the k, the probabilities applied before fc2), dropless.\n";
  emitLayer(os, c, "sliding_window_layer", c.slidingWindow);
  os << "\n";
  emitLayer(os, c, "full_attention_layer", 0);
  os << "}\n";
  return out;
}

} // namespace mlperf::models
