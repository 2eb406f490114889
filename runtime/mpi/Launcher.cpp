//===- Launcher.cpp - Whether an MPI launcher started this process -*- C++ -*-===//
//
// Shared by the MPI build and the single-rank build (NoMpi.cpp), which must notice mpirun to
// say it runs one rank.
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiCommunicator.h"

#include <cstdlib>

namespace mlperf::rt {

bool launchedByMpiLauncher() {
  for (const char *variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(variable)) {
      return true;
    }
  }
  return false;
}

} // namespace mlperf::rt
