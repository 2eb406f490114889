//===- PlanBase.td - Execution-plan dialect definition -----*- tablegen -*-===//
//
// The `plan` dialect: the static execution plan as IR, before it is written as
// runtime/plan.proto. Buffers are symbols with a type and an (arena, offset); commands name
// the buffers they read and write, in order, inside programs.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_DIALECTS_PLAN_IR_PLANBASE_TD
#define MLPERFC_DIALECTS_PLAN_IR_PLANBASE_TD

include "mlir/IR/OpBase.td"

def Plan_Dialect : Dialect {
  let name = "plan";
  // Not ::mlperf::plan: that namespace holds the protobuf messages the plan is written as.
  let cppNamespace = "::mlperf::plan_ir";
  let summary = "Static execution plan: arena buffers and ordered commands";
  let description = [{
    What `mlperf-run` replays, in IR form so that every step from `tg` to the plan file can
    be dumped and tested. `plan-from-tg` builds it from the lowered train step,
    `plan-memory` assigns buffer offsets, and plan emission writes it as `plan.pb`
    (docs/plan-format.md). Commands are issued in order on a compute stream (0) and a
    communication stream (1); `event_record` / `event_wait` commands order them across
    streams, and the collectives (all_reduce, reduce_scatter, all_gather over a mesh axis) run
    on stream 1.
  }];
}

class Plan_Op<string mnemonic, list<Trait> traits = []> : Op<Plan_Dialect, mnemonic, traits>;

#endif // MLPERFC_DIALECTS_PLAN_IR_PLANBASE_TD
