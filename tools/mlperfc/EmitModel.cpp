//===- EmitModel.cpp - mlperfc emit-model ----------------------*- C++ -*-===//
//
// Writes a model declaration from a preset and --set overrides. The text is parsed and
// verified before anything is written, so a configuration the verifier rejects never
// reaches disk; files are written atomically.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "compiler/Models/Llama.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace mlperf::cli {

cl::SubCommand emitModelCommand(
    "emit-model",
    "Write a model declaration (family llama3, llama2, llama2-lora or gpt-oss) for any "
    "consistent "
    "configuration");

static cl::opt<std::string> emitFamily(cl::Positional, cl::Required, cl::sub(emitModelCommand),
                                       cl::desc("<family>"), cl::cat(mlperfcCategory()));
static cl::opt<std::string>
    emitPreset("preset", cl::sub(emitModelCommand), cl::init(""),
               cl::desc("Starting configuration: llama3: llama31_8b (default), llama31_405b, "
                        "llama31_8b_tiny; llama2: llama2_70b (default), llama2_70b_tiny; "
                        "llama2-lora: llama2_70b_lora (default), llama2_70b_lora_tiny"),
               cl::cat(mlperfcCategory()));
static cl::list<std::string> emitSettings(
    "set", cl::sub(emitModelCommand), cl::value_desc("key=value,..."),
    cl::desc("Override fields (repeatable). Keys: name layers hidden heads kv_heads ffn vocab "
             "seq rope_theta rope_scaling rope_factor rope_low_freq_factor "
             "rope_high_freq_factor rope_original_max_position norm_eps fused_qkv lora_rank "
             "lora_alpha lora_dropout dtype init "
             "init_std gbs "
             "micro_batch lr end_lr warmup_steps max_steps decay_steps beta1 beta2 adam_eps "
             "weight_decay weight_decay_params clip optimizer (adamw|adagrad) adagrad_eps "
             "initial_accumulator_value benchmark eval_every eval_samples "
             "target_metric target"),
    cl::cat(mlperfcCategory()));
static cl::opt<std::string> emitOutput("o", cl::sub(emitModelCommand), cl::init("-"),
                                       cl::value_desc("file"),
                                       cl::desc("Output file (default: standard output)"),
                                       cl::cat(mlperfcCategory()));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mlperfc emit-model") << message << "\n";
  return 1;
}

int runEmitModel() {
  std::vector<std::string> familyPresets = models::llamaPresetNames(emitFamily);
  std::string preset =
      emitPreset.empty() && !familyPresets.empty() ? familyPresets.front() : emitPreset.getValue();
  llvm::Expected<models::LlamaConfig> config = models::llamaPreset(emitFamily, preset);
  if (!config) {
    return fail(llvm::toString(config.takeError()));
  }
  std::string settings = llvm::join(emitSettings, ",");
  if (llvm::Error error = models::applyLlamaSettings(*config, settings)) {
    return fail(llvm::toString(std::move(error)));
  }
  if (llvm::Error error = models::validateLlamaConfig(*config)) {
    return fail(llvm::toString(std::move(error)));
  }

  std::string text =
      models::emitModel(*config, models::EmitModelCommand{emitFamily, preset, settings}.str());

  // Verify before writing: the IR verifier owns the cross-field rules (divisibility, eval
  // cadence, schedule consistency) and names the offending field.
  std::unique_ptr<mlir::MLIRContext> contextOwner = createModelContext();
  mlir::MLIRContext &context = *contextOwner;
  ModelFile generated(context, "<emit-model>");
  if (!generated.loadFromString(text, "<emit-model " + config->name + ">")) {
    return fail("the declaration for this configuration does not verify (errors above); "
                "nothing written");
  }

  if (emitOutput == "-") {
    llvm::outs() << text;
    return 0;
  }
  if (llvm::Error error = llvm::writeToOutput(emitOutput, [&](llvm::raw_ostream &os) {
        os << text;
        return llvm::Error::success();
      })) {
    return fail("cannot write '" + emitOutput + "': " + llvm::toString(std::move(error)));
  }
  llvm::errs() << "mlperfc emit-model: wrote " << emitOutput << " (model @" << config->name
               << ")\n";
  return 0;
}

} // namespace mlperf::cli
