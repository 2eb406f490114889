//===- OpCheck.cpp - Every CUDA-kernel op on both backends, compared -------===//

#include "runtime/cuda/OpCheck.h"

#include "runtime/cpu/Numerics.h"
#include "runtime/dist/Communicator.h"
#include "runtime/plan/PlanBuilding.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanOps.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

namespace mlperf::rt::cuda {
namespace {

constexpr uint64_t kAlignment = 256;

/// Appends a dense buffer at the next 256-byte-aligned offset of its arena (`used`, by memory
/// class, advances) and returns its id.
uint32_t addBuffer(plan::Plan &plan, uint64_t used[3], const std::string &name, plan::DType type,
                   const std::vector<int64_t> &shape, plan::MemoryClass cls) {
  plan::Buffer *b = plan.add_buffers();
  uint32_t id = plan.buffers_size() - 1;
  b->set_id(id);
  b->set_name(name);
  b->set_dtype(type);
  int64_t count = 1;
  for (int64_t dim : shape) {
    b->add_shape(dim);
    count *= dim;
  }
  b->set_memory_class(cls);
  b->set_offset(used[cls]);
  uint64_t bytes = count * planDTypeBytes(type);
  b->set_size(bytes);
  used[cls] += (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return id;
}

/// Builds a one-command plan: operands in the PERSISTENT arena, results in ACTIVATIONS.
class CaseBuilder {
public:
  CaseBuilder(std::string name, std::string op, Tolerance tolerance, double normBound = 0) {
    check.name = std::move(name);
    check.op = op;
    check.tolerance = tolerance;
    check.normBound = normBound;
    check.plan.set_format_version(kPlanFormatVersion);
    program = check.plan.add_programs();
    program->set_name("check");
    command = program->add_commands();
    command->set_op(op);
  }
  CaseBuilder &input(plan::DType type, std::vector<int64_t> shape) {
    uint32_t id = buffer(type, shape, plan::PERSISTENT);
    command->add_operands(id);
    program->add_inputs(id);
    return *this;
  }
  /// An input whose random values lie in [low, high) (integers: low <= id < high).
  CaseBuilder &input(plan::DType type, std::vector<int64_t> shape, double low, double high) {
    input(type, std::move(shape));
    check.ranges[command->operands(command->operands_size() - 1)] = {low, high};
    return *this;
  }
  CaseBuilder &text(const char *name, const std::string &value) {
    plan::Attribute *attribute = command->add_attributes();
    attribute->set_name(name);
    attribute->set_s(value);
    return *this;
  }
  CaseBuilder &output(plan::DType type, std::vector<int64_t> shape) {
    uint32_t id = buffer(type, shape, plan::ACTIVATIONS);
    command->add_results(id);
    program->add_outputs(id);
    return *this;
  }
  CaseBuilder &attribute(const char *name, int64_t value) {
    plan::Attribute *attribute = command->add_attributes();
    attribute->set_name(name);
    attribute->set_i(value);
    return *this;
  }
  CaseBuilder &real(const char *name, double value) {
    plan::Attribute *attribute = command->add_attributes();
    attribute->set_name(name);
    attribute->set_f(value);
    return *this;
  }
  CaseBuilder &integers(const char *name, std::vector<int64_t> values) {
    plan::Attribute *attribute = command->add_attributes();
    attribute->set_name(name);
    for (int64_t value : values) {
      attribute->mutable_ints()->add_values(value);
    }
    return *this;
  }
  OpCheckCase finish() {
    for (auto memoryClass : {plan::PERSISTENT, plan::ACTIVATIONS}) {
      if (used[memoryClass] > 0) {
        plan::Arena *arena = check.plan.add_arenas();
        arena->set_memory_class(memoryClass);
        arena->set_size(used[memoryClass]);
      }
    }
    return std::move(check);
  }

private:
  uint32_t buffer(plan::DType type, const std::vector<int64_t> &shape, plan::MemoryClass cls) {
    std::string name =
        (cls == plan::PERSISTENT ? "in" : "out") + std::to_string(check.plan.buffers_size());
    return addBuffer(check.plan, used, name, type, shape, cls);
  }

  OpCheckCase check;
  plan::Program *program = nullptr;
  plan::Command *command = nullptr;
  uint64_t used[3] = {0, 0, 0};
};

constexpr plan::DType kF32 = plan::F32, kBF16 = plan::BF16;

std::string typeName(plan::DType type) { return dtypeName(fromPlanDType(type)); }

/// Norm bound of a GEMM by its result type: f32 sums in another order (k ≤ a few hundred), or
/// one bf16 rounding of the result (2^-8 relative per element at most).
double gemmBound(plan::DType type) { return type == kBF16 ? 8e-3 : 1e-5; }

/// Units in the last place of `type` between two values of that type (0 when both are the same
/// NaN or equal, a large number when one is NaN).
int64_t ulpDistance(DType type, float a, float b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX / 2;
  }
  auto ordered = [&](float value) -> int64_t {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    int64_t key = type == DType::kBF16 ? (bits >> 16) & 0x7fff : bits & 0x7fffffff;
    bool negative = bits >> 31;
    return negative ? -key : key;
  };
  return std::llabs(ordered(a) - ordered(b));
}

/// Streams, events and a call: "check" normalizes x, calls "inner" (matmul, silu), then
/// stream 1 scales the callee's result after an event while stream 0 squares it.
OpCheckCase programCase() {
  OpCheckCase check;
  check.name = "program: rms_norm, call (matmul, silu), event across two streams";
  check.op = "call";
  check.tolerance = Tolerance::kNorm;
  check.normBound = gemmBound(kBF16);
  plan::Plan &p = check.plan;
  p.set_format_version(kPlanFormatVersion);
  uint64_t used[3] = {0, 0, 0};
  auto buffer = [&](const char *name, std::vector<int64_t> shape, plan::MemoryClass cls) {
    return addBuffer(p, used, name, kBF16, shape, cls);
  };
  uint32_t x = buffer("x", {16, 64}, plan::PERSISTENT), g = buffer("g", {64}, plan::PERSISTENT),
           w = buffer("w", {64, 32}, plan::PERSISTENT);
  uint32_t n = buffer("n", {16, 64}, plan::ACTIVATIONS),
           h = buffer("h", {16, 32}, plan::ACTIVATIONS),
           a = buffer("a", {16, 32}, plan::ACTIVATIONS),
           c = buffer("c", {16, 32}, plan::ACTIVATIONS),
           y = buffer("y", {16, 32}, plan::ACTIVATIONS);
  for (auto cls : {plan::PERSISTENT, plan::ACTIVATIONS}) {
    plan::Arena *arena = p.add_arenas();
    arena->set_memory_class(cls);
    arena->set_size(used[cls]);
  }
  auto command = [](plan::Program *program, const char *op, std::vector<uint32_t> operands,
                    std::vector<uint32_t> results, uint32_t stream = 0) {
    return addCommand(*program, op, operands, results, stream);
  };
  plan::Program *inner = p.add_programs();
  inner->set_name("inner");
  inner->add_inputs(n);
  inner->add_inputs(w);
  inner->add_outputs(a);
  command(inner, "matmul", {n, w}, {h});
  command(inner, "silu", {h}, {a});
  plan::Program *outer = p.add_programs();
  outer->set_name("check");
  outer->set_streams(2);
  for (uint32_t id : {x, g, w}) {
    outer->add_inputs(id);
  }
  outer->add_outputs(c);
  outer->add_outputs(y);
  plan::Attribute *epsilon = command(outer, "rms_norm", {x, g}, {n})->add_attributes();
  epsilon->set_name("epsilon");
  epsilon->set_f(1e-5);
  plan::Attribute *callee = command(outer, "call", {}, {})->add_attributes();
  callee->set_name("program");
  callee->set_s("inner");
  command(outer, "event_record", {}, {})->set_event(1);
  command(outer, "event_wait", {}, {}, 1)->set_event(1);
  plan::Attribute *factor = command(outer, "scale", {a}, {c}, 1)->add_attributes();
  factor->set_name("factor");
  factor->set_f(0.5);
  command(outer, "mul", {a, a}, {y});
  return check;
}

/// tg.attention then tg.attention_grad on its output and log-sum-exp, as a training step runs
/// them: a fused backward (cuDNN's) recomputes the probabilities from that lse and takes
/// Σ dp · p from that output, so it is only defined on a consistent pair. Batch 2, 4 query and
/// 2 KV heads (GQA), 80 positions (not a multiple of a 64-row tile), head dim 64 (what cuDNN's
/// engines are built for); every result is compared. `tokensMajor`: the backward reads the
/// output as the [b, s, h, d] transpose the output projection reads (output_tokens_major).
OpCheckCase attentionTrainingCase(plan::DType type, bool causal, bool tokensMajor) {
  OpCheckCase check;
  check.name = "attention_grad " + typeName(type) + (causal ? " causal GQA" : " GQA") +
               ", after attention" + (tokensMajor ? ", output tokens-major" : "");
  check.op = "attention_grad";
  check.tolerance = Tolerance::kNorm;
  check.normBound = type == kBF16 ? 2e-2 : 1e-5;
  plan::Plan &p = check.plan;
  p.set_format_version(kPlanFormatVersion);
  uint64_t used[3] = {0, 0, 0};
  auto buffer = [&](const char *name, plan::DType t, std::vector<int64_t> shape,
                    plan::MemoryClass cls) { return addBuffer(p, used, name, t, shape, cls); };
  const std::vector<int64_t> queryShape{2, 4, 80, 64}, keyShape{2, 2, 80, 64};
  uint32_t q = buffer("q", type, queryShape, plan::PERSISTENT),
           k = buffer("k", type, keyShape, plan::PERSISTENT),
           v = buffer("v", type, keyShape, plan::PERSISTENT),
           dout = buffer("dout", type, queryShape, plan::PERSISTENT);
  uint32_t o = buffer("o", type, queryShape, plan::ACTIVATIONS),
           lse = buffer("lse", kF32, {2, 4, 80}, plan::ACTIVATIONS),
           dq = buffer("dq", type, queryShape, plan::ACTIVATIONS),
           dk = buffer("dk", type, keyShape, plan::ACTIVATIONS),
           dv = buffer("dv", type, keyShape, plan::ACTIVATIONS),
           tokens = buffer("o_tokens", type, {2, 80, 4, 64}, plan::ACTIVATIONS);
  for (auto cls : {plan::PERSISTENT, plan::ACTIVATIONS}) {
    plan::Arena *arena = p.add_arenas();
    arena->set_memory_class(cls);
    arena->set_size(used[cls]);
  }
  plan::Program *program = p.add_programs();
  program->set_name("check");
  for (uint32_t id : {q, k, v, dout}) {
    program->add_inputs(id);
  }
  for (uint32_t id : {o, lse, dq, dk, dv}) {
    program->add_outputs(id);
  }
  auto command = [&](const char *op, std::vector<uint32_t> operands,
                     std::vector<uint32_t> results) {
    plan::Command *c = addCommand(*program, op, operands, results);
    if (std::string(op) == "transpose") {
      plan::Attribute *permutation = c->add_attributes();
      permutation->set_name("permutation");
      for (int64_t dim : {0, 2, 1, 3}) {
        permutation->mutable_ints()->add_values(dim);
      }
      return;
    }
    if (tokensMajor && std::string(op) == "attention_grad") {
      plan::Attribute *layout = c->add_attributes();
      layout->set_name("output_tokens_major");
      layout->set_i(1);
    }
    plan::Attribute *scale = c->add_attributes();
    scale->set_name("scale");
    scale->set_f(0.125); // 1/sqrt(64)
    plan::Attribute *mask = c->add_attributes();
    mask->set_name("causal");
    mask->set_i(causal ? 1 : 0);
  };
  command("attention", {q, k, v}, {o, lse});
  if (tokensMajor) {
    command("transpose", {o}, {tokens});
  }
  command("attention_grad", {q, k, v, tokensMajor ? tokens : o, lse, dout}, {dq, dk, dv});
  return check;
}

Status writeRandomInputs(const OpCheckCase &check, Backend &reference, Backend *candidate) {
  const plan::Program &program = check.plan.programs(check.plan.programs_size() - 1);
  std::mt19937_64 random(std::hash<std::string>()(check.name));
  for (uint32_t id : program.inputs()) {
    const plan::Buffer &buffer = check.plan.buffers(id);
    std::vector<int64_t> shape(buffer.shape().begin(), buffer.shape().end());
    HostTensor input = HostTensor::zeros(fromPlanDType(buffer.dtype()), shape);
    auto range = check.ranges.count(id) ? check.ranges.at(id) : std::pair<double, double>(-2, 2);
    std::uniform_real_distribution<double> values(
        range.first, range.first < range.second ? range.second : range.first + 1);
    for (float &value : input.values) {
      value = static_cast<float>(range.first < range.second ? values(random) : range.first);
    }
    for (double &value : input.wide) {
      value = range.first < range.second ? values(random) : range.first;
    }
    const bool ranged = check.ranges.count(id) > 0;
    for (int64_t &value : input.ints) {
      value = ranged ? static_cast<int64_t>(range.first) +
                           static_cast<int64_t>(random() %
                                                static_cast<uint64_t>(range.second - range.first))
                     : static_cast<int64_t>(random() % 128000);
    }
    MLPERF_RETURN_IF_ERROR(reference.write(id, input));
    if (candidate) {
      MLPERF_RETURN_IF_ERROR(candidate->write(id, input));
    }
  }
  return Status::ok();
}

/// Prepares and runs `backend` on the case; the first error.
Status prepareAndRun(const OpCheckCase &check, Backend &backend, Communicator &communicator) {
  MLPERF_RETURN_IF_ERROR(backend.prepare(check.plan, communicator));
  MLPERF_RETURN_IF_ERROR(writeRandomInputs(check, backend, nullptr));
  return backend.execute(check.plan.programs_size() - 1);
}

Status runBadInputCheck(const OpCheckCase &check, Backend &reference, Backend &candidate,
                        Communicator &communicator, OpCheckResult &result) {
  Status got = prepareAndRun(check, candidate, communicator);
  if (got.isOk() || got.message().find(check.expectError) == std::string::npos) {
    result.detail = "expected an error containing '" + check.expectError + "', got " +
                    (got.isOk() ? std::string("none") : "'" + got.message() + "'");
    return Status::ok();
  }
  if (!check.candidateOnly) {
    Status want = prepareAndRun(check, reference, communicator);
    if (want.message() != got.message()) {
      result.detail =
          "the CPU says '" + want.message() + "', the candidate '" + got.message() + "'";
      return Status::ok();
    }
  }
  result.passed = true;
  return Status::ok();
}

Status compareOutputs(const OpCheckCase &check, const plan::Program &program, Backend &reference,
                      Backend &candidate, OpCheckResult &result) {
  double differenceSquares = 0, referenceSquares = 0;
  for (uint32_t id : program.outputs()) {
    HostTensor want, got;
    MLPERF_RETURN_IF_ERROR(reference.read(id, want));
    MLPERF_RETURN_IF_ERROR(candidate.read(id, got));
    if (!want.ints.empty() || !got.ints.empty()) {
      if (want.ints != got.ints) {
        result.detail = "integer result '" + check.plan.buffers(id).name() + "' differs";
        return Status::ok();
      }
      continue;
    }
    if (!want.wide.empty() || !got.wide.empty()) {
      // f64 results (evaluation's running mean) are IEEE operations on both sides: equal.
      bool equal = want.wide.size() == got.wide.size();
      for (size_t i = 0; equal && i < want.wide.size(); ++i) {
        equal =
            want.wide[i] == got.wide[i] || (std::isnan(want.wide[i]) && std::isnan(got.wide[i]));
      }
      if (!equal) {
        result.detail = "f64 result '" + check.plan.buffers(id).name() + "' differs";
        return Status::ok();
      }
      continue;
    }
    for (size_t i = 0; i < want.values.size(); ++i) {
      float a = want.values[i], b = got.values[i];
      bool sameSpecial = (std::isinf(a) && a == b) || (std::isnan(a) && std::isnan(b));
      double difference = sameSpecial ? 0.0 : std::fabs(static_cast<double>(a) - b);
      if (std::isnan(difference)) {
        difference = INFINITY;
      }
      result.maxAbsError = std::max(result.maxAbsError, difference);
      result.maxUlps = std::max(result.maxUlps, ulpDistance(want.dtype, a, b));
      if (std::isfinite(a)) {
        referenceSquares += static_cast<double>(a) * a;
        differenceSquares += difference * difference;
      }
    }
  }
  result.relativeError = referenceSquares > 0 ? std::sqrt(differenceSquares / referenceSquares)
                                              : std::sqrt(differenceSquares);
  switch (check.tolerance) {
  case Tolerance::kExact:
    result.passed = result.maxUlps == 0;
    break;
  case Tolerance::kUlps:
    result.passed = result.maxUlps <= kMaxUlps;
    break;
  case Tolerance::kNorm:
    result.passed = result.relativeError <= check.normBound;
    break;
  }
  if (!result.passed && result.detail.empty()) {
    result.detail = std::string(toleranceName(check.tolerance)) + " bound exceeded";
  }
  return Status::ok();
}

} // namespace

const char *toleranceName(Tolerance tolerance) {
  switch (tolerance) {
  case Tolerance::kExact:
    return "exact";
  case Tolerance::kUlps:
    return "ulps";
  default:
    return "norm";
  }
}

std::vector<OpCheckCase> opCheckCases() {
  std::vector<OpCheckCase> cases;
  auto add = [&](CaseBuilder &builder) { cases.push_back(builder.finish()); };
  using T = Tolerance;
  for (plan::DType t : {kF32, kBF16}) {
    std::string ty = typeName(t);
    add(CaseBuilder("matmul " + ty + " [64,96]x[96,80]", "matmul", T::kNorm, gemmBound(t))
            .input(t, {64, 96})
            .input(t, {96, 80})
            .output(t, {64, 80}));
    add(CaseBuilder("matmul " + ty + " [2,64,96]x[2,80,96]^T", "matmul", T::kNorm, gemmBound(t))
            .input(t, {2, 64, 96})
            .input(t, {2, 80, 96})
            .output(t, {2, 64, 80})
            .attribute("transpose_rhs", 1));
    add(CaseBuilder("matmul " + ty + " [2,96,48]^Tx[2,96,40]", "matmul", T::kNorm, gemmBound(t))
            .input(t, {2, 96, 48})
            .input(t, {2, 96, 40})
            .output(t, {2, 48, 40})
            .attribute("transpose_lhs", 1));
    add(CaseBuilder("matmul " + ty + " [2,3,32,48]x[40,48]^T shared", "matmul", T::kNorm,
                    gemmBound(t))
            .input(t, {2, 3, 32, 48})
            .input(t, {40, 48})
            .output(t, {2, 3, 32, 40})
            .attribute("transpose_rhs", 1));
    add(CaseBuilder("add " + ty, "add", T::kExact)
            .input(t, {1000})
            .input(t, {1000})
            .output(t, {1000}));
    add(CaseBuilder("mul " + ty, "mul", T::kExact)
            .input(t, {1000})
            .input(t, {1000})
            .output(t, {1000}));
    add(CaseBuilder("scale " + ty, "scale", T::kExact)
            .input(t, {777})
            .output(t, {777})
            .real("factor", 1.0 / 3.0));
    add(CaseBuilder("silu " + ty, "silu", T::kUlps).input(t, {1000}).output(t, {1000}));
    add(CaseBuilder("silu_grad " + ty, "silu_grad", T::kUlps)
            .input(t, {1000})
            .input(t, {1000})
            .output(t, {1000}));
    add(CaseBuilder("swiglu " + ty, "swiglu", T::kUlps)
            .input(t, {4, 250})
            .input(t, {4, 250})
            .output(t, {4, 250}));
    add(CaseBuilder("swiglu_grad " + ty, "swiglu_grad", T::kUlps)
            .input(t, {4, 250})
            .input(t, {4, 250})
            .input(t, {4, 250})
            .output(t, {4, 250})
            .output(t, {4, 250}));
    add(CaseBuilder("fill " + ty, "fill", T::kExact).output(t, {300}).real("value", 0.1));
    add(CaseBuilder("copy " + ty, "copy", T::kExact).input(t, {300}).output(t, {300}));
    add(CaseBuilder("transpose " + ty + " [2,3,4,5] (0,2,1,3)", "transpose", T::kExact)
            .input(t, {2, 3, 4, 5})
            .output(t, {2, 4, 3, 5})
            .integers("permutation", {0, 2, 1, 3}));
    add(CaseBuilder("transpose " + ty + " [6,7,3] (2,0,1)", "transpose", T::kExact)
            .input(t, {6, 7, 3})
            .output(t, {3, 6, 7})
            .integers("permutation", {2, 0, 1}));
    add(CaseBuilder("repeat " + ty, "repeat", T::kExact)
            .input(t, {2, 3, 4})
            .output(t, {2, 6, 4})
            .attribute("dim", 1)
            .attribute("times", 2));
    add(CaseBuilder("repeat_grad " + ty, "repeat_grad", T::kExact)
            .input(t, {2, 12, 4})
            .output(t, {2, 3, 4})
            .attribute("dim", 1)
            .attribute("times", 4));
    add(CaseBuilder("split " + ty, "split", T::kExact)
            .input(t, {4, 10})
            .output(t, {4, 3})
            .output(t, {4, 7})
            .attribute("dim", 1));
    add(CaseBuilder("concat " + ty, "concat", T::kExact)
            .input(t, {4, 3})
            .input(t, {4, 7})
            .output(t, {4, 10})
            .attribute("dim", 1));
    add(CaseBuilder("rms_norm " + ty, "rms_norm", T::kExact)
            .input(t, {16, 64})
            .input(t, {64})
            .output(t, {16, 64})
            .real("epsilon", 1e-5));
    add(CaseBuilder("rms_norm_grad " + ty, "rms_norm_grad", T::kExact)
            .input(t, {16, 64})
            .input(t, {64})
            .input(t, {16, 64})
            .output(t, {16, 64})
            .output(t, {64})
            .real("epsilon", 1e-5));
    add(CaseBuilder("add_rms_norm " + ty, "add_rms_norm", T::kExact)
            .input(t, {16, 64})
            .input(t, {16, 64})
            .input(t, {64})
            .output(t, {16, 64})
            .output(t, {16, 64})
            .real("epsilon", 1e-5));
    add(CaseBuilder("rope " + ty, "rope", T::kUlps)
            .input(t, {2, 9, 4, 16})
            .output(t, {2, 9, 4, 16})
            .real("theta", 500000.0));
    add(CaseBuilder("rope " + ty + " llama3.1 scaling, inverse", "rope", T::kUlps)
            .input(t, {1, 33, 2, 32})
            .output(t, {1, 33, 2, 32})
            .real("theta", 500000.0)
            .real("scaling_factor", 8.0)
            .real("low_freq_factor", 1.0)
            .real("high_freq_factor", 4.0)
            .attribute("original_max_position", 16)
            .attribute("inverse", 1));
    add(CaseBuilder("rope_qk " + ty, "rope_qk", T::kUlps)
            .input(t, {2, 9, 4, 16})
            .input(t, {2, 9, 2, 16})
            .output(t, {2, 9, 4, 16})
            .output(t, {2, 9, 2, 16})
            .real("theta", 10000.0));
    add(CaseBuilder("causal_mask " + ty, "causal_mask", T::kExact)
            .input(t, {2, 3, 8, 8})
            .output(t, {2, 3, 8, 8}));
    add(CaseBuilder("causal_mask " + ty + " gradient", "causal_mask", T::kExact)
            .input(t, {3, 8, 8})
            .output(t, {3, 8, 8})
            .attribute("gradient", 1));
    add(CaseBuilder("softmax " + ty + " last dim", "softmax", T::kUlps)
            .input(t, {4, 3, 16})
            .output(t, {4, 3, 16})
            .attribute("dim", 2));
    add(CaseBuilder("softmax " + ty + " middle dim", "softmax", T::kUlps)
            .input(t, {4, 16, 3})
            .output(t, {4, 16, 3})
            .attribute("dim", 1));
    add(CaseBuilder("softmax_grad " + ty, "softmax_grad", T::kExact)
            .input(t, {4, 3, 16})
            .input(t, {4, 3, 16})
            .output(t, {4, 3, 16})
            .attribute("dim", 2));
  }
  for (plan::DType t : {kF32, kBF16}) {
    std::string ty = typeName(t);
    add(CaseBuilder("random_normal " + ty, "random_normal", T::kExact)
            .input(plan::I64, {})
            .output(t, {4, 1000})
            .attribute("stream", 123456789)
            .real("std", 0.02));
    add(CaseBuilder("random_uniform " + ty, "random_uniform", T::kExact)
            .input(plan::I64, {})
            .output(t, {1000})
            .attribute("stream", 42)
            .real("bound", 0.1));
    add(CaseBuilder("global_norm " + ty + " of three tensors", "global_norm", T::kUlps)
            .input(t, {1000})
            .input(kF32, {5000})
            .input(t, {7})
            .output(kF32, {}));
    add(CaseBuilder("sum_squares " + ty, "sum_squares", T::kUlps)
            .input(t, {10000})
            .output(kF32, {}));
    add(CaseBuilder("embedding " + ty, "embedding", T::kExact)
            .input(t, {50, 16})
            .input(plan::I64, {2, 7}, 0, 50)
            .output(t, {2, 7, 16}));
    add(CaseBuilder("embedding_grad " + ty + " (repeated ids)", "embedding_grad", T::kExact)
            .input(plan::I64, {40}, 0, 20)
            .input(t, {40, 16})
            .output(t, {20, 16}));
    add(CaseBuilder("cross_entropy " + ty, "cross_entropy", T::kUlps)
            .input(t, {12, 40})
            .input(plan::I64, {12}, 0, 40)
            .output(kF32, {}));
    add(CaseBuilder("cross_entropy " + ty + " masked, ignore_index", "cross_entropy", T::kUlps)
            .input(t, {12, 40})
            .input(plan::I64, {12}, 0, 6)
            .input(kF32, {12}, 0, 1)
            .output(kF32, {})
            .attribute("ignore_index", 3));
    add(CaseBuilder("cross_entropy_grad " + ty, "cross_entropy_grad", T::kUlps)
            .input(t, {12, 40})
            .input(plan::I64, {12}, 0, 40)
            .input(kF32, {}, 0.5, 1.5)
            .output(t, {12, 40}));
    add(CaseBuilder("linear_cross_entropy " + ty, "linear_cross_entropy", T::kNorm,
                    t == kBF16 ? 1e-2 : 1e-5)
            .input(t, {2, 6, 32})
            .input(t, {40, 32})
            .input(plan::I64, {2, 6}, 0, 40)
            .output(kF32, {})
            .text("logits_type", ty));
    add(CaseBuilder("linear_cross_entropy_grad " + ty + " ignore_index",
                    "linear_cross_entropy_grad", T::kNorm, t == kBF16 ? 2e-2 : 1e-5)
            .input(t, {2, 6, 32})
            .input(t, {40, 32})
            .input(plan::I64, {2, 6}, 0, 10)
            .input(kF32, {}, 0.5, 1.5)
            .output(t, {2, 6, 32})
            .output(t, {40, 32})
            .text("logits_type", ty)
            .attribute("ignore_index", 2));
    for (bool causal : {true, false}) {
      std::string variant = ty + (causal ? " causal GQA" : " GQA");
      add(CaseBuilder("attention " + variant, "attention", T::kNorm, t == kBF16 ? 1e-2 : 1e-5)
              .input(t, {2, 4, 16, 8})
              .input(t, {2, 2, 16, 8})
              .input(t, {2, 2, 16, 8})
              .output(t, {2, 4, 16, 8})
              .output(kF32, {2, 4, 16})
              .attribute("causal", causal ? 1 : 0)
              .real("scale", 0.35355339059327373));
      cases.push_back(attentionTrainingCase(t, causal, false));
      if (causal) {
        cases.push_back(attentionTrainingCase(t, causal, true)); // as tg-autodiff builds it
      }
    }
  }
  for (plan::DType t : {kF32, kBF16}) {
    std::string ty = typeName(t);
    add(CaseBuilder("dropout " + ty, "dropout", T::kExact)
            .input(t, {8, 250})
            .input(plan::I64, {2}, 0, 1000)
            .output(t, {8, 250})
            .real("rate", 0.1)
            .text("name", "model.layers.0.self_attn.dropout"));
    add(CaseBuilder("dropout " + ty + " evaluation key (identity)", "dropout", T::kExact)
            .input(t, {300})
            .input(plan::I64, {2}, -1, 0)
            .output(t, {300})
            .real("rate", 0.5)
            .text("name", "x"));
  }
  add(CaseBuilder("dropout_key", "dropout_key", T::kExact)
          .input(plan::I64, {}, 0, 1 << 30)
          .input(plan::I64, {}, 0, 1000)
          .output(plan::I64, {2})
          .attribute("micro_batches", 4)
          .attribute("micro_batch", 3)
          .attribute("data_parallel", 1));
  add(CaseBuilder("eval_dropout_key", "eval_dropout_key", T::kExact).output(plan::I64, {2}));
  add(CaseBuilder("local_shard (one rank)", "local_shard", T::kExact)
          .input(kF32, {96})
          .output(kF32, {96})
          .text("axis", "dp"));
  const plan::DType kE4M3 = plan::F8E4M3FN, kE5M2 = plan::F8E5M2;
  for (plan::DType t : {kF32, kBF16}) {
    std::string ty = typeName(t);
    add(CaseBuilder("fp8_quantize " + ty + " -> e4m3", "fp8_quantize", T::kExact)
            .input(t, {1000})
            .input(kF32, {}, 50, 400)
            .output(kE4M3, {1000}));
    add(CaseBuilder("fp8_quantize " + ty + " -> e5m2 (saturating, subnormal)", "fp8_quantize",
                    T::kExact)
            .input(t, {1000})
            .input(kF32, {}, 1e3, 6e4)
            .output(kE5M2, {1000}));
    add(CaseBuilder("amax " + ty + " of two tensors", "amax", T::kExact)
            .input(t, {1000})
            .input(kF32, {5000})
            .output(kF32, {}));
  }
  add(CaseBuilder("fp8_current_scale", "fp8_current_scale", T::kExact)
          .input(kF32, {}, 0.01, 10)
          .output(kF32, {})
          .real("fp8_max", 448.0));
  for (const char *algo : {"max", "most_recent"}) {
    add(CaseBuilder(std::string("fp8_scale_update ") + algo, "fp8_scale_update", T::kExact)
            .input(kF32, {16}, 0, 5)
            .input(kF32, {}, 0, 10)
            .input(kF32, {}, 1, 100)
            .output(kF32, {16})
            .output(kF32, {})
            .real("fp8_max", 448.0)
            .real("margin", 0.0)
            .text("amax_compute_algo", algo));
  }
  add(CaseBuilder("fp8_matmul e4m3 x e4m3^T -> bf16", "fp8_matmul", T::kNorm, gemmBound(kBF16))
          .input(kE4M3, {32, 64})
          .input(kE4M3, {48, 64})
          .input(kF32, {}, 1, 4)
          .input(kF32, {}, 1, 4)
          .output(kBF16, {32, 48})
          .attribute("transpose_rhs", 1));
  add(CaseBuilder("fp8_matmul e5m2 x e4m3 -> f32", "fp8_matmul", T::kNorm, gemmBound(kF32))
          .input(kE5M2, {2, 16, 64})
          .input(kE4M3, {64, 24})
          .input(kF32, {}, 1, 4)
          .input(kF32, {}, 1, 4)
          .output(kF32, {2, 16, 24}));
  add(CaseBuilder("convert f32 -> e4m3, e5m2 (rounding)", "convert", T::kExact)
          .input(kF32, {1000})
          .output(kE4M3, {1000}));
  add(CaseBuilder("convert e5m2 -> bf16", "convert", T::kExact)
          .input(kE5M2, {256})
          .output(kBF16, {256}));
  // An Adagrad-shaped program: a bf16 operand, a broadcast scalar, a temporary, two results.
  add(CaseBuilder("elementwise program", "elementwise", T::kExact)
          .input(kF32, {1000})
          .input(kF32, {1000}, 0, 1e-2)
          .input(kBF16, {1000}, -0.1, 0.1)
          .input(kF32, {}, 1e-4, 1e-3)
          .output(kF32, {1000})
          .output(kBF16, {1000})
          .text("program", "s = a1 a2 a2 * +; r0 = s; r1 = a0 a3 neg a2 * s sqrt 1e-08 + / + a0 "
                           "0.5 * -"));
  // Eight operands (a broadcast scalar among them), a three-result update in f32, and an f64
  // program reading the i64 step with pow (f64 pow may differ in the last bit between CUDA
  // and glibc: compared in ulps).
  add(CaseBuilder("elementwise program, eight operands", "elementwise", T::kExact)
          .input(kF32, {1000})
          .input(kF32, {1000}, -0.01, 0.01)
          .input(kF32, {1000}, 0, 1e-4)
          .input(kF32, {1000}, -0.1, 0.1)
          .input(kF32, {}, 1e-4, 1e-3)
          .input(kF32, {}, 0.5, 1)
          .input(kF32, {}, 0.1, 1)
          .input(kF32, {}, 0.05, 1)
          .output(kF32, {1000})
          .output(kF32, {1000})
          .output(kF32, {1000})
          .text("program", "g = a3 a5 *; m = 0.9 a1 * 0.1 g * +; v = 0.95 a2 * 0.05 g * g * +; "
                           "r0 = a0 a4 m a6 / v a7 / sqrt 1e-08 + / 0.1 a0 * + * -; r1 = m; "
                           "r2 = v"));
  add(CaseBuilder("elementwise program, f64 with pow", "elementwise", T::kUlps)
          .input(plan::I64, {}, 0, 1000)
          .output(kF32, {})
          .output(kF32, {})
          .text("program", "t = a0 1 +; r0 = 1 0.9 t pow -; r1 = 1 0.95 t pow -")
          .text("arithmetic", "f64"));
  add(CaseBuilder("lr_value", "lr_value", T::kUlps)
          .input(plan::I64, {}, 0, 1200)
          .output(kF32, {})
          .real("base_lr", 3e-4)
          .real("end_lr", 3e-5)
          .attribute("warmup_steps", 100)
          .attribute("max_steps", 1000));
  add(CaseBuilder("clip_coefficient", "clip_coefficient", T::kExact)
          .input(kF32, {}, 0, 3)
          .output(kF32, {})
          .real("max_norm", 1.0));
  add(CaseBuilder("sqrt", "sqrt", T::kExact).input(kF32, {}, 0, 100).output(kF32, {}));
  add(CaseBuilder("mean_accumulate", "mean_accumulate", T::kExact)
          .input(plan::F64, {2}, 0, 1000)
          .input(kF32, {}, 0, 12)
          .output(plan::F64, {2}));
  add(CaseBuilder("mean_finish", "mean_finish", T::kExact)
          .input(plan::F64, {2}, 1, 1000)
          .output(plan::F64, {})
          .output(plan::F64, {2}));
  add(CaseBuilder("convert f32 -> bf16", "convert", T::kExact)
          .input(kF32, {500})
          .output(kBF16, {500}));
  add(CaseBuilder("convert bf16 -> f32", "convert", T::kExact)
          .input(kBF16, {500})
          .output(kF32, {500}));
  add(CaseBuilder("reshape f32 [4,6] -> [24]", "reshape", T::kExact)
          .input(kF32, {4, 6})
          .output(kF32, {24}));
  add(CaseBuilder("matmul bf16 x bf16 -> f32", "matmul", T::kNorm, gemmBound(kF32) * 10)
          .input(kBF16, {32, 64})
          .input(kBF16, {64, 48})
          .output(kF32, {32, 48}));
  add(CaseBuilder("split i64 token ids", "split", T::kExact)
          .input(plan::I64, {8, 5})
          .output(plan::I64, {3, 5})
          .output(plan::I64, {5, 5})
          .attribute("dim", 0));
  cases.push_back(programCase());
  // Bad input, found on the device and reported after the program as the CPU reports it.
  OpCheckCase badId =
      CaseBuilder("embedding: a token id outside the vocabulary", "embedding", T::kExact)
          .input(kBF16, {50, 16})
          .input(plan::I64, {2, 7}, 40, 60)
          .output(kBF16, {2, 7, 16})
          .finish();
  badId.expectError = "is outside the vocabulary [0, 50)";
  cases.push_back(std::move(badId));
  OpCheckCase badLabel = CaseBuilder("linear_cross_entropy: a label outside the vocabulary",
                                     "linear_cross_entropy", T::kExact)
                             .input(kBF16, {2, 6, 32})
                             .input(kBF16, {40, 32})
                             .input(plan::I64, {2, 6}, 30, 50)
                             .output(kF32, {})
                             .text("logits_type", "bf16")
                             .finish();
  badLabel.expectError = "is outside the vocabulary [0, 40)";
  cases.push_back(std::move(badLabel));
  OpCheckCase masked = CaseBuilder("softmax: a row with no finite entry", "softmax", T::kExact)
                           .input(kF32, {4, 16}, -INFINITY, -INFINITY)
                           .output(kF32, {4, 16})
                           .attribute("dim", 1)
                           .finish();
  masked.expectError = "has no finite entry";
  cases.push_back(std::move(masked));
  // A plan whose arenas exceed any GPU: refused at prepare with the numbers.
  OpCheckCase huge = CaseBuilder("a plan larger than the GPU", "add", T::kExact)
                         .input(kF32, {int64_t{1} << 38})
                         .input(kF32, {int64_t{1} << 38})
                         .output(kF32, {int64_t{1} << 38})
                         .finish();
  huge.expectError = "does not fit GPU 0";
  huge.candidateOnly = true;
  cases.push_back(std::move(huge));
  return cases;
}

const std::map<std::string, std::vector<std::string>> &opCheckFamilies() {
  static const std::map<std::string, std::vector<std::string>> families = {
      {"gemm", {"matmul", "fp8_matmul"}},
      {"elementwise",
       {"add", "mul", "scale", "silu", "silu_grad", "swiglu", "swiglu_grad", "convert", "fill",
        "copy", "reshape", "elementwise"}},
      {"layout", {"transpose", "repeat", "repeat_grad", "split", "concat", "local_shard"}},
      {"norms",
       {"rms_norm", "rms_norm_grad", "add_rms_norm", "softmax", "softmax_grad", "causal_mask",
        "rope", "rope_qk"}},
      {"attention", {"attention", "attention_grad"}},
      {"losses",
       {"cross_entropy", "cross_entropy_grad", "linear_cross_entropy",
        "linear_cross_entropy_grad"}},
      {"embedding", {"embedding", "embedding_grad"}},
      {"random", {"random_normal", "random_uniform", "dropout", "dropout_key", "eval_dropout_key"}},
      {"optimizer",
       {"global_norm", "sum_squares", "sqrt", "clip_coefficient", "lr_value", "mean_accumulate",
        "mean_finish"}},
      {"fp8", {"fp8_quantize", "amax", "fp8_scale_update", "fp8_current_scale"}},
      {"program", {"call", "event_record", "event_wait"}},
  };
  return families;
}

Status runOpCheck(const OpCheckCase &check, Backend &reference, Backend &candidate,
                  OpCheckResult &result) {
  result = OpCheckResult();
  MLPERF_RETURN_IF_ERROR(validatePlan(check.plan));
  std::unique_ptr<Communicator> single = createSingleRankCommunicator();
  if (!check.expectError.empty()) {
    return runBadInputCheck(check, reference, candidate, *single, result);
  }
  MLPERF_RETURN_IF_ERROR(reference.prepare(check.plan, *single));
  MLPERF_RETURN_IF_ERROR(candidate.prepare(check.plan, *single));
  // The last program is the one to run (a call reaches earlier ones only).
  const int index = check.plan.programs_size() - 1;
  const plan::Program &program = check.plan.programs(index);
  MLPERF_RETURN_IF_ERROR(writeRandomInputs(check, reference, &candidate));
  MLPERF_RETURN_IF_ERROR(reference.execute(index));
  MLPERF_RETURN_IF_ERROR(candidate.execute(index));
  return compareOutputs(check, program, reference, candidate, result);
}

} // namespace mlperf::rt::cuda
