//===- attention_speed.cpp - Fused against unfused attention on the CPU ---===//
//
// Forward + backward of one causal attention (bf16, batch 1) with the fused kernels
// (runtime/cpu/Attention.h) and with the unfused graph they replace (the same kernels op by
// op, test/unit/UnfusedAttention.h), in one run, best of --repeat; checks that both give the
// same bits, then prints the times and their ratio.
//
// usage: mlperf-attention-speed [seq=2048] [heads=8] [kv_heads=8] [head_dim=64] [repeat=3]
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Attention.h"
#include "test/unit/UnfusedAttention.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

using namespace mlperf::rt;
using namespace mlperf::rt::cpu;
using namespace mlperf::rt::cpu::testing;

namespace {

Floats randomValues(size_t count, unsigned seed, float spread) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  Floats values(count);
  for (float &value : values) {
    value = normal(random);
  }
  roundBuffer(DType::kBF16, values.data(), static_cast<int64_t>(values.size()));
  return values;
}

template <typename Body> double bestSeconds(int repeat, Body body) {
  double best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

int64_t argument(int argc, char **argv, const char *name, int64_t fallback) {
  size_t length = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, length) == 0 && argv[i][length] == '=') {
      char *end = nullptr;
      long long value = std::strtoll(argv[i] + length + 1, &end, 10);
      if (*end != '\0' || value <= 0) {
        std::fprintf(stderr, "mlperf-attention-speed: %s must be a positive integer\n", name);
        std::exit(2);
      }
      return value;
    }
  }
  return fallback;
}

} // namespace

int main(int argc, char **argv) {
  AttentionShape s;
  s.queries = s.keys = argument(argc, argv, "seq", 2048);
  s.heads = argument(argc, argv, "heads", 8);
  s.kvHeads = argument(argc, argv, "kv_heads", 8);
  s.headDim = argument(argc, argv, "head_dim", 64);
  int repeat = static_cast<int>(argument(argc, argv, "repeat", 3));
  if (s.heads % s.kvHeads != 0) {
    std::fprintf(stderr, "mlperf-attention-speed: kv_heads must divide heads\n");
    return 2;
  }
  s.causal = true;
  s.scale = 1.0 / std::sqrt(static_cast<double>(s.headDim));
  s.valueType = DType::kBF16;
  Floats q = randomValues(s.heads * s.queries * s.headDim, 1, 1.0f);
  Floats k = randomValues(s.kvHeads * s.keys * s.headDim, 2, 1.0f);
  Floats v = randomValues(k.size(), 3, 1.0f);
  Floats dout = randomValues(q.size(), 4, 0.01f);

  Unfused unfused;
  double unfusedSeconds =
      bestSeconds(repeat, [&] { unfused = unfusedAttention(q, k, v, dout, s, DType::kBF16); });
  Floats out(q.size()), lse(s.heads * s.queries), dq(q.size()), dk(k.size()), dv(v.size());
  double fusedSeconds = bestSeconds(repeat, [&] {
    attentionForward(q.data(), k.data(), v.data(), out.data(), lse.data(), s);
    attentionBackward(q.data(), k.data(), v.data(), dout.data(), dq.data(), dk.data(), dv.data(), s,
                      DType::kBF16);
  });
  for (Floats *values : {&out, &dq, &dk, &dv}) {
    roundBuffer(DType::kBF16, values->data(), static_cast<int64_t>(values->size()));
  }
  bool same = out == unfused.out && dq == unfused.dq && dk == unfused.dk && dv == unfused.dv;
  std::printf("causal attention, bf16, seq %lld, %lld heads (%lld KV), head_dim %lld, "
              "forward + backward, best of %d:\n",
              static_cast<long long>(s.queries), static_cast<long long>(s.heads),
              static_cast<long long>(s.kvHeads), static_cast<long long>(s.headDim), repeat);
  std::printf("  unfused graph %.3f s, fused %.3f s: %.2fx; results %s\n", unfusedSeconds,
              fusedSeconds, unfusedSeconds / fusedSeconds,
              same ? "bit-identical" : "DIFFER (a bug)");
  return same ? 0 : 1;
}
