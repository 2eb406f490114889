//===- AuditTest.cpp - Rewrite classes, certificates, rule values ----------===//

#include "compiler/Audit/Certificate.h"
#include "compiler/Audit/ClosedRules.h"
#include "compiler/Audit/Evidence.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Support/RewriteClass.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlperf;

namespace {

TEST(RewriteClass, EveryPassOfEveryPipelineDeclaresOne) {
  std::unique_ptr<mlir::MLIRContext> context = createModelContext();
  TrainStepOptions single;
  single.fuseAddRMSNorm = single.fuseRopeQK = true;
  TrainStepOptions distributed = single;
  distributed.mesh.gpusPerNode = 8;
  distributed.mesh.dp = distributed.mesh.tp = distributed.mesh.pp = 2;
  distributed.recompute = "selective";
  for (const TrainStepOptions &options : {single, distributed}) {
    mlir::PassManager pm(context.get());
    buildTrainStepPipeline(pm, options);
    buildPlanPipeline(pm, options);
    for (mlir::Pass &pass : pm.getPasses()) {
      const PassClassDeclaration *declared = findRewriteClass(pass.getArgument());
      ASSERT_NE(declared, nullptr) << pass.getArgument().str() << " declares no rewrite class";
      EXPECT_FALSE(declared->rationale.empty()) << pass.getArgument().str();
    }
  }
  // One declaration per pass.
  std::vector<PassClassDeclaration> all = rewriteClassDeclarations();
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_NE(all[i - 1].pass, all[i].pass) << "declared twice";
  }
  EXPECT_EQ(findRewriteClass("dist-partition")->rewriteClass, RewriteClass::kReassociation);
  EXPECT_EQ(findRewriteClass("tg-set-precision")->rewriteClass, RewriteClass::kPrecision);
  EXPECT_EQ(findRewriteClass("no-such-pass"), nullptr);
}

TEST(Certificate, CountsChangesByKindAndRoundTripsThroughJSON) {
  IRCensus before, after;
  before.ops = {{"tg.softmax", 2}, {"tg.matmul", 4}};
  after.ops = {{"tg.attention", 1}, {"tg.matmul", 2}};
  before.reductions = {{"tg.softmax", 2}, {"tg.matmul", 4}};
  after.reductions = {{"tg.attention", 1}, {"tg.matmul", 2}};
  before.parameters = {{"@m::w", "tensor<4x4xbf16>"}};
  after.parameters = {{"@m::w", "tensor<4x4xf32>"}};
  after.functions = {"@m::@forward_backward"};
  Certificate certificate = certify("tg-fuse-attention", before, after);
  ASSERT_TRUE(certificate.declared);
  EXPECT_EQ(certificate.ops.size(), 3u);
  EXPECT_EQ(describeCertificate(certificate),
            "ops +1 -4 (tg.attention +1, tg.matmul -2, tg.softmax -2); reductions +1 -4 "
            "(tg.attention +1, tg.matmul -2, tg.softmax -2); functions added "
            "@m::@forward_backward; parameters 1 retyped bf16 -> f32");
  Certificate read;
  ASSERT_TRUE(certificateFromJSON(certificateToJSON(certificate), read));
  EXPECT_EQ(certificateToJSON(read), certificateToJSON(certificate));
  EXPECT_FALSE(certificateFromJSON(llvm::json::Object{{"pass", "x"}}, read));
  EXPECT_EQ(describeCertificate(certify("cse", after, after)), "no change");
}

// A plan program's text with `middle` between a fixed first and last command.
std::string planWith(const std::string &middle, const std::string &offset = "") {
  return R"mlir(
plan.plan @p attributes {format_version = 10 : i64, model = {}} {
  plan.arena @persistent persistent
  plan.arena @activations activations
  plan.buffer @out : tensor<64xf32> in @persistent
  plan.buffer @g : tensor<64xf32> in @activations)mlir" +
         offset + R"mlir(
  plan.buffer @t : tensor<64xf32> in @activations
  plan.buffer @h : tensor<64xf32> in @activations
  plan.program @step inputs [] outputs [@out] attributes {streams = 2 : i64} {
    plan.command "fill" [] -> [@g] {kernel_attrs = {value = 1.0 : f64}}
)mlir" + middle +
         R"mlir(
    plan.command "add" [@g, @t] -> [@out]
  }
})mlir";
}

// A pass that only reorders commands, moves one to the other stream or sets attributes changes
// no op count; its certificate must still say what it did (plan-schedule, plan-memory).
TEST(Certificate, SeesCommandsMovedOrRestreamedAndOpsModified) {
  std::unique_ptr<mlir::MLIRContext> context = createModelContext();
  auto census = [&](const std::string &text) {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(text, context.get());
    EXPECT_TRUE(module);
    return module ? takeCensus(*module) : IRCensus();
  };
  const std::string
      a = R"mlir(    plan.command "fill" [] -> [@t] {kernel_attrs = {value = 2.0 : f64}}
)mlir",
      b = R"mlir(    plan.command "scale" [@g] -> [@g] {kernel_attrs = {factor = 3.0 : f64}}
)mlir",
      c = R"mlir(    plan.command "fill" [] -> [@h] {kernel_attrs = {value = 5.0 : f64}}
)mlir",
      cOnStream1 =
          R"mlir(    plan.command "fill" [] -> [@h] {kernel_attrs = {value = 5.0 : f64}, stream = 1 : i64}
)mlir";
  IRCensus before = census(planWith(a + b + c));
  Certificate same = certify("plan-schedule", before, census(planWith(a + b + c)));
  EXPECT_TRUE(same.changesNothing());
  EXPECT_EQ(describeCertificate(same), "no change");

  Certificate swapped = certify("plan-schedule", before, census(planWith(b + a + c)));
  EXPECT_FALSE(swapped.changesNothing());
  EXPECT_EQ(swapped.commandsMoved, 1);
  EXPECT_EQ(swapped.programsReordered, 1);
  EXPECT_EQ(describeCertificate(swapped), "commands moved 1 in 1 program");

  Certificate streams = certify("plan-schedule", before, census(planWith(a + b + cOnStream1)));
  EXPECT_EQ(streams.commandsRestreamed, 1);
  EXPECT_EQ(streams.commandsMoved, 0);
  EXPECT_EQ(describeCertificate(streams),
            "ops modified 1 (plan.command:fill 1); commands moved to another stream 1");

  Certificate placed = certify("plan-memory", before, census(planWith(a + b + c, " at 0")));
  EXPECT_EQ(describeCertificate(placed), "ops modified 1 (plan.buffer 1)");

  Certificate read;
  ASSERT_TRUE(certificateFromJSON(certificateToJSON(streams), read));
  EXPECT_EQ(certificateToJSON(read), certificateToJSON(streams));
}

TEST(ClosedRules, PrintsValuesAsPythonAndTheCheckerDo) {
  EXPECT_EQ(formatRuleValue(1e-05), "1e-05");
  EXPECT_EQ(formatRuleValue(0.9), "0.9");
  EXPECT_EQ(formatRuleValue(1.0), "1.0");
  EXPECT_EQ(formatRuleValue(0.0008), "0.0008");
  EXPECT_EQ(formatRuleValue(8e-05), "8e-05");
  EXPECT_EQ(formatRuleValue(0.0001), "0.0001");
  EXPECT_EQ(formatRuleValue(1200000.0), "1200000.0");
  EXPECT_EQ(formatRuleValue(1e16), "1e+16");
  EXPECT_EQ(formatRuleValue(123.25), "123.25");
  EXPECT_EQ(formatRuleValue(-0.3), "-0.3");
  EXPECT_EQ(formatRuleValue(2.2222222222222225e-06), "2.2222222222222225e-06");
  ASSERT_NE(findBenchmarkRules("llama31_8b"), nullptr);
  EXPECT_EQ(*findBenchmarkRules("llama31_8b")->epsilon, 1e-05);
  ASSERT_NE(findBenchmarkRules("gpt_oss_20b"), nullptr);
  EXPECT_EQ(findBenchmarkRules("gpt_oss_20b")->weightDecayParams, "matrices");
  EXPECT_EQ(findBenchmarkRules("deepseekv3_671b"), nullptr);
}

TEST(Evidence, ReducesEachMeshDegreeToTwoAndKeepsTheStrategy) {
  rt::MeshShape mesh;
  mesh.nodes = 256;
  mesh.gpusPerNode = 8;
  mesh.dp = 16;
  mesh.tp = 8;
  mesh.pp = 16;
  mesh.vp = 4;
  mesh.sequenceParallel = true;
  mesh.zero = 1;
  rt::MeshShape reduced = reducedMesh(mesh, /*layers=*/4);
  EXPECT_EQ(reduced.describe(), "1x8 dp=2 tp=2 pp=2 vp=2 sp=on zero=1");
  EXPECT_EQ(reducedMesh(mesh, 2).describe(), "1x8 dp=2 tp=2 pp=2 vp=1 sp=on zero=1");
  EXPECT_EQ(evidenceTolerance(RewriteClass::kExact, "bf16"), 0.0);
  EXPECT_EQ(evidenceTolerance(RewriteClass::kReassociation, "fp32"), 1e-5);
}

} // namespace
