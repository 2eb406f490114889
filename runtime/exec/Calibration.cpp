//===- Calibration.cpp - Measure a backend for the step-time model -*- C++ -*-===//

#include "runtime/exec/Calibration.h"

#include "runtime/dist/Communicator.h"
#include "runtime/exec/Backend.h"
#include "runtime/plan.pb.h"
#include "runtime/plan/PlanBuilding.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/support/FileOutput.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <unistd.h>

namespace mlperf::rt {

namespace {

/// A plan of `repeats` copies of one command over zero-filled activation buffers.
struct BenchPlan {
  plan::Plan plan;
  uint64_t offset = 0;
  uint32_t buffer(std::vector<int64_t> shape, plan::DType dtype) {
    plan::Buffer *b = plan.add_buffers();
    b->set_id(static_cast<uint32_t>(plan.buffers_size() - 1));
    b->set_name("b" + std::to_string(b->id()));
    b->set_dtype(dtype);
    uint64_t bytes = static_cast<uint64_t>(planDTypeBytes(dtype));
    for (int64_t d : shape) {
      b->add_shape(d);
      bytes *= static_cast<uint64_t>(d);
    }
    b->set_memory_class(plan::ACTIVATIONS);
    b->set_offset(offset);
    b->set_size(bytes);
    offset += (bytes + 255) / 256 * 256;
    return b->id();
  }
  plan::Command *command(const std::string &op, std::vector<uint32_t> operands,
                         std::vector<uint32_t> results) {
    if (plan.programs_size() == 0) {
      plan.add_programs()->set_name("bench");
    }
    return addCommand(*plan.mutable_programs(0), op, operands, results);
  }
  /// Repeats the command `repeats` times. A step's commands find their data out of cache
  /// (each layer has its own weights and activations), so the repeats cycle through copies
  /// of the command's buffers, enough of them to exceed the last-level cache (64 MiB).
  void finish(int repeats) {
    plan.clear_arenas();
    plan::Program *program = plan.mutable_programs(0);
    program->mutable_commands()->DeleteSubrange(1, program->commands_size() - 1);
    plan::Command one = program->commands(0);
    int originals = plan.buffers_size();
    uint64_t setBytes = std::max<uint64_t>(offset, 1);
    int sets = static_cast<int>(std::clamp<uint64_t>((64u << 20) / setBytes + 1, 1, 16));
    std::vector<plan::Buffer> templates(plan.buffers().begin(), plan.buffers().begin() + originals);
    plan.mutable_buffers()->DeleteSubrange(originals, plan.buffers_size() - originals);
    for (int set = 1; set < sets; ++set) {
      for (const plan::Buffer &buffer : templates) {
        plan::Buffer *copy = plan.add_buffers();
        *copy = buffer;
        copy->set_id(static_cast<uint32_t>(plan.buffers_size() - 1));
        copy->set_offset(buffer.offset() + static_cast<uint64_t>(set) * setBytes);
      }
    }
    for (int i = 1; i < repeats; ++i) {
      plan::Command *next = program->add_commands();
      *next = one;
      uint32_t shift = static_cast<uint32_t>((i % sets) * originals);
      for (int o = 0; o < next->operands_size(); ++o) {
        next->set_operands(o, next->operands(o) + shift);
      }
      for (int r = 0; r < next->results_size(); ++r) {
        next->set_results(r, next->results(r) + shift);
      }
    }
    plan::Arena *arena = plan.add_arenas();
    arena->set_memory_class(plan::ACTIVATIONS);
    arena->set_size(setBytes * static_cast<uint64_t>(sets));
    plan::Arena *persistent = plan.add_arenas();
    persistent->set_memory_class(plan::PERSISTENT);
    persistent->set_size(0);
  }
};

/// Seconds per command: the best of three runs of the plan's program.
Status timeCommand(const std::string &backendName, BenchPlan &bench, int repeats, double &seconds) {
  bench.finish(repeats);
  std::unique_ptr<Backend> backend;
  MLPERF_RETURN_IF_ERROR(createBackend(backendName, backend));
  std::unique_ptr<Communicator> single = createSingleRankCommunicator();
  MLPERF_RETURN_IF_ERROR(backend->prepare(bench.plan, *single));
  MLPERF_RETURN_IF_ERROR(backend->execute(0)); // warm caches and the thread pool
  seconds = 1e30;
  for (int run = 0; run < 3; ++run) {
    auto start = std::chrono::steady_clock::now();
    MLPERF_RETURN_IF_ERROR(backend->execute(0));
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds = std::min(seconds, elapsed / repeats);
  }
  return Status::ok();
}

/// Enough repeats for ~`target` seconds of work at `rate` units per second (at least 2).
int repeatsFor(double work, double rate, double target = 0.05) {
  return static_cast<int>(std::clamp(target * rate / std::max(work, 1.0), 2.0, 2000.0));
}

} // namespace

Status calibrateBackend(const std::string &backendName,
                        const std::vector<const plan::Plan *> &samplePlans, std::string &json,
                        const std::function<void(const std::string &)> &progress) {
  std::vector<std::string> entries;
  auto note = [&](const std::string &entry) {
    entries.push_back(entry);
    if (progress) {
      progress(entry);
    }
  };
  double seconds = 0;
  // GEMMs: square and the skinny shapes of small models' projections.
  const int64_t shapes[][3] = {{32, 32, 32},     {64, 64, 64},       {128, 128, 128},
                               {256, 64, 64},    {256, 256, 256},    {512, 512, 512},
                               {2048, 512, 512}, {1024, 1024, 1024}, {2048, 1408, 512}};
  for (plan::DType dtype : {plan::BF16, plan::F32}) {
    for (const auto &mnk : shapes) {
      BenchPlan bench;
      uint32_t a = bench.buffer({mnk[0], mnk[2]}, dtype), b = bench.buffer({mnk[2], mnk[1]}, dtype),
               c = bench.buffer({mnk[0], mnk[1]}, dtype);
      bench.command("matmul", {a, b}, {c});
      double flops = 2.0 * mnk[0] * mnk[1] * mnk[2];
      MLPERF_RETURN_IF_ERROR(timeCommand(backendName, bench, repeatsFor(flops, 3e10), seconds));
      note("{\"kind\": \"gemm\", \"dtype\": \"" + std::string(dtypeName(fromPlanDType(dtype))) +
           "\", \"m\": " + std::to_string(mnk[0]) + ", \"n\": " + std::to_string(mnk[1]) +
           ", \"k\": " + std::to_string(mnk[2]) + ", \"seconds\": " + jsonNumber(seconds) + "}");
    }
  }
  // Fused causal attention, forward and backward, [1, H, S, D] with H / 2 KV heads.
  const int64_t attentionShapes[][3] = {{4, 32, 16}, {8, 256, 64}, {8, 1024, 64}};
  for (const auto &hsd : attentionShapes) {
    for (bool backward : {false, true}) {
      BenchPlan bench;
      int64_t heads = hsd[0], seq = hsd[1], dim = hsd[2];
      uint32_t q = bench.buffer({1, heads, seq, dim}, plan::BF16),
               k = bench.buffer({1, heads / 2, seq, dim}, plan::BF16),
               v = bench.buffer({1, heads / 2, seq, dim}, plan::BF16);
      uint32_t lse = bench.buffer({1, heads, seq}, plan::F32);
      plan::Command *c = nullptr;
      if (!backward) {
        uint32_t o = bench.buffer({1, heads, seq, dim}, plan::BF16);
        c = bench.command("attention", {q, k, v}, {o, lse});
      } else {
        uint32_t o = bench.buffer({1, heads, seq, dim}, plan::BF16),
                 dout = bench.buffer({1, heads, seq, dim}, plan::BF16),
                 dq = bench.buffer({1, heads, seq, dim}, plan::BF16),
                 dk = bench.buffer({1, heads / 2, seq, dim}, plan::BF16),
                 dv = bench.buffer({1, heads / 2, seq, dim}, plan::BF16);
        c = bench.command("attention_grad", {q, k, v, o, lse, dout}, {dq, dk, dv});
      }
      plan::Attribute *scale = c->add_attributes();
      scale->set_name("scale");
      scale->set_f(1.0);
      plan::Attribute *causal = c->add_attributes();
      causal->set_name("causal");
      causal->set_i(1);
      double flops = 4.0 * heads * seq * seq * dim / 2 * (backward ? 2.5 : 1.0);
      MLPERF_RETURN_IF_ERROR(timeCommand(backendName, bench, repeatsFor(flops, 1e10), seconds));
      note("{\"kind\": \"attention\", \"flops\": " + jsonNumber(flops) +
           ", \"seconds\": " + jsonNumber(seconds) + "}");
    }
  }
  // Memory-bound: a bf16 add of two operands into a third, bytes of all three.
  for (int64_t elements = 1024; elements <= (int64_t{1} << 22); elements *= 4) {
    BenchPlan bench;
    uint32_t a = bench.buffer({elements}, plan::BF16), b = bench.buffer({elements}, plan::BF16),
             c = bench.buffer({elements}, plan::BF16);
    bench.command("add", {a, b}, {c});
    double bytes = 6.0 * static_cast<double>(elements);
    MLPERF_RETURN_IF_ERROR(timeCommand(backendName, bench, repeatsFor(bytes, 2e9), seconds));
    note("{\"kind\": \"memory\", \"bytes\": " + jsonNumber(bytes) +
         ", \"seconds\": " + jsonNumber(seconds) + "}");
  }
  // The fixed cost of a command: a one-element fill.
  {
    BenchPlan bench;
    uint32_t a = bench.buffer({1}, plan::F32);
    plan::Attribute *value = bench.command("fill", {}, {a})->add_attributes();
    value->set_name("value");
    value->set_f(0.0);
    MLPERF_RETURN_IF_ERROR(timeCommand(backendName, bench, 2000, seconds));
    note("{\"kind\": \"command\", \"seconds\": " + jsonNumber(seconds) + "}");
  }
  // The commands of the sample plans, by op: up to four sizes each.
  std::map<std::string, std::map<uint64_t, std::pair<const plan::Plan *, const plan::Command *>>>
      byOp;
  for (const plan::Plan *sample : samplePlans) {
    for (const plan::Program &program : sample->programs()) {
      for (const plan::Command &command : program.commands()) {
        const std::string &op = command.op();
        if (op == "call" || op == "event_record" || op == "event_wait" || op == "all_reduce" ||
            op == "reduce_scatter" || op == "all_gather" || op == "send" || op == "recv" ||
            op == "attention" || op == "attention_grad" || op == "random_normal" ||
            op == "local_shard" || findAttribute(command, "vocab_shard_axis")) {
          continue; // collectives need peers; attention and draws are swept above or untimed
        }
        uint64_t bytes = commandBytes(*sample, command);
        auto &sizes = byOp[op];
        if (sizes.size() < 4 || sizes.count(bytes)) {
          sizes[bytes] = {sample, &command};
        }
      }
    }
  }
  for (const auto &[op, sizes] : byOp) {
    for (const auto &[bytes, where] : sizes) {
      const auto &[sample, command] = where;
      BenchPlan bench;
      std::map<uint32_t, uint32_t> copies; // the sample's buffer -> the bench's
      auto copyOf = [&](uint32_t id) {
        auto it = copies.find(id);
        if (it == copies.end()) {
          const plan::Buffer &buffer = sample->buffers(id);
          it = copies
                   .emplace(id, bench.buffer({buffer.shape().begin(), buffer.shape().end()},
                                             buffer.dtype()))
                   .first;
        }
        return it->second;
      };
      std::vector<uint32_t> operands, results;
      for (uint32_t id : command->operands()) {
        operands.push_back(copyOf(id));
      }
      for (uint32_t id : command->results()) {
        results.push_back(copyOf(id));
      }
      plan::Command *copy = bench.command(op, operands, results);
      *copy->mutable_attributes() = command->attributes();
      // One run to size the repeats to ~20 ms.
      BenchPlan probe = bench;
      MLPERF_RETURN_IF_ERROR(timeCommand(backendName, probe, 1, seconds));
      int repeats = static_cast<int>(std::clamp(0.02 / std::max(seconds, 1e-7), 2.0, 500.0));
      MLPERF_RETURN_IF_ERROR(timeCommand(backendName, bench, repeats, seconds));
      if (op == "matmul") {
        const plan::Buffer &lhs = sample->buffers(command->operands(0));
        const plan::Buffer &out = sample->buffers(command->results(0));
        const plan::Attribute *transposed = findAttribute(*command, "transpose_lhs");
        int rank = lhs.shape_size();
        int64_t k = transposed && transposed->i() ? lhs.shape(rank - 2) : lhs.shape(rank - 1);
        int64_t n = out.shape(out.shape_size() - 1);
        int64_t m = 1;
        for (int d = 0; d + 1 < out.shape_size(); ++d) {
          m *= out.shape(d);
        }
        note("{\"kind\": \"gemm\", \"dtype\": \"" +
             std::string(dtypeName(fromPlanDType(lhs.dtype()))) +
             "\", \"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) +
             ", \"k\": " + std::to_string(k) + ", \"seconds\": " + jsonNumber(seconds) + "}");
      } else {
        note("{\"kind\": \"op\", \"op\": " + jsonQuote(op) + ", \"bytes\": " +
             std::to_string(bytes) + ", \"seconds\": " + jsonNumber(seconds) + "}");
      }
    }
  }
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  json = "{\"format\": \"mlperfc-calibration-1\", \"device\": " + jsonQuote(backendName) +
         ", \"machine\": " +
         jsonQuote(std::string(host) + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) +
                   " cores") +
         ",\n \"measurements\": [\n  ";
  for (size_t i = 0; i < entries.size(); ++i) {
    json += (i ? ",\n  " : "") + entries[i];
  }
  json += "\n]}\n";
  return Status::ok();
}

} // namespace mlperf::rt
