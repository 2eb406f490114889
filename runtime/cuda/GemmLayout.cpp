//===- GemmLayout.cpp - A row-major matmul as a column-major cuBLASLt call -===//

#include "runtime/cuda/GemmLayout.h"

#include <vector>

namespace mlperf::rt::cuda {

GemmLayout gemmLayoutFor(const cpu::MatmulShape &s) {
  GemmLayout layout;
  // A shared B and an untransposed A: the batch's A matrices are one [batch·m, k] matrix.
  const bool fold = s.broadcastB && !s.transposeA && s.batch > 1;
  const int64_t rowsOfC = fold ? s.batch * s.m : s.m;
  layout.batch = fold ? 1 : s.batch;
  // Cᵀ [n, rowsOfC] = op(B)ᵀ [n, k] · op(A)ᵀ [k, rowsOfC].
  layout.m = s.n;
  layout.n = rowsOfC;
  layout.k = s.k;
  // B row-major [k, n] is column-major [n, k] = Bᵀ: used as is. B row-major [n, k] (transposed
  // in the plan) is column-major [k, n]: cuBLASLt transposes it.
  layout.transposeX = s.transposeB;
  layout.x.rows = s.transposeB ? s.k : s.n;
  layout.x.columns = s.transposeB ? s.n : s.k;
  layout.x.ld = layout.x.rows;
  layout.x.batchStride = s.broadcastB ? 0 : s.k * s.n;
  // A row-major [m, k] is column-major [k, m] = Aᵀ: as is; A stored [k, m]: transposed.
  layout.transposeY = s.transposeA;
  layout.y.rows = s.transposeA ? rowsOfC : s.k;
  layout.y.columns = s.transposeA ? s.k : rowsOfC;
  layout.y.ld = layout.y.rows;
  layout.y.batchStride = s.m * s.k;
  layout.d.rows = s.n;
  layout.d.columns = rowsOfC;
  layout.d.ld = s.n;
  layout.d.batchStride = s.m * s.n;
  return layout;
}

void interpretGemmLayout(const GemmLayout &layout, const float *planA, const float *planB,
                         float *planC) {
  // Column-major element (row, column) of a stored matrix: data[row + column·ld].
  auto element = [](const float *data, const LtMatrix &matrix, int64_t batch, int64_t row,
                    int64_t column) {
    return static_cast<double>(data[batch * matrix.batchStride + row + column * matrix.ld]);
  };
  for (int64_t b = 0; b < layout.batch; ++b) {
    for (int64_t i = 0; i < layout.m; ++i) {
      for (int64_t j = 0; j < layout.n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < layout.k; ++p) {
          double x = layout.transposeX ? element(planB, layout.x, b, p, i)
                                       : element(planB, layout.x, b, i, p);
          double y = layout.transposeY ? element(planA, layout.y, b, j, p)
                                       : element(planA, layout.y, b, p, j);
          sum += x * y;
        }
        planC[b * layout.d.batchStride + i + j * layout.d.ld] = static_cast<float>(sum);
      }
    }
  }
}

} // namespace mlperf::rt::cuda
