//===- NcclCommunicator.h - Collectives between GPU ranks -------*- C++ -*-===//
//
// The CUDA backend's collectives: one NCCL communicator for the job (its unique id created on
// world rank 0 and broadcast over MPI), split into one communicator per mesh axis with the
// rank layout of runtime/dist/Mesh.h. Operations run on device buffers, enqueued on a stream;
// reductions sum in NCCL's order (the CPU backend's MPI collectives sum in group order). Every
// NCCL call is checked and turned into a Status naming the call and the NCCL error.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_NCCL_NCCLCOMMUNICATOR_H
#define MLPERFC_RUNTIME_NCCL_NCCLCOMMUNICATOR_H

#include "runtime/cpu/HostTensor.h"
#include "runtime/dist/Mesh.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

namespace mlperf::rt {

/// OK for ncclSuccess; otherwise an INTERNAL status "<expr> failed: <NCCL error string>".
Status statusFromNcclResult(ncclResult_t result, const char *expr, const char *file, int line);

class NcclCommunicator {
public:
  /// Joins the job's NCCL communicator on CUDA device `device` and splits it per mesh axis.
  /// Collective over every rank of the mesh; with more than one rank MPI must be initialized
  /// (runtime/mpi/MpiCommunicator.h) to broadcast the unique id.
  static Status create(const MeshShape &mesh, int64_t worldRank, int device,
                       std::unique_ptr<NcclCommunicator> &communicator);
  ~NcclCommunicator();

  /// In place: `count` elements of `dtype` at `buffer` summed over `axis`'s group.
  Status allReduceSum(MeshAxis axis, void *buffer, size_t count, DType dtype, cudaStream_t stream);
  /// `input` holds group-size chunks of `shardCount` elements; member i receives chunk i's sum.
  Status reduceScatterSum(MeshAxis axis, const void *input, void *shard, size_t shardCount,
                          DType dtype, cudaStream_t stream);
  /// Every member's `shardCount` elements concatenated in group order into `output`.
  Status allGather(MeshAxis axis, const void *shard, void *output, size_t shardCount, DType dtype,
                   cudaStream_t stream);
  /// Pipeline point-to-point with the rank `shift` steps along `axis`.
  Status send(MeshAxis axis, int64_t shift, const void *buffer, size_t count, DType dtype,
              cudaStream_t stream);
  Status receive(MeshAxis axis, int64_t shift, void *buffer, size_t count, DType dtype,
                 cudaStream_t stream);
  /// A send and a receive issued as one NCCL group, as a 1F1B step pairs them (Megatron's
  /// send_forward_recv_backward): issued one after the other, two neighbouring stages would
  /// each block in its send waiting for the other's receive. The CUDA pipeline driver must
  /// use this for every paired transfer.
  Status sendReceive(MeshAxis axis, int64_t sendShift, const void *sendBuffer, size_t sendCount,
                     int64_t receiveShift, void *receiveBuffer, size_t receiveCount, DType dtype,
                     cudaStream_t stream);
  /// Ends every communicator without waiting for peers: after a rank failed, collectives in
  /// flight would otherwise never complete.
  void abort();

private:
  NcclCommunicator() = default;
  Status peer(MeshAxis axis, int64_t shift, int &rank) const;
  ncclComm_t comm(MeshAxis axis) const { return axisComms[static_cast<int>(axis)]; }

  MeshShape mesh;
  int64_t worldRank = 0;
  ncclComm_t world = nullptr;
  ncclComm_t axisComms[std::size(kMeshAxes)] = {}; // by MeshAxis; null: not on this mesh
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_NCCL_NCCLCOMMUNICATOR_H
