//===- Gemm.cpp - f32 GEMM on BLIS's micro-kernel --------------*- C++ -*-===//
//
// The loops around the micro-kernel are BLIS's own design (the "five loops" of Van Zee and van
// de Geijn, ACM TOMS 2015) with one change: C's accumulator is f64 and each micro-kernel call
// covers one 256-product slice, so that every slice's f32 partial sum is added to it exactly.
// blis.h is large; only this file includes it.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Gemm.h"

#include "runtime/cpu/ThreadPool.h"

#include <blis.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace mlperf::rt::cpu {
namespace {

/// BLIS's packm kernel for one micro-panel (the PACKM_KER_PROT signature of blis.h).
using PackKernel = void (*)(conj_t, pack_t, dim_t cdim, dim_t n, dim_t nMax, float *kappa, float *a,
                            inc_t inca, inc_t lda, float *p, inc_t ldp, cntx_t *);

/// The micro-kernel, its packing kernels and its register-block sizes, chosen once.
struct MicroKernel {
  sgemm_ukr_ft kernel = nullptr;
  PackKernel packA = nullptr, packB = nullptr; // null: pack with our own loops
  cntx_t *context = nullptr;
  int64_t mr = 0, nr = 0, packMr = 0, packNr = 0;
  std::string description;
};

const MicroKernel &microKernel() {
  static const MicroKernel micro = [] {
    // BLIS picks a kernel set per CPU model; the zen, zen2 and zen3 sets use the haswell
    // sgemm kernel but Intel's AVX-512 CPUs would not. Asking for haswell on every CPU with
    // AVX2 and FMA gives the same bits on all of them (and lets the tests pin results).
    // BLIS_ARCH_TYPE, when the user sets it, wins.
    if (!std::getenv("BLIS_ARCH_TYPE") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
      setenv("BLIS_ARCH_TYPE", std::to_string(static_cast<int>(BLIS_ARCH_HASWELL)).c_str(), 0);
    }
    MicroKernel m;
    m.context = bli_gks_query_cntx();
    m.kernel = reinterpret_cast<sgemm_ukr_ft>(
        bli_cntx_get_l3_nat_ukr_dt(BLIS_FLOAT, BLIS_GEMM_UKR, m.context));
    m.mr = bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MR, m.context);
    m.nr = bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_NR, m.context);
    m.packMr = bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_MR, m.context);
    m.packNr = bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_NR, m.context);
    // The vectorized packing kernels for panels of mr and nr (haswell has both); a copy, so
    // the packed values are the same as our loops'.
    if (m.mr < BLIS_NUM_PACKM_KERS && m.nr < BLIS_NUM_PACKM_KERS) {
      m.packA = reinterpret_cast<PackKernel>(
          bli_cntx_get_packm_ker_dt(BLIS_FLOAT, static_cast<l1mkr_t>(m.mr), m.context));
      m.packB = reinterpret_cast<PackKernel>(
          bli_cntx_get_packm_ker_dt(BLIS_FLOAT, static_cast<l1mkr_t>(m.nr), m.context));
    }
    m.description = std::string("BLIS ") + bli_info_get_version_str() + ", " +
                    bli_arch_string(bli_arch_query_id()) + " sgemm micro-kernel " +
                    std::to_string(m.mr) + "x" + std::to_string(m.nr);
    return m;
  }();
  return micro;
}

/// Micro-panels of C per block: 96 x 256 floats for the 6 x 16 kernel, so that a block's f64
/// accumulator (192 KiB) and its slice of packed A (96 KiB) stay in a 512 KiB L2 while B's
/// micro-panel (16 KiB) stays in L1.
constexpr int64_t kBlockPanelsM = 16, kBlockPanelsN = 16;
/// Below this many multiply-adds a product runs in the calling thread.
constexpr int64_t kParallelWork = int64_t{1} << 20;

/// A 64-byte aligned float buffer that grows and is reused (the micro-kernel loads packed B
/// with aligned vector loads).
class AlignedFloats {
public:
  float *get(size_t count) {
    if (count > capacity) {
      storage.reset(static_cast<float *>(std::aligned_alloc(64, (count * 4 + 63) / 64 * 64)));
      if (!storage) {
        throw std::bad_alloc(); // as std::vector would
      }
      capacity = count;
    }
    return storage.get();
  }

private:
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> storage;
  size_t capacity = 0;
};

/// One micro-panel: `cdim` (<= `width`) rows of `k` values each, the i-th value of row r at
/// source[r * inca + i * lda], stored value-major `width` apart and zero-padded to `width`:
/// BLIS's packm kernel when the context has one for `width` (haswell has both), else the same
/// copy in plain loops.
void packPanel(PackKernel kernel, bool rowPanels, const float *source, int64_t inca, int64_t lda,
               int64_t cdim, int64_t k, int64_t width, float *out, const MicroKernel &u) {
  if (kernel) {
    float one = 1.0f;
    kernel(BLIS_NO_CONJUGATE, rowPanels ? BLIS_PACKED_ROW_PANELS : BLIS_PACKED_COL_PANELS, cdim, k,
           k, &one, const_cast<float *>(source), inca, lda, out, width, u.context);
    return;
  }
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t r = 0; r < width; ++r) {
      out[i * width + r] = r < cdim ? source[r * inca + i * lda] : 0.0f;
    }
  }
}

/// op(A) [m, k] in micro-panels of `mr` rows: panel p holds, for each of the k columns, its
/// rows' values (zero past row m), `packMr` apart.
void packA(const float *a, float *packed, int64_t m, int64_t k, bool transposed, int64_t panel,
           const MicroKernel &u) {
  int64_t first = panel * u.mr, rows = std::min(u.mr, m - first);
  // Stored [m, k] (rows k apart, columns contiguous) or, transposed, [k, m].
  packPanel(u.packA, true, transposed ? a + first : a + first * k, transposed ? 1 : k,
            transposed ? m : 1, rows, k, u.packMr, packed + panel * k * u.packMr, u);
}

/// op(B) [k, n] in micro-panels of `nr` columns: panel p holds, for each of the k rows, its
/// columns' values (zero past column n), `packNr` apart.
void packB(const float *b, float *packed, int64_t k, int64_t n, bool transposed, int64_t panel,
           const MicroKernel &u) {
  int64_t first = panel * u.nr, cols = std::min(u.nr, n - first);
  // Stored [k, n] (columns contiguous, rows n apart) or, transposed, [n, k].
  packPanel(u.packB, false, transposed ? b + first * k : b + first, transposed ? k : 1,
            transposed ? 1 : n, cols, k, u.packNr, packed + panel * k * u.packNr, u);
}

/// Stores (first slice) or adds an mr x nr tile of f32 partial sums into the f64 accumulator
/// rows `width` apart; Columns > 0 fixes nr at compile time so the loop is a few vector ops.
template <int64_t Columns>
inline void addTile(const float *__restrict tile, double *__restrict sums, int64_t rows,
                    int64_t width, bool first, int64_t columns = Columns) {
  const int64_t nr = Columns > 0 ? Columns : columns;
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict partial = tile + r * nr;
    double *__restrict sum = sums + r * width;
    if (first) {
      for (int64_t q = 0; q < nr; ++q) {
        sum[q] = partial[q];
      }
    } else {
      for (int64_t q = 0; q < nr; ++q) {
        sum[q] += partial[q];
      }
    }
  }
}

/// One block of C: every slice of 256 products of each of its micro-tiles, added in f64.
void computeBlock(const float *packedA, const float *packedB, float *c, int64_t m, int64_t n,
                  int64_t k, int64_t blockM, int64_t blockN, const MicroKernel &u) {
  const int64_t panelsA = (m + u.mr - 1) / u.mr, panelsB = (n + u.nr - 1) / u.nr;
  const int64_t pa0 = blockM * kBlockPanelsM, pa1 = std::min(panelsA, pa0 + kBlockPanelsM);
  const int64_t pb0 = blockN * kBlockPanelsN, pb1 = std::min(panelsB, pb0 + kBlockPanelsN);
  const int64_t width = (pb1 - pb0) * u.nr;
  thread_local std::vector<double> acc;
  thread_local AlignedFloats tileStorage;
  float *tile = tileStorage.get(u.mr * u.nr);
  float one = 1.0f, zero = 0.0f;
  auxinfo_t aux;
  std::memset(&aux, 0, sizeof(aux));
  if (k <= kGemmSliceK) {
    // One slice: its f32 partial sums are the result (an f64 round trip would not change
    // them), so the kernel writes C directly, through the tile only at the edges.
    for (int64_t pb = pb0; pb < pb1; ++pb) {
      float *bPanel = const_cast<float *>(packedB) + pb * k * u.packNr;
      const int64_t j0 = pb * u.nr, cols = std::min(u.nr, n - j0);
      for (int64_t pa = pa0; pa < pa1; ++pa) {
        float *aPanel = const_cast<float *>(packedA) + pa * k * u.packMr;
        const int64_t i0 = pa * u.mr, rows = std::min(u.mr, m - i0);
        bli_auxinfo_set_next_ab(aPanel, bPanel, &aux);
        if (rows == u.mr && cols == u.nr) {
          u.kernel(u.mr, u.nr, k, &one, aPanel, bPanel, &zero, c + i0 * n + j0, n, 1, &aux,
                   u.context);
          continue;
        }
        u.kernel(u.mr, u.nr, k, &one, aPanel, bPanel, &zero, tile, u.nr, 1, &aux, u.context);
        for (int64_t r = 0; r < rows; ++r) {
          std::copy_n(tile + r * u.nr, cols, c + (i0 + r) * n + j0);
        }
      }
    }
    return;
  }
  acc.resize((pa1 - pa0) * u.mr * width); // the first slice stores, later ones add
  for (int64_t p0 = 0; p0 < k; p0 += kGemmSliceK) {
    const int64_t slice = std::min(kGemmSliceK, k - p0);
    for (int64_t pb = pb0; pb < pb1; ++pb) {
      float *bPanel = const_cast<float *>(packedB) + (pb * k + p0) * u.packNr;
      for (int64_t pa = pa0; pa < pa1; ++pa) {
        float *aPanel = const_cast<float *>(packedA) + (pa * k + p0) * u.packMr;
        bli_auxinfo_set_next_ab(aPanel, bPanel, &aux);
        // The whole mr x nr tile every time, padding included: edge elements are computed
        // exactly as interior ones.
        u.kernel(u.mr, u.nr, slice, &one, aPanel, bPanel, &zero, tile, u.nr, 1, &aux, u.context);
        double *out = acc.data() + (pa - pa0) * u.mr * width + (pb - pb0) * u.nr;
        if (u.nr == 16) {
          addTile<16>(tile, out, u.mr, width, p0 == 0);
        } else {
          addTile<0>(tile, out, u.mr, width, p0 == 0, u.nr);
        }
      }
    }
  }
  const int64_t rowEnd = std::min(m, pa1 * u.mr), colEnd = std::min(n, pb1 * u.nr);
  for (int64_t i = pa0 * u.mr; i < rowEnd; ++i) {
    const double *row = acc.data() + (i - pa0 * u.mr) * width - pb0 * u.nr;
    for (int64_t j = pb0 * u.nr; j < colEnd; ++j) {
      c[i * n + j] = static_cast<float>(row[j]);
    }
  }
}

} // namespace

void gemmF32(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
             bool transposeA, bool transposeB) {
  if (m <= 0 || n <= 0) {
    return;
  }
  if (k <= 0) {
    std::fill_n(c, m * n, 0.0f);
    return;
  }
  const MicroKernel &u = microKernel();
  const int64_t panelsA = (m + u.mr - 1) / u.mr, panelsB = (n + u.nr - 1) / u.nr;
  // The caller's packing buffers; pool threads fill them while the caller waits.
  thread_local AlignedFloats packedAStorage, packedBStorage;
  float *packedA = packedAStorage.get(panelsA * k * u.packMr);
  float *packedB = packedBStorage.get(panelsB * k * u.packNr);
  const int64_t blocksM = (panelsA + kBlockPanelsM - 1) / kBlockPanelsM;
  const int64_t blocksN = (panelsB + kBlockPanelsN - 1) / kBlockPanelsN;
  auto pack = [&](int64_t panel) {
    if (panel < panelsA) {
      packA(a, packedA, m, k, transposeA, panel, u);
    } else {
      packB(b, packedB, k, n, transposeB, panel - panelsA, u);
    }
  };
  auto block = [&](int64_t index) {
    computeBlock(packedA, packedB, c, m, n, k, index / blocksN, index % blocksN, u);
  };
  if (m * n * k < kParallelWork) {
    for (int64_t panel = 0; panel < panelsA + panelsB; ++panel) {
      pack(panel);
    }
    for (int64_t index = 0; index < blocksM * blocksN; ++index) {
      block(index);
    }
    return;
  }
  parallelFor(panelsA + panelsB, pack);
  parallelFor(blocksM * blocksN, block);
}

std::string gemmDescription() { return microKernel().description; }

} // namespace mlperf::rt::cpu
