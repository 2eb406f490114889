//===- InProcessCommunicator.h - Every rank of a mesh in one process -*- C++ -*-===//
//
// One Communicator per rank of a mesh, for ranks that are threads of one process: the audit's
// numeric evidence runs a multi-rank plan this way (no MPI needed), as do tests. Sums are
// those of the MPI communicator, in group order and in the same precision, so a plan gives
// the bits it gives under mpirun. A rank that fails calls abort(), which makes every waiting
// or later collective of the others fail too instead of waiting forever; a collective that
// waits longer than the timeout fails as well.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_DIST_INPROCESSCOMMUNICATOR_H
#define MLPERFC_RUNTIME_DIST_INPROCESSCOMMUNICATOR_H

#include "runtime/dist/Communicator.h"

#include <memory>
#include <string>
#include <vector>

namespace mlperf::rt {

class InProcessMesh {
public:
  /// `timeoutSeconds` bounds every wait (0: no bound).
  InProcessMesh(const MeshShape &mesh, double timeoutSeconds);
  ~InProcessMesh();
  InProcessMesh(const InProcessMesh &) = delete;
  InProcessMesh &operator=(const InProcessMesh &) = delete;

  /// The communicator of `rank` (0 <= rank < mesh.worldSize()), owned by the mesh.
  Communicator &communicator(int64_t rank);
  /// Ends every pending and later collective with an error naming `reason`.
  void abort(const std::string &reason);

  struct Hub;

private:
  std::unique_ptr<Hub> hub;
  std::vector<std::unique_ptr<Communicator>> ranks;
};

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_DIST_INPROCESSCOMMUNICATOR_H
