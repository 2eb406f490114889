//===- UnfusedAttention.h - The graph tg-fuse-attention replaces -*- C++ -*-===//
//
// The unfused attention and the backward tg-autodiff builds for it, op by op from the CPU
// kernels the unfused plan runs, each result rounded to its type: what the fused kernels
// must equal (test/unit/AttentionTest.cpp) and beat (benchmarks/attention_speed.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_TEST_UNIT_UNFUSEDATTENTION_H
#define MLPERFC_TEST_UNIT_UNFUSEDATTENTION_H

#include "runtime/cpu/Attention.h"
#include "runtime/cpu/Kernels.h"

#include <vector>

namespace mlperf::rt::cpu::testing {

using Floats = std::vector<float>;

struct Unfused {
  Floats out, dq, dk, dv;
  int64_t badRow = -1; // the softmax's report
};

/// The unfused graph and its tg-autodiff backward, op by op, each result rounded to its type.
inline Unfused unfusedAttention(const Floats &q, const Floats &k, const Floats &v,
                                const Floats &dout, const AttentionShape &s, DType type) {
  const int64_t bh = s.batch * s.heads, group = s.heads / s.kvHeads;
  const int64_t sq = s.queries, sk = s.keys, d = s.headDim;
  auto rounded = [&](Floats values) {
    roundBuffer(type, values.data(), static_cast<int64_t>(values.size()));
    return values;
  };
  Floats kg(bh * sk * d), vg(bh * sk * d);
  repeat(k.data(), kg.data(), s.batch, s.kvHeads, sk * d, group);
  repeat(v.data(), vg.data(), s.batch, s.kvHeads, sk * d, group);
  Floats scores(bh * sq * sk);
  matmul(q.data(), kg.data(), scores.data(), matmulShape(sq, sk, d, false, true, bh));
  scale(scores.data(), scores.data(), static_cast<int64_t>(scores.size()), s.scale);
  if (s.causal) {
    causalMask(scores.data(), scores.data(), bh, sq, false, s.window);
  }
  Floats probs(scores.size());
  Unfused r;
  r.badRow = softmax(scores.data(), probs.data(), bh * sq, sk, 1);
  Floats probsRounded = rounded(probs);
  r.out.resize(bh * sq * d);
  matmul(probsRounded.data(), vg.data(), r.out.data(), matmulShape(sq, d, sk, false, false, bh));
  r.out = rounded(r.out);

  Floats dprobs(scores.size());
  matmul(dout.data(), vg.data(), dprobs.data(), matmulShape(sq, sk, d, false, true, bh));
  dprobs = rounded(dprobs);
  Floats dvg(bh * sk * d);
  matmul(probsRounded.data(), dout.data(), dvg.data(), matmulShape(sk, d, sq, true, false, bh));
  dvg = rounded(dvg);
  Floats dscores(scores.size());
  softmaxGrad(probs.data(), dprobs.data(), dscores.data(), bh * sq, sk, 1);
  if (s.causal) {
    causalMask(dscores.data(), dscores.data(), bh, sq, true, s.window);
  }
  scale(dscores.data(), dscores.data(), static_cast<int64_t>(dscores.size()), s.scale);
  dscores = rounded(dscores); // the f32 gradient enters the operand-precision matmuls
  r.dq.resize(q.size());
  matmul(dscores.data(), kg.data(), r.dq.data(), matmulShape(sq, d, sk, false, false, bh));
  r.dq = rounded(r.dq);
  Floats dkg(bh * sk * d);
  matmul(dscores.data(), q.data(), dkg.data(), matmulShape(sk, d, sq, true, false, bh));
  dkg = rounded(dkg);
  r.dk.resize(k.size());
  r.dv.resize(v.size());
  repeatGrad(dkg.data(), r.dk.data(), s.batch, s.kvHeads, sk * d, group);
  repeatGrad(dvg.data(), r.dv.data(), s.batch, s.kvHeads, sk * d, group);
  r.dk = rounded(r.dk);
  r.dv = rounded(r.dv);
  return r;
}

} // namespace mlperf::rt::cpu::testing

#endif // MLPERFC_TEST_UNIT_UNFUSEDATTENTION_H
