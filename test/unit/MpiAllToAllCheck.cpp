//===- MpiAllToAllCheck.cpp - The MPI communicator's all-to-all under mpirun ---===//
//
// Run as `mpirun -np N mlperf-mpi-alltoall-check` (test/tools/mlperf-run/all-to-all.test):
// every rank is one data-parallel member; member i sends (i + j + 1) values to member j, value
// 100·i + 10·j + k, and checks what it receives from each member, and that chunks which do
// not add up to what it sends are refused. The same pattern as the in-process
// communicator's test (DistTest.cpp), so both implementations agree on the semantics.
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiCommunicator.h"

#include <cstdio>
#include <vector>

using namespace mlperf::rt;

int main(int argc, char **argv) {
  int64_t rank = 0, size = 1;
  Status status = initializeMpi(&argc, &argv, rank, size);
  if (!status.isOk()) {
    std::fprintf(stderr, "%s\n", status.toString().c_str());
    return 1;
  }
  MeshShape mesh;
  mesh.gpusPerNode = size;
  mesh.dp = size;
  std::unique_ptr<Communicator> communicator;
  status = createMpiCommunicator(mesh, communicator);
  int failures = 0;
  if (status.isOk()) {
    std::vector<float> send, received;
    std::vector<int64_t> sendCounts, receivedCounts;
    for (int64_t j = 0; j < size; ++j) {
      sendCounts.push_back(rank + j + 1);
      for (int64_t k = 0; k <= rank + j; ++k) {
        send.push_back(static_cast<float>(100 * rank + 10 * j + k));
      }
    }
    status = communicator->allToAll(MeshAxis::kDP, send, sendCounts, received, receivedCounts);
    std::vector<float> expected;
    for (int64_t i = 0; status.isOk() && i < size; ++i) {
      failures += receivedCounts[i] != i + rank + 1;
      for (int64_t k = 0; k <= i + rank; ++k) {
        expected.push_back(static_cast<float>(100 * i + 10 * rank + k));
      }
    }
    failures += status.isOk() && received != expected;
    // One value announced as two per member: refused before anything is sent.
    Status refused = communicator->allToAll(MeshAxis::kDP, {1.0f}, std::vector<int64_t>(size, 2),
                                            received, receivedCounts);
    failures += refused.isOk();
  }
  if (!status.isOk()) {
    std::fprintf(stderr, "rank %lld: %s\n", static_cast<long long>(rank),
                 status.toString().c_str());
    ++failures;
  }
  std::vector<double> total = {static_cast<double>(failures)};
  if (communicator && !communicator->allReduceWorldSum(total).isOk()) {
    total = {1.0};
  }
  if (rank == 0) {
    std::printf("all-to-all over %lld ranks: %s\n", static_cast<long long>(size),
                total[0] == 0 ? "ok" : "MISMATCH");
  }
  communicator.reset();
  finalizeMpi();
  return total[0] == 0 ? 0 : 1;
}
