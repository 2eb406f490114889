//===- Audit.cpp - mlperfc audit: does a plan compute the reference's math -*- C++ -*-===//

#include "compiler/Audit/Audit.h"

#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Audit/Certificate.h"
#include "compiler/Audit/ClosedRules.h"
#include "compiler/Audit/CompileRecord.h"
#include "compiler/Audit/Evidence.h"
#include "compiler/Pipelines/DeviceFit.h"
#include "compiler/Plan/PlanEmit.h"
#include "compiler/Support/ModelFile.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/plan/PlanLoader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ScopedPrinter.h" // llvm::to_string
#include "llvm/Support/WithColor.h"

#include <fstream>
#include <map>

using namespace mlir;

namespace mlperf {
namespace {

/// Census of the module before the first pass and after every top-level pass.
class CensusInstrumentation : public PassInstrumentation {
public:
  struct Entry {
    std::string pass;
    IRCensus census;
  };
  explicit CensusInstrumentation(std::vector<Entry> &entries) : entries(entries) {}
  void runBeforePass(Pass *, Operation *op) override {
    if (entries.empty() && !op->getParentOp()) {
      entries.push_back({"input", takeCensus(cast<ModuleOp>(op))});
    }
  }
  void runAfterPass(Pass *pass, Operation *op) override {
    if (!op->getParentOp()) {
      entries.push_back({pass->getArgument().str(), takeCensus(cast<ModuleOp>(op))});
    }
  }

private:
  std::vector<Entry> &entries;
};

llvm::raw_ostream &error() { return llvm::WithColor::error(llvm::errs(), "mlperfc audit"); }

/// The top-level passes `options` compiles with, in order.
std::vector<std::string> pipelinePasses(MLIRContext *context, const TrainStepOptions &options) {
  PassManager pm(context);
  buildTrainStepPipeline(pm, options);
  buildPlanPipeline(pm, options);
  std::vector<std::string> passes;
  for (Pass &pass : pm.getPasses()) {
    passes.push_back(pass.getArgument().str());
  }
  return passes;
}

/// The structure the tiny variant must share with the declaration: per function the op kinds
/// in order; per parameter its name, repetition and declared sharding (not its init: the
/// evidence draws stand-ins for checkpoint weights).
void structureOf(tg::ModelOp model, std::vector<std::string> &lines) {
  for (auto param : model.getBody().front().getOps<tg::ParamOp>()) {
    std::string line =
        "parameter " + param.getSymName().str() + (param.getRepeat() ? " per layer" : "");
    if (auto shard = param.getShardAttr()) {
      line += " shard " + llvm::to_string(shard);
    }
    lines.push_back(line);
  }
  for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
    func.walk([&](Operation *op) {
      if (op != func.getOperation()) {
        lines.push_back("@" + func.getSymName().str() + ": " + op->getName().getStringRef().str());
      }
    });
  }
}

/// Empty when `tiny` is `declaration` at other sizes, else the first difference.
std::string structureDifference(tg::ModelOp declaration, tg::ModelOp tiny) {
  std::vector<std::string> a, b;
  structureOf(declaration, a);
  structureOf(tiny, b);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    std::string left = i < a.size() ? a[i] : "(nothing)";
    std::string right = i < b.size() ? b[i] : "(nothing)";
    if (left != right) {
      return "the declaration has '" + left + "' where the tiny variant has '" + right + "'";
    }
  }
  return "";
}

/// Where the tiny variant of `declaration` is: MODEL.mlir itself when its model is one
/// (name ending in _tiny), else <name>_tiny.mlir or <benchmark>_tiny.mlir next to it.
std::string findTinyVariant(const std::string &modelPath, tg::ModelOp model) {
  llvm::StringRef name = model.getSymName();
  if (name.ends_with("_tiny")) {
    return modelPath;
  }
  auto benchmark = *model.getBody().front().getOps<tg::BenchmarkOp>().begin();
  llvm::SmallString<256> directory(modelPath);
  llvm::sys::path::remove_filename(directory);
  for (std::string candidate :
       {name.str() + "_tiny.mlir", benchmark.getName().str() + "_tiny.mlir"}) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, candidate);
    if (llvm::sys::fs::exists(path)) {
      return std::string(path);
    }
  }
  return "";
}

struct PassRow {
  std::string pass;
  Certificate certificate;
  /// From the tiny variant's compile, pass for pass; none: the distributed run covers it.
  std::optional<PassEvidence> evidence;
};

std::string describeOptions(const TrainStepOptions &options, const std::string &device) {
  auto onOff = [](bool on) { return on ? "on" : "off"; };
  std::string text =
      llvm::formatv("precision {0}, {1}, {2} micro-batches per step and rank, "
                    "fuse-attention {3}, fuse-swiglu {4}, fuse-cross-entropy {5}, "
                    "fuse-add-rms-norm {6}, fuse-rope-qk {7}, recompute {8}",
                    options.precision, options.mesh.describe(), options.accumulationSteps,
                    onOff(options.fuseAttention), onOff(options.fuseSwiglu),
                    onOff(options.fuseCrossEntropy), onOff(options.fuseAddRMSNorm),
                    onOff(options.fuseRopeQK), options.recompute)
          .str();
  if (!device.empty()) {
    text += ", device " + device;
  }
  return text;
}

std::string formatDifference(double value) {
  if (value == 0) {
    return "0";
  }
  return llvm::formatv("{0:e2}", value).str();
}

llvm::json::Value evidenceJSON(const PassEvidence &evidence) {
  llvm::json::Object object{{"computed", evidence.computed}, {"ok", evidence.ok()}};
  if (evidence.computed) {
    object["compared"] = evidence.what;
    object["max_relative_difference"] = evidence.difference;
    object["tolerance"] = evidence.tolerance;
  } else {
    object["not_computed"] = evidence.notComputed;
  }
  return object;
}

} // namespace

bool loadStagePlans(const std::string &path, std::vector<plan::Plan> &plans,
                    std::vector<std::string> &paths, std::string &message) {
  plans.clear();
  paths.clear();
  std::string first = path;
  if (!llvm::sys::fs::exists(path) && llvm::sys::fs::exists(rt::stagePlanPath(path, 0))) {
    first = rt::stagePlanPath(path, 0);
  }
  plan::Plan plan;
  rt::Status status = rt::loadPlan(first, plan);
  if (!status.isOk()) {
    message = status.message();
    return false;
  }
  int64_t stages = rt::planMesh(plan).pp;
  if (stages > 1 && first == path) {
    message = path + " is the plan of pipeline stage " + std::to_string(plan.pipeline_stage()) +
              " of " + std::to_string(stages) + ": give the name it was compiled to (" +
              "without .stage<k>), whose stage files are audited together";
    return false;
  }
  plans.push_back(std::move(plan));
  paths.push_back(first);
  for (int64_t stage = 1; stage < stages; ++stage) {
    std::string stagePath = rt::stagePlanPath(path, stage);
    status = rt::loadPlan(stagePath, plan);
    if (!status.isOk()) {
      message = status.message();
      return false;
    }
    plans.push_back(std::move(plan));
    paths.push_back(stagePath);
  }
  for (size_t stage = 0; stage < plans.size(); ++stage) {
    if (plans[stage].pipeline_stage() != static_cast<int64_t>(stage)) {
      message = paths[stage] + " is the plan of pipeline stage " +
                std::to_string(plans[stage].pipeline_stage()) + ", expected stage " +
                std::to_string(stage);
      return false;
    }
  }
  return true;
}

AuditResult runAudit(const AuditInput &input, llvm::raw_ostream &os) {
  MLIRContext *context = input.declaration.getContext();
  tg::ModelOp model = getModel(input.declaration);
  if (!model || input.plans.empty()) {
    error() << "nothing to audit\n";
    return AuditResult::kCannotAudit;
  }
  auto benchmarkOp = *model.getBody().front().getOps<tg::BenchmarkOp>().begin();
  std::string benchmark = benchmarkOp.getName().str();

  // 1. How the plan was compiled.
  TrainStepOptions options;
  std::string device;
  rt::Status recorded =
      compileOptionsOf(input.plans.front(), input.planPaths.front(), options, device);
  if (!recorded.isOk()) {
    error() << recorded.message() << "\n";
    return AuditResult::kCannotAudit;
  }
  llvm::StringRef planModel = input.plans.front().model().name();
  if (planModel != model.getSymName() &&
      !(planModel.starts_with(model.getSymName()) &&
        planModel.drop_front(model.getSymName().size()).starts_with(".stage"))) {
    error() << input.planPaths.front() << " is a plan of @" << input.plans.front().model().name()
            << ", not of @" << model.getSymName() << " (" << input.modelPath << ")\n";
    return AuditResult::kCannotAudit;
  }
  // The recorded options are plan data: checked as `mlperfc compile` checks its command line
  // before anything compiles with them (an edited plan must not make the audit build a
  // pipeline of 2^40 micro-batches).
  {
    std::string problem;
    auto batchOp = *model.getBody().front().getOps<tg::BatchOp>().begin();
    int64_t declaredMicro = batchOp.getMicroBatchSizeAttr().getInt();
    rt::Status mesh = rt::validateMesh(options.mesh, parallelDims(model), /*dpGiven=*/true);
    if (options.precision == "fp8") {
      // Not yet: tg-fp8's numeric evidence (the interpreter's train state has no fp8 scaling
      // state) and the closed rules on fp8 plans (their scaling-state roles, fp8 weights).
      error() << input.planPaths.front()
              << " is an fp8 plan (--precision fp8): the audit does not support fp8 plans yet\n";
      return AuditResult::kCannotAudit;
    }
    if (options.precision != "bf16" && options.precision != "fp32") {
      problem = "precision '" + options.precision + "'";
    } else if (!isRecomputePolicy(options.recompute)) {
      problem = "recompute policy '" + options.recompute + "'";
    } else if (!mesh.isOk()) {
      problem = "mesh: " + mesh.message();
    } else if (options.mesh.microBatch != declaredMicro) {
      problem = "micro-batch " + std::to_string(options.mesh.microBatch) +
                ", the declaration's is " + std::to_string(declaredMicro);
    } else if (options.accumulationSteps !=
               accumulationStepsOnOneRank(model) / std::max<int64_t>(1, options.mesh.dp)) {
      problem =
          std::to_string(options.accumulationSteps) +
          " micro-batches per step and rank, the declaration's batch gives " +
          std::to_string(accumulationStepsOnOneRank(model) / std::max<int64_t>(1, options.mesh.dp));
    } else if (options.bucketBytes < 0 || options.scheduleMemoryLimit < 0 ||
               options.maxOutstanding < 1) {
      problem = "bucket bytes " + std::to_string(options.bucketBytes) + ", schedule limit " +
                std::to_string(options.scheduleMemoryLimit) + ", collectives in flight " +
                std::to_string(options.maxOutstanding);
    }
    if (!problem.empty()) {
      error() << input.planPaths.front() << " records compile options that " << input.modelPath
              << " cannot be compiled with (" << problem
              << "): the plan was edited or is not of this declaration\n";
      return AuditResult::kCannotAudit;
    }
  }
  std::vector<std::string> expectedPasses = pipelinePasses(context, options);

  // 2. The passes: census before and after each, from a compile or from the dumps.
  std::vector<CensusInstrumentation::Entry> census;
  std::vector<AuditFinding> findings; // violations outside the rules section
  std::vector<plan::Plan> rebuilt;
  std::vector<std::string> readCertificates; // from the dumps, per pass (JSON text)
  std::vector<bool> dumpChanged;             // from the dumps, per pass: its text differs
  if (input.dumpDirectory.empty()) {
    FailureOr<CompiledStep> step = compileStep(input.declaration, options, [&](PassManager &pm) {
      pm.addInstrumentation(std::make_unique<CensusInstrumentation>(census));
      return success();
    });
    if (failed(step)) {
      error() << input.modelPath << " does not compile with the options " << input.planPaths[0]
              << " records (errors above)\n";
      return AuditResult::kCannotAudit;
    }
    for (auto planOp : step->module->getOps<plan_ir::PlanOp>()) {
      FailureOr<plan::Plan> plan = emitPlan(planOp);
      if (failed(plan)) {
        error() << "the compiled plan cannot be emitted (errors above)\n";
        return AuditResult::kCannotAudit;
      }
      rebuilt.push_back(std::move(*plan));
    }
    (void)step->module.release(); // the process frees it (large models)
  } else {
    std::error_code ec;
    std::map<std::string, std::string> dumps; // "NN-pass" -> path of the .mlir
    for (llvm::sys::fs::directory_iterator entry(input.dumpDirectory, ec), end; entry != end && !ec;
         entry.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(entry->path());
      if (name.size() > 3 && llvm::isDigit(name[0]) && llvm::isDigit(name[1]) && name[2] == '-' &&
          name.ends_with(".mlir")) {
        dumps[name.drop_back(5).str()] = entry->path();
      }
    }
    if (ec || dumps.empty()) {
      error() << "cannot read IR dumps in " << input.dumpDirectory << ": "
              << (ec ? ec.message() : std::string("no NN-<pass>.mlir files"))
              << " (write them with mlperfc compile --dump-ir)\n";
      return AuditResult::kCannotAudit;
    }
    OwningOpRef<ModuleOp> last;
    std::string lastText;
    for (const auto &[stem, path] : dumps) {
      auto text = llvm::MemoryBuffer::getFile(path);
      std::string dumpText = text ? (*text)->getBuffer().str() : std::string();
      OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, context);
      if (!module) {
        error() << "cannot parse the IR dump " << path << " (errors above)\n";
        return AuditResult::kCannotAudit;
      }
      std::string pass = stem.substr(3);
      census.push_back({pass, takeCensus(*module)});
      for (AuditFinding &finding : checkIRFormats(*module, llvm::sys::path::filename(path))) {
        findings.push_back(std::move(finding));
      }
      if (census.size() > 1) {
        std::string certificatePath = path.substr(0, path.size() - 5) + ".certificate.json";
        auto buffer = llvm::MemoryBuffer::getFile(certificatePath);
        readCertificates.push_back(buffer ? (*buffer)->getBuffer().str() : std::string());
        dumpChanged.push_back(dumpText != lastText);
      }
      lastText = std::move(dumpText);
      last = std::move(module);
    }
    if (census.front().pass != "input") {
      error() << input.dumpDirectory << " has no 00-input.mlir\n";
      return AuditResult::kCannotAudit;
    }
    for (auto planOp : last->getOps<plan_ir::PlanOp>()) {
      FailureOr<plan::Plan> plan = emitPlan(planOp);
      if (failed(plan)) {
        error() << "the last IR dump's plan cannot be emitted (errors above)\n";
        return AuditResult::kCannotAudit;
      }
      rebuilt.push_back(std::move(*plan));
    }
  }
  std::vector<std::string> passNames;
  for (size_t i = 1; i < census.size(); ++i) {
    passNames.push_back(census[i].pass);
  }
  if (passNames != expectedPasses) {
    findings.push_back({"passes", false,
                        "the passes (" + llvm::join(passNames, ", ") +
                            ") are not the pipeline the plan's options build (" +
                            llvm::join(expectedPasses, ", ") + ")"});
  }
  std::vector<PassRow> rows;
  for (size_t i = 1; i < census.size(); ++i) {
    PassRow row;
    row.pass = census[i].pass;
    row.certificate = certify(row.pass, census[i - 1].census, census[i].census);
    if (!row.certificate.declared) {
      findings.push_back({"passes", false,
                          "pass " + row.pass +
                              " declares no rewrite class: it cannot be "
                              "shown to keep the reference's math"});
    }
    // A pass that changed its dump must say what it changed: a certificate of "no change"
    // over a changed dump means the census misses what the pass does.
    if (!dumpChanged.empty() && dumpChanged[i - 1] && row.certificate.changesNothing()) {
      findings.push_back(
          {"certificates", false,
           llvm::formatv("{0:2}-{1}.mlir differs from the dump before it, but its certificate "
                         "says no change: the certificate does not describe the pass",
                         i, row.pass)
               .str()});
    }
    if (!readCertificates.empty()) {
      const std::string &text = readCertificates[i - 1];
      llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
      Certificate read;
      if (!parsed) {
        llvm::consumeError(parsed.takeError());
        findings.push_back(
            {"certificates", false,
             llvm::formatv("{0:2}-{1}.certificate.json is missing or unreadable", i, row.pass)
                 .str()});
      } else if (!certificateFromJSON(*parsed, read) ||
                 certificateToJSON(read) != certificateToJSON(row.certificate)) {
        findings.push_back({"certificates", false,
                            llvm::formatv("{0:2}-{1}.certificate.json does not match the change "
                                          "between its dumps",
                                          i, row.pass)
                                .str()});
      }
    }
    rows.push_back(std::move(row));
  }

  // 3. Numeric evidence on the tiny variant.
  std::string tinyPath =
      input.tinyPath.empty() ? findTinyVariant(input.modelPath, model) : input.tinyPath;
  if (tinyPath.empty()) {
    error() << "no tiny variant of @" << model.getSymName() << " next to " << input.modelPath
            << " (" << model.getSymName() << "_tiny.mlir or " << benchmark
            << "_tiny.mlir): give one with --tiny\n";
    return AuditResult::kCannotAudit;
  }
  ModelFile tinyFile(*context, tinyPath);
  OwningOpRef<ModuleOp> tinyModule = tinyFile.load();
  if (!tinyModule) {
    error() << "cannot read the tiny variant " << tinyPath << " (errors above)\n";
    return AuditResult::kCannotAudit;
  }
  tg::ModelOp tinyModel = getModel(*tinyModule);
  if (std::string difference = structureDifference(model, tinyModel); !difference.empty()) {
    error() << tinyPath << " is not @" << model.getSymName() << " at test sizes: " << difference
            << "\n";
    return AuditResult::kCannotAudit;
  }
  TrainStepOptions tinyOptions = options;
  tinyOptions.mesh.microBatch =
      (*tinyModel.getBody().front().getOps<tg::BatchOp>().begin()).getMicroBatchSizeAttr().getInt();
  FailureOr<EvidenceReport> evidence = gatherEvidence(*tinyModule, tinyOptions);
  if (failed(evidence)) {
    error() << "the evidence on " << tinyPath << " failed (errors above)\n";
    return AuditResult::kCannotAudit;
  }
  // The evidence compile runs the same passes as this one, or on one rank all but the
  // distributed ones, in order.
  size_t next = 0;
  for (PassRow &row : rows) {
    if (next < evidence->passes.size() && evidence->passes[next].pass == row.pass) {
      row.evidence = evidence->passes[next++];
    }
    // Without pipeline stages in the evidence mesh (an interleaved pipeline), what the passes
    // do to stages is evidenced by the distributed run.
    if (options.mesh.pp > 1 && !evidence->passesOnStages && row.evidence) {
      if (row.pass == "dist-pipeline") {
        row.evidence.reset();
      } else if (row.pass == "tg-recompute" || row.pass == "tg-train-step") {
        row.evidence->what += " (without pipeline stages; with them: the distributed run below)";
      }
    }
  }
  for (const PassRow &row : rows) {
    if (row.evidence && !row.evidence->ok()) {
      findings.push_back(
          {"evidence", false,
           llvm::formatv("{0} ({1}): max relative difference {2} exceeds the class's tolerance "
                         "{3} ({4})",
                         row.pass, rewriteClassName(row.evidence->rewriteClass),
                         formatDifference(row.evidence->difference),
                         formatDifference(row.evidence->tolerance), row.evidence->what)
               .str()});
    }
  }
  if (evidence->distributed && !evidence->distributed->ok()) {
    findings.push_back({"evidence", false,
                        llvm::formatv("the distributed passes: max relative difference {0} "
                                      "exceeds {1} ({2})",
                                      formatDifference(evidence->distributed->difference),
                                      formatDifference(evidence->distributed->tolerance),
                                      evidence->distributed->what)
                            .str()});
  }

  // 4. The rules, on the plan that will run (and on the one the dumps end in).
  std::vector<AuditFinding> rules =
      checkClosedRules(model, input.plans, findBenchmarkRules(benchmark));
  if (!input.dumpDirectory.empty() && !rebuilt.empty()) {
    for (AuditFinding &finding : checkClosedRules(model, rebuilt, findBenchmarkRules(benchmark))) {
      if (!finding.ok) {
        finding.message = "in the last IR dump's plan: " + finding.message;
        rules.push_back(std::move(finding));
      }
    }
  }

  // 5. The plan is what the declaration compiles to.
  AuditFinding identity{"plan.recompiled", true, ""};
  if (rebuilt.size() != input.plans.size()) {
    identity.ok = false;
    identity.message =
        llvm::formatv("the compile gives {0} plans, {1} given", rebuilt.size(), input.plans.size());
  } else {
    for (size_t stage = 0; stage < rebuilt.size(); ++stage) {
      std::string expected = rt::planFingerprint(rebuilt[stage]);
      std::string found = rt::planFingerprint(input.plans[stage]);
      if (expected != found) {
        identity.ok = false;
        identity.message += (identity.message.empty() ? "" : "; ") + input.planPaths[stage] + " (" +
                            found + ") is not what " +
                            (input.dumpDirectory.empty() ? input.modelPath : "the last IR dump") +
                            " compiles to with its recorded options (" + expected +
                            "); the first difference, expected -> found: " +
                            rt::planDifference(rebuilt[stage], input.plans[stage]) +
                            ". A plan compiled from another declaration (or edited, or by another "
                            "mlperfc) differs so";
      }
    }
    if (identity.ok) {
      identity.message =
          llvm::formatv("{0} is what {1} compiles to with its recorded options "
                        "({2})",
                        input.plans.size() == 1 ? input.planPaths[0]
                                                : std::string("every stage plan"),
                        input.dumpDirectory.empty() ? input.modelPath : "the last IR dump",
                        rt::planFingerprint(input.plans[0]))
              .str();
    }
  }
  findings.push_back(identity);

  std::vector<const AuditFinding *> violations;
  for (const std::vector<AuditFinding> *list : {&rules, &findings}) {
    for (const AuditFinding &finding : *list) {
      if (!finding.ok) {
        violations.push_back(&finding);
      }
    }
  }
  AuditResult result = violations.empty() ? AuditResult::kCompliant : AuditResult::kViolations;

  if (input.json) {
    llvm::json::Array passes;
    for (const PassRow &row : rows) {
      llvm::json::Object object{{"pass", row.pass},
                                {"class", row.certificate.declared
                                              ? rewriteClassName(row.certificate.rewriteClass).str()
                                              : std::string("undeclared")},
                                {"certificate", certificateToJSON(row.certificate)},
                                {"summary", describeCertificate(row.certificate)}};
      if (row.evidence) {
        object["evidence"] = evidenceJSON(*row.evidence);
      } else {
        object["evidence"] = llvm::json::Object{{"distributed", true}};
      }
      passes.push_back(std::move(object));
    }
    auto list = [](const std::vector<AuditFinding> &findings, bool onlyViolations) {
      llvm::json::Array array;
      for (const AuditFinding &finding : findings) {
        if (!onlyViolations || !finding.ok) {
          array.push_back(llvm::json::Object{
              {"rule", finding.rule}, {"ok", finding.ok}, {"message", finding.message}});
        }
      }
      return array;
    };
    llvm::json::Array violationList;
    for (const AuditFinding *finding : violations) {
      violationList.push_back(
          llvm::json::Object{{"rule", finding->rule}, {"message", finding->message}});
    }
    llvm::json::Object report{
        {"model", input.modelPath},
        {"model_name", model.getSymName().str()},
        {"plans", llvm::json::Array(input.planPaths)},
        {"benchmark", benchmark},
        {"compile_options", describeOptions(options, device)},
        {"declared_hyperparameters", declaredHyperparameters(model)},
        {"benchmark_configuration", model.getSymName() == benchmarkOp.getName()},
        {"source", input.dumpDirectory.empty() ? std::string("recompiled")
                                               : "ir dumps in " + input.dumpDirectory},
        {"evidence_model", tinyPath},
        {"evidence_configuration", evidence->configuration},
        {"evidence_mesh", evidence->passMesh.empty() ? std::string("1x1") : evidence->passMesh},
        {"passes", std::move(passes)},
        {"rules", list(rules, false)},
        {"checks", list(findings, false)},
        {"violations", std::move(violationList)},
        {"compliant", result == AuditResult::kCompliant},
    };
    if (evidence->distributed) {
      llvm::json::Object distributed = *evidenceJSON(*evidence->distributed).getAsObject();
      distributed["mesh"] = evidence->distributedMesh;
      report["distributed_evidence"] = std::move(distributed);
    }
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
    return result;
  }

  os << "mlperfc audit: @" << model.getSymName() << " (" << input.modelPath << ") against "
     << (input.planPaths.size() <= 2
             ? llvm::join(input.planPaths, ", ")
             : input.planPaths.front() + " ... " + input.planPaths.back() + " (" +
                   std::to_string(input.planPaths.size()) + " pipeline stages)")
     << "\n";
  os << "  benchmark " << benchmark << ", closed division; compiled with "
     << describeOptions(options, device) << "\n";
  os << "  passes "
     << (input.dumpDirectory.empty() ? "compiled again from the declaration"
                                     : "read from the IR dumps in " + input.dumpDirectory)
     << "; evidence on " << evidence->tinyModel << " (" << tinyPath
     << "): " << evidence->configuration << ", pass by pass "
     << (evidence->passMesh.empty() ? std::string("on one rank")
                                    : "on every rank of " + evidence->passMesh)
     << "\n\n";
  os << "passes (class; certificate; evidence: max relative difference, tolerance)\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const PassRow &row = rows[i];
    os << llvm::formatv("  {0,2} {1,-24} {2,-13} ", i + 1, row.pass,
                        row.certificate.declared ? rewriteClassName(row.certificate.rewriteClass)
                                                 : llvm::StringRef("UNDECLARED"))
       << describeCertificate(row.certificate) << "\n";
    if (row.evidence && row.evidence->computed) {
      os << "       evidence " << (row.evidence->ok() ? "ok" : "FAIL") << ": "
         << formatDifference(row.evidence->difference)
         << " <= " << formatDifference(row.evidence->tolerance) << ": " << row.evidence->what
         << "\n";
    } else if (row.evidence) {
      os << "       evidence not computed: " << row.evidence->notComputed << "\n";
    } else {
      os << "       evidence: the distributed run below\n";
    }
  }
  if (evidence->distributed) {
    const PassEvidence &d = *evidence->distributed;
    os << "  distributed passes together, on " << evidence->distributedMesh << ":\n";
    if (d.computed) {
      os << "       evidence " << (d.ok() ? "ok" : "FAIL") << ": " << formatDifference(d.difference)
         << " <= " << formatDifference(d.tolerance) << ": " << d.what << "\n";
    } else {
      os << "       evidence not computed: " << d.notComputed << "\n";
    }
  }
  os << "\nrules ("
     << (findBenchmarkRules(benchmark) ? findBenchmarkRules(benchmark)->source
                                       : "no rule table for " + benchmark)
     << ")\n";
  for (const AuditFinding &finding : rules) {
    os << "  " << (finding.ok ? "ok  " : "FAIL") << " " << finding.rule << ": " << finding.message
       << "\n";
  }
  os << "\nchecks\n";
  for (const AuditFinding &finding : findings) {
    os << "  " << (finding.ok ? "ok  " : "FAIL") << " " << finding.rule << ": " << finding.message
       << "\n";
  }
  if (result == AuditResult::kCompliant) {
    os << "\nresult: compliant\n";
  } else {
    os << "\nresult: " << violations.size() << " violation" << (violations.size() == 1 ? "" : "s")
       << "\n";
    for (const AuditFinding *finding : violations) {
      os << "violation: " << finding->rule << ": " << finding->message << "\n";
    }
  }
  return result;
}

} // namespace mlperf
