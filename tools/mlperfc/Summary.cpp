//===- Summary.cpp - mlperfc summary ---------------------------*- C++ -*-===//

#include "Commands.h"

#include "runtime/support/NumberFormat.h"

#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <iterator>

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand summaryCommand("summary",
                              "Parameter count, memory by dtype, model FLOPs and op counts");

static cl::opt<std::string> summaryInput(cl::Positional, cl::Required, cl::sub(summaryCommand),
                                         cl::desc("<model.mlir>"), cl::cat(mlperfcCategory()));
static cl::opt<bool> summaryJson("json", cl::sub(summaryCommand),
                                 cl::desc("Print one JSON object instead of a table"),
                                 cl::cat(mlperfcCategory()));

/// 8030261248 -> "8,030,261,248".
static std::string withThousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

static std::string scientific(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4e", value);
  return buffer;
}

static void printTable(const ModelSummary &s) {
  llvm::raw_ostream &os = llvm::outs();
  os << "model @" << s.name << " (benchmark " << s.benchmark << ")\n";
  os << "parameters: " << withThousands(s.parameters) << " in " << s.parameterTensors << " tensors";
  if (s.trainableParameters != s.parameters) {
    os << " (trainable " << withThousands(s.trainableParameters) << ", frozen "
       << withThousands(s.parameters - s.trainableParameters) << ")";
  }
  os << "\n";
  if (s.activeParametersPerToken != s.parameters) {
    os << "active parameters per token: " << withThousands(s.activeParametersPerToken)
       << " (each mixture-of-experts layer's experts at top_k / experts)\n";
  }
  os << "memory for training state (bytes):\n";
  int64_t total = 0;
  for (const auto &[role, byType] : s.bytes) {
    for (const auto &[type, bytes] : byType) {
      os << llvm::format("  %-16s %-5s %22s  (%s)\n", role.c_str(), type.c_str(),
                         withThousands(bytes).c_str(), rt::humanBytes(bytes).c_str());
      total += bytes;
    }
  }
  os << llvm::format("  %-22s %22s  (%s)\n", "total", withThousands(total).c_str(),
                     rt::humanBytes(total).c_str());
  os << "batch: " << s.globalBatch << " sequences x " << s.seqLen << " tokens per step, "
     << "micro-batch " << s.microBatch << " (" << s.globalBatch / std::max<int64_t>(1, s.microBatch)
     << " micro-batches per step on one data-parallel rank)\n";
  os << "model FLOPs (2·M·N·K per matmul and per routed row of a grouped GEMM; causal attention "
        "at half, sliding-window at the share it sees; backward = 2 x forward, 1 x where the "
        "weight is frozen):\n";
  os << "  forward per token   " << scientific(s.forwardFlopsPerToken) << "\n";
  os << "  training per token  " << scientific(s.trainFlopsPerToken) << "\n";
  os << "  training per step   " << scientific(s.trainFlopsPerStep) << "\n";
  os << "ops per @forward call (layer stacks unrolled):";
  for (const auto &[op, count] : s.forwardOps) {
    os << " " << op << " " << count << ";";
  }
  os << "\n";
}

static void printJson(const ModelSummary &s) {
  llvm::json::Object bytes;
  for (const auto &[role, byType] : s.bytes) {
    llvm::json::Object types;
    for (const auto &[type, count] : byType) {
      types[type] = count;
    }
    bytes[role] = std::move(types);
  }
  llvm::json::Object ops;
  for (const auto &[op, count] : s.forwardOps) {
    ops[op] = count;
  }
  llvm::json::Object root{
      {"model", s.name},
      {"benchmark", s.benchmark},
      {"parameters", s.parameters},
      {"trainable_parameters", s.trainableParameters},
      {"active_parameters_per_token", s.activeParametersPerToken},
      {"parameter_tensors", s.parameterTensors},
      {"bytes", std::move(bytes)},
      {"batch", llvm::json::Object{{"global_batch_size", s.globalBatch},
                                   {"micro_batch_size", s.microBatch},
                                   {"seq_len", s.seqLen}}},
      {"flops", llvm::json::Object{{"forward_per_micro_batch", s.forwardFlopsPerMicroBatch},
                                   {"forward_per_token", s.forwardFlopsPerToken},
                                   {"train_per_token", s.trainFlopsPerToken},
                                   {"train_per_step", s.trainFlopsPerStep}}},
      {"forward_ops", std::move(ops)},
  };
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}

int runSummary() {
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  mlir::MLIRContext &context = *contextOwner;
  ModelFile modelFile(context, summaryInput);
  mlir::OwningOpRef<mlir::ModuleOp> module = modelFile.load();
  if (!module) {
    return 1;
  }
  ModelSummary summary = summarizeModel(getModel(*module));
  if (summaryJson) {
    printJson(summary);
  } else {
    printTable(summary);
  }
  return 0;
}

} // namespace mlperf::cli
