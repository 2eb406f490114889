//===- MpiCommunicator.cpp - Ranks started by mpirun ------------*- C++ -*-===//

#include "runtime/mpi/MpiCommunicator.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <list>
#include <thread>

namespace mlperf::rt {
namespace {

Status mpiStatus(int code, const char *call, const char *file, int line) {
  if (code == MPI_SUCCESS) {
    return Status::ok();
  }
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return Status(StatusCode::kInternal,
                std::string(call) + " failed on rank " + std::to_string(rank) + ": " +
                    std::string(text, length),
                file, line);
}

#define MPI_CHECK(call) MLPERF_RETURN_IF_ERROR(mpiStatus((call), #call, __FILE__, __LINE__))

/// MPI counts are ints: a larger message is refused rather than truncated.
Status messageCount(size_t elements, int &count) {
  if (elements > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Status(StatusCode::kInvalidArgument,
                  "a message of " + std::to_string(elements) +
                      " elements exceeds MPI's int count; split the tensor");
  }
  count = static_cast<int>(elements);
  return Status::ok();
}

/// Watches blocking MPI calls; see CollectiveTimeout.
class Watchdog {
public:
  ~Watchdog() {
    stopping = true;
    if (thread.joinable()) {
      thread.join();
    }
  }
  void start(CollectiveTimeout timeout) {
    if (timeout.seconds <= 0 || !timeout.onTimeout) {
      return;
    }
    settings = std::move(timeout);
    thread = std::thread([this] {
      while (!stopping) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        int64_t since = waitingSinceMs.load();
        if (since >= 0 && nowMs() - since > settings.seconds * 1000.0) {
          settings.onTimeout(waitingFor.load());
          waitingSinceMs = -1; // reported once
        }
      }
    });
  }
  /// Marks one blocking call for its lifetime.
  class Guard {
  public:
    Guard(Watchdog &watchdog, const char *what) : watchdog(watchdog) {
      watchdog.waitingFor = what;
      watchdog.waitingSinceMs = nowMs();
    }
    ~Guard() { watchdog.waitingSinceMs = -1; }

  private:
    Watchdog &watchdog;
  };

private:
  static int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  CollectiveTimeout settings;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> waitingSinceMs{-1};
  std::atomic<const char *> waitingFor{""};
};

class MpiCommunicator final : public Communicator {
public:
  explicit MpiCommunicator(CollectiveTimeout timeout) { watchdog.start(std::move(timeout)); }

  ~MpiCommunicator() override {
    for (MPI_Comm &comm : axisComms) {
      if (comm != MPI_COMM_NULL) {
        MPI_Comm_free(&comm);
      }
    }
  }

  Status init(const MeshShape &shape) {
    meshShape = shape;
    int rank = 0, size = 0;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    worldRank = rank;
    worldRanks = size;
    if (size != shape.worldSize()) {
      return Status(StatusCode::kInvalidArgument,
                    "the plan is compiled for " + std::to_string(shape.worldSize()) +
                        " ranks (--cluster " + std::to_string(shape.nodes) + "x" +
                        std::to_string(shape.gpusPerNode) + ") but " + std::to_string(size) +
                        " were started: run mpirun -np " + std::to_string(shape.worldSize()));
    }
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    RankCoordinates c = rankCoordinates(shape, rank);
    for (MeshAxis axis : kMeshAxes) {
      if (!shape.hasAxis(axis)) {
        continue;
      }
      // Ranks that agree on the other coordinates form the group; key orders it by axis.
      int color = static_cast<int>(axisGroupColor(shape, rank, axis));
      MPI_Comm &comm = axisComms[static_cast<int>(axis)];
      MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, static_cast<int>(c.along(axis)), &comm));
      MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    }
    return Status::ok();
  }

  int64_t rank() const override { return worldRank; }
  int64_t worldSize() const override { return worldRanks; }
  const MeshShape &mesh() const override { return meshShape; }

  Status allReduceSum(MeshAxis axis, std::vector<float> &values) override {
    int64_t members = meshShape.axisSize(axis);
    if (members == 1) {
      return Status::ok();
    }
    // Reduce-scatter then all-gather of the padded vector: the same per-element summation
    // order as reduceScatterSum, on every member.
    size_t count = values.size();
    size_t chunk = (count + members - 1) / members;
    std::vector<float> padded(values), shard;
    padded.resize(chunk * members, 0.0f);
    MLPERF_RETURN_IF_ERROR(reduceScatterSum(axis, padded, shard));
    MLPERF_RETURN_IF_ERROR(allGather(axis, shard, padded));
    values.assign(padded.begin(), padded.begin() + count);
    return Status::ok();
  }

  Status allReduceSum(MeshAxis axis, std::vector<double> &values) override {
    int64_t members = meshShape.axisSize(axis);
    if (members == 1) {
      return Status::ok();
    }
    std::vector<double> all(values.size() * members);
    int count = 0;
    MLPERF_RETURN_IF_ERROR(messageCount(values.size(), count));
    Watchdog::Guard guard(watchdog, "an all-gather of f64 values");
    MPI_CHECK(
        MPI_Allgather(values.data(), count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE, comm(axis)));
    for (size_t i = 0; i < values.size(); ++i) {
      double sum = 0.0;
      for (int64_t member = 0; member < members; ++member) {
        sum += all[member * values.size() + i];
      }
      values[i] = sum;
    }
    return Status::ok();
  }

  Status allReduceMax(MeshAxis axis, std::vector<float> &values) override {
    if (meshShape.axisSize(axis) == 1) {
      return Status::ok();
    }
    int count = 0;
    MLPERF_RETURN_IF_ERROR(messageCount(values.size(), count));
    Watchdog::Guard guard(watchdog, "an all-reduce (max)");
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), count, MPI_FLOAT, MPI_MAX, comm(axis)));
    return Status::ok();
  }

  Status reduceScatterSum(MeshAxis axis, const std::vector<float> &input,
                          std::vector<float> &shard) override {
    int64_t members = meshShape.axisSize(axis);
    if (input.size() % members != 0) {
      return Status(StatusCode::kInvalidArgument,
                    "reduce-scatter of " + std::to_string(input.size()) + " values over " +
                        std::to_string(members) + " " + meshAxisName(axis) + " ranks");
    }
    size_t chunk = input.size() / members;
    std::vector<float> received(input.size());
    int count = 0;
    MLPERF_RETURN_IF_ERROR(messageCount(chunk, count));
    Watchdog::Guard guard(watchdog, "a reduce-scatter");
    MPI_CHECK(MPI_Alltoall(input.data(), count, MPI_FLOAT, received.data(), count, MPI_FLOAT,
                           comm(axis)));
    shard.assign(chunk, 0.0f);
    for (int64_t member = 0; member < members; ++member) {
      const float *part = received.data() + member * chunk;
      for (size_t i = 0; i < chunk; ++i) {
        shard[i] += part[i];
      }
    }
    return Status::ok();
  }

  Status allGather(MeshAxis axis, const std::vector<float> &shard,
                   std::vector<float> &output) override {
    int64_t members = meshShape.axisSize(axis);
    output.resize(shard.size() * members);
    int count = 0;
    MLPERF_RETURN_IF_ERROR(messageCount(shard.size(), count));
    Watchdog::Guard guard(watchdog, "an all-gather");
    MPI_CHECK(
        MPI_Allgather(shard.data(), count, MPI_FLOAT, output.data(), count, MPI_FLOAT, comm(axis)));
    return Status::ok();
  }

  Status allToAll(MeshAxis axis, const std::vector<float> &send,
                  const std::vector<int64_t> &sendCounts, std::vector<float> &received,
                  std::vector<int64_t> &receivedCounts) override {
    int64_t members = meshShape.axisSize(axis);
    MLPERF_RETURN_IF_ERROR(checkAllToAllChunks(send, sendCounts, members, rank()));
    // The counts first (every member learns what it receives), then the chunks.
    receivedCounts.assign(members, 0);
    {
      Watchdog::Guard guard(watchdog, "an all-to-all of chunk sizes");
      MPI_CHECK(MPI_Alltoall(sendCounts.data(), 1, MPI_INT64_T, receivedCounts.data(), 1,
                             MPI_INT64_T, comm(axis)));
    }
    std::vector<int> sendSizes(members), sendOffsets(members), receiveSizes(members),
        receiveOffsets(members);
    int64_t sent = 0, total = 0;
    for (int64_t j = 0; j < members; ++j) {
      if (receivedCounts[j] < 0) {
        return Status(StatusCode::kInternal, "an all-to-all peer announced a negative chunk");
      }
      MLPERF_RETURN_IF_ERROR(messageCount(sendCounts[j], sendSizes[j]));
      MLPERF_RETURN_IF_ERROR(messageCount(sent, sendOffsets[j]));
      MLPERF_RETURN_IF_ERROR(messageCount(receivedCounts[j], receiveSizes[j]));
      MLPERF_RETURN_IF_ERROR(messageCount(total, receiveOffsets[j]));
      sent += sendCounts[j];
      total += receivedCounts[j];
    }
    received.resize(total);
    Watchdog::Guard guard(watchdog, "an all-to-all");
    MPI_CHECK(MPI_Alltoallv(send.data(), sendSizes.data(), sendOffsets.data(), MPI_FLOAT,
                            received.data(), receiveSizes.data(), receiveOffsets.data(), MPI_FLOAT,
                            comm(axis)));
    return Status::ok();
  }

  Status send(MeshAxis axis, int64_t shift, int tag, const std::vector<float> &values) override {
    int peer = 0;
    MLPERF_RETURN_IF_ERROR(neighbour(axis, shift, peer));
    int count = 0;
    MLPERF_RETURN_IF_ERROR(messageCount(values.size(), count));
    pending.push_back({values, MPI_REQUEST_NULL}); // a list: buffers stay where they are
    MPI_CHECK(MPI_Isend(pending.back().data.data(), count, MPI_FLOAT, peer, tag, comm(axis),
                        &pending.back().request));
    // Completed sends give their copies back, so a pipeline holds only those in flight.
    for (auto it = pending.begin(); it != pending.end();) {
      int done = 0;
      MPI_CHECK(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE));
      it = done ? pending.erase(it) : std::next(it);
    }
    return Status::ok();
  }

  Status receive(MeshAxis axis, int64_t shift, int tag, std::vector<float> &values) override {
    int peer = 0;
    MLPERF_RETURN_IF_ERROR(neighbour(axis, shift, peer));
    MPI_Status status;
    int expected = 0;
    MLPERF_RETURN_IF_ERROR(messageCount(values.size(), expected));
    Watchdog::Guard guard(watchdog, "a pipeline receive");
    MPI_CHECK(MPI_Recv(values.data(), expected, MPI_FLOAT, peer, tag, comm(axis), &status));
    int count = 0;
    MPI_CHECK(MPI_Get_count(&status, MPI_FLOAT, &count));
    if (count != expected) {
      return Status(StatusCode::kInternal, "rank " + std::to_string(worldRank) + " expected " +
                                               std::to_string(values.size()) + " values from its " +
                                               meshAxisName(axis) + " neighbour and got " +
                                               std::to_string(count));
    }
    return Status::ok();
  }

  Status waitForSends() override {
    Watchdog::Guard guard(watchdog, "the completion of pipeline sends");
    while (!pending.empty()) {
      MPI_CHECK(MPI_Wait(&pending.front().request, MPI_STATUS_IGNORE));
      pending.pop_front();
    }
    return Status::ok();
  }

  Status allReduceWorldSum(std::vector<double> &values) override {
    std::vector<double> all(values.size() * worldRanks);
    int count = 0;
    MLPERF_RETURN_IF_ERROR(messageCount(values.size(), count));
    Watchdog::Guard guard(watchdog, "an all-gather over every rank");
    MPI_CHECK(MPI_Allgather(values.data(), count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE,
                            MPI_COMM_WORLD));
    for (size_t i = 0; i < values.size(); ++i) {
      double sum = 0.0;
      for (int64_t r = 0; r < worldRanks; ++r) {
        sum += all[r * values.size() + i];
      }
      values[i] = sum;
    }
    return Status::ok();
  }

private:
  MPI_Comm comm(MeshAxis axis) const { return axisComms[static_cast<int>(axis)]; }

  Status neighbour(MeshAxis axis, int64_t shift, int &peer) const {
    return axisNeighbour(meshShape, worldRank, axis, shift, peer);
  }

  struct PendingSend {
    std::vector<float> data;
    MPI_Request request;
  };
  std::list<PendingSend> pending;
  Watchdog watchdog;

  MeshShape meshShape;
  int64_t worldRank = 0, worldRanks = 1;
  // By MeshAxis; MPI_COMM_NULL: not on this mesh.
  MPI_Comm axisComms[std::size(kMeshAxes)] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL,
                                              MPI_COMM_NULL, MPI_COMM_NULL};
};

} // namespace

Status initializeMpi(int *argc, char ***argv, int64_t &rank, int64_t &size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // The CPU backend issues a program's communication from its communication-stream thread
    // and the rest (evaluation sums, checkpoint agreement) from the main thread, never both
    // at once: MPI_THREAD_SERIALIZED.
    int provided = MPI_THREAD_SINGLE;
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
    if (provided < MPI_THREAD_SERIALIZED) {
      return Status(StatusCode::kUnavailable,
                    "this MPI library does not support MPI_THREAD_SERIALIZED, which the CPU "
                    "backend's communication stream needs");
    }
  }
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int r = 0, s = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &r));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &s));
  rank = r;
  size = s;
  return Status::ok();
}

Status createMpiCommunicator(const MeshShape &mesh, std::unique_ptr<Communicator> &communicator,
                             CollectiveTimeout timeout) {
  auto mpi = std::make_unique<MpiCommunicator>(std::move(timeout));
  MLPERF_RETURN_IF_ERROR(mpi->init(mesh));
  communicator = std::move(mpi);
  return Status::ok();
}

Status broadcastFromRankZero(void *bytes, size_t size) {
  MPI_CHECK(MPI_Bcast(bytes, static_cast<int>(size), MPI_BYTE, 0, MPI_COMM_WORLD));
  return Status::ok();
}

void abortMpi(int exitCode) {
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode); // MPI_Abort does not return; this keeps [[noreturn]] honest
}

void finalizeMpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    MPI_Finalize();
  }
}

} // namespace mlperf::rt
