//===- Certificate.cpp - What a pass changed, by op kind and count -*- C++ -*-===//

#include "compiler/Audit/Certificate.h"

#include "compiler/Audit/ClosedRules.h"

#include "dialects/Plan/IR/PlanOps.h"
#include "dialects/TG/IR/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ScopedPrinter.h" // llvm::to_string
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace mlperf {
namespace {

/// " over dp,tp" for an op or command that names mesh axes.
std::string axesSuffix(Operation *op) {
  ArrayAttr axes = op->getAttrOfType<ArrayAttr>("axes");
  if (auto command = dyn_cast<plan_ir::CommandOp>(op)) {
    axes = command.getKernelAttrs().getAs<ArrayAttr>("axes");
    if (!axes) {
      if (auto axis = command.getKernelAttrs().getAs<StringAttr>("axis")) {
        return " over " + axis.str();
      }
    }
  }
  if (!axes) {
    return "";
  }
  std::vector<std::string> names;
  for (Attribute axis : axes) {
    if (auto name = dyn_cast<StringAttr>(axis)) {
      names.push_back(name.str());
    }
  }
  return names.empty() ? "" : " over " + llvm::join(names, ",");
}

template <typename Map> std::vector<CountChange> diffCounts(const Map &before, const Map &after) {
  std::vector<CountChange> changes;
  std::set<std::string> kinds;
  for (const auto &entry : before) {
    kinds.insert(entry.first);
  }
  for (const auto &entry : after) {
    kinds.insert(entry.first);
  }
  for (const std::string &kind : kinds) {
    auto b = before.find(kind), a = after.find(kind);
    int64_t countBefore = b == before.end() ? 0 : b->second;
    int64_t countAfter = a == after.end() ? 0 : a->second;
    if (countBefore != countAfter) {
      changes.push_back({kind, countBefore, countAfter});
    }
  }
  return changes;
}

/// Ops of a kind whose fingerprints are in one multiset and not the other, both ways: the
/// smaller side are ops that changed (the rest were added or removed, as the counts say).
int64_t modifiedCount(const std::vector<uint64_t> &before, const std::vector<uint64_t> &after) {
  std::vector<uint64_t> onlyBefore, onlyAfter;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                      std::back_inserter(onlyBefore));
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(onlyAfter));
  return static_cast<int64_t>(std::min(onlyBefore.size(), onlyAfter.size()));
}

/// The length of the longest strictly increasing subsequence (patience sorting).
size_t longestIncreasing(const std::vector<size_t> &values) {
  std::vector<size_t> tails;
  for (size_t value : values) {
    auto it = std::lower_bound(tails.begin(), tails.end(), value);
    if (it == tails.end()) {
      tails.push_back(value);
    } else {
      *it = value;
    }
  }
  return tails.size();
}

/// What a command is, wherever it stands: its kernel, buffers and attributes but its stream.
uint64_t commandIdentity(plan_ir::CommandOp command) {
  return llvm::hash_combine(command.getKernel(), command.getOperands().getAsOpaquePointer(),
                            command.getResults().getAsOpaquePointer(),
                            command.getKernelAttrs().getAsOpaquePointer(),
                            command.getEventAttr() ? command.getEventAttr().getInt() : -1);
}

} // namespace

bool isReductionKind(llvm::StringRef kind) {
  kind.consume_front("plan.command:");
  kind.consume_front("tg.");
  kind.consume_front("dist.");
  // Contractions, normalizations, softmax and losses sum over a dim; collectives that sum
  // add the ranks' values; the global norm and its partial sums add squares.
  for (llvm::StringRef reducing :
       {"matmul", "softmax", "rms_norm", "attention", "cross_entropy", "sum_squares", "global_norm",
        "embedding_grad", "repeat_grad", "all_reduce", "reduce_scatter", "reduce_from_region"}) {
    if (kind.contains(reducing)) {
      return true;
    }
  }
  return false;
}

IRCensus takeCensus(ModuleOp module) {
  IRCensus census;
  // A 405B step has about a million results: print each element type once.
  llvm::DenseMap<Type, int64_t> elementTypes;
  module.walk([&](Operation *op) {
    if (op == module.getOperation()) {
      return;
    }
    std::string kind = op->getName().getStringRef().str();
    if (auto command = dyn_cast<plan_ir::CommandOp>(op)) {
      kind = "plan.command:" + command.getKernel().str();
    }
    ++census.ops[kind];
    llvm::hash_code fingerprint = llvm::hash_value(op->getAttrDictionary().getAsOpaquePointer());
    for (Type type : op->getResultTypes()) {
      fingerprint = llvm::hash_combine(fingerprint, type.getAsOpaquePointer());
    }
    census.fingerprints[kind].push_back(fingerprint);
    if (auto command = dyn_cast<plan_ir::CommandOp>(op)) {
      auto program = command->getParentOfType<plan_ir::ProgramOp>();
      auto plan = command->getParentOfType<plan_ir::PlanOp>();
      census
          .commandOrders["@" + (plan ? plan.getSymName().str() : std::string()) + "::@" +
                         (program ? program.getSymName().str() : std::string())]
          .push_back({commandIdentity(command), command.getStream()});
    }
    if (isReductionKind(kind)) {
      ++census.reductions[kind + axesSuffix(op)];
    }
    for (Type type : op->getResultTypes()) {
      if (auto tensor = dyn_cast<RankedTensorType>(type)) {
        ++elementTypes[tensor.getElementType()];
      }
    }
    if (isCastTo8BitFloat(op)) {
      ++census.castsTo8Bit;
      census.scaledCastsTo8Bit += isScaledCast(op);
    }
    if (auto param = dyn_cast<tg::ParamOp>(op)) {
      auto model = param->getParentOfType<tg::ModelOp>();
      census.parameters["@" + (model ? model.getSymName().str() : std::string()) +
                        "::" + param.getSymName().str()] = llvm::to_string(param.getType());
    }
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      auto model = func->getParentOfType<tg::ModelOp>();
      census.functions.insert("@" + (model ? model.getSymName().str() : std::string()) + "::@" +
                              func.getSymName().str());
    }
  });
  for (auto [type, count] : elementTypes) {
    census.valueTypes[llvm::to_string(type)] += count;
  }
  for (auto &[kind, fingerprints] : census.fingerprints) {
    llvm::sort(fingerprints);
  }
  return census;
}

Certificate certify(llvm::StringRef pass, const IRCensus &before, const IRCensus &after) {
  Certificate certificate;
  certificate.pass = pass.str();
  if (const PassClassDeclaration *declaration = findRewriteClass(pass)) {
    certificate.declared = true;
    certificate.rewriteClass = declaration->rewriteClass;
  }
  certificate.ops = diffCounts(before.ops, after.ops);
  for (const auto &[kind, fingerprints] : after.fingerprints) {
    auto it = before.fingerprints.find(kind);
    if (it != before.fingerprints.end()) {
      if (int64_t count = modifiedCount(it->second, fingerprints)) {
        certificate.modified.push_back({kind, count});
      }
    }
  }
  // Commands that changed places: match each command after with its first unmatched twin
  // before; the commands off the longest run kept in order are the fewest that moved.
  for (const auto &[program, order] : after.commandOrders) {
    auto it = before.commandOrders.find(program);
    if (it == before.commandOrders.end()) {
      continue;
    }
    std::map<uint64_t, std::vector<size_t>> positions; // identity -> positions before, reversed
    for (size_t i = it->second.size(); i-- > 0;) {
      positions[it->second[i].first].push_back(i);
    }
    std::vector<size_t> matched;
    for (const auto &[identity, stream] : order) {
      auto found = positions.find(identity);
      if (found == positions.end() || found->second.empty()) {
        continue; // added: the op counts say so
      }
      size_t position = found->second.back();
      found->second.pop_back();
      matched.push_back(position);
      certificate.commandsRestreamed += it->second[position].second != stream;
    }
    auto moved = static_cast<int64_t>(matched.size() - longestIncreasing(matched));
    certificate.commandsMoved += moved;
    certificate.programsReordered += moved > 0;
  }
  certificate.castsTo8Bit = {"casts to 8-bit floats", before.castsTo8Bit, after.castsTo8Bit};
  certificate.scaledCastsTo8Bit = {"scaled casts to 8-bit floats", before.scaledCastsTo8Bit,
                                   after.scaledCastsTo8Bit};
  certificate.reductions = diffCounts(before.reductions, after.reductions);
  certificate.valueTypes = diffCounts(before.valueTypes, after.valueTypes);
  for (const auto &[name, type] : before.parameters) {
    auto it = after.parameters.find(name);
    if (it == after.parameters.end()) {
      certificate.parameters.push_back({name, type, ""});
    } else if (it->second != type) {
      certificate.parameters.push_back({name, type, it->second});
    }
  }
  for (const auto &[name, type] : after.parameters) {
    if (!before.parameters.count(name)) {
      certificate.parameters.push_back({name, "", type});
    }
  }
  for (const std::string &function : after.functions) {
    if (!before.functions.count(function)) {
      certificate.functionsAdded.push_back(function);
    }
  }
  for (const std::string &function : before.functions) {
    if (!after.functions.count(function)) {
      certificate.functionsRemoved.push_back(function);
    }
  }
  return certificate;
}

std::string describeCertificate(const Certificate &certificate) {
  if (certificate.changesNothing()) {
    return "no change";
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  auto changes = [&](llvm::StringRef what, const std::vector<CountChange> &list) {
    if (list.empty()) {
      return;
    }
    int64_t added = 0, removed = 0;
    for (const CountChange &change : list) {
      (change.after > change.before ? added : removed) += std::abs(change.after - change.before);
    }
    os << (text.empty() ? "" : "; ") << what << " +" << added << " -" << removed << " (";
    constexpr size_t kShown = 8;
    for (size_t i = 0; i < list.size() && i < kShown; ++i) {
      int64_t delta = list[i].after - list[i].before;
      os << (i ? ", " : "") << list[i].kind << " " << (delta > 0 ? "+" : "") << delta;
    }
    if (list.size() > kShown) {
      os << ", " << list.size() - kShown << " more kinds";
    }
    os << ")";
  };
  changes("ops", certificate.ops);
  if (!certificate.modified.empty()) {
    int64_t total = 0;
    for (const ModifiedCount &entry : certificate.modified) {
      total += entry.count;
    }
    os << (text.empty() ? "" : "; ") << "ops modified " << total << " (";
    constexpr size_t kShown = 8;
    for (size_t i = 0; i < certificate.modified.size() && i < kShown; ++i) {
      os << (i ? ", " : "") << certificate.modified[i].kind << " " << certificate.modified[i].count;
    }
    if (certificate.modified.size() > kShown) {
      os << ", " << certificate.modified.size() - kShown << " more kinds";
    }
    os << ")";
  }
  if (certificate.commandsMoved > 0) {
    os << (text.empty() ? "" : "; ") << "commands moved " << certificate.commandsMoved << " in "
       << certificate.programsReordered << " program"
       << (certificate.programsReordered == 1 ? "" : "s");
  }
  if (certificate.commandsRestreamed > 0) {
    os << (text.empty() ? "" : "; ") << "commands moved to another stream "
       << certificate.commandsRestreamed;
  }
  if (certificate.rewriteClass == RewriteClass::kReassociation) {
    changes("reductions", certificate.reductions);
  }
  auto functions = [&](llvm::StringRef what, const std::vector<std::string> &list) {
    if (list.empty()) {
      return;
    }
    constexpr size_t kShown = 4;
    os << (text.empty() ? "" : "; ") << "functions " << what << " ";
    for (size_t i = 0; i < list.size() && i < kShown; ++i) {
      os << (i ? ", " : "") << list[i];
    }
    if (list.size() > kShown) {
      os << " and " << list.size() - kShown << " more";
    }
  };
  functions("added", certificate.functionsAdded);
  functions("removed", certificate.functionsRemoved);
  if (!certificate.parameters.empty()) {
    std::map<std::string, int64_t> retyped;
    int64_t added = 0, removed = 0;
    for (const TypeChange &change : certificate.parameters) {
      if (change.before.empty()) {
        ++added;
      } else if (change.after.empty()) {
        ++removed;
      } else {
        auto element = [](llvm::StringRef type) {
          return type.substr(type.rfind('x') + 1).rtrim('>').str();
        };
        std::string from = element(change.before), to = element(change.after);
        ++retyped[from == to ? "resharded (" + from + ")" : "retyped " + from + " -> " + to];
      }
    }
    os << (text.empty() ? "" : "; ") << "parameters";
    if (added) {
      os << " +" << added;
    }
    if (removed) {
      os << " -" << removed;
    }
    for (const auto &[change, count] : retyped) {
      os << " " << count << " " << change;
    }
  }
  if (certificate.rewriteClass == RewriteClass::kPrecision) {
    changes("values by element type", certificate.valueTypes);
    // What compensates: a narrowing needs its per-tensor scales; a widening needs none.
    int64_t casts = certificate.castsTo8Bit.after, scaled = certificate.scaledCastsTo8Bit.after;
    if (casts > 0) {
      os << (text.empty() ? "" : "; ") << casts << " casts to 8-bit floats, " << scaled
         << " scaled";
    } else if (!certificate.valueTypes.empty() || !certificate.parameters.empty()) {
      os << (text.empty() ? "" : "; ") << "no casts to 8-bit floats (nothing to scale)";
    }
  }
  return text;
}

llvm::json::Value certificateToJSON(const Certificate &certificate) {
  auto counts = [](const std::vector<CountChange> &list) {
    llvm::json::Array array;
    for (const CountChange &change : list) {
      array.push_back(llvm::json::Object{
          {"kind", change.kind}, {"before", change.before}, {"after", change.after}});
    }
    return array;
  };
  llvm::json::Array parameters;
  for (const TypeChange &change : certificate.parameters) {
    parameters.push_back(llvm::json::Object{
        {"name", change.name}, {"before", change.before}, {"after", change.after}});
  }
  llvm::json::Array modified;
  for (const ModifiedCount &entry : certificate.modified) {
    modified.push_back(llvm::json::Object{{"kind", entry.kind}, {"count", entry.count}});
  }
  return llvm::json::Object{
      {"pass", certificate.pass},
      {"modified", std::move(modified)},
      {"commands_moved", certificate.commandsMoved},
      {"programs_reordered", certificate.programsReordered},
      {"commands_restreamed", certificate.commandsRestreamed},
      {"class", certificate.declared ? rewriteClassName(certificate.rewriteClass).str()
                                     : std::string("undeclared")},
      {"ops", counts(certificate.ops)},
      {"reductions", counts(certificate.reductions)},
      {"value_types", counts(certificate.valueTypes)},
      {"parameters", std::move(parameters)},
      {"functions_added", llvm::json::Array(certificate.functionsAdded)},
      {"functions_removed", llvm::json::Array(certificate.functionsRemoved)},
      {"casts_to_8bit", llvm::json::Object{{"before", certificate.castsTo8Bit.before},
                                           {"after", certificate.castsTo8Bit.after}}},
      {"scaled_casts_to_8bit", llvm::json::Object{{"before", certificate.scaledCastsTo8Bit.before},
                                                  {"after", certificate.scaledCastsTo8Bit.after}}},
  };
}

bool certificateFromJSON(const llvm::json::Value &value, Certificate &certificate) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object) {
    return false;
  }
  certificate = Certificate();
  auto pass = object->getString("pass");
  auto rewriteClass = object->getString("class");
  if (!pass || !rewriteClass) {
    return false;
  }
  certificate.pass = pass->str();
  for (RewriteClass candidate : {RewriteClass::kExact, RewriteClass::kReassociation,
                                 RewriteClass::kPrecision, RewriteClass::kAnalysis}) {
    if (rewriteClassName(candidate) == *rewriteClass) {
      certificate.rewriteClass = candidate;
      certificate.declared = true;
    }
  }
  auto counts = [&](llvm::StringRef key, std::vector<CountChange> &list) {
    const llvm::json::Array *array = object->getArray(key);
    if (!array) {
      return false;
    }
    for (const llvm::json::Value &entry : *array) {
      const llvm::json::Object *change = entry.getAsObject();
      if (!change || !change->getString("kind") || !change->getInteger("before") ||
          !change->getInteger("after")) {
        return false;
      }
      list.push_back({change->getString("kind")->str(), *change->getInteger("before"),
                      *change->getInteger("after")});
    }
    return true;
  };
  auto strings = [&](llvm::StringRef key, std::vector<std::string> &list) {
    const llvm::json::Array *array = object->getArray(key);
    if (!array) {
      return false;
    }
    for (const llvm::json::Value &entry : *array) {
      if (!entry.getAsString()) {
        return false;
      }
      list.push_back(entry.getAsString()->str());
    }
    return true;
  };
  auto castCounts = [&](llvm::StringRef key, llvm::StringRef kind, CountChange &change) {
    const llvm::json::Object *counts = object->getObject(key);
    if (!counts || !counts->getInteger("before") || !counts->getInteger("after")) {
      return false;
    }
    change = {kind.str(), *counts->getInteger("before"), *counts->getInteger("after")};
    return true;
  };
  if (!castCounts("casts_to_8bit", "casts to 8-bit floats", certificate.castsTo8Bit) ||
      !castCounts("scaled_casts_to_8bit", "scaled casts to 8-bit floats",
                  certificate.scaledCastsTo8Bit)) {
    return false;
  }
  const llvm::json::Array *parameters = object->getArray("parameters");
  const llvm::json::Array *modified = object->getArray("modified");
  auto moved = object->getInteger("commands_moved");
  auto reordered = object->getInteger("programs_reordered");
  auto restreamed = object->getInteger("commands_restreamed");
  if (!parameters || !modified || !moved || !reordered || !restreamed) {
    return false;
  }
  certificate.commandsMoved = *moved;
  certificate.programsReordered = *reordered;
  certificate.commandsRestreamed = *restreamed;
  for (const llvm::json::Value &entry : *modified) {
    const llvm::json::Object *change = entry.getAsObject();
    if (!change || !change->getString("kind") || !change->getInteger("count")) {
      return false;
    }
    certificate.modified.push_back(
        {change->getString("kind")->str(), *change->getInteger("count")});
  }
  for (const llvm::json::Value &entry : *parameters) {
    const llvm::json::Object *change = entry.getAsObject();
    if (!change || !change->getString("name") || !change->getString("before") ||
        !change->getString("after")) {
      return false;
    }
    certificate.parameters.push_back({change->getString("name")->str(),
                                      change->getString("before")->str(),
                                      change->getString("after")->str()});
  }
  return counts("ops", certificate.ops) && counts("reductions", certificate.reductions) &&
         counts("value_types", certificate.valueTypes) &&
         strings("functions_added", certificate.functionsAdded) &&
         strings("functions_removed", certificate.functionsRemoved);
}

} // namespace mlperf
