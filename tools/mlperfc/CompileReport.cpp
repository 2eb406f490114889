//===- CompileReport.cpp - What mlperfc compile prints about a plan -*- C++ -*-===//

#include "CompileReport.h"

#include "compiler/Analysis/MemoryPlan.h"
#include "dialects/TG/IR/TGOps.h"

#include "runtime/support/NumberFormat.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <string>
#include <vector>

namespace mlperf::cli {

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mlperfc compile") << message << "\n";
  return 1;
}

/// Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
/// (arXiv 2205.05198), eq. 1/4/5: bf16 activations a layer keeps for backward,
/// s·b·h·(34 + 5·a·s/h) on one rank, s·b·h·(10 + 24/t + 5·a·s/(h·t)) with tensor parallelism
/// and s·b·h·(34 + 5·a·s/h)/t with sequence parallelism; fused attention removes the 5·a·s/h
/// term (no scores kept), which is what is printed.
static double korthikantiBytesPerLayer(int64_t seq, int64_t batch, int64_t hidden, int64_t tp,
                                       bool sequenceParallel) {
  double sbh = static_cast<double>(seq) * static_cast<double>(batch) * static_cast<double>(hidden);
  double t = static_cast<double>(tp);
  return sequenceParallel ? sbh * 34.0 / t : sbh * (10.0 + 24.0 / t);
}

/// "layers 0-7 full, 8-31 selective" from tg-recompute's levels.
static std::string describeLevels(int64_t firstLayer, llvm::ArrayRef<int64_t> levels) {
  static const char *const names[] = {"kept", "swiglu recomputed", "selective", "full"};
  std::string text;
  for (size_t begin = 0; begin < levels.size();) {
    size_t end = begin;
    while (end + 1 < levels.size() && levels[end + 1] == levels[begin]) {
      ++end;
    }
    int64_t level = std::clamp<int64_t>(levels[begin], 0, 3);
    text += (text.empty() ? "" : ", ") + std::string(begin == end ? "layer " : "layers ") +
            std::to_string(firstLayer + begin) +
            (begin == end ? "" : "-" + std::to_string(firstLayer + end)) + " " + names[level];
    begin = end + 1;
  }
  return text;
}

static void describeRecompute(mlir::func::FuncOp func, RecomputeTotals &totals) {
  auto report = func->getAttrOfType<mlir::DictionaryAttr>("tg.recompute");
  if (!report) {
    return;
  }
  auto number = [&](llvm::StringRef key) {
    if (auto value = report.getAs<mlir::FloatAttr>(key)) {
      return value.getValueAsDouble();
    }
    auto value = report.getAs<mlir::IntegerAttr>(key);
    return value ? static_cast<double>(value.getInt()) : 0.0;
  };
  auto levels = report.getAs<mlir::DenseI64ArrayAttr>("levels");
  auto policy = report.getAs<mlir::StringAttr>("policy");
  double recomputed = number("recomputed_flops"), model = number("model_flops");
  totals.recomputed += recomputed;
  totals.model += model;
  if (policy && policy.getValue() == "none" && !report.get("stash_after")) {
    return; // the step's total line says so
  }
  llvm::outs() << llvm::format(
      "    recompute %s: %.4g model FLOPs recomputed per call, %.2f%% of its %.4g; activation "
      "arena of the function alone %s before, %s after\n",
      policy ? policy.getValue().str().c_str() : "?", recomputed,
      model > 0 ? 100.0 * recomputed / model : 0.0, model,
      rt::humanBytes(static_cast<int64_t>(number("arena_before"))).c_str(),
      rt::humanBytes(static_cast<int64_t>(number("arena_after"))).c_str());
  if (report.get("stash_after")) {
    llvm::outs() << llvm::format(
        "      kept across the pipeline window: %s per micro-batch (%s with nothing recomputed), "
        "%lld micro-batches in flight\n",
        rt::humanBytes(static_cast<int64_t>(number("stash_after"))).c_str(),
        rt::humanBytes(static_cast<int64_t>(number("stash_before"))).c_str(),
        static_cast<long long>(number("micro_batches_in_flight")));
  }
  if (levels && !levels.empty()) {
    llvm::outs() << "      "
                 << describeLevels(static_cast<int64_t>(number("first_layer")), levels.asArrayRef())
                 << "\n";
  }
}

void describeFunction(mlir::func::FuncOp func, const rt::ModelDims &dims, const rt::MeshShape &mesh,
                      RecomputeTotals &recompute) {
  llvm::MapVector<llvm::StringRef, unsigned> counts;
  unsigned total = 0;
  func.walk([&](mlir::Operation *op) {
    if (op != func.getOperation()) {
      ++counts[op->getName().getStringRef()];
      ++total;
    }
  });
  llvm::outs() << "  @" << func.getSymName() << ": " << func.getNumArguments() << " inputs, "
               << func.getNumResults() << " results, " << total << " ops (";
  llvm::interleaveComma(counts, llvm::outs(), [](const auto &entry) {
    llvm::outs() << entry.first << " " << entry.second;
  });
  llvm::outs() << ")\n";
  // A step function's temporaries live around its calls; the placed plan reports them.
  if (counts.count("func.call")) {
    return;
  }
  MemoryPlan memory = planFunctionMemory(func);
  if (memory.lowerBoundBytes > 0) {
    llvm::outs() << llvm::format(
        "    activation arena %s (%lld buffers), lower bound %s: %.3fx\n",
        rt::humanBytes(memory.arenaBytes).c_str(), static_cast<long long>(memory.buffers.size()),
        rt::humanBytes(memory.lowerBoundBytes).c_str(),
        static_cast<double>(memory.arenaBytes) / static_cast<double>(memory.lowerBoundBytes));
  }
  SavedActivations saved = savedForBackward(func);
  int64_t hidden = 0;
  func.walk([&](tg::RMSNormOp norm) {
    hidden = hidden ? hidden
                    : mlir::cast<mlir::RankedTensorType>(norm.getWeight().getType()).getDimSize(0);
  });
  if (saved.layers > 0 && hidden > 0) {
    double estimate = korthikantiBytesPerLayer(dims.seqLen, dims.microBatch, hidden, mesh.tp,
                                               mesh.sequenceParallel);
    llvm::outs() << llvm::format(
        "    saved for backward: %s per layer (%lld layers) + %s outside them; Korthikanti et "
        "al. estimate %s per layer (%.2fx)\n",
        rt::humanBytes(saved.bytesPerLayer).c_str(), static_cast<long long>(saved.layers),
        rt::humanBytes(saved.otherBytes).c_str(),
        rt::humanBytes(static_cast<int64_t>(estimate)).c_str(),
        static_cast<double>(saved.bytesPerLayer) / estimate);
  }
  describeRecompute(func, recompute);
}

/// What one rank holds: parameters, gradients, optimizer state (masters and moments), the
/// batch inputs and scalars, and the activation arena; with a device, the peak against it.
void describeRankMemory(const RankMemory &memory, const rt::MeshShape &mesh,
                        const DeviceMemory *device) {
  llvm::outs() << "  per-rank memory: parameters " << rt::humanBytes(memory.parameters)
               << ", gradients " << rt::humanBytes(memory.gradients) << ", optimizer state "
               << rt::humanBytes(memory.optimizerState) << ", activations "
               << rt::humanBytes(memory.activationArena) << "; arenas "
               << rt::humanBytes(memory.persistentArena + memory.activationArena) << "\n";
  if (!device) {
    return;
  }
  int64_t peak = memory.peak();
  llvm::outs() << "  per-rank peak on " << device->name << ": " << rt::humanBytes(peak) << " of "
               << rt::humanBytes(device->capacityBytes)
               << (peak <= device->capacityBytes
                       ? " (" + rt::humanBytes(device->capacityBytes - peak) + " free)"
                       : " (" + rt::humanBytes(peak - device->capacityBytes) +
                             " over: does not fit)")
               << ": arenas " << rt::humanBytes(memory.persistentArena + memory.activationArena)
               << " + reserves " << rt::humanBytes(memory.reserves) << " (";
  llvm::interleaveComma(memory.reserveList, llvm::outs(), [](const MemoryReserve &reserve) {
    llvm::outs() << reserve.what << " " << rt::humanBytes(reserve.bytes);
  });
  llvm::outs() << ")\n";
  if (peak <= device->capacityBytes && device->capacityBytes - peak < device->headroomBytes) {
    llvm::outs() << "  warning: it fits with " << rt::humanBytes(device->capacityBytes - peak)
                 << " free, less than the memory headroom of "
                 << rt::humanBytes(device->headroomBytes)
                 << " (--memory-headroom): a reserve larger than estimated would not fit; "
                    "recompute more, shard more (zero=1, tp, pp), or accept it with a lower "
                    "--memory-headroom\n";
  }
}

/// A plan that cannot fit its device is not written: the error gives the numbers, and the
/// strategies one change away that would fit (each compiled, with the same recompute policy).
int refuseUnfit(mlir::ModuleOp declaration, const TrainStepOptions &options,
                const rt::ModelDims &dims, int64_t microBatchesOnOneRank, const CompiledStep &step,
                const DeviceMemory &device) {
  llvm::outs().flush(); // the summary above, before the diagnosis
  size_t stage = step.peakStage();
  const RankMemory &memory = step.stages[stage];
  std::string where =
      step.stages.size() > 1 ? "pipeline stage " + std::to_string(stage) : "each rank";
  llvm::errs() << "mlperfc compile: " << options.mesh.describe() << " with --recompute "
               << options.recompute << " does not fit --device " << device.name << ": " << where
               << " needs " << rt::humanBytes(memory.peak()) << " of "
               << rt::humanBytes(device.capacityBytes) << " (persistent "
               << rt::humanBytes(memory.persistentArena) << ", activations "
               << rt::humanBytes(memory.activationArena) << ", reserves "
               << rt::humanBytes(memory.reserves) << "); trying the strategies nearby\n";
  std::vector<std::string> fitting, tried;
  for (const NearbyStrategy &nearby : nearbyStrategies(options, dims, microBatchesOnOneRank)) {
    llvm::errs() << "  " << nearby.change << " ...";
    llvm::errs().flush();
    // A strategy the mesh checks allow may still not split this model: its first error, in
    // one line, says why.
    std::string firstError;
    mlir::ScopedDiagnosticHandler oneLine(declaration.getContext(), [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && firstError.empty()) {
        firstError = d.str();
      }
      return mlir::success();
    });
    mlir::FailureOr<CompiledStep> candidate = compileForDevice(declaration, nearby.options, device);
    if (failed(candidate)) {
      llvm::errs() << " does not compile: " << firstError << "\n";
      continue;
    }
    int64_t peak = candidate->peakBytes();
    bool fits = peak <= device.capacityBytes;
    llvm::errs() << (fits ? " fits with " : " needs ") << rt::humanBytes(peak) << "\n";
    (fits ? fitting : tried)
        .push_back(nearby.change + (fits ? " fits with " : " needs ") + rt::humanBytes(peak));
  }
  std::string message = "needs " + rt::humanBytes(memory.peak()) + " of " +
                        rt::humanBytes(device.capacityBytes) + " (" + device.name + ", " +
                        rt::humanBytes(memory.peak() - device.capacityBytes) + " over)";
  if (!fitting.empty()) {
    message += "; " + llvm::join(fitting, ", ");
  } else {
    message += "; no strategy one change away fits either" +
               (tried.empty() ? std::string() : " (" + llvm::join(tried, ", ") + ")") +
               ": use more GPUs or a larger device";
  }
  return fail(message + "; no plan written");
}

} // namespace mlperf::cli
