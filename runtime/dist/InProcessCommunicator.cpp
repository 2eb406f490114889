//===- InProcessCommunicator.cpp - Every rank of a mesh in one process -*- C++ -*-===//

#include "runtime/dist/InProcessCommunicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

namespace mlperf::rt {

/// The state the ranks share: one exchange round per group at a time, and mailboxes.
struct InProcessMesh::Hub {
  struct Round {
    std::vector<std::vector<double>> slots;
    int64_t arrived = 0, read = 0;
    bool draining = false; // every member deposited; members are reading
  };

  MeshShape mesh;
  double timeoutSeconds = 0;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::pair<int, int64_t>, Round> rounds; // (axis, or 3 for the world; group color)
  std::map<std::tuple<int64_t, int64_t, int>, std::deque<std::vector<float>>> mail;
  bool aborted = false;
  std::string reason;

  /// Waits for `ready` under `lock`; an error after the timeout or on abort.
  template <typename Ready>
  Status wait(std::unique_lock<std::mutex> &lock, Ready ready, int64_t rank, const char *what) {
    auto done = [&] { return aborted || ready(); };
    if (timeoutSeconds > 0) {
      auto limit = std::chrono::duration<double>(timeoutSeconds);
      if (!changed.wait_for(lock, limit, done)) {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%g", timeoutSeconds);
        return Status(StatusCode::kUnavailable, "rank " + std::to_string(rank) + ": " + what +
                                                    " did not complete within " + seconds +
                                                    " s: another rank is stuck");
      }
    } else {
      changed.wait(lock, done);
    }
    if (aborted) {
      return Status(StatusCode::kUnavailable,
                    "rank " + std::to_string(rank) + ": " + what + " abandoned: " + reason);
    }
    return Status::ok();
  }

  /// Every member of a group deposits `mine` and receives all members' values in group order.
  Status exchange(std::pair<int, int64_t> key, int64_t member, int64_t members, int64_t rank,
                  const char *what, std::vector<double> mine, std::vector<std::vector<double>> &all,
                  bool sameSize = true) {
    std::unique_lock<std::mutex> lock(mutex);
    Round &round = rounds[key];
    MLPERF_RETURN_IF_ERROR(wait(lock, [&] { return !round.draining; }, rank, what));
    round.slots.resize(members);
    round.slots[member] = std::move(mine);
    if (++round.arrived == members) {
      round.draining = true;
      changed.notify_all();
    } else {
      MLPERF_RETURN_IF_ERROR(wait(lock, [&] { return round.draining; }, rank, what));
    }
    all = round.slots;
    if (++round.read == members) {
      round.arrived = round.read = 0;
      round.draining = false;
      changed.notify_all();
    }
    for (const std::vector<double> &slot : all) {
      if (sameSize && slot.size() != all[member].size()) {
        return Status(StatusCode::kInvalidArgument,
                      "rank " + std::to_string(rank) + ": " + what + " of " +
                          std::to_string(all[member].size()) + " values met one of " +
                          std::to_string(slot.size()));
      }
    }
    return Status::ok();
  }
};

namespace {

/// Each element the f64 sum of the members' values, member 0 first (as MPI's all-gather and
/// sum in MpiCommunicator).
void sumInGroupOrder(const std::vector<std::vector<double>> &all, std::vector<double> &values) {
  for (size_t i = 0; i < values.size(); ++i) {
    double sum = 0.0;
    for (const std::vector<double> &member : all) {
      sum += member[i];
    }
    values[i] = sum;
  }
}

std::vector<double> widen(const std::vector<float> &values) {
  return std::vector<double>(values.begin(), values.end());
}

class InProcessCommunicator : public Communicator {
public:
  InProcessCommunicator(InProcessMesh::Hub &hub, int64_t rank) : hub(hub), worldRank(rank) {}

  int64_t rank() const override { return worldRank; }
  int64_t worldSize() const override { return hub.mesh.worldSize(); }
  const MeshShape &mesh() const override { return hub.mesh; }

  Status allReduceSum(MeshAxis axis, std::vector<float> &values) override {
    std::vector<std::vector<double>> all;
    MLPERF_RETURN_IF_ERROR(gather(axis, "an all-reduce", widen(values), all));
    // As reduce-scatter then all-gather: each element summed in f32 from 0, in group order.
    for (size_t i = 0; i < values.size(); ++i) {
      float sum = 0.0f;
      for (const std::vector<double> &member : all) {
        sum += static_cast<float>(member[i]);
      }
      values[i] = sum;
    }
    return Status::ok();
  }

  Status allReduceSum(MeshAxis axis, std::vector<double> &values) override {
    std::vector<std::vector<double>> all;
    MLPERF_RETURN_IF_ERROR(gather(axis, "an all-reduce of f64 values", values, all));
    sumInGroupOrder(all, values);
    return Status::ok();
  }

  Status allReduceMax(MeshAxis axis, std::vector<float> &values) override {
    std::vector<std::vector<double>> all;
    MLPERF_RETURN_IF_ERROR(gather(axis, "an all-reduce (max)", widen(values), all));
    for (size_t i = 0; i < values.size(); ++i) {
      for (const std::vector<double> &member : all) {
        values[i] = std::max(values[i], static_cast<float>(member[i]));
      }
    }
    return Status::ok();
  }

  Status reduceScatterSum(MeshAxis axis, const std::vector<float> &input,
                          std::vector<float> &shard) override {
    int64_t members = hub.mesh.axisSize(axis);
    if (input.size() % members != 0) {
      return Status(StatusCode::kInvalidArgument,
                    "reduce-scatter of " + std::to_string(input.size()) + " values over " +
                        std::to_string(members) + " " + meshAxisName(axis) + " ranks");
    }
    std::vector<std::vector<double>> all;
    MLPERF_RETURN_IF_ERROR(gather(axis, "a reduce-scatter", widen(input), all));
    size_t chunk = input.size() / members;
    int64_t member = coordinates().along(axis);
    shard.assign(chunk, 0.0f);
    for (const std::vector<double> &values : all) {
      for (size_t i = 0; i < chunk; ++i) {
        shard[i] += static_cast<float>(values[member * chunk + i]);
      }
    }
    return Status::ok();
  }

  Status allGather(MeshAxis axis, const std::vector<float> &shard,
                   std::vector<float> &output) override {
    std::vector<std::vector<double>> all;
    MLPERF_RETURN_IF_ERROR(gather(axis, "an all-gather", widen(shard), all));
    output.clear();
    for (const std::vector<double> &values : all) {
      output.insert(output.end(), values.begin(), values.end());
    }
    return Status::ok();
  }

  Status send(MeshAxis axis, int64_t shift, int tag, const std::vector<float> &values) override {
    int64_t peer = 0;
    MLPERF_RETURN_IF_ERROR(neighbour(axis, shift, peer));
    std::lock_guard<std::mutex> lock(hub.mutex);
    hub.mail[{worldRank, peer, tag}].push_back(values);
    hub.changed.notify_all();
    return Status::ok();
  }

  Status receive(MeshAxis axis, int64_t shift, int tag, std::vector<float> &values) override {
    int64_t peer = 0;
    MLPERF_RETURN_IF_ERROR(neighbour(axis, shift, peer));
    std::unique_lock<std::mutex> lock(hub.mutex);
    auto &box = hub.mail[{peer, worldRank, tag}];
    MLPERF_RETURN_IF_ERROR(
        hub.wait(lock, [&] { return !box.empty(); }, worldRank, "a pipeline receive"));
    std::vector<float> message = std::move(box.front());
    box.pop_front();
    if (message.size() != values.size()) {
      return Status(StatusCode::kInternal, "rank " + std::to_string(worldRank) + " expected " +
                                               std::to_string(values.size()) + " values from its " +
                                               meshAxisName(axis) + " neighbour and got " +
                                               std::to_string(message.size()));
    }
    values = std::move(message);
    return Status::ok();
  }

  Status waitForSends() override { return Status::ok(); } // delivered when sent

  Status allReduceWorldSum(std::vector<double> &values) override {
    std::vector<std::vector<double>> all;
    MLPERF_RETURN_IF_ERROR(hub.exchange({3, 0}, worldRank, worldSize(), worldRank,
                                        "an all-reduce over every rank", values, all));
    sumInGroupOrder(all, values);
    return Status::ok();
  }

  Status allToAll(MeshAxis axis, const std::vector<float> &send,
                  const std::vector<int64_t> &sendCounts, std::vector<float> &received,
                  std::vector<int64_t> &receivedCounts) override {
    int64_t members = hub.mesh.axisSize(axis);
    MLPERF_RETURN_IF_ERROR(checkAllToAllChunks(send, sendCounts, members, worldRank));
    // Each member deposits its counts, then its chunks; each reads its own chunk of everyone's.
    std::vector<double> mine(sendCounts.begin(), sendCounts.end());
    mine.insert(mine.end(), send.begin(), send.end());
    std::vector<std::vector<double>> all;
    if (members == 1) {
      all = {std::move(mine)};
    } else {
      std::pair<int, int64_t> key{static_cast<int>(axis),
                                  axisGroupColor(hub.mesh, worldRank, axis)};
      MLPERF_RETURN_IF_ERROR(hub.exchange(key, coordinates().along(axis), members, worldRank,
                                          "an all-to-all", std::move(mine), all,
                                          /*sameSize=*/false));
    }
    const int64_t self = coordinates().along(axis);
    received.clear();
    receivedCounts.assign(members, 0);
    for (int64_t j = 0; j < members; ++j) {
      const std::vector<double> &theirs = all[j];
      int64_t offset = members;
      for (int64_t i = 0; i < self; ++i) {
        offset += static_cast<int64_t>(theirs[i]);
      }
      receivedCounts[j] = static_cast<int64_t>(theirs[self]);
      received.insert(received.end(), theirs.begin() + offset,
                      theirs.begin() + offset + receivedCounts[j]);
    }
    return Status::ok();
  }

private:
  Status gather(MeshAxis axis, const char *what, std::vector<double> mine,
                std::vector<std::vector<double>> &all) {
    int64_t members = hub.mesh.axisSize(axis);
    if (members == 1) {
      all = {std::move(mine)};
      return Status::ok();
    }
    std::pair<int, int64_t> key{static_cast<int>(axis), axisGroupColor(hub.mesh, worldRank, axis)};
    return hub.exchange(key, coordinates().along(axis), members, worldRank, what, std::move(mine),
                        all);
  }

  Status neighbour(MeshAxis axis, int64_t shift, int64_t &peer) const {
    int index = 0;
    MLPERF_RETURN_IF_ERROR(axisNeighbour(hub.mesh, worldRank, axis, shift, index));
    peer = axisGroup(hub.mesh, worldRank, axis)[index];
    return Status::ok();
  }

  InProcessMesh::Hub &hub;
  int64_t worldRank;
};

} // namespace

InProcessMesh::InProcessMesh(const MeshShape &mesh, double timeoutSeconds)
    : hub(std::make_unique<Hub>()) {
  hub->mesh = mesh;
  hub->timeoutSeconds = timeoutSeconds;
  for (int64_t rank = 0; rank < mesh.worldSize(); ++rank) {
    ranks.push_back(std::make_unique<InProcessCommunicator>(*hub, rank));
  }
}

InProcessMesh::~InProcessMesh() = default;

Communicator &InProcessMesh::communicator(int64_t rank) { return *ranks.at(rank); }

void InProcessMesh::abort(const std::string &reason) {
  std::lock_guard<std::mutex> lock(hub->mutex);
  if (!hub->aborted) {
    hub->aborted = true;
    hub->reason = reason;
  }
  hub->changed.notify_all();
}

} // namespace mlperf::rt
