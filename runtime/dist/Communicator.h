//===- Communicator.h - Collectives between the ranks of a mesh -*- C++ -*-===//
//
// What a backend and the train-step driver need from the ranks around them. Reductions sum
// in the order of the group (rank 0 of the group first) and every member receives the same
// bits, so a run is reproducible and all-reduce equals reduce-scatter followed by all-gather
// bit for bit (ZeRO-1 and plain data parallelism then update with identical gradients).
// Values travel as f32; a backend rounds the result to the buffer's dtype once.
//
// Implementations: a single rank (every group is just this rank) and MPI
// (runtime/mpi/MpiCommunicator.h). NCCL serves the CUDA backend (runtime/nccl/).
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_DIST_COMMUNICATOR_H
#define MLPERFC_RUNTIME_DIST_COMMUNICATOR_H

#include "runtime/dist/Mesh.h"

#include <memory>
#include <vector>

namespace mlperf::rt {

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t worldSize() const = 0;
  virtual const MeshShape &mesh() const = 0;
  RankCoordinates coordinates() const { return rankCoordinates(mesh(), rank()); }

  /// Element-wise sum over `axis`'s group; every member gets the same result.
  virtual Status allReduceSum(MeshAxis axis, std::vector<float> &values) = 0;
  /// Host-side f64 values summed over `axis`'s group in group order.
  virtual Status allReduceSum(MeshAxis axis, std::vector<double> &values) = 0;
  /// Element-wise maximum over `axis`'s group (order-free, so exact on every member).
  virtual Status allReduceMax(MeshAxis axis, std::vector<float> &values) = 0;
  /// `input` holds group-size equal chunks; member i receives the sum of everyone's chunk i.
  virtual Status reduceScatterSum(MeshAxis axis, const std::vector<float> &input,
                                  std::vector<float> &shard) = 0;
  /// Concatenation of every member's `shard`, in group order.
  virtual Status allGather(MeshAxis axis, const std::vector<float> &shard,
                           std::vector<float> &output) = 0;
  /// Personalized exchange over `axis`'s group (expert parallelism's dispatch and combine):
  /// `send` holds one chunk per member, consecutive in group order, member j's of
  /// `sendCounts[j]` values; `received` gets every member's chunk for this rank in group
  /// order and `receivedCounts[j]` the size of member j's. Counts differ between members.
  virtual Status allToAll(MeshAxis axis, const std::vector<float> &send,
                          const std::vector<int64_t> &sendCounts, std::vector<float> &received,
                          std::vector<int64_t> &receivedCounts) = 0;
  /// Pipeline point-to-point: sends `values` to the rank `shift` steps along `axis`. The data
  /// is copied, the send completes in the background; waitForSends() waits for all of them.
  virtual Status send(MeshAxis axis, int64_t shift, int tag, const std::vector<float> &values) = 0;
  /// Receives exactly `values.size()` values from the rank `shift` steps along `axis`.
  virtual Status receive(MeshAxis axis, int64_t shift, int tag, std::vector<float> &values) = 0;
  virtual Status waitForSends() = 0;
  /// Host-side values (loss sums, counts, flags) summed over every rank in rank order.
  virtual Status allReduceWorldSum(std::vector<double> &values) = 0;
};

/// That an all-to-all's `counts` has one non-negative count per member and that they add up
/// to `send`'s size; the error names `rank` and the sizes.
Status checkAllToAllChunks(const std::vector<float> &send, const std::vector<int64_t> &counts,
                           int64_t members, int64_t rank);

/// One process, a mesh of one rank: every collective is the identity.
std::unique_ptr<Communicator> createSingleRankCommunicator();

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_DIST_COMMUNICATOR_H
