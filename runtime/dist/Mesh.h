//===- Mesh.h - Device mesh, rank layout and parallel options --*- C++ -*-===//
//
// One cluster shape (--cluster NODESxGPUS) and one parallel strategy (--parallel dp=..,tp=..)
// as plain data, shared by the compiler (validation, partitioning) and the runtime (process
// groups, data shares). Ranks are laid out as Megatron-Core does (order "tp-cp-ep-dp-pp"):
// tp varies fastest, then dp, then pp, so a tensor-parallel group stays inside a node.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_DIST_MESH_H
#define MLPERFC_RUNTIME_DIST_MESH_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace mlperf::rt {

/// The mesh axes a collective can run over. kDPShard and kDPReplicate split the data-parallel
/// ranks for hybrid sharding (hsdp=N): data-parallel rank d is member d mod N of its sharding
/// group (N consecutive data-parallel ranks, normally a node) and member d / N of its replica
/// group (the ranks holding the same shard). Without hsdp the sharding group is all of dp and
/// every replica group is one rank.
enum class MeshAxis { kDP, kTP, kPP, kDPShard, kDPReplicate };
/// Every axis, in enum order.
constexpr MeshAxis kMeshAxes[] = {MeshAxis::kDP, MeshAxis::kTP, MeshAxis::kPP, MeshAxis::kDPShard,
                                  MeshAxis::kDPReplicate};

/// "dp", "tp", "pp", "dp_shard", "dp_replicate".
const char *meshAxisName(MeshAxis axis);
/// The axis named `name`, or false.
bool parseMeshAxis(std::string_view name, MeshAxis &axis);

struct MeshShape {
  int64_t nodes = 1, gpusPerNode = 1;
  int64_t dp = 1, tp = 1, pp = 1;
  int64_t vp = 1;                // virtual pipeline stages per rank (interleaved 1F1B)
  bool sequenceParallel = false; // sp=on
  // 1: optimizer state and master weights sharded over dp; 2: the accumulated gradients too;
  // 3: and the parameters.
  int64_t zero = 0;
  // Hybrid sharding: ZeRO shards over groups of this many data-parallel ranks and replicates
  // across the groups; 0: over all of dp (also what hsdp=dp means).
  int64_t hsdp = 0;
  int64_t microBatch = 0; // 0: the declaration's micro_batch_size

  int64_t worldSize() const { return nodes * gpusPerNode; }
  int64_t axisSize(MeshAxis axis) const;
  /// dp, tp and pp always; dp_shard and dp_replicate with hybrid sharding.
  bool hasAxis(MeshAxis axis) const {
    return hsdp > 0 || (axis != MeshAxis::kDPShard && axis != MeshAxis::kDPReplicate);
  }
  /// The ranks ZeRO shards over: hsdp, or all of dp.
  int64_t shardGroupSize() const { return hsdp > 0 ? hsdp : dp; }
  /// "1x8 dp=1 tp=8 pp=1 vp=1 sp=off zero=0" (and " hsdp=N" when set).
  std::string describe() const;
  /// "dp=1,tp=8,pp=1,vp=1,sp=off,zero=0": the --parallel value parseParallel reads back as
  /// this mesh (hsdp when set, micro_batch when not the declaration's).
  std::string parallelFlag() const;
};

struct RankCoordinates {
  int64_t dp = 0, tp = 0, pp = 0;
  int64_t shardGroupSize = 1; // the mesh's, to place dp along dp_shard and dp_replicate
  int64_t along(MeshAxis axis) const;
  /// These coordinates with the one along `axis` replaced.
  RankCoordinates with(MeshAxis axis, int64_t index) const;
};

/// Where `rank` sits in the mesh (tp fastest, then dp, then pp).
RankCoordinates rankCoordinates(const MeshShape &mesh, int64_t rank);
int64_t rankAt(const MeshShape &mesh, const RankCoordinates &coordinates);
/// The ranks of `rank`'s group along `axis`, in axis order.
std::vector<int64_t> axisGroup(const MeshShape &mesh, int64_t rank, MeshAxis axis);
/// The id shared by the members of `rank`'s group along `axis` (its first member), for
/// communicator splits; the member's key is its coordinate along the axis.
int64_t axisGroupColor(const MeshShape &mesh, int64_t rank, MeshAxis axis);
/// The index within its group along `axis` of the rank `shift` steps from `rank`; an error
/// when that leaves the group (pipeline point-to-point).
Status axisNeighbour(const MeshShape &mesh, int64_t rank, MeshAxis axis, int64_t shift, int &index);

/// "8x8": nodes x GPUs per node, both positive.
Status parseCluster(std::string_view text, MeshShape &mesh);

/// "dp=8,tp=8,pp=1,vp=1,sp=on,zero=1,hsdp=8,micro_batch=1" (any subset, any order; dp defaults to
/// what the cluster leaves after tp and pp). Sets the parallel fields of `mesh`; call
/// validateMesh afterwards, with `dpGiven` (whether the text sets dp).
Status parseParallel(std::string_view text, MeshShape &mesh, bool *dpGiven = nullptr);

/// Layers per (virtual) pipeline stage, `stages` = pp × vp of them in pipeline order: an even
/// split, or, when the stages do not divide the layers, Megatron-LM's uneven one: every
/// stage holds L / S layers and the L mod S extra layers go to the stages after the first
/// (the first stage also embeds and the last computes the loss, so they get extras last).
std::vector<int64_t> pipelineLayerSplit(int64_t layers, int64_t stages);
/// "8 x 16" or "7, 8 x 14, 7": the split for reports.
std::string describeLayerSplit(const std::vector<int64_t> &split);

/// The model facts a parallel strategy must fit, read from the declaration.
struct ModelDims {
  int64_t layers = 0; // of the declared layer stack (0: none, constrains nothing)
  int64_t seqLen = 0, globalBatch = 0, microBatch = 0; // microBatch: as declared
  /// A dim the declaration splits over tp, and its name in errors ("rows of lm_head.weight").
  struct TensorSplit {
    int64_t size = 0;
    std::string what;
  };
  std::vector<TensorSplit> tensorSplits;
};

/// Fills dp when it was not given and checks that the strategy fits the cluster and the
/// model; the error names the numbers that do not fit.
Status validateMesh(MeshShape &mesh, const ModelDims &model, bool dpGiven);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_DIST_MESH_H
