//===- Show.cpp - mlperfc show ---------------------------------*- C++ -*-===//
//
// Prints an execution plan readably, after the same validation mlperf-run applies.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "runtime/plan/PlanLoader.h"
#include "runtime/support/NumberFormat.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <iterator>

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand showCommand("show", "Print an execution plan (plan.pb) readably");

static cl::opt<std::string> showInput(cl::Positional, cl::Required, cl::sub(showCommand),
                                      cl::desc("<plan.pb>"), cl::cat(mlperfcCategory()));
static cl::opt<bool> showCommands("commands", cl::sub(showCommand),
                                  cl::desc("List every command with its buffers"),
                                  cl::cat(mlperfcCategory()));

static std::string describeBuffer(const plan::Plan &p, uint32_t id) {
  const plan::Buffer &b = p.buffers(static_cast<int>(id));
  std::string shape;
  for (int i = 0; i < b.shape_size(); ++i) {
    shape += (i ? "x" : "") + std::to_string(b.shape(i));
  }
  return llvm::formatv("%{0} {1} {2}[{3}] @{4}+{5}", id, b.name(), plan::DType_Name(b.dtype()),
                       shape, b.memory_class() == plan::PERSISTENT ? "persistent" : "activations",
                       b.offset())
      .str();
}

int runShow() {
  plan::Plan p;
  rt::Status status = rt::loadPlan(showInput, p);
  if (!status.isOk()) {
    llvm::WithColor::error(llvm::errs(), "mlperfc show") << status.message() << "\n";
    return 1;
  }
  llvm::raw_ostream &os = llvm::outs();
  const plan::ModelInfo &m = p.model();
  os << "plan " << showInput << ": format " << p.format_version() << ", written by " << p.producer()
     << "; fingerprint " << rt::planFingerprint(p) << "\n";
  os << "model @" << m.name() << " (benchmark " << m.benchmark() << "), precision " << m.precision()
     << ": global batch " << m.global_batch_size() << " = " << m.gradient_accumulation_steps()
     << " micro-batches of " << m.micro_batch_size() << " on each of " << rt::planMesh(p).dp
     << " data-parallel ranks, seq " << m.seq_len() << "\n";
  os << "mesh " << rt::planMesh(p).describe() << " (" << rt::planMesh(p).worldSize() << " ranks)";
  if (rt::planMesh(p).pp > 1) {
    os << ", pipeline stage " << p.pipeline_stage() << " of " << rt::planMesh(p).pp;
  }
  os << "\n";
  auto num = [](double value) { return rt::shortestDecimal(value); };
  auto keyValue = [&](const plan::Attribute &key) {
    return key.name() + "=" +
           (key.has_i()   ? std::to_string(key.i())
            : key.has_f() ? num(key.f())
                          : key.s());
  };
  // The optimizer's hyperparameters are the opt_* log keys the declaration gives it.
  auto isOptimizerKey = [](const plan::Attribute &key) {
    return llvm::StringRef(key.name()).starts_with("opt_");
  };
  os << "optimizer " << m.optimizer() << " (";
  bool first = true;
  for (const plan::Attribute &key : m.mllog()) {
    if (isOptimizerKey(key)) {
      os << (first ? "" : ", ") << keyValue(key);
      first = false;
    }
  }
  os << "); LR " << m.lr_schedule() << " " << num(m.base_lr()) << " -> " << num(m.end_lr())
     << ", warmup " << m.warmup_steps() << ", max steps " << m.max_steps() << "\n";
  os << "evaluation: " << m.eval_samples() << " samples every " << m.eval_every_samples()
     << " training samples";
  if (m.eval_skip() > 0) {
    os << ", the first " << m.eval_skip() << " skipped";
  }
  os << "; target " << m.target_metric() << " <= " << num(m.target_value());
  if (std::any_of(m.mllog().begin(), m.mllog().end(),
                  [&](const plan::Attribute &key) { return !isOptimizerKey(key); })) {
    os << "; log keys";
    for (const plan::Attribute &key : m.mllog()) {
      if (!isOptimizerKey(key)) {
        os << " " << keyValue(key);
      }
    }
  }
  os << "\n";
  for (const plan::Arena &arena : p.arenas()) {
    os << "arena " << (arena.memory_class() == plan::PERSISTENT ? "persistent" : "activations")
       << ": " << rt::humanBytes(arena.size());
    if (arena.lower_bound() > 0) {
      os << " (lower bound " << rt::humanBytes(arena.lower_bound()) << ")";
    }
    os << "\n";
  }
  os << rt::parameterCount(p) << " parameters (" << p.state_size() << " state tensors), "
     << p.buffers_size() << " buffers\n";
  for (const plan::Program &program : p.programs()) {
    llvm::MapVector<llvm::StringRef, unsigned> ops;
    for (const plan::Command &command : program.commands()) {
      ++ops[command.op()];
    }
    os << "program @" << program.name() << ": " << program.inputs_size() << " inputs, "
       << program.outputs_size() << " outputs, " << program.commands_size() << " commands (";
    llvm::interleaveComma(ops, os, [&](const auto &e) { os << e.first << " " << e.second; });
    os << ")\n";
    if (!showCommands) {
      continue;
    }
    for (int c = 0; c < program.commands_size(); ++c) {
      const plan::Command &command = program.commands(c);
      auto suffix = [&] {
        if (command.stream() != 0) {
          os << " (stream " << command.stream() << ")";
        }
        if (command.has_micro_batch()) {
          os << " [micro-batch " << command.micro_batch() << "]";
        }
        if (!command.origin().empty()) {
          os << "  ; " << command.origin();
        }
        os << "\n";
      };
      // The schedule reads as what it does: events and calls by name.
      if (command.has_event()) {
        os << llvm::formatv("  {0,4}: {1} {2}", c, command.op(), command.event());
        suffix();
        continue;
      }
      if (command.op() == "call" && command.attributes_size() == 1) {
        os << llvm::formatv("  {0,4}: call @{1}", c, command.attributes(0).s());
        suffix();
        continue;
      }
      os << llvm::formatv("  {0,4}: {1}(", c, command.op());
      llvm::interleaveComma(command.operands(), os,
                            [&](uint32_t id) { os << describeBuffer(p, id); });
      os << ") -> ";
      llvm::interleaveComma(command.results(), os,
                            [&](uint32_t id) { os << describeBuffer(p, id); });
      for (const plan::Attribute &attr : command.attributes()) {
        os << " " << attr.name() << "=";
        if (attr.has_i()) {
          os << attr.i();
        } else if (attr.has_f()) {
          os << rt::shortestDecimal(attr.f());
        } else if (attr.has_s()) {
          os << '"' << attr.s() << '"';
        } else {
          os << "[";
          llvm::interleaveComma(attr.ints().values(), os);
          os << "]";
        }
      }
      suffix();
    }
  }
  return 0;
}

} // namespace mlperf::cli
