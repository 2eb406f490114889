//===- MpiCommunicator.h - Ranks started by mpirun --------------*- C++ -*-===//
//
// CPU ranks talk through MPI (Open MPI): one communicator per mesh axis, split from
// MPI_COMM_WORLD by the rank layout of runtime/dist/Mesh.h. Every MPI call is checked and
// turned into a Status naming the call, the rank and the MPI error string. The CUDA backend
// uses MPI only to launch and to broadcast the NCCL unique id.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_MPI_MPICOMMUNICATOR_H
#define MLPERFC_RUNTIME_MPI_MPICOMMUNICATOR_H

#include "runtime/dist/Communicator.h"

#include <functional>
#include <string>

namespace mlperf::rt {

/// True when an MPI launcher (mpirun, srun with PMIx) started this process; a process started
/// by hand runs as a single rank without initializing MPI.
bool launchedByMpiLauncher();

/// MPI_Init; `rank` and `size` of MPI_COMM_WORLD.
Status initializeMpi(int *argc, char ***argv, int64_t &rank, int64_t &size);

/// A blocking MPI call (a collective, a pipeline receive) that has not returned after
/// `seconds` calls `onTimeout` with what it was waiting for, from a watchdog thread: a peer
/// that hangs without dying (stopped, deadlocked) is otherwise never noticed, since mpirun
/// only sees ranks that exit. 0 disables the watchdog. The tool decides what to do (mlperf-run
/// reports and exits non-zero, which makes mpirun end the job).
struct CollectiveTimeout {
  double seconds = 0;
  std::function<void(const std::string &waitingFor)> onTimeout;
};

/// The communicator for `mesh`, whose world size must equal MPI_COMM_WORLD's.
Status createMpiCommunicator(const MeshShape &mesh, std::unique_ptr<Communicator> &communicator,
                             CollectiveTimeout timeout = {});

/// Broadcasts `bytes` from world rank 0 to every rank (the NCCL unique id).
Status broadcastFromRankZero(void *bytes, size_t size);

/// Ends every rank of the job: after an error on one rank, the others must not wait forever in
/// a collective for it.
[[noreturn]] void abortMpi(int exitCode);

void finalizeMpi();

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_MPI_MPICOMMUNICATOR_H
