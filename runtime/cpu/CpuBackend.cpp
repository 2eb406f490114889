//===- CpuBackend.cpp - The reference backend ------------------*- C++ -*-===//
//
// Buffers live in byte arenas in their plan dtype (bf16 as its 16 stored bits), exactly as a
// GPU holds them. Each command runs the shared kernels (runtime/cpu/OpKernels) on its operands:
// f32 buffers in place in the arenas; others (and results sharing bytes with an operand)
// decoded to host tensors and their results encoded, rounding to nearest even. So a plan
// replayed here computes the same bits as the tg interpreter on the same IR.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/LinearCrossEntropy.h"
#include "runtime/cpu/Numerics.h"
#include "runtime/cpu/OpKernels.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/exec/Backend.h"
#include "runtime/exec/BufferCodec.h"
#include "runtime/plan/AttributeCodec.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanOps.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace mlperf::rt {
namespace {

/// Zeroes `count` floats on the kernels' thread pool.
void fillInParallel(float *values, int64_t count) {
  cpu::parallelChunks(count, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    std::fill(values + begin, values + end, 0.0f);
  });
}

/// Float storage for commands' host tensors, kept between commands: from the second step on
/// every command finds vectors of its sizes here instead of allocating, zeroing and faulting
/// in fresh ones (that cost a sixth of an fp32 step). Shared by both streams.
class SpareStorage {
public:
  /// A vector of `count` floats with unspecified contents.
  std::vector<float> take(size_t count) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = spare.find(count);
    if (it == spare.end()) {
      return std::vector<float>(count);
    }
    std::vector<float> values = std::move(it->second);
    spare.erase(it);
    return values;
  }
  void give(std::vector<float> &&values) {
    if (!values.empty()) {
      std::lock_guard<std::mutex> lock(mutex);
      spare.emplace(values.size(), std::move(values));
    }
  }

private:
  std::mutex mutex;
  std::multimap<size_t, std::vector<float>> spare;
};

/// The events of one program run: which were recorded, and whether a stream failed (then
/// waits return instead of blocking for a record that will never come).
class Events {
public:
  Status record(int64_t event) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      recorded.insert(event);
    }
    changed.notify_all();
    return Status::ok();
  }
  Status wait(int64_t event) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return recorded.count(event) || failedFlag; });
    if (!recorded.count(event)) {
      return Status(StatusCode::kInternal, kStopped);
    }
    return Status::ok();
  }
  void fail() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      failedFlag = true;
    }
    changed.notify_all();
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mutex);
    return failedFlag;
  }
  static bool isStop(const Status &status) { return status.message() == kStopped; }
  static constexpr const char *kStopped = "stopped: the program's other stream failed";

private:
  std::mutex mutex;
  std::condition_variable changed;
  std::set<int64_t> recorded;
  bool failedFlag = false;
};

class CpuBackend final : public Backend {
public:
  const char *name() const override { return "cpu"; }

  Status prepare(const plan::Plan &plan, Communicator &communicator) override {
    this->plan = &plan;
    this->communicator = &communicator;
    for (int i = 0; i < plan.programs_size(); ++i) {
      programIndex[plan.programs(i).name()] = i;
    }
    for (const plan::Arena &arena : plan.arenas()) {
      try {
        arenas[arena.memory_class()].assign(arena.size(), 0);
      } catch (const std::exception &) { // bad_alloc, or length_error beyond what a vector holds
        return Status(StatusCode::kUnavailable,
                      "cannot allocate the " + std::to_string(arena.size()) +
                          "-byte arena of memory class " +
                          plan::MemoryClass_Name(arena.memory_class()) + " on the host");
      }
    }
    return Status::ok();
  }

  Status execute(int index) override {
    Status status = run(index);
    if (!status.isOk()) {
      return status; // the job ends (MPI_Abort): no point waiting for sends
    }
    // Sends complete in the background; the step is over when they have.
    return communicator->waitForSends();
  }

  StreamTimes streamTimes() const override {
    return {clocks[0].working, clocks[1].working, clocks[0].waiting};
  }
  void resetStreamTimes() override {
    clocks[0] = clocks[1] = StreamClock();
    spans[0].clear();
    spans[1].clear();
    epoch = std::chrono::steady_clock::now();
  }
  void traceCommands(bool on) override { tracing = on; }
  std::vector<CommandSpan> commandSpans() const override {
    std::vector<CommandSpan> all = spans[0];
    all.insert(all.end(), spans[1].begin(), spans[1].end());
    std::sort(all.begin(), all.end(),
              [](const CommandSpan &a, const CommandSpan &b) { return a.start < b.start; });
    return all;
  }

  ~CpuBackend() override {
    if (worker.joinable()) {
      {
        std::lock_guard<std::mutex> lock(workerMutex);
        stopping = true;
      }
      workerWake.notify_all();
      worker.join();
    }
  }

  /// Program `index`: stream 0 runs on the calling thread, stream 1 (collectives and
  /// transfers) on the communication thread, each in program order, and
  /// `event_wait` blocks until the other stream ran the `event_record`. A `call` is a barrier
  /// (runtime/plan/StreamOrder.h): both streams finish what came before it, the callee runs,
  /// then both go on. The loader allows calls of earlier programs only, so this recursion ends.
  Status run(int index) {
    const plan::Program &program = plan->programs(index);
    Events events;
    int n = program.commands_size();
    for (int begin = 0; begin < n;) {
      int end = begin;
      while (end < n && program.commands(end).op() != "call") {
        ++end;
      }
      std::vector<int> onStream[2];
      for (int c = begin; c < end; ++c) {
        onStream[program.commands(c).stream() == 1 ? 1 : 0].push_back(c);
      }
      auto runAll = [&](const std::vector<int> &list, int stream) -> Status {
        // Each stream adds only to its own counters (stream 1 on the communication thread);
        // they are read after finishOnWorker synchronizes the two.
        StreamClock &clock = clocks[stream];
        for (int c : list) {
          if (events.failed()) {
            return Status(StatusCode::kInternal, Events::kStopped); // the other stream failed
          }
          Status status = Status::ok();
          auto started = std::chrono::steady_clock::now();
          try {
            status = runCommand(program, c, events);
          } catch (const std::exception &error) { // out of memory in a kernel, say
            status = Status(StatusCode::kInternal, "program '" + program.name() + "', command " +
                                                       std::to_string(c) + ": " + error.what());
          }
          double seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          (program.commands(c).op() == "event_wait" ? clock.waiting : clock.working) += seconds;
          if (tracing) { // each stream appends to its own list: no lock
            spans[stream].push_back({index, c, static_cast<uint32_t>(stream),
                                     std::chrono::duration<double>(started - epoch).count(),
                                     seconds});
          }
          if (!status.isOk()) {
            events.fail(); // the other stream must not wait for what will never come
            return status;
          }
        }
        return Status::ok();
      };
      Status communication = Status::ok();
      if (!onStream[1].empty()) {
        startOnWorker([&] { return runAll(onStream[1], 1); });
      }
      Status compute = runAll(onStream[0], 0);
      if (!onStream[1].empty()) {
        auto started = std::chrono::steady_clock::now();
        communication = finishOnWorker(); // the compute stream waits at the call barrier
        clocks[0].waiting +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      }
      // Report the failure that stopped the other stream, not the stop.
      if (!compute.isOk() && !Events::isStop(compute)) {
        return compute;
      }
      if (!communication.isOk()) {
        return communication;
      }
      if (!compute.isOk()) {
        return compute;
      }
      if (end < n) {
        const plan::Attribute *callee = findAttribute(program.commands(end), "program");
        auto it = callee ? programIndex.find(callee->s()) : programIndex.end();
        if (it == programIndex.end() || it->second >= index) {
          return Status(StatusCode::kInvalidArgument, "program '" + program.name() + "', command " +
                                                          std::to_string(end) +
                                                          ": calls no earlier program of the plan");
        }
        MLPERF_RETURN_IF_ERROR(run(it->second));
      }
      begin = end + 1;
    }
    return Status::ok();
  }

  /// One command of `program` (not a call).
  Status runCommand(const plan::Program &program, int c, Events &events) {
    const plan::Command &command = program.commands(c);
    if (command.op() == "event_record" || command.op() == "event_wait") {
      int64_t event = command.event(); // the loader checked it is there
      return command.op() == "event_record" ? events.record(event) : events.wait(event);
    }
    if ((command.op() == "reshape" || command.op() == "copy") && command.operands_size() == 1 &&
        command.results_size() == 1) {
      const plan::Buffer &from = plan->buffers(command.operands(0));
      const plan::Buffer &to = plan->buffers(command.results(0));
      if (from.dtype() == to.dtype() && from.size() == to.size()) {
        // The same bytes in the same type: a view needs nothing, anything else one copy
        // between the arenas (no decoding to host tensors and back).
        const uint8_t *source = arenas[from.memory_class()].data() + from.offset();
        uint8_t *target = arenas[to.memory_class()].data() + to.offset();
        bool overlap =
            source != target && source < target + to.size() && target < source + to.size();
        if (!overlap) { // bytes the planner let a result share with its operand: copy below
          if (source != target) {
            cpu::copyInParallel(target, source, to.size());
          }
          return Status::ok();
        }
      }
    }
    std::vector<HostTensor> operandValues;
    std::vector<const HostTensor *> operands;
    std::vector<HostTensor> results;
    {
      // f32 operands and results of host ops are used where they lie in the arenas (no copy),
      // unless a result shares bytes with an operand or another result.
      const bool hostOp = !isCollective(command.op());
      const bool inPlace = hostOp && !resultsOverlap(command);
      operandValues.assign(command.operands_size(), HostTensor());
      operands.clear();
      for (int i = 0; i < command.operands_size(); ++i) {
        const plan::Buffer &buffer = plan->buffers(command.operands(i));
        if (inPlace && buffer.dtype() == plan::F32) {
          HostTensor &value = operandValues[i];
          value.dtype = DType::kF32;
          value.shape.assign(buffer.shape().begin(), buffer.shape().end());
          value.external = bufferFloats(buffer);
          operands.push_back(&value);
          continue;
        }
        if (isFloat(fromPlanDType(buffer.dtype())) && buffer.dtype() != plan::F64) {
          int64_t count = 1;
          for (int64_t dim : buffer.shape()) {
            count *= dim;
          }
          operandValues[i].values = spare.take(count);
        }
        Status status = read(command.operands(i), operandValues[i]);
        if (!status.isOk()) {
          return status;
        }
        operands.push_back(&operandValues[i]);
      }
      results.clear();
      for (uint32_t id : command.results()) {
        const plan::Buffer &buffer = plan->buffers(id);
        DType dtype = fromPlanDType(buffer.dtype());
        if (!isFloat(dtype) || dtype == DType::kF64) {
          results.push_back(
              HostTensor::zeros(dtype, {buffer.shape().begin(), buffer.shape().end()}));
          continue;
        }
        HostTensor result;
        result.dtype = dtype;
        result.shape.assign(buffer.shape().begin(), buffer.shape().end());
        bool overwritten = writesEveryElement(command);
        if (inPlace && buffer.dtype() == plan::F32) {
          result.external = bufferFloats(buffer);
          if (!overwritten) { // results arrive zeroed
            fillInParallel(result.external, result.numElements());
          }
        } else {
          result.values = spare.take(result.numElements());
          if (!overwritten) {
            std::fill(result.values.begin(), result.values.end(), 0.0f);
          }
        }
        results.push_back(std::move(result));
      }
      OpAttributes attributes = commandAttributes(command);
      // Ops on a vocabulary split over a mesh axis learn this rank's part.
      const plan::Attribute *vocabAxis = findAttribute(command, "vocab_shard_axis");
      MeshAxis axis = MeshAxis::kTP;
      if (vocabAxis) {
        parseMeshAxis(vocabAxis->s(), axis); // the loader checked the name
        attributes.set("shard_index", communicator->coordinates().along(axis));
        attributes.set("shard_count", communicator->mesh().axisSize(axis));
      }
      // A part of a tensor split over a mesh axis (initialization, dropout masks, ZeRO
      // shards) or a dropout key's data-parallel rank: this rank's index on the axis.
      if (const char *name = partAxisAttribute(command.op())) {
        const plan::Attribute *partAxis = findAttribute(command, name);
        MeshAxis along = MeshAxis::kDP;
        if (partAxis && parseMeshAxis(partAxis->s(), along)) {
          attributes.set("part_index", communicator->coordinates().along(along));
        }
      }
      const std::string &op = command.op();
      Status status = isCollective(op) ? runCollective(command, operands, results)
                                       : runHostOp(op, attributes, operands, results);
      if (!status.isOk()) {
        return Status(status.code(), "program '" + program.name() + "', command " +
                                         std::to_string(c) + " (" + command.op() +
                                         "): " + status.message());
      }
      for (int i = 0; i < command.results_size(); ++i) {
        if (results[i].external) {
          continue; // written in place
        }
        status = write(command.results(i), results[i]);
        if (!status.isOk()) {
          return status;
        }
      }
    }
    for (HostTensor &tensor : operandValues) {
      spare.give(std::move(tensor.values));
    }
    for (HostTensor &tensor : results) {
      spare.give(std::move(tensor.values));
    }
    return Status::ok();
  }

  float *bufferFloats(const plan::Buffer &buffer) {
    return reinterpret_cast<float *>(arenas[buffer.memory_class()].data() + buffer.offset());
  }

  /// Whether a result of `command` shares a byte with one of its operands or another result:
  /// then its kernel must not write the arena while reading its operands there.
  bool resultsOverlap(const plan::Command &command) const {
    auto overlaps = [&](uint32_t a, uint32_t b) {
      const plan::Buffer &x = plan->buffers(a), &y = plan->buffers(b);
      return x.memory_class() == y.memory_class() && x.offset() < y.offset() + y.size() &&
             y.offset() < x.offset() + x.size();
    };
    for (int r = 0; r < command.results_size(); ++r) {
      for (uint32_t operand : command.operands()) {
        if (overlaps(command.results(r), operand)) {
          return true;
        }
      }
      for (int other = 0; other < r; ++other) {
        if (overlaps(command.results(r), command.results(other))) {
          return true;
        }
      }
    }
    return false;
  }

  /// Ops whose kernels write every element of every result, so results need not be zeroed.
  static bool writesEveryElement(const plan::Command &command) {
    static const std::set<std::string, std::less<>> ops = {
        "matmul",      "add",      "mul",           "scale",        "silu",
        "silu_grad",   "rms_norm", "rms_norm_grad", "add_rms_norm", "rope",
        "transpose",   "softmax",  "softmax_grad",  "swiglu",       "swiglu_grad",
        "causal_mask", "repeat",   "repeat_grad",   "attention",    "attention_grad",
        "convert",     "reshape",  "copy"};
    return ops.count(command.op()) && !findAttribute(command, "vocab_shard_axis");
  }

  /// Runs `job` on the communication thread (started on first use).
  void startOnWorker(std::function<Status()> job) {
    std::unique_lock<std::mutex> lock(workerMutex);
    if (!worker.joinable()) {
      worker = std::thread([this] { workerLoop(); });
    }
    pending = std::move(job);
    jobDone = false;
    lock.unlock();
    workerWake.notify_all();
  }

  Status finishOnWorker() {
    std::unique_lock<std::mutex> lock(workerMutex);
    workerWake.wait(lock, [this] { return jobDone; });
    return jobStatus;
  }

  void workerLoop() {
    std::unique_lock<std::mutex> lock(workerMutex);
    for (;;) {
      workerWake.wait(lock, [this] { return stopping || pending; });
      if (stopping) {
        return;
      }
      std::function<Status()> job = std::move(pending);
      pending = nullptr;
      lock.unlock();
      Status status = job();
      lock.lock();
      jobStatus = status;
      jobDone = true;
      workerWake.notify_all();
    }
  }

  Status write(uint32_t id, const HostTensor &value) override {
    const plan::Buffer &buffer = plan->buffers(id);
    return encodeBuffer(buffer, value, arenas[buffer.memory_class()].data() + buffer.offset());
  }

  Status read(uint32_t id, HostTensor &value) const override {
    const plan::Buffer &buffer = plan->buffers(id);
    decodeBuffer(buffer, arenas[buffer.memory_class()].data() + buffer.offset(), value);
    return Status::ok();
  }

private:
  static bool isCollective(const std::string &op) {
    return op == "all_reduce" || op == "reduce_scatter" || op == "all_gather" || op == "send" ||
           op == "recv" || op == "all_to_all";
  }

  /// Sums (or maxima) in f32 through the communicator, f64 sums in double; the result is
  /// rounded to its dtype once, on write.
  /// Point-to-point values travel as f32, in which bf16 values are exact.
  Status runCollective(const plan::Command &command,
                       const std::vector<const HostTensor *> &operands,
                       std::vector<HostTensor> &results) {
    MeshAxis axis = MeshAxis::kDP;
    int64_t shift = 0, tag = 0;
    for (const plan::Attribute &attr : command.attributes()) {
      if (attr.name() == "axis") {
        parseMeshAxis(attr.s(), axis); // the loader checked the name
      } else if (attr.name() == "shift") {
        shift = attr.i();
      } else if (attr.name() == "tag") {
        tag = attr.i();
      }
    }
    const std::string &op = command.op();
    if (op == "send") {
      return communicator->send(axis, shift, static_cast<int>(tag), operands[0]->values);
    }
    if (op == "recv") {
      return communicator->receive(axis, shift, static_cast<int>(tag), results[0].values);
    }
    const HostTensor &input = *operands[0];
    HostTensor &result = results[0];
    if (op == "all_reduce") {
      if (input.dtype == DType::kF64) { // a vocabulary-split loss's sums (a sum: the loader says)
        result.wide = input.wide;
        return communicator->allReduceSum(axis, result.wide);
      }
      result.values = input.values;
      const plan::Attribute *reduction = findAttribute(command, "reduction");
      return reduction && reduction->s() == "max" ? communicator->allReduceMax(axis, result.values)
                                                  : communicator->allReduceSum(axis, result.values);
    }
    if (op == "reduce_scatter") {
      return communicator->reduceScatterSum(axis, input.values, result.values);
    }
    if (op == "all_to_all") {
      return allToAll(axis, input, operands[1]->ints, results);
    }
    return communicator->allGather(axis, input.values, result.values);
  }

  /// Exchanges the rows of `input` ([N, d]) in chunks of `rowsPerMember` rows; the rows
  /// received fill results[0] ([R, d], zeros after them) and their count from each member
  /// results[1]. More rows than R (a routing beyond the plan's static bound) is an error that
  /// names both, never a silent drop.
  Status allToAll(MeshAxis axis, const HostTensor &input, const std::vector<int64_t> &rowsPerMember,
                  std::vector<HostTensor> &results) {
    const int64_t width = input.shape[1], capacity = results[0].shape[0];
    std::vector<int64_t> sendCounts;
    int64_t rows = 0;
    for (int64_t count : rowsPerMember) {
      if (count < 0 || rows + count > input.shape[0]) {
        return Status(StatusCode::kInvalidArgument,
                      "all_to_all: rows per member [" + describeCounts(rowsPerMember) +
                          "] do not fit the " + std::to_string(input.shape[0]) + " rows to send");
      }
      rows += count;
      sendCounts.push_back(count * width);
    }
    std::vector<float> send(input.values.begin(), input.values.begin() + rows * width), received;
    std::vector<int64_t> receivedCounts;
    MLPERF_RETURN_IF_ERROR(
        communicator->allToAll(axis, send, sendCounts, received, receivedCounts));
    int64_t receivedRows = static_cast<int64_t>(received.size()) / width;
    if (receivedRows > capacity) {
      return Status(StatusCode::kInvalidArgument,
                    "all_to_all: rank " + std::to_string(communicator->rank()) + " receives " +
                        std::to_string(receivedRows) + " rows, more than the " +
                        std::to_string(capacity) +
                        " its buffer holds (the plan's static bound on routed rows)");
    }
    std::vector<float> &out = results[0].values;
    std::copy(received.begin(), received.end(), out.begin());
    std::fill(out.begin() + received.size(), out.end(), 0.0f);
    results[1].ints.assign(receivedCounts.size(), 0);
    for (size_t j = 0; j < receivedCounts.size(); ++j) {
      results[1].ints[j] = receivedCounts[j] / width;
    }
    return Status::ok();
  }

  static std::string describeCounts(const std::vector<int64_t> &counts) {
    std::string text;
    for (size_t i = 0; i < counts.size(); ++i) {
      text += (i ? ", " : "") + std::to_string(counts[i]);
    }
    return text;
  }

  const plan::Plan *plan = nullptr;
  Communicator *communicator = nullptr;
  std::vector<uint8_t> arenas[3]; // by plan::MemoryClass
  std::map<std::string, int> programIndex;
  SpareStorage spare;
  // The communication-stream thread and its one job at a time.
  /// Seconds a stream spent running commands and waiting in event_wait (stream 0 also at the
  /// call barriers, for stream 1 to finish).
  struct StreamClock {
    double working = 0, waiting = 0;
  };
  StreamClock clocks[2];
  bool tracing = false;
  std::vector<CommandSpan> spans[2];
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
  std::thread worker;
  std::mutex workerMutex;
  std::condition_variable workerWake;
  std::function<Status()> pending;
  Status jobStatus = Status::ok();
  bool jobDone = false, stopping = false;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend() { return std::make_unique<CpuBackend>(); }

} // namespace mlperf::rt
