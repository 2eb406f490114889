//===- CudaHostTest.cpp - The CUDA backend's host logic, without a GPU ----===//
//
// What of the CUDA backend can be checked on a machine without a GPU: its op table against the
// plan format's, the commands its prepare refuses, the cuBLASLt layouts (through a CPU
// interpreter of the layout) against cpu::matmul, the kernels' element math (the very
// functions the device runs) against the CPU kernels bit for bit, and the op checker's cases.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Fp8.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/OpKernels.h"
#include "runtime/cuda/CudaOps.h"
#include "runtime/cuda/ElementMath.cuh"
#include "runtime/cuda/GemmAlgorithmCache.h"
#include "runtime/cuda/GemmLayout.h"
#include "runtime/cuda/OpCheck.h"
#include "runtime/cuda/Reserves.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <set>

using namespace mlperf;
using namespace mlperf::rt;

namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

/// Every bf16 value that is finite (the domain of a bf16 operand), as floats.
std::vector<float> everyFiniteBf16() {
  std::vector<float> values;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = cuda::bf16Value(static_cast<uint16_t>(bits));
    if (std::isfinite(value)) {
      values.push_back(value);
    }
  }
  return values;
}

/// Runs `op` through the CPU kernels (runtime/cpu/OpKernels) on bf16 operands.
std::vector<HostTensor> cpuOp(const std::string &op, const std::vector<HostTensor> &operands,
                              const std::vector<std::vector<int64_t>> &resultShapes,
                              const OpAttributes &attributes = {}) {
  std::vector<const HostTensor *> pointers;
  for (const HostTensor &operand : operands) {
    pointers.push_back(&operand);
  }
  std::vector<HostTensor> results;
  for (const auto &shape : resultShapes) {
    results.push_back(HostTensor::zeros(operands[0].dtype, shape));
  }
  Status status = runHostOp(op, attributes, pointers, results);
  EXPECT_TRUE(status.isOk()) << status.toString();
  for (HostTensor &result : results) { // what a bf16 buffer stores
    roundBuffer(result.dtype, result.data(), result.numElements());
  }
  return results;
}

HostTensor tensor(DType type, std::vector<int64_t> shape, const std::vector<float> &values) {
  HostTensor t = HostTensor::zeros(type, std::move(shape));
  t.values = values;
  return t;
}

TEST(CudaOps, TableListsEveryPlanOpInOrderAndOnlyCommunicationLacksAKernel) {
  std::vector<std::string_view> planOps = planOpNames();
  std::vector<cuda::CudaOpEntry> table = cuda::cudaOpTable();
  ASSERT_EQ(table.size(), planOps.size());
  for (size_t i = 0; i < planOps.size(); ++i) {
    EXPECT_EQ(table[i].op, planOps[i]) << "entry " << i;
    EXPECT_EQ(table[i].hasKernel, table[i].comesWith.empty()) << table[i].op;
    // Every op of a single-GPU plan has its kernel; what talks to other ranks, or exists only
    // in a plan whose vocabulary is split over ranks, comes with NCCL. The mixture-of-experts
    // ops and the end-of-document loss mask (GPT-OSS-20B, issue 39) run on the CPU backend
    // only, so far.
    bool multiRankOnly =
        communicates(table[i].op) || table[i].op.find("vocab_") != std::string_view::npos;
    bool moe = table[i].op.find("moe_") == 0 || table[i].op.find("grouped_matmul") == 0 ||
               table[i].op == "scale_rows" || table[i].op == "row_dot" ||
               table[i].op == "token_mask";
    EXPECT_EQ(table[i].hasKernel, !multiRankOnly && !moe) << table[i].op;
  }
}

TEST(CudaOps, SlidingWindowAttentionIsRefusedNamingWhatItNeeds) {
  for (const cuda::OpCheckCase &check : cuda::opCheckCases()) {
    if (check.op != "attention") {
      continue;
    }
    plan::Plan plan = check.plan;
    plan::Command *command = plan.mutable_programs(0)->mutable_commands(0);
    ASSERT_EQ(command->op(), "attention");
    EXPECT_EQ(cuda::unsupportedReason(plan, *command), "");
    plan::Attribute *window = command->add_attributes();
    window->set_name("window");
    window->set_i(128);
    EXPECT_EQ(cuda::unsupportedReason(plan, *command),
              "op 'attention' with a sliding window has no CUDA kernel yet (it comes with the "
              "GPT-OSS-20B benchmark (issue 39: mixture-of-experts routing and grouped GEMMs))");
    return;
  }
  FAIL() << "no op-check case for attention";
}

TEST(CudaOps, OpCheckFamiliesHoldEveryOpWithAKernelOnce) {
  std::map<std::string, int> seen;
  for (const auto &[family, ops] : cuda::opCheckFamilies()) {
    for (const std::string &op : ops) {
      ++seen[op];
    }
  }
  for (const cuda::CudaOpEntry &entry : cuda::cudaOpTable()) {
    EXPECT_EQ(seen[std::string(entry.op)], entry.hasKernel ? 1 : 0) << entry.op;
  }
}

TEST(CudaOps, EveryOpWithAKernelHasAnOpCheckCaseTheBackendAccepts) {
  std::set<std::string> covered;
  for (const cuda::OpCheckCase &check : cuda::opCheckCases()) {
    covered.insert(check.op);
    Status valid = validatePlan(check.plan);
    EXPECT_TRUE(valid.isOk()) << check.name << ": " << valid.toString();
    for (const plan::Program &program : check.plan.programs()) {
      for (const plan::Command &command : program.commands()) {
        covered.insert(command.op());
        EXPECT_EQ(cuda::unsupportedReason(check.plan, command), "") << check.name;
      }
    }
  }
  for (const cuda::CudaOpEntry &entry : cuda::cudaOpTable()) {
    if (entry.hasKernel) {
      EXPECT_TRUE(covered.count(std::string(entry.op))) << entry.op << " has no op-check case";
    }
  }
}

TEST(CudaOps, TheOpCheckerPassesTheCpuBackendAgainstItself) {
  // The harness itself: identical backends agree exactly on every case (the plan too large
  // for a GPU is not run on the host).
  for (const cuda::OpCheckCase &check : cuda::opCheckCases()) {
    if (check.candidateOnly) {
      continue;
    }
    std::unique_ptr<Backend> a = createCpuBackend(), b = createCpuBackend();
    cuda::OpCheckResult result;
    Status status = cuda::runOpCheck(check, *a, *b, result);
    ASSERT_TRUE(status.isOk()) << check.name << ": " << status.toString();
    EXPECT_TRUE(result.passed) << check.name << ": " << result.detail;
    EXPECT_EQ(result.maxUlps, 0) << check.name;
  }
}

TEST(CudaOps, RefusesWhatItCannotRunByName) {
  std::vector<cuda::OpCheckCase> cases = cuda::opCheckCases();
  plan::Plan p = cases[0].plan; // a matmul
  plan::Command &command = *p.mutable_programs(0)->mutable_commands(0);
  command.set_op("all_reduce");
  EXPECT_EQ(cuda::unsupportedReason(p, command),
            "op 'all_reduce' has no CUDA kernel yet (it comes with the CUDA backend part 3 "
            "(issue 41: fp8 GEMMs, NCCL))");
  command.set_op("dropout"); // a float where the key's integers belong
  EXPECT_EQ(cuda::unsupportedReason(p, command),
            "op 'dropout': operand 'in1' of type F32 must hold integers (I32 or I64)");
  command.set_op("matmul");
  p.mutable_buffers(command.operands(0))->set_dtype(plan::F8E4M3FN);
  EXPECT_NE(cuda::unsupportedReason(p, command).find("of type F8E4M3FN"), std::string::npos);
}

TEST(CudaOps, AllowsInPlaceElementwiseButNoOtherOverlap) {
  for (const cuda::OpCheckCase &check : cuda::opCheckCases()) {
    if (check.name != "add bf16" && check.name != "transpose bf16 [6,7,3] (2,0,1)") {
      continue;
    }
    plan::Plan p = check.plan;
    const plan::Command &command = p.programs(0).commands(0);
    // The result on the operand's very bytes.
    plan::Buffer &result = *p.mutable_buffers(command.results(0));
    const plan::Buffer &operand = p.buffers(command.operands(0));
    result.set_memory_class(operand.memory_class());
    result.set_offset(operand.offset());
    std::string reason = cuda::unsupportedReason(p, command);
    if (check.op == "add") {
      EXPECT_EQ(reason, "");
      result.set_offset(operand.offset() + 2); // shifted by one element: refused
      EXPECT_NE(cuda::unsupportedReason(p, command).find("shares bytes"), std::string::npos);
    } else {
      EXPECT_NE(reason.find("shares bytes"), std::string::npos) << reason;
    }
  }
}

// What cuDNN 9.19 asked for on an H200 (docs/benchmarks.md): the compiler's memory model
// reserves the formula, so it must give these bytes exactly.
TEST(Reserves, CudnnAttentionBackwardWorkspaceEqualsWhatCudnnAskedFor) {
  EXPECT_EQ(cuda::cudnnSdpaBackwardWorkspaceBytes(1, 32, 8192, 8192, 128), 4430233856);
  EXPECT_EQ(cuda::cudnnSdpaBackwardWorkspaceBytes(2, 4, 80, 80, 64), 428800);
  EXPECT_EQ(cuda::cudnnSdpaBackwardWorkspaceBytes(4, 4, 32, 32, 16), 297216);
  EXPECT_EQ(cuda::cudnnSdpaBackwardWorkspaceBytes(1, 4, 32, 32, 16), 74496);
}

TEST(Reserves, ScratchFormulasCountEveryAlignedPart) {
  // Own attention, group 4, 8 queries and keys (256 scores), head dim 16, bf16: scores in f32
  // and probabilities in bf16; the backward adds dp (f32), ds (bf16) and two f32 head sums.
  EXPECT_EQ(cuda::ownAttentionScratchBytes(4, 8, 8, 16, 2, 2, false), 1024 + 512);
  EXPECT_EQ(cuda::ownAttentionScratchBytes(4, 8, 8, 16, 2, 2, true),
            1024 + 512 + 1024 + 512 + 2 * 2048);
  // The fused loss keeps one chunk of logits: 10,000 tokens are chunks of 4,096.
  const int64_t chunkLogits = int64_t{4096} * 32000 * 2;
  EXPECT_EQ(cuda::linearCrossEntropyScratchBytes(10000, 64, 32000, 2, false),
            chunkLogits + 2 * cuda::scratchAligned(10000 * 8));
  EXPECT_EQ(cuda::linearCrossEntropyScratchBytes(10000, 64, 32000, 2, true),
            2 * chunkLogits + 2 * cuda::scratchAligned(10000 * 8) + 4096 * 16 + 256 +
                32000 * 64 * 4);
  // Odd sizes are padded to 256 bytes each.
  EXPECT_EQ(cuda::fp8MatmulScratchBytes(10, 20, 30), 256 * 3);
}

TEST(GemmLayout, InterpretedLayoutEqualsCpuMatmulOnRandomShapes) {
  std::mt19937 random(11);
  std::uniform_int_distribution<int> dim(1, 9);
  std::uniform_real_distribution<float> value(-1, 1);
  for (int trial = 0; trial < 300; ++trial) {
    cpu::MatmulShape s;
    s.m = dim(random);
    s.n = dim(random);
    s.k = dim(random);
    s.batch = trial % 3 == 0 ? 1 : dim(random) % 4 + 1;
    s.transposeA = random() % 2;
    s.transposeB = random() % 2;
    s.broadcastB = s.batch > 1 && random() % 2;
    std::vector<float> a(s.batch * s.m * s.k), b((s.broadcastB ? 1 : s.batch) * s.k * s.n);
    for (float &x : a) {
      x = value(random);
    }
    for (float &x : b) {
      x = value(random);
    }
    std::vector<float> want(s.batch * s.m * s.n), got(want.size(), NAN);
    cpu::matmul(a.data(), b.data(), want.data(), s);
    cuda::GemmLayout layout = cuda::gemmLayoutFor(s);
    cuda::interpretGemmLayout(layout, a.data(), b.data(), got.data());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-5)
          << "trial " << trial << " m " << s.m << " n " << s.n << " k " << s.k << " batch "
          << s.batch << " tA " << s.transposeA << " tB " << s.transposeB << " shared "
          << s.broadcastB << " element " << i;
    }
  }
}

TEST(GemmAlgorithmCache, RoundTripsAndRefusesACorruptFile) {
  std::string path = ::testing::TempDir() + "/gemm-cache-test.txt";
  std::remove(path.c_str());
  cuda::GemmAlgorithmCache cache;
  ASSERT_TRUE(cuda::GemmAlgorithmCache::load(path, cache).isOk()); // no file: empty
  EXPECT_EQ(cache.size(), 0u);
  cuda::GemmLayout layout = cuda::gemmLayoutFor(cpu::matmulShape(64, 80, 96, false, true, 2));
  std::string key = cuda::gemmCacheKey("NVIDIA H200", layout, "BF16", "BF16", "F32");
  EXPECT_EQ(key, "NVIDIA_H200:m80:n64:k96:b2:t10:ld96,96,80:s7680,6144,5120:BF16,BF16,F32");
  cuda::AlgorithmWords words = {1, 2, 3, 0xffffffffffffffffull, 5, 6, 7, 8};
  cache.put(key, words);
  ASSERT_TRUE(cache.save(path).isOk());
  cuda::GemmAlgorithmCache loaded;
  ASSERT_TRUE(cuda::GemmAlgorithmCache::load(path, loaded).isOk());
  ASSERT_NE(loaded.find(key), nullptr);
  EXPECT_EQ(*loaded.find(key), words);
  EXPECT_EQ(loaded.find(key + "x"), nullptr);
  {
    std::ofstream out(path, std::ios::app);
    out << key << " 0123\n";
  }
  Status status = cuda::GemmAlgorithmCache::load(path, loaded);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("line 2"), std::string::npos) << status.toString();
  std::remove(path.c_str());
}

TEST(GemmLayout, SharedWeightFoldsTheBatchIntoRows) {
  cpu::MatmulShape s = cpu::matmulShape(32, 40, 48, false, true, 6);
  s.broadcastB = true;
  cuda::GemmLayout layout = cuda::gemmLayoutFor(s);
  EXPECT_EQ(layout.batch, 1);
  EXPECT_EQ(layout.n, 6 * 32); // cuBLASLt's n: the plan's rows
  EXPECT_EQ(layout.m, 40);
  EXPECT_TRUE(layout.transposeX);
  EXPECT_EQ(layout.x.ld, 48);
}

TEST(ElementMath, Bf16RoundingMatchesTheCpuOnEveryFloatClass) {
  std::mt19937 random(3);
  for (int i = 0; i < 1 << 20; ++i) {
    uint32_t bits = random();
    float value;
    std::memcpy(&value, &bits, 4);
    float want = static_cast<float>(roundTo(DType::kBF16, value));
    float got = cuda::roundToStorage(DType::kBF16, value);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got));
    } else {
      ASSERT_EQ(bitsOf(got), bitsOf(want)) << std::hex << bits;
    }
  }
}

TEST(ElementMath, Fp8StorageAndQuantizeEqualTheCpu) {
  for (DType type : {DType::kF8E4M3FN, DType::kF8E5M2}) {
    // Every code decodes as the CPU decodes it; every value the CPU stores encodes the same.
    for (uint32_t code = 0; code < 256; ++code) {
      auto byte = static_cast<uint8_t>(code);
      cuda::TypedPointer pointer{&byte, type};
      float got = pointer.load(0), want = static_cast<float>(decodeBits(type, code));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << code;
        continue;
      }
      ASSERT_EQ(bitsOf(got), bitsOf(want)) << code;
    }
    std::mt19937 random(17);
    std::uniform_real_distribution<float> value(-600, 600), scale(0.01f, 100.0f);
    const bool e4m3 = type == DType::kF8E4M3FN;
    for (int i = 0; i < 200000; ++i) {
      float x = i % 7 == 0 ? value(random) * 1e-4f : value(random), s = scale(random);
      float want = quantizeFp8(type, x, s);
      float got = cpu::quantizeFp8Value(e4m3, x, s);
      ASSERT_EQ(bitsOf(got), bitsOf(want)) << x << " * " << s;
      uint8_t stored = 0;
      cuda::TypedPointer{&stored, type}.store(0, x);
      ASSERT_EQ(stored, encodeBits(type, roundTo(type, x))) << x;
    }
  }
}

TEST(ElementMath, UnaryOpsEqualTheCpuKernelsOnEveryBf16Value) {
  std::vector<float> x = everyFiniteBf16();
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> silu(n), scaled(n), grad(n), dy(n);
  for (int64_t i = 0; i < n; ++i) {
    dy[i] = x[(i * 7919) % n];
  }
  cpu::silu(x.data(), silu.data(), n);
  cpu::scale(x.data(), scaled.data(), n, 1.0 / 3.0);
  cpu::siluGrad(x.data(), dy.data(), grad.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(bitsOf(cuda::siluElement(x[i])), bitsOf(silu[i])) << x[i];
    ASSERT_EQ(bitsOf(cuda::scaleElement(x[i], 1.0 / 3.0)), bitsOf(scaled[i])) << x[i];
    ASSERT_EQ(bitsOf(cuda::siluGradElement(x[i], dy[i])), bitsOf(grad[i])) << x[i];
  }
}

TEST(ElementMath, BinaryAndSwigluOpsEqualTheCpuOnEveryBf16Gate) {
  std::vector<float> gate = everyFiniteBf16();
  const int64_t n = static_cast<int64_t>(gate.size());
  std::vector<float> up(n), grad(n);
  for (int64_t i = 0; i < n; ++i) {
    up[i] = gate[(i * 104729) % n];
    grad[i] = gate[(i * 15485863) % n];
  }
  std::vector<float> sum(n), product(n);
  cpu::add(gate.data(), up.data(), sum.data(), n);
  cpu::mul(gate.data(), up.data(), product.data(), n);
  std::vector<HostTensor> forward =
      cpuOp("swiglu", {tensor(DType::kBF16, {n}, gate), tensor(DType::kBF16, {n}, up)}, {{n}});
  std::vector<HostTensor> backward =
      cpuOp("swiglu_grad",
            {tensor(DType::kBF16, {n}, gate), tensor(DType::kBF16, {n}, up),
             tensor(DType::kBF16, {n}, grad)},
            {{n}, {n}});
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(bitsOf(cuda::addElement(gate[i], up[i])), bitsOf(sum[i]));
    ASSERT_EQ(bitsOf(cuda::mulElement(gate[i], up[i])), bitsOf(product[i]));
    float y = cuda::roundToStorage(DType::kBF16, cuda::swigluElement(gate[i], up[i], DType::kBF16));
    ASSERT_EQ(bitsOf(y), bitsOf(forward[0].values[i])) << gate[i] << " " << up[i];
    float dGate, dUp;
    cuda::swigluGradElement(gate[i], up[i], grad[i], DType::kBF16, dGate, dUp);
    ASSERT_EQ(bitsOf(cuda::roundToStorage(DType::kBF16, dGate)), bitsOf(backward[0].values[i]))
        << gate[i];
    ASSERT_EQ(bitsOf(cuda::roundToStorage(DType::kBF16, dUp)), bitsOf(backward[1].values[i]));
  }
}

TEST(ElementMath, RowKernelsEqualTheCpuKernels) {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> value(-3, 3);
  const int64_t rows = 7, dim = 96;
  std::vector<float> x(rows * dim), w(dim), dy(rows * dim);
  for (float &v : x) {
    v = value(random);
  }
  for (float &v : w) {
    v = value(random);
  }
  for (float &v : dy) {
    v = value(random);
  }
  // rms_norm and its gradient.
  std::vector<float> want(rows * dim), got(rows * dim), wantDx(rows * dim), wantDw(dim),
      gotDx(rows * dim), gotDw(dim);
  cpu::rmsNorm(x.data(), w.data(), want.data(), rows, dim, 1e-5);
  cpu::rmsNormGrad(x.data(), w.data(), dy.data(), wantDx.data(), wantDw.data(), rows, dim, 1e-5);
  cuda::TypedPointer X{x.data(), DType::kF32}, W{w.data(), DType::kF32}, DY{dy.data(), DType::kF32};
  std::vector<double> inverseRms(rows);
  for (int64_t r = 0; r < rows; ++r) {
    cuda::rmsNormRow(X, W, {got.data(), DType::kF32}, r, dim, 1e-5);
    inverseRms[r] = cuda::rmsNormGradRow(X, W, DY, {gotDx.data(), DType::kF32}, r, dim, 1e-5);
  }
  for (int64_t c = 0; c < dim; ++c) {
    gotDw[c] = cuda::rmsNormGradColumn(X, DY, inverseRms.data(), c, rows, dim);
  }
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(bitsOf(got[i]), bitsOf(want[i])) << i;
    ASSERT_EQ(bitsOf(gotDx[i]), bitsOf(wantDx[i])) << i;
  }
  for (int64_t c = 0; c < dim; ++c) {
    ASSERT_EQ(bitsOf(gotDw[c]), bitsOf(wantDw[c])) << c;
  }
  // softmax over the middle dimension of [rows, dim / 4, 4] (entries 4 apart) and its gradient;
  // a row with masked entries.
  x[0] = x[8] = -INFINITY;
  std::vector<float> probabilities(rows * dim), softmaxGot(rows * dim), gradWant(rows * dim),
      gradGot(rows * dim);
  ASSERT_EQ(cpu::softmax(x.data(), probabilities.data(), rows, dim / 4, int64_t{4}), -1);
  cpu::softmaxGrad(probabilities.data(), dy.data(), gradWant.data(), rows, dim / 4, 4);
  for (int64_t row = 0; row < rows * 4; ++row) {
    int64_t base = row / 4 * dim + row % 4;
    ASSERT_TRUE(cuda::softmaxRow(X, {softmaxGot.data(), DType::kF32}, base, dim / 4, 4));
    cuda::softmaxGradRow({probabilities.data(), DType::kF32}, DY, {gradGot.data(), DType::kF32},
                         base, dim / 4, 4);
  }
  for (size_t i = 0; i < probabilities.size(); ++i) {
    ASSERT_EQ(bitsOf(softmaxGot[i]), bitsOf(probabilities[i])) << i;
    ASSERT_EQ(bitsOf(gradGot[i]), bitsOf(gradWant[i])) << i;
  }
  std::vector<float> masked(4, -INFINITY);
  EXPECT_FALSE(
      cuda::softmaxRow({masked.data(), DType::kF32}, {masked.data(), DType::kF32}, 0, 4, 1));
}

TEST(ElementMath, RopeAndRepeatGradEqualTheCpuKernels) {
  std::mt19937 random(9);
  std::uniform_real_distribution<float> value(-2, 2);
  const int64_t batch = 2, seq = 37, heads = 3, headDim = 32;
  std::vector<float> x(batch * seq * heads * headDim), want(x.size());
  for (float &v : x) {
    v = value(random);
  }
  std::vector<double> frequencies =
      cpu::ropeFrequencies(headDim, 500000.0, true, 8.0, 1.0, 4.0, 16);
  for (bool inverse : {false, true}) {
    cpu::rope(x.data(), want.data(), batch, seq, heads, headDim, frequencies, inverse);
    for (int64_t vector = 0; vector < batch * seq * heads; ++vector) {
      int64_t s = vector / heads % seq, base = vector * headDim;
      for (int64_t i = 0; i < headDim / 2; ++i) {
        float y1, y2;
        cuda::ropePair(x[base + i], x[base + i + headDim / 2], s,
                       static_cast<float>(frequencies[i]), inverse, y1, y2);
        ASSERT_EQ(bitsOf(y1), bitsOf(want[base + i]));
        ASSERT_EQ(bitsOf(y2), bitsOf(want[base + i + headDim / 2]));
      }
    }
  }
  const int64_t outer = 3, n = 4, inner = 5, times = 3;
  std::vector<float> dy(outer * n * times * inner), dx(outer * n * inner);
  for (float &v : dy) {
    v = value(random);
  }
  cpu::repeatGrad(dy.data(), dx.data(), outer, n, inner, times);
  cuda::TypedPointer DY{dy.data(), DType::kF32};
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < inner; ++i) {
        ASSERT_EQ(bitsOf(cuda::repeatGradElement(DY, o, j, i, n, inner, times)),
                  bitsOf(dx[(o * n + j) * inner + i]));
      }
    }
  }
}

} // namespace
