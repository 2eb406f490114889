//===- NoMpi.cpp - The MPI interface in a build without MPI ----*- C++ -*-===//
//
// The `device` preset builds a single-rank runtime for GPU nodes that have no MPI
// (MLPERFC_WITH_MPI=OFF): the same interface, one rank, and a clear error for what needs
// several ranks.
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiCommunicator.h"

#include <cstdlib>

namespace mlperf::rt {
namespace {

Status withoutMpi(const std::string &what) {
  return Status(StatusCode::kUnavailable,
                what + ": this runtime was built without MPI (MLPERFC_WITH_MPI=OFF, the device "
                       "preset) and runs one rank; build the default preset for several ranks");
}

} // namespace

Status initializeMpi(int *, char ***, int64_t &rank, int64_t &size) {
  rank = 0;
  size = 1;
  return Status::ok();
}

Status createMpiCommunicator(const MeshShape &, std::unique_ptr<Communicator> &,
                             CollectiveTimeout) {
  return withoutMpi("started by an MPI launcher");
}

Status broadcastFromRankZero(void *, size_t) { return withoutMpi("a broadcast between ranks"); }

void abortMpi(int exitCode) { std::_Exit(exitCode); }

void finalizeMpi() {}

} // namespace mlperf::rt
