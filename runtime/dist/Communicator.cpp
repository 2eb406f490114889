//===- Communicator.cpp - The single-rank communicator ---------*- C++ -*-===//

#include "runtime/dist/Communicator.h"

namespace mlperf::rt {
namespace {

class SingleRankCommunicator final : public Communicator {
public:
  int64_t rank() const override { return 0; }
  int64_t worldSize() const override { return 1; }
  const MeshShape &mesh() const override { return shape; }
  Status allReduceSum(MeshAxis, std::vector<float> &) override { return Status::ok(); }
  Status allReduceMax(MeshAxis, std::vector<float> &) override { return Status::ok(); }
  Status allReduceSum(MeshAxis, std::vector<double> &) override { return Status::ok(); }
  Status reduceScatterSum(MeshAxis, const std::vector<float> &input,
                          std::vector<float> &shard) override {
    shard = input;
    return Status::ok();
  }
  Status allGather(MeshAxis, const std::vector<float> &shard, std::vector<float> &output) override {
    output = shard;
    return Status::ok();
  }
  Status allReduceWorldSum(std::vector<double> &) override { return Status::ok(); }
  Status allToAll(MeshAxis, const std::vector<float> &send, const std::vector<int64_t> &sendCounts,
                  std::vector<float> &received, std::vector<int64_t> &receivedCounts) override {
    MLPERF_RETURN_IF_ERROR(checkAllToAllChunks(send, sendCounts, 1, 0));
    received = send; // the one member's chunk for itself
    receivedCounts = sendCounts;
    return Status::ok();
  }
  Status send(MeshAxis, int64_t, int, const std::vector<float> &) override { return alone(); }
  Status receive(MeshAxis, int64_t, int, std::vector<float> &) override { return alone(); }
  Status waitForSends() override { return Status::ok(); }

  static Status alone() {
    return Status(StatusCode::kInvalidArgument, "a single rank has no pipeline neighbours");
  }

private:
  MeshShape shape;
};

} // namespace

Status checkAllToAllChunks(const std::vector<float> &send, const std::vector<int64_t> &counts,
                           int64_t members, int64_t rank) {
  int64_t total = 0;
  for (int64_t count : counts) {
    if (count < 0) {
      return Status(StatusCode::kInvalidArgument, "rank " + std::to_string(rank) +
                                                      ": an all-to-all chunk of " +
                                                      std::to_string(count) + " values");
    }
    total += count;
  }
  if (static_cast<int64_t>(counts.size()) != members ||
      total != static_cast<int64_t>(send.size())) {
    return Status(StatusCode::kInvalidArgument,
                  "rank " + std::to_string(rank) + ": an all-to-all of " +
                      std::to_string(send.size()) + " values in " + std::to_string(counts.size()) +
                      " chunks adding up to " + std::to_string(total) + " for " +
                      std::to_string(members) + " members");
  }
  return Status::ok();
}

std::unique_ptr<Communicator> createSingleRankCommunicator() {
  return std::make_unique<SingleRankCommunicator>();
}

} // namespace mlperf::rt
