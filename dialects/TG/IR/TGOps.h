//===- TGOps.h - Training-graph dialect ------------------------*- C++ -*-===//
//
// The `tg` dialect and its ops. Include this header to use them; it pulls in only the MLIR
// headers the generated declarations need.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_DIALECTS_TG_IR_TGOPS_H
#define MLPERFC_DIALECTS_TG_IR_TGOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/TG/IR/TGOpsDialect.h.inc"

#include "dialects/TG/IR/TGInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGOps.h.inc"

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGModelOps.h.inc"

#endif // MLPERFC_DIALECTS_TG_IR_TGOPS_H
