//===- DistTest.cpp - Mesh layout, options and the in-process communicator ---===//

#include "runtime/dist/InProcessCommunicator.h"
#include "runtime/dist/Mesh.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

namespace rt = mlperf::rt;

namespace {

rt::MeshShape mesh(int64_t dp, int64_t tp, int64_t pp) {
  rt::MeshShape m;
  m.nodes = 1;
  m.gpusPerNode = dp * tp * pp;
  m.dp = dp;
  m.tp = tp;
  m.pp = pp;
  return m;
}

TEST(Mesh, LaysRanksOutTensorParallelFastestThenDataThenPipeline) {
  rt::MeshShape m = mesh(2, 2, 2);
  rt::RankCoordinates c = rt::rankCoordinates(m, 5); // 5 = (pp 1, dp 0, tp 1)
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.dp, 0);
  EXPECT_EQ(c.pp, 1);
  for (int64_t rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(rt::rankAt(m, rt::rankCoordinates(m, rank)), rank);
  }
  EXPECT_EQ(rt::axisGroup(m, 5, rt::MeshAxis::kTP), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(rt::axisGroup(m, 5, rt::MeshAxis::kDP), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(rt::axisGroup(m, 5, rt::MeshAxis::kPP), (std::vector<int64_t>{1, 5}));
}

// hsdp=2 on dp=4 (tp=2, 16 ranks with pp=2): data-parallel ranks {0,1} and {2,3} are the
// sharding groups, {0,2} and {1,3} the replicas of each shard.
TEST(Mesh, SplitsDataParallelRanksIntoShardingGroupsAndReplicas) {
  rt::MeshShape m = mesh(4, 2, 2);
  m.nodes = 2;
  m.gpusPerNode = 8;
  m.zero = 3;
  m.hsdp = 2;
  EXPECT_TRUE(m.hasAxis(rt::MeshAxis::kDPShard));
  EXPECT_EQ(m.axisSize(rt::MeshAxis::kDPShard), 2);
  EXPECT_EQ(m.axisSize(rt::MeshAxis::kDPReplicate), 2);
  // Rank 13 = (pp 1, dp 2, tp 1): sharding group member 0 of replica group member 1.
  rt::RankCoordinates c = rt::rankCoordinates(m, 13);
  EXPECT_EQ(c.dp, 2);
  EXPECT_EQ(c.along(rt::MeshAxis::kDPShard), 0);
  EXPECT_EQ(c.along(rt::MeshAxis::kDPReplicate), 1);
  EXPECT_EQ(rt::axisGroup(m, 13, rt::MeshAxis::kDP), (std::vector<int64_t>{9, 11, 13, 15}));
  EXPECT_EQ(rt::axisGroup(m, 13, rt::MeshAxis::kDPShard), (std::vector<int64_t>{13, 15}));
  EXPECT_EQ(rt::axisGroup(m, 13, rt::MeshAxis::kDPReplicate), (std::vector<int64_t>{9, 13}));
  EXPECT_EQ(rt::axisGroupColor(m, 15, rt::MeshAxis::kDPShard), 13);
  EXPECT_EQ(rt::axisGroupColor(m, 15, rt::MeshAxis::kDPReplicate), 11);
  // Every rank is in exactly one group of each axis, and the groups partition dp's.
  for (int64_t rank = 0; rank < m.worldSize(); ++rank) {
    for (rt::MeshAxis axis : {rt::MeshAxis::kDPShard, rt::MeshAxis::kDPReplicate}) {
      std::vector<int64_t> group = rt::axisGroup(m, rank, axis);
      int64_t index = rt::rankCoordinates(m, rank).along(axis);
      EXPECT_EQ(group[index], rank);
    }
  }
  // Without hsdp the sharding group is all of dp and the replicas one rank, and neither
  // axis is the mesh's.
  rt::MeshShape flat = mesh(4, 2, 2);
  EXPECT_FALSE(flat.hasAxis(rt::MeshAxis::kDPReplicate));
  EXPECT_EQ(flat.axisSize(rt::MeshAxis::kDPShard), 4);
  EXPECT_EQ(flat.axisSize(rt::MeshAxis::kDPReplicate), 1);
}

TEST(Mesh, ValidatesHybridSharding) {
  rt::ModelDims model;
  model.globalBatch = 64;
  model.microBatch = 1;
  auto check = [&](const char *parallel) {
    rt::MeshShape m;
    EXPECT_TRUE(rt::parseCluster("4x8", m).isOk());
    bool dpGiven = true;
    rt::Status status = rt::parseParallel(parallel, m, &dpGiven);
    EXPECT_FALSE(dpGiven); // "hsdp=" is not "dp="
    if (status.isOk()) {
      status = rt::validateMesh(m, model, dpGiven);
    }
    return std::pair{status.isOk() ? m.describe() : status.message(), m.hsdp};
  };
  EXPECT_EQ(check("zero=3,hsdp=8").first, "4x8 dp=32 tp=1 pp=1 vp=1 sp=off zero=3 hsdp=8");
  EXPECT_EQ(check("zero=3,hsdp=32").second, 0); // hsdp=dp is flat sharding
  EXPECT_EQ(check("zero=1,hsdp=0").second, 0);
  EXPECT_EQ(check("hsdp=8").first,
            "--parallel hsdp=8 shards the optimizer state (zero=1), the gradients too (zero=2) "
            "or the parameters too (zero=3) inside groups of 8 data-parallel ranks: add zero=1, "
            "2 or 3");
  EXPECT_EQ(check("zero=3,hsdp=6").first,
            "--parallel hsdp=6 does not divide dp=32: the sharding groups must tile the "
            "data-parallel ranks (hsdp may be 2, 4, 8, 16, 32)");
  EXPECT_NE(check("zero=3,hsdp=1").first.find("shard nothing"), std::string::npos);
}

TEST(Mesh, ParsesAndValidatesStrategies) {
  rt::MeshShape m;
  ASSERT_TRUE(rt::parseCluster("2x4", m).isOk());
  ASSERT_TRUE(rt::parseParallel("tp=2,sp=on,zero=1", m).isOk());
  rt::ModelDims llama;
  llama.layers = 32;
  llama.seqLen = 8192;
  llama.globalBatch = 32;
  llama.microBatch = 1;
  llama.tensorSplits = {{128256, "rows of the embedding"}, {1024, "rows of k_proj"}};
  ASSERT_TRUE(rt::validateMesh(m, llama, /*dpGiven=*/false).isOk());
  EXPECT_EQ(m.dp, 4);
  EXPECT_TRUE(m.sequenceParallel);
  EXPECT_EQ(m.zero, 1);
  rt::MeshShape bad;
  ASSERT_TRUE(rt::parseCluster("1x8", bad).isOk());
  ASSERT_TRUE(rt::parseParallel("tp=8", bad).isOk());
  llama.tensorSplits.push_back({4, "rows of a small tensor"});
  rt::Status status = rt::validateMesh(bad, llama, false);
  EXPECT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "tp=8 does not divide the model's 4 rows of a small tensor");
  EXPECT_FALSE(rt::parseParallel("tp=0", bad).isOk());
  EXPECT_FALSE(rt::parseCluster("8", bad).isOk());
}

TEST(Mesh, SplitsLayersOverStagesEvenlyOrLikeMegatron) {
  EXPECT_EQ(rt::pipelineLayerSplit(32, 4), (std::vector<int64_t>{8, 8, 8, 8}));
  std::vector<int64_t> split = rt::pipelineLayerSplit(126, 16); // Llama 3.1 405B
  EXPECT_EQ(split.front(), 7);
  EXPECT_EQ(split.back(), 7);
  EXPECT_EQ(rt::describeLayerSplit(split), "7, 8 x 14, 7");
  int64_t total = 0;
  for (int64_t layers : split) {
    total += layers;
  }
  EXPECT_EQ(total, 126);
  EXPECT_EQ(rt::pipelineLayerSplit(5, 2), (std::vector<int64_t>{2, 3}));
}

/// Runs `body(rank, communicator)` on every rank of `ranks` in its own thread.
std::vector<rt::Status>
onEveryRank(rt::InProcessMesh &ranks, int64_t world,
            const std::function<rt::Status(int64_t, rt::Communicator &)> &body) {
  std::vector<rt::Status> results(world);
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      results[rank] = body(rank, ranks.communicator(rank));
      if (!results[rank].isOk()) {
        ranks.abort("rank " + std::to_string(rank) + " failed");
      }
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
  return results;
}

TEST(InProcessCommunicator, SumsInGroupOrderLikeMpiAndGathersInOrder) {
  rt::MeshShape m = mesh(2, 2, 2);
  rt::InProcessMesh ranks(m, 30);
  std::vector<std::vector<float>> reduced(8), scattered(8), gathered(8);
  std::vector<std::vector<double>> world(8);
  auto results = onEveryRank(ranks, 8, [&](int64_t rank, rt::Communicator &c) -> rt::Status {
    // Values whose f32 sum depends on the order: 1e8 + 1 - 1e8.
    std::vector<float> values = {c.coordinates().tp == 0 ? 1e8f : 1.0f, float(rank)};
    MLPERF_RETURN_IF_ERROR(c.allReduceSum(rt::MeshAxis::kTP, values));
    reduced[rank] = values;
    std::vector<float> input = {float(rank), float(10 * rank), 1.0f, 2.0f};
    MLPERF_RETURN_IF_ERROR(c.reduceScatterSum(rt::MeshAxis::kDP, input, scattered[rank]));
    MLPERF_RETURN_IF_ERROR(c.allGather(rt::MeshAxis::kPP, {float(rank)}, gathered[rank]));
    world[rank] = {double(rank)};
    return c.allReduceWorldSum(world[rank]);
  });
  for (int64_t rank = 0; rank < 8; ++rank) {
    ASSERT_TRUE(results[rank].isOk()) << results[rank].message();
    rt::RankCoordinates at = rt::rankCoordinates(m, rank);
    // tp group {r, r+1} for even r: 1e8f + 1.0f rounds to 1e8f in f32, as MPI's order gives.
    EXPECT_EQ(reduced[rank][0], 1e8f + 1.0f);
    int64_t first = rank - at.tp;
    EXPECT_EQ(reduced[rank][1], float(first) + float(first + 1));
    // dp group: ranks r and r+2 (tp fastest, then dp); member i keeps chunk i.
    std::vector<int64_t> group = rt::axisGroup(m, rank, rt::MeshAxis::kDP);
    std::vector<float> expected = at.dp == 0 ? std::vector<float>{float(group[0] + group[1]),
                                                                  float(10 * (group[0] + group[1]))}
                                             : std::vector<float>{2.0f, 4.0f};
    EXPECT_EQ(scattered[rank], expected);
    std::vector<int64_t> stages = rt::axisGroup(m, rank, rt::MeshAxis::kPP);
    EXPECT_EQ(gathered[rank], (std::vector<float>{float(stages[0]), float(stages[1])}));
    EXPECT_EQ(world[rank][0], 28.0);
  }
}

TEST(InProcessCommunicator, AllToAllDeliversEachMembersChunkInGroupOrder) {
  // dp = 3: member i sends (i + j + 1) values to member j, value 100·i + 10·j + k.
  rt::MeshShape m = mesh(3, 1, 1);
  rt::InProcessMesh ranks(m, 30);
  std::vector<std::vector<float>> received(3);
  std::vector<std::vector<int64_t>> counts(3);
  auto results = onEveryRank(ranks, 3, [&](int64_t rank, rt::Communicator &c) -> rt::Status {
    std::vector<float> send;
    std::vector<int64_t> sendCounts;
    for (int64_t j = 0; j < 3; ++j) {
      sendCounts.push_back(rank + j + 1);
      for (int64_t k = 0; k <= rank + j; ++k) {
        send.push_back(float(100 * rank + 10 * j + k));
      }
    }
    return c.allToAll(rt::MeshAxis::kDP, send, sendCounts, received[rank], counts[rank]);
  });
  for (int64_t rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(results[rank].isOk()) << results[rank].message();
    std::vector<float> expected;
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(counts[rank][i], i + rank + 1);
      for (int64_t k = 0; k <= i + rank; ++k) {
        expected.push_back(float(100 * i + 10 * rank + k));
      }
    }
    EXPECT_EQ(received[rank], expected) << "rank " << rank;
  }
}

TEST(InProcessCommunicator, AllToAllRefusesChunksThatDoNotAddUp) {
  std::unique_ptr<rt::Communicator> single = rt::createSingleRankCommunicator();
  std::vector<float> received;
  std::vector<int64_t> counts;
  rt::Status status = single->allToAll(rt::MeshAxis::kDP, {1, 2, 3}, {2}, received, counts);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(),
            "rank 0: an all-to-all of 3 values in 1 chunks adding up to 2 for 1 members");
  ASSERT_TRUE(single->allToAll(rt::MeshAxis::kDP, {1, 2, 3}, {3}, received, counts).isOk());
  EXPECT_EQ(received, (std::vector<float>{1, 2, 3}));
}

TEST(InProcessCommunicator, DeliversPipelineMessagesByTagInOrder) {
  rt::MeshShape m = mesh(1, 1, 2);
  rt::InProcessMesh ranks(m, 30);
  std::vector<float> first(2), second(2);
  auto results = onEveryRank(ranks, 2, [&](int64_t rank, rt::Communicator &c) -> rt::Status {
    if (rank == 0) {
      MLPERF_RETURN_IF_ERROR(c.send(rt::MeshAxis::kPP, 1, 17, {1, 2}));
      MLPERF_RETURN_IF_ERROR(c.send(rt::MeshAxis::kPP, 1, 16, {3, 4}));
      return c.waitForSends();
    }
    MLPERF_RETURN_IF_ERROR(c.receive(rt::MeshAxis::kPP, -1, 16, first));
    return c.receive(rt::MeshAxis::kPP, -1, 17, second);
  });
  ASSERT_TRUE(results[0].isOk() && results[1].isOk());
  EXPECT_EQ(first, (std::vector<float>{3, 4}));
  EXPECT_EQ(second, (std::vector<float>{1, 2}));
}

TEST(InProcessCommunicator, AFailedRankEndsTheOthersWaitsAndATimeoutEndsAStuckOne) {
  rt::MeshShape m = mesh(2, 1, 1);
  rt::InProcessMesh ranks(m, 30);
  auto results = onEveryRank(ranks, 2, [&](int64_t rank, rt::Communicator &c) -> rt::Status {
    if (rank == 1) {
      return rt::Status(rt::StatusCode::kInternal, "planted failure");
    }
    std::vector<float> values = {1};
    return c.allReduceSum(rt::MeshAxis::kDP, values); // would wait for rank 1 forever
  });
  ASSERT_FALSE(results[0].isOk());
  EXPECT_NE(results[0].message().find("abandoned: rank 1 failed"), std::string::npos)
      << results[0].message();

  rt::InProcessMesh slow(m, 0.2);
  std::vector<float> values = {1};
  rt::Status alone = slow.communicator(0).allReduceSum(rt::MeshAxis::kDP, values);
  ASSERT_FALSE(alone.isOk());
  EXPECT_NE(alone.message().find("did not complete within"), std::string::npos) << alone.message();
}

} // namespace
