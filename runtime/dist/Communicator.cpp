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
  Status allGather(MeshAxis, const std::vector<float> &shard,
                   std::vector<float> &output) override {
    output = shard;
    return Status::ok();
  }
  Status allReduceWorldSum(std::vector<double> &) override { return Status::ok(); }

private:
  MeshShape shape;
};

} // namespace

std::unique_ptr<Communicator> createSingleRankCommunicator() {
  return std::make_unique<SingleRankCommunicator>();
}

} // namespace mlperf::rt
