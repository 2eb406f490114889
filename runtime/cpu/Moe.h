//===- Moe.h - Mixture-of-experts CPU kernels ------------------*- C++ -*-===//
//
// The CPU reference of tg's dropless token routing (docs/dialects/tg.md, "Mixture of
// experts"): top-k routing, the sort of (token, slot) pairs by expert, the row gather and
// scatter-add between token order and expert order, and the grouped GEMMs over contiguous
// expert groups. Integer tensors are int64 (HostTensor::ints). Routing data comes from the
// model's own values, so the functions that read indices check them and report the first bad
// one instead of reading out of bounds.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CPU_MOE_H
#define MLPERFC_RUNTIME_CPU_MOE_H

#include <cstdint>
#include <string>

namespace mlperf::rt::cpu {

/// tg.moe_route: per token, the `k` largest of `experts` logits (largest first, the lower
/// index first among equal ones) and the softmax over those k.
void moeRoute(const float *logits, int64_t tokens, int64_t experts, int64_t k, float *probs,
              int64_t *chosen);

/// tg.moe_route_grad: dlogits [tokens, experts], zero but at the chosen experts.
void moeRouteGrad(const float *probs, const int64_t *chosen, const float *grad, int64_t tokens,
                  int64_t k, int64_t experts, float *dlogits);

/// tg.moe_sort: `order` [pairs] and `groupSizes` [experts] of the `pairs` routed expert
/// indices. Returns "" or what is wrong (an index outside [0, experts)).
std::string moeSort(const int64_t *chosen, int64_t pairs, int64_t experts, int64_t *order,
                    int64_t *groupSizes);

/// tg.moe_permute: rows [rows, dim] gathered from `source` [sourceRows, dim] by `order`.
/// Returns "" or what is wrong with `order` (an entry outside [0, rows)).
std::string moePermute(const float *source, const int64_t *order, int64_t rows, int64_t sourceRows,
                       int64_t dim, float *routed);

/// tg.moe_unpermute: `tokens` [tokenRows, dim], each row the sum (in slot order, f32) of
/// its rows in `routed` [rows, dim]. Returns "" or what is wrong with `order` (not a
/// permutation of [0, rows)).
std::string moeUnpermute(const float *routed, const int64_t *order, int64_t rows, int64_t tokenRows,
                         int64_t dim, float *tokens);

/// The grouped GEMMs' [rows, k] x per-expert [k, m] shape. `weightsTransposed`: the weights
/// are stored [experts, m, k].
struct GroupedMatmulShape {
  int64_t rows = 0, k = 0, m = 0, experts = 0;
  bool weightsTransposed = false;
};

/// "" if `groupSizes` are non-negative and add up to at most shape.rows, else the problem.
std::string checkGroupSizes(const int64_t *groupSizes, const GroupedMatmulShape &shape);

/// tg.grouped_matmul: y [rows, m]; rows past the groups are 0. Sizes checked before.
void groupedMatmul(const float *x, const float *weights, const int64_t *groupSizes,
                   const GroupedMatmulShape &shape, float *y);

/// tg.grouped_matmul_weight_grad: dweights [experts, k, m] ([experts, m, k] transposed).
void groupedMatmulWeightGrad(const float *x, const float *dy, const int64_t *groupSizes,
                             const GroupedMatmulShape &shape, float *dweights);

/// tg.scale_rows: y[r, c] = x[r, c] * scales[r] in f32.
void scaleRows(const float *x, const float *scales, int64_t rows, int64_t dim, float *y);

/// tg.row_dot: y[r] = sum_c a[r, c] * b[r, c], summed in f64.
void rowDot(const float *a, const float *b, int64_t rows, int64_t dim, float *y);

} // namespace mlperf::rt::cpu

#endif // MLPERFC_RUNTIME_CPU_MOE_H
