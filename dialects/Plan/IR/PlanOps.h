//===- PlanOps.h - Execution-plan dialect ----------------------*- C++ -*-===//

#ifndef MLPERFC_DIALECTS_PLAN_IR_PLANOPS_H
#define MLPERFC_DIALECTS_PLAN_IR_PLANOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"

#include "dialects/Plan/IR/PlanOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/Plan/IR/PlanOps.h.inc"

#endif // MLPERFC_DIALECTS_PLAN_IR_PLANOPS_H
