//===- ModelSummary.h - Sizes, memory and FLOPs of a model -----*- C++ -*-===//
//
// What `mlperfc summary` reports. The FLOP count is the one MFU is computed from; its formula
// is documented in docs/models.md.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_COMPILER_ANALYSIS_MODELSUMMARY_H
#define MLPERFC_COMPILER_ANALYSIS_MODELSUMMARY_H

#include "dialects/TG/IR/TGOps.h"
#include "runtime/dist/Mesh.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mlperf {

struct ModelSummary {
  std::string name, benchmark;
  int64_t parameters = 0;
  int64_t trainableParameters = 0; // parameters not declared frozen (the optimizer's)
  int64_t parameterTensors = 0;    // declared tensors, per-layer ones counted per layer
  /// Parameters one token computes with: all of them but the experts of a mixture-of-experts
  /// layer, of which a token uses top_k of E (each expert tensor counted at top_k / E).
  int64_t activeParametersPerToken = 0;
  /// Bytes by role ("parameters", "gradients", "master_weights", "optimizer_state"), then by
  /// element type name ("bf16", "f32").
  std::map<std::string, std::map<std::string, int64_t>> bytes;
  int64_t globalBatch = 0, microBatch = 0, seqLen = 0;
  /// Model FLOPs of matmuls (2·M·N·K each; causal attention matmuls at half).
  double forwardFlopsPerMicroBatch = 0;
  double forwardFlopsPerToken = 0;
  /// Forward and backward: 3x forward per matmul, 2x where its weight is frozen (no weight
  /// gradient: a LoRA base).
  double trainFlopsPerToken = 0;
  double trainFlopsPerStep = 0; // trainFlopsPerToken x global batch x seq_len
  /// Ops executed by one @forward call, layer stacks unrolled.
  std::map<std::string, int64_t> forwardOps;
};

/// The share of a [seq, seq] score matrix causal attention computes: half, as Megatron's MFU
/// counts it, or with a sliding window of W keys the (W + 1)·seq − W(W + 1)/2 entries each
/// query sees (GPT-OSS-20B's even layers: 1.6 % of 8192²). The model FLOPs and the step-time
/// model both count attention by it.
double causalScoreShare(std::optional<int64_t> window, int64_t seq);

/// Model FLOPs of one forward op, as MFU counts them: 2·M·N·K per matmul (tg.matmul, the
/// two of tg.attention, the logits of tg.linear_cross_entropy), causal attention at half;
/// 0 for everything else (elementwise work is not counted).
double modelFlops(mlir::Operation *op);

/// The sizes a parallel strategy must divide (rt::validateMesh), read from a declaration:
/// its batch, the layers of its tg.repeat_layers stacks (dist-pipeline cuts them as one
/// sequence), and every dim, and every block of a dim, a parameter declares split over tp.
rt::ModelDims parallelDims(tg::ModelOp model);

/// Summarizes a verified model.
ModelSummary summarizeModel(tg::ModelOp model);

} // namespace mlperf

#endif // MLPERFC_COMPILER_ANALYSIS_MODELSUMMARY_H
