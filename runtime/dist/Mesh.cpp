//===- Mesh.cpp - Device mesh, rank layout and parallel options -*- C++ -*-===//

#include "runtime/dist/Mesh.h"

#include <charconv>
#include <set>

namespace mlperf::rt {
namespace {

Status invalid(const std::string &message) { return Status(StatusCode::kInvalidArgument, message); }

/// A positive degree, at most 2^20 (so that products of degrees cannot overflow).
bool parsePositive(std::string_view text, int64_t &value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && value > 0 &&
         value <= (int64_t(1) << 20);
}

std::string str(int64_t value) { return std::to_string(value); }

/// The value of the five given for `axis` (a size or a coordinate along it).
int64_t byAxis(MeshAxis axis, int64_t dp, int64_t tp, int64_t pp, int64_t dpShard,
               int64_t dpReplicate) {
  switch (axis) {
  case MeshAxis::kDP:
    return dp;
  case MeshAxis::kTP:
    return tp;
  case MeshAxis::kPP:
    return pp;
  case MeshAxis::kDPShard:
    return dpShard;
  case MeshAxis::kDPReplicate:
    return dpReplicate;
  }
  return 0;
}

/// hsdp=N: ZeRO shards over groups of N data-parallel ranks that tile dp. hsdp=dp is plain
/// (flat) sharding and becomes 0, so both spell one plan.
Status validateHybridSharding(MeshShape &mesh) {
  std::string option = "--parallel hsdp=" + str(mesh.hsdp);
  if (mesh.zero == 0) {
    return invalid(option + " shards the optimizer state (zero=1), the gradients too (zero=2) " +
                   "or the parameters too (zero=3) inside groups of " + str(mesh.hsdp) +
                   " data-parallel ranks: add zero=1, 2 or 3");
  }
  if (mesh.hsdp == 1) {
    return invalid(option + ": sharding groups of one rank shard nothing; use zero=0, or hsdp " +
                   "of at least 2 (normally the data-parallel ranks of one node)");
  }
  if (mesh.dp % mesh.hsdp != 0) {
    std::string divisors;
    for (int64_t n = 2; n <= mesh.dp; ++n) {
      if (mesh.dp % n == 0) {
        divisors += (divisors.empty() ? "" : ", ") + str(n);
      }
    }
    return invalid(option + " does not divide dp=" + str(mesh.dp) +
                   ": the sharding groups must tile the data-parallel ranks (hsdp may be " +
                   divisors + ")");
  }
  if (mesh.hsdp == mesh.dp) {
    mesh.hsdp = 0;
  }
  return Status::ok();
}

} // namespace

const char *meshAxisName(MeshAxis axis) {
  switch (axis) {
  case MeshAxis::kDP:
    return "dp";
  case MeshAxis::kTP:
    return "tp";
  case MeshAxis::kPP:
    return "pp";
  case MeshAxis::kDPShard:
    return "dp_shard";
  case MeshAxis::kDPReplicate:
    return "dp_replicate";
  }
  return "?";
}

bool parseMeshAxis(std::string_view name, MeshAxis &axis) {
  for (MeshAxis candidate : kMeshAxes) {
    if (name == meshAxisName(candidate)) {
      axis = candidate;
      return true;
    }
  }
  return false;
}

int64_t MeshShape::axisSize(MeshAxis axis) const {
  return byAxis(axis, dp, tp, pp, shardGroupSize(), dp / shardGroupSize());
}

std::string MeshShape::describe() const {
  return str(nodes) + "x" + str(gpusPerNode) + " dp=" + str(dp) + " tp=" + str(tp) +
         " pp=" + str(pp) + " vp=" + str(vp) + " sp=" + (sequenceParallel ? "on" : "off") +
         " zero=" + str(zero) + (hsdp > 0 ? " hsdp=" + str(hsdp) : "");
}

std::string MeshShape::parallelFlag() const {
  return "dp=" + str(dp) + ",tp=" + str(tp) + ",pp=" + str(pp) + ",vp=" + str(vp) +
         ",sp=" + (sequenceParallel ? "on" : "off") + ",zero=" + str(zero) +
         (hsdp > 0 ? ",hsdp=" + str(hsdp) : "") +
         (microBatch > 0 ? ",micro_batch=" + str(microBatch) : "");
}

int64_t RankCoordinates::along(MeshAxis axis) const {
  return byAxis(axis, dp, tp, pp, dp % shardGroupSize, dp / shardGroupSize);
}

RankCoordinates RankCoordinates::with(MeshAxis axis, int64_t index) const {
  RankCoordinates moved = *this;
  switch (axis) {
  case MeshAxis::kDP:
    moved.dp = index;
    break;
  case MeshAxis::kTP:
    moved.tp = index;
    break;
  case MeshAxis::kPP:
    moved.pp = index;
    break;
  case MeshAxis::kDPShard:
    moved.dp = dp / shardGroupSize * shardGroupSize + index;
    break;
  case MeshAxis::kDPReplicate:
    moved.dp = index * shardGroupSize + dp % shardGroupSize;
    break;
  }
  return moved;
}

RankCoordinates rankCoordinates(const MeshShape &mesh, int64_t rank) {
  RankCoordinates c;
  c.shardGroupSize = mesh.shardGroupSize();
  c.tp = rank % mesh.tp;
  c.dp = (rank / mesh.tp) % mesh.dp;
  c.pp = rank / (mesh.tp * mesh.dp);
  return c;
}

int64_t rankAt(const MeshShape &mesh, const RankCoordinates &c) {
  return (c.pp * mesh.dp + c.dp) * mesh.tp + c.tp;
}

std::vector<int64_t> axisGroup(const MeshShape &mesh, int64_t rank, MeshAxis axis) {
  RankCoordinates c = rankCoordinates(mesh, rank);
  std::vector<int64_t> group;
  for (int64_t i = 0; i < mesh.axisSize(axis); ++i) {
    group.push_back(rankAt(mesh, c.with(axis, i)));
  }
  return group;
}

int64_t axisGroupColor(const MeshShape &mesh, int64_t rank, MeshAxis axis) {
  return rankAt(mesh, rankCoordinates(mesh, rank).with(axis, 0));
}

Status axisNeighbour(const MeshShape &mesh, int64_t rank, MeshAxis axis, int64_t shift,
                     int &index) {
  int64_t target = rankCoordinates(mesh, rank).along(axis) + shift;
  if (target < 0 || target >= mesh.axisSize(axis)) {
    return Status(StatusCode::kInternal, "rank " + std::to_string(rank) + " has no " +
                                             meshAxisName(axis) + " neighbour at " +
                                             std::to_string(shift));
  }
  index = static_cast<int>(target);
  return Status::ok();
}

Status parseCluster(std::string_view text, MeshShape &mesh) {
  size_t x = text.find('x');
  if (x == std::string_view::npos || !parsePositive(text.substr(0, x), mesh.nodes) ||
      !parsePositive(text.substr(x + 1), mesh.gpusPerNode)) {
    return invalid("--cluster '" + std::string(text) +
                   "' is not NODESxGPUS with positive numbers up to 1048576 (for example 8x8)");
  }
  return Status::ok();
}

Status parseParallel(std::string_view text, MeshShape &mesh, bool *dpGiven) {
  std::set<std::string, std::less<>> seen;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      return invalid("--parallel item '" + std::string(item) + "' is not KEY=VALUE");
    }
    std::string key(item.substr(0, equals));
    std::string_view value = item.substr(equals + 1);
    if (!seen.insert(key).second) {
      return invalid("--parallel gives '" + key + "' twice");
    }
    if (key == "sp") {
      if (value != "on" && value != "off") {
        return invalid("--parallel sp=" + std::string(value) + ": expected on or off");
      }
      mesh.sequenceParallel = value == "on";
      continue;
    }
    int64_t *target = key == "dp"            ? &mesh.dp
                      : key == "tp"          ? &mesh.tp
                      : key == "pp"          ? &mesh.pp
                      : key == "vp"          ? &mesh.vp
                      : key == "zero"        ? &mesh.zero
                      : key == "hsdp"        ? &mesh.hsdp
                      : key == "micro_batch" ? &mesh.microBatch
                                             : nullptr;
    if (!target) {
      return invalid("--parallel key '" + key +
                     "' is unknown (known: dp, tp, pp, vp, sp, zero, hsdp, micro_batch)");
    }
    int64_t number = 0;
    bool zeroStage = value == "0" || value == "1" || value == "2" || value == "3";
    bool off = key == "hsdp" && value == "0"; // hsdp=0: shard over all of dp
    if (key == "zero" ? !zeroStage : !off && !parsePositive(value, number)) {
      return invalid("--parallel " + key + "=" + std::string(value) + ": expected " +
                     (key == "zero"   ? "0, 1, 2 or 3"
                      : key == "hsdp" ? "0 (off) or a positive integer up to 1048576"
                                      : "a positive integer up to 1048576"));
    }
    *target = key == "zero" ? value[0] - '0' : number;
  }
  if (dpGiven) {
    *dpGiven = seen.count("dp") > 0;
  }
  return Status::ok();
}

std::vector<int64_t> pipelineLayerSplit(int64_t layers, int64_t stages) {
  std::vector<int64_t> split(stages, layers / stages);
  int64_t extra = layers % stages;
  // Middle stages first, then the last, then the first.
  for (int64_t s = 1; s + 1 < stages && extra > 0; ++s, --extra) {
    ++split[s];
  }
  if (extra > 0 && stages > 1) {
    ++split[stages - 1];
    --extra;
  }
  if (extra > 0) {
    ++split[0];
  }
  return split;
}

std::string describeLayerSplit(const std::vector<int64_t> &split) {
  std::string text;
  for (size_t i = 0; i < split.size();) {
    size_t j = i;
    while (j < split.size() && split[j] == split[i]) {
      ++j;
    }
    text += (text.empty() ? "" : ", ") + str(split[i]) + (j - i > 1 ? " x " + str(j - i) : "");
    i = j;
  }
  return text;
}

Status validateMesh(MeshShape &mesh, const ModelDims &model, bool dpGiven) {
  int64_t world = mesh.worldSize();
  std::string cluster =
      "--cluster " + str(mesh.nodes) + "x" + str(mesh.gpusPerNode) + " (" + str(world) + " ranks)";
  if (!dpGiven) {
    if (world % (mesh.tp * mesh.pp) != 0) {
      return invalid("tp × pp = " + str(mesh.tp) + " × " + str(mesh.pp) + " does not divide " +
                     cluster);
    }
    mesh.dp = world / (mesh.tp * mesh.pp);
  }
  if (mesh.dp * mesh.tp * mesh.pp != world) {
    return invalid("dp × tp × pp = " + str(mesh.dp) + " × " + str(mesh.tp) + " × " + str(mesh.pp) +
                   " = " + str(mesh.dp * mesh.tp * mesh.pp) + " ranks, but " + cluster);
  }
  if (mesh.hsdp > 0) {
    MLPERF_RETURN_IF_ERROR(validateHybridSharding(mesh));
  }
  auto divides = [&](int64_t degree, const char *name, int64_t count,
                     const std::string &what) -> Status {
    if (count % degree != 0) {
      return invalid(std::string(name) + "=" + str(degree) + " does not divide the model's " +
                     str(count) + " " + what);
    }
    return Status::ok();
  };
  for (const ModelDims::TensorSplit &split : model.tensorSplits) {
    MLPERF_RETURN_IF_ERROR(divides(mesh.tp, "tp", split.size, split.what));
  }
  if (mesh.sequenceParallel) {
    if (mesh.tp == 1) {
      return invalid("sp=on splits the sequence over the tensor-parallel group: it needs tp > 1");
    }
    MLPERF_RETURN_IF_ERROR(divides(mesh.tp, "tp", model.seqLen, "sequence positions (sp=on)"));
    int64_t micro = mesh.microBatch > 0 ? mesh.microBatch : model.microBatch;
    if (micro != 1) {
      return invalid("sp=on splits [micro_batch, seq, hidden] activations along the sequence "
                     "into contiguous slices, which needs micro_batch=1 (got " +
                     str(micro) + ")");
    }
  }
  if (mesh.vp > 1 && mesh.pp == 1) {
    return invalid("vp=" + str(mesh.vp) +
                   " interleaves virtual stages of a pipeline: it needs pp > 1");
  }
  if (model.layers > 0 && model.layers < mesh.pp * mesh.vp) {
    return invalid("pp × vp = " + str(mesh.pp) + " × " + str(mesh.vp) +
                   " pipeline stages are more than the model's " + str(model.layers) +
                   " layers: every (virtual) stage needs at least one");
  }
  int64_t micro = mesh.microBatch > 0 ? mesh.microBatch : model.microBatch;
  mesh.microBatch = micro;
  if (model.globalBatch % (mesh.dp * micro) != 0) {
    // What would work: the nearest data-parallel sizes that divide the batch's micro-batches,
    // and the nearest global batches this dp takes.
    const int64_t unit = mesh.dp * micro, samples = model.globalBatch;
    std::string nearestDp;
    if (samples % micro == 0) {
      int64_t below = 0, above = 0;
      for (int64_t dp = mesh.dp - 1; dp >= 1 && !below; --dp) {
        below = samples / micro % dp == 0 ? dp : 0;
      }
      for (int64_t dp = mesh.dp + 1; dp <= samples / micro && !above; ++dp) {
        above = samples / micro % dp == 0 ? dp : 0;
      }
      nearestDp = "dp=" + str(below) + (above ? " or dp=" + str(above) : "") +
                  " divides it (a cluster of that many ranks times tp × pp), or ";
    }
    const int64_t lower = samples / unit * unit, upper = lower + unit;
    return invalid("the global batch of " + str(samples) +
                   " samples is not divisible by dp × micro_batch = " + str(mesh.dp) + " × " +
                   str(micro) + ": " + nearestDp + "a global batch of " +
                   (lower > 0 ? str(lower) + " or " : "") + str(upper) +
                   " samples takes this dp (emit-model --set gbs=N)");
  }
  int64_t microBatches = model.globalBatch / (mesh.dp * micro);
  if (mesh.pp > 1 && microBatches < mesh.pp) {
    return invalid("pp=" + str(mesh.pp) + " needs at least " + str(mesh.pp) +
                   " micro-batches per step on each data-parallel rank, but there are " +
                   str(microBatches));
  }
  if (mesh.vp > 1 && microBatches % mesh.pp != 0) {
    return invalid("the interleaved schedule (vp=" + str(mesh.vp) + ") needs the " +
                   str(microBatches) +
                   " micro-batches per rank to be a multiple of pp=" + str(mesh.pp));
  }
  return Status::ok();
}

} // namespace mlperf::rt
