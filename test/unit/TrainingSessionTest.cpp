//===- TrainingSessionTest.cpp - One training run of a plan ---------------===//
//
// Runs on the plan and dataset that make_session_fixture.sh wrote to MLPERF_SESSION_FIXTURE
// (the ctest fixture unit.session_fixture): the tiny Llama, fp32, 4 micro-batches per step,
// 5 steps, evaluation every 2 steps.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/TrainingSession.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/plan/PlanLoader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace mlperf::rt;

namespace {

std::string fixture() {
  const char *dir = std::getenv("MLPERF_SESSION_FIXTURE");
  return dir ? dir : "";
}

SessionOptions baseOptions() {
  SessionOptions options;
  options.plan = fixture() + "/plan.pb";
  options.data = fixture() + "/text";
  options.seed = 3;
  return options;
}

CommunicatorFactory singleRank() {
  return [](const MeshShape &, std::unique_ptr<Communicator> &communicator) {
    communicator = createSingleRankCommunicator();
    return Status::ok();
  };
}

Status openSession(const SessionOptions &options, std::unique_ptr<TrainingSession> &session) {
  return TrainingSession::open(options, RankInfo{}, singleRank(), session);
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TrainingSessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (fixture().empty()) {
      GTEST_SKIP() << "MLPERF_SESSION_FIXTURE is not set (run through ctest)";
    }
  }
};

} // namespace

TEST_F(TrainingSessionTest, StepsEvaluatesAndLogs) {
  SessionOptions options = baseOptions();
  options.evalData = fixture() + "/text";
  options.mllog = ::testing::TempDir() + "/session.mllog";
  options.metricsOut = ::testing::TempDir() + "/session.jsonl";
  std::unique_ptr<TrainingSession> session;
  Status status = openSession(options, session);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_TRUE(session->leader());
  EXPECT_TRUE(session->evaluating());
  EXPECT_EQ(session->maxSteps(), 5);
  EXPECT_EQ(session->evalEverySteps(), 2);
  EXPECT_NE(session->describe().find("global batch 4 x 32 tokens, up to 5 steps"),
            std::string::npos)
      << session->describe();
  std::vector<bool> due;
  double previous = 1e9;
  while (session->stepsTaken() < session->maxSteps()) {
    StepReport report;
    status = session->step(report);
    ASSERT_TRUE(status.isOk()) << status.toString();
    EXPECT_EQ(report.samples, session->samplesAfter(session->stepsTaken()));
    EXPECT_TRUE(std::isfinite(report.metrics.loss));
    due.push_back(session->evaluationDue());
    if (session->evaluationDue()) {
      EvalReport eval;
      status = session->evaluate(eval);
      ASSERT_TRUE(status.isOk()) << status.toString();
      EXPECT_TRUE(std::isfinite(eval.loss));
      EXPECT_LT(eval.loss, previous); // training lowers the eval loss on this text
      EXPECT_FALSE(eval.converged);   // the target 0.5 is out of reach in 5 steps
      previous = eval.loss;
    }
  }
  // The model's cadence (every 2 steps) and the last step.
  EXPECT_EQ(due, (std::vector<bool>{false, true, false, true, true}));
  EXPECT_FALSE(session->step(*std::make_unique<StepReport>()).isOk()); // past max steps
  ASSERT_TRUE(session->finish(false).isOk());
  std::string log = readFile(options.mllog);
  EXPECT_NE(log.find("\"key\": \"run_stop\""), std::string::npos);
  EXPECT_NE(log.find("\"status\": \"aborted\""), std::string::npos); // target not reached
  // Every line is an MLPerf log line, and each block and eval interval is closed.
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.rfind(":::MLLOG ", 0), 0u) << line;
  }
  auto count = [&](const std::string &key) {
    size_t n = 0;
    for (size_t at = log.find(key); at != std::string::npos; at = log.find(key, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("\"key\": \"block_start\""), 3u);
  EXPECT_EQ(count("\"key\": \"block_stop\""), 3u);
  EXPECT_EQ(count("\"key\": \"eval_stop\""), 3u);
  std::string metrics = readFile(options.metricsOut);
  EXPECT_EQ(std::count(metrics.begin(), metrics.end(), '\n'), 5);
}

// A benchmark that skips its first evaluations (llama2_70b_lora's eval delay) and states extra
// log keys: the fixture's plan with eval_skip 1 and a declared lora_rank.
TEST_F(TrainingSessionTest, SkippedEvaluationsAndDeclaredLogKeys) {
  mlperf::plan::Plan plan;
  ASSERT_TRUE(loadPlan(fixture() + "/plan.pb", plan).isOk());
  plan.mutable_model()->set_eval_skip(1);
  mlperf::plan::Attribute *rank = plan.mutable_model()->add_mllog();
  rank->set_name("lora_rank");
  rank->set_i(16);
  SessionOptions options = baseOptions();
  options.plan = ::testing::TempDir() + "/session_skip.pb";
  std::ofstream(options.plan, std::ios::binary) << signPlan(plan);
  options.evalData = fixture() + "/text";
  options.mllog = ::testing::TempDir() + "/session_skip.mllog";
  std::unique_ptr<TrainingSession> session;
  Status status = openSession(options, session);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_NE(session->describe().find("eval every 2 steps from step 4"), std::string::npos)
      << session->describe();
  std::vector<bool> due;
  while (session->stepsTaken() < session->maxSteps()) {
    StepReport report;
    ASSERT_TRUE(session->step(report).isOk());
    due.push_back(session->evaluationDue());
    if (session->evaluationDue()) {
      EvalReport eval;
      ASSERT_TRUE(session->evaluate(eval).isOk());
    }
  }
  // Step 2's evaluation is skipped; step 4's is the first; the last step always evaluates.
  EXPECT_EQ(due, (std::vector<bool>{false, false, false, true, true}));
  ASSERT_TRUE(session->finish(false).isOk());
  std::string log = readFile(options.mllog);
  EXPECT_NE(log.find("\"key\": \"lora_rank\", \"value\": 16"), std::string::npos);
  EXPECT_NE(log.find("\"key\": \"opt_learning_rate_training_steps\", \"value\": 5"),
            std::string::npos);
  size_t starts = 0, stops = 0;
  for (size_t at = log.find("block_start"); at != std::string::npos;
       at = log.find("block_start", at + 1)) {
    ++starts;
  }
  for (size_t at = log.find("block_stop"); at != std::string::npos;
       at = log.find("block_stop", at + 1)) {
    ++stops;
  }
  EXPECT_EQ(starts, 2u); // one block up to step 4, one to step 5: each closed
  EXPECT_EQ(stops, 2u);
}

TEST_F(TrainingSessionTest, ResumeContinuesBitIdentically) {
  std::string dir = ::testing::TempDir();
  SessionOptions straight = baseOptions();
  straight.save = dir + "/straight.safetensors";
  std::unique_ptr<TrainingSession> session;
  ASSERT_TRUE(openSession(straight, session).isOk());
  std::vector<double> losses;
  for (int i = 0; i < 4; ++i) {
    StepReport report;
    ASSERT_TRUE(session->step(report).isOk());
    losses.push_back(report.metrics.loss);
  }
  ASSERT_TRUE(session->saveCheckpoint().isOk());

  SessionOptions half = baseOptions();
  half.save = dir + "/half.safetensors";
  ASSERT_TRUE(openSession(half, session).isOk());
  for (int i = 0; i < 2; ++i) {
    StepReport report;
    ASSERT_TRUE(session->step(report).isOk());
  }
  ASSERT_TRUE(session->saveCheckpoint().isOk());
  SessionOptions resumed = baseOptions();
  resumed.seed = -1; // the checkpoint's
  resumed.resume = half.save;
  resumed.save = dir + "/resumed.safetensors";
  Status status = openSession(resumed, session);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(session->stepsTaken(), 2);
  for (int i = 2; i < 4; ++i) {
    StepReport report;
    ASSERT_TRUE(session->step(report).isOk());
    EXPECT_EQ(report.metrics.loss, losses[i]) << "step " << i;
  }
  ASSERT_TRUE(session->saveCheckpoint().isOk());
  EXPECT_EQ(readFile(straight.save), readFile(resumed.save));
}

TEST_F(TrainingSessionTest, BadOptionsAndFilesAreNamed) {
  std::unique_ptr<TrainingSession> session;
  SessionOptions both = baseOptions();
  both.initFrom = "a.safetensors";
  both.resume = "b.safetensors";
  EXPECT_NE(openSession(both, session).message().find("--init-from and --resume are alternatives"),
            std::string::npos);
  SessionOptions order = baseOptions();
  order.dataOrder = "random";
  EXPECT_NE(
      openSession(order, session).message().find("--data-order must be shuffled or sequential"),
      std::string::npos);
  SessionOptions missing = baseOptions();
  missing.plan = fixture() + "/no-such-plan.pb";
  EXPECT_NE(openSession(missing, session).message().find("no-such-plan.pb"), std::string::npos);
  SessionOptions resume = baseOptions();
  resume.resume = fixture() + "/no-such.safetensors";
  EXPECT_NE(openSession(resume, session).message().find("no-such.safetensors"), std::string::npos);
  SessionOptions seedMismatch = baseOptions();
  std::string saved = ::testing::TempDir() + "/seed3.safetensors";
  seedMismatch.save = saved;
  ASSERT_TRUE(openSession(seedMismatch, session).isOk());
  ASSERT_TRUE(session->saveCheckpoint().isOk());
  SessionOptions other = baseOptions();
  other.seed = 4;
  other.resume = saved;
  EXPECT_NE(openSession(other, session).message().find("was trained with --seed 3"),
            std::string::npos);
}

TEST_F(TrainingSessionTest, AbandonClosesTheLogAsAborted) {
  SessionOptions options = baseOptions();
  options.mllog = ::testing::TempDir() + "/abandoned.mllog";
  std::unique_ptr<TrainingSession> session;
  ASSERT_TRUE(openSession(options, session).isOk());
  StepReport report;
  ASSERT_TRUE(session->step(report).isOk()); // opens a block that stays open
  session->abandon();
  std::string log = readFile(options.mllog);
  EXPECT_NE(log.find("\"key\": \"block_stop\""), std::string::npos);
  EXPECT_NE(log.find("\"key\": \"run_stop\""), std::string::npos);
  EXPECT_NE(log.find("\"status\": \"aborted\""), std::string::npos);
}

TEST_F(TrainingSessionTest, PrefetchedBatchesTrainAsBatchesReadInTheStep) {
  // Each step's batch is read on a host thread while the previous step runs: the same
  // batches, so the same losses to the bit, as reading each when its step starts.
  std::vector<double> losses[2];
  for (bool prefetch : {true, false}) {
    SessionOptions options = baseOptions();
    options.prefetch = prefetch;
    std::unique_ptr<TrainingSession> session;
    ASSERT_TRUE(openSession(options, session).isOk());
    for (int i = 0; i < 5; ++i) {
      StepReport report;
      Status status = session->step(report);
      ASSERT_TRUE(status.isOk()) << status.toString();
      losses[prefetch].push_back(report.metrics.loss);
      EXPECT_GE(report.inputWaitSeconds, 0.0);
    }
  }
  EXPECT_EQ(losses[0], losses[1]);
  // A session closed with a read in flight waits for it.
  SessionOptions options = baseOptions();
  std::unique_ptr<TrainingSession> session;
  ASSERT_TRUE(openSession(options, session).isOk());
  StepReport report;
  ASSERT_TRUE(session->step(report).isOk());
  session.reset();
}
