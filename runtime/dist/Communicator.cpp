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

std::unique_ptr<Communicator> createSingleRankCommunicator() {
  return std::make_unique<SingleRankCommunicator>();
}

} // namespace mlperf::rt
