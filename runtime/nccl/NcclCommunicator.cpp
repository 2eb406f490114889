//===- NcclCommunicator.cpp - Collectives between GPU ranks -----*- C++ -*-===//

#include "runtime/nccl/NcclCommunicator.h"

#include "runtime/cuda/CudaStatus.h"
#include "runtime/mpi/MpiCommunicator.h"

#include <string>

#define MLPERF_NCCL_RETURN_IF_ERROR(expr)                                                          \
  MLPERF_RETURN_IF_ERROR(::mlperf::rt::statusFromNcclResult((expr), #expr, __FILE__, __LINE__))

namespace mlperf::rt {
namespace {

Status ncclType(DType dtype, ncclDataType_t &type) {
  switch (dtype) {
  case DType::kF32:
    type = ncclFloat32;
    return Status::ok();
  case DType::kBF16:
    type = ncclBfloat16;
    return Status::ok();
  case DType::kF8E4M3FN:
    type = ncclFloat8e4m3;
    return Status::ok();
  case DType::kF8E5M2:
    type = ncclFloat8e5m2;
    return Status::ok();
  case DType::kI32:
    type = ncclInt32;
    return Status::ok();
  case DType::kI64:
    type = ncclInt64;
    return Status::ok();
  case DType::kF64:
    type = ncclFloat64;
    return Status::ok();
  }
  return Status(StatusCode::kInvalidArgument, "no NCCL type for this dtype");
}

} // namespace

Status statusFromNcclResult(ncclResult_t result, const char *expr, const char *file, int line) {
  if (result == ncclSuccess) {
    return Status::ok();
  }
  return Status(StatusCode::kInternal, std::string(expr) + " failed: " + ncclGetErrorString(result),
                file, line);
}

Status NcclCommunicator::create(const MeshShape &mesh, int64_t worldRank, int device,
                                std::unique_ptr<NcclCommunicator> &communicator) {
  std::unique_ptr<NcclCommunicator> nccl(new NcclCommunicator());
  nccl->mesh = mesh;
  nccl->worldRank = worldRank;
  MLPERF_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  ncclUniqueId id;
  if (worldRank == 0) {
    MLPERF_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
  }
  if (mesh.worldSize() > 1) {
    MLPERF_RETURN_IF_ERROR(broadcastFromRankZero(&id, sizeof id));
  }
  MLPERF_NCCL_RETURN_IF_ERROR(ncclCommInitRank(&nccl->world, static_cast<int>(mesh.worldSize()), id,
                                               static_cast<int>(worldRank)));
  RankCoordinates c = rankCoordinates(mesh, worldRank);
  for (MeshAxis axis : kMeshAxes) {
    if (!mesh.hasAxis(axis)) {
      continue;
    }
    // The ranks that agree on the other coordinates form the group, ordered along the axis.
    MLPERF_NCCL_RETURN_IF_ERROR(ncclCommSplit(
        nccl->world, static_cast<int>(axisGroupColor(mesh, worldRank, axis)),
        static_cast<int>(c.along(axis)), &nccl->axisComms[static_cast<int>(axis)], nullptr));
  }
  communicator = std::move(nccl);
  return Status::ok();
}

NcclCommunicator::~NcclCommunicator() {
  for (ncclComm_t &axisComm : axisComms) {
    if (axisComm) {
      ncclCommDestroy(axisComm);
    }
  }
  if (world) {
    ncclCommDestroy(world);
  }
}

void NcclCommunicator::abort() {
  for (ncclComm_t &axisComm : axisComms) {
    if (axisComm) {
      ncclCommAbort(axisComm);
      axisComm = nullptr;
    }
  }
  if (world) {
    ncclCommAbort(world);
    world = nullptr;
  }
}

Status NcclCommunicator::allReduceSum(MeshAxis axis, void *buffer, size_t count, DType dtype,
                                      cudaStream_t stream) {
  ncclDataType_t type = ncclFloat32;
  MLPERF_RETURN_IF_ERROR(ncclType(dtype, type));
  MLPERF_NCCL_RETURN_IF_ERROR(
      ncclAllReduce(buffer, buffer, count, type, ncclSum, comm(axis), stream));
  return Status::ok();
}

Status NcclCommunicator::reduceScatterSum(MeshAxis axis, const void *input, void *shard,
                                          size_t shardCount, DType dtype, cudaStream_t stream) {
  ncclDataType_t type = ncclFloat32;
  MLPERF_RETURN_IF_ERROR(ncclType(dtype, type));
  MLPERF_NCCL_RETURN_IF_ERROR(
      ncclReduceScatter(input, shard, shardCount, type, ncclSum, comm(axis), stream));
  return Status::ok();
}

Status NcclCommunicator::allGather(MeshAxis axis, const void *shard, void *output,
                                   size_t shardCount, DType dtype, cudaStream_t stream) {
  ncclDataType_t type = ncclFloat32;
  MLPERF_RETURN_IF_ERROR(ncclType(dtype, type));
  MLPERF_NCCL_RETURN_IF_ERROR(ncclAllGather(shard, output, shardCount, type, comm(axis), stream));
  return Status::ok();
}

Status NcclCommunicator::peer(MeshAxis axis, int64_t shift, int &rank) const {
  return axisNeighbour(mesh, worldRank, axis, shift, rank);
}

Status NcclCommunicator::send(MeshAxis axis, int64_t shift, const void *buffer, size_t count,
                              DType dtype, cudaStream_t stream) {
  ncclDataType_t type = ncclFloat32;
  MLPERF_RETURN_IF_ERROR(ncclType(dtype, type));
  int to = 0;
  MLPERF_RETURN_IF_ERROR(peer(axis, shift, to));
  MLPERF_NCCL_RETURN_IF_ERROR(ncclSend(buffer, count, type, to, comm(axis), stream));
  return Status::ok();
}

Status NcclCommunicator::receive(MeshAxis axis, int64_t shift, void *buffer, size_t count,
                                 DType dtype, cudaStream_t stream) {
  ncclDataType_t type = ncclFloat32;
  MLPERF_RETURN_IF_ERROR(ncclType(dtype, type));
  int from = 0;
  MLPERF_RETURN_IF_ERROR(peer(axis, shift, from));
  MLPERF_NCCL_RETURN_IF_ERROR(ncclRecv(buffer, count, type, from, comm(axis), stream));
  return Status::ok();
}

Status NcclCommunicator::sendReceive(MeshAxis axis, int64_t sendShift, const void *sendBuffer,
                                     size_t sendCount, int64_t receiveShift, void *receiveBuffer,
                                     size_t receiveCount, DType dtype, cudaStream_t stream) {
  ncclDataType_t type = ncclFloat32;
  MLPERF_RETURN_IF_ERROR(ncclType(dtype, type));
  int to = 0, from = 0;
  MLPERF_RETURN_IF_ERROR(peer(axis, sendShift, to));
  MLPERF_RETURN_IF_ERROR(peer(axis, receiveShift, from));
  MLPERF_NCCL_RETURN_IF_ERROR(ncclGroupStart());
  ncclResult_t sent = ncclSend(sendBuffer, sendCount, type, to, comm(axis), stream);
  ncclResult_t received = ncclRecv(receiveBuffer, receiveCount, type, from, comm(axis), stream);
  // The group is closed even when an enqueue failed, so the communicator stays usable.
  MLPERF_NCCL_RETURN_IF_ERROR(ncclGroupEnd());
  MLPERF_NCCL_RETURN_IF_ERROR(sent);
  MLPERF_NCCL_RETURN_IF_ERROR(received);
  return Status::ok();
}

} // namespace mlperf::rt
