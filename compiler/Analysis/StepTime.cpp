//===- StepTime.cpp - What one training step of a plan costs ----*- C++ -*-===//

#include "compiler/Analysis/StepTime.h"

#include "runtime/plan/PlanLoader.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>

namespace mlperf {

using rt::Status;
using rt::StatusCode;

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

namespace {

bool recomputed(const plan::Command &command) {
  const std::string &origin = command.origin();
  return origin.size() >= 12 && origin.compare(origin.size() - 12, 12, "(recomputed)") == 0;
}

std::string eventName(const plan::Command &command) {
  if (command.op() == "call") {
    const plan::Attribute *callee = rt::findAttribute(command, "program");
    return "call @" + (callee ? callee->s() : std::string("?"));
  }
  return command.origin().empty() ? command.op() : command.op() + " " + command.origin();
}

/// What the communication stream last did before a point, to name what a wait for it waits
/// on: a collective over an axis, or a pipeline transfer.
struct Blame {
  bool transfer = true;
  rt::MeshAxis axis = rt::MeshAxis::kPP;
};

/// A sub-program's simulated run, in isolation (a call is a barrier, so its time does not
/// depend on the caller): reused for every call.
struct ProgramTime {
  double seconds = 0;
  StageTime parts;
  Blame lastCommunication;
  std::vector<TimelineEvent> timeline; // relative to the call's start
};

struct Message {
  double arrival = 0;
};

/// One program running on one stage: a cursor per stream over its commands in program
/// order (calls on both: a barrier).
struct Run {
  const plan::Plan *plan = nullptr;
  const plan::Program *program = nullptr;
  int64_t stage = 0;
  rt::MeshShape mesh;
  std::vector<int> lane[2];
  size_t next[2] = {0, 0};
  double time[2] = {0, 0};
  Blame blame; // the communication stream's last command
  std::unordered_map<int64_t, std::pair<double, Blame>> recorded;
  StageTime parts;
  std::vector<TimelineEvent> timeline;
  bool isolated = false; // a callee simulated on its own, for every call of it
  bool done() const { return next[0] == lane[0].size() && next[1] == lane[1].size(); }
};

class Simulator {
public:
  Simulator(const DeviceSpeed &speed, bool withTimeline)
      : speed(speed), withTimeline(withTimeline) {}

  Status start(Run &run, const plan::Plan &plan, const plan::Program &program, int64_t stage) {
    run.plan = &plan;
    run.program = &program;
    run.stage = stage;
    run.mesh = rt::planMesh(plan);
    for (int c = 0; c < program.commands_size(); ++c) {
      const plan::Command &command = program.commands(c);
      if (command.op() == "call") {
        run.lane[0].push_back(c);
        run.lane[1].push_back(c);
      } else {
        run.lane[command.stream() == 1 ? 1 : 0].push_back(c);
      }
    }
    return Status::ok();
  }

  /// Runs `runs` together until every one is done; receives wait for their sends.
  Status runAll(std::vector<Run> &runs) {
    while (true) {
      bool allDone = true, progress = false;
      for (Run &run : runs) {
        for (int lane = 0; lane < 2; ++lane) {
          while (run.next[lane] < run.lane[lane].size()) {
            bool advanced = false;
            MLPERF_RETURN_IF_ERROR(step(run, lane, advanced));
            if (!advanced) {
              break;
            }
            progress = true;
          }
        }
        allDone = allDone && run.done();
      }
      if (allDone) {
        break;
      }
      if (!progress) {
        for (Run &run : runs) {
          for (int lane = 0; lane < 2; ++lane) {
            if (run.next[lane] < run.lane[lane].size()) {
              int c = run.lane[lane][run.next[lane]];
              return Status(StatusCode::kInvalidArgument,
                            "the step cannot complete: program '" + run.program->name() +
                                "' of stage " + std::to_string(run.stage) +
                                " waits forever at command " + std::to_string(c) + " ('" +
                                run.program->commands(c).op() + "')");
            }
          }
        }
      }
    }
    for (Run &run : runs) {
      finish(run);
    }
    return Status::ok();
  }

private:
  const DeviceSpeed &speed;
  bool withTimeline;
  /// Messages in flight per (from stage, to stage, tag), in send order.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<Message>> mailboxes;
  std::map<std::pair<const plan::Plan *, std::string>, ProgramTime> programTimes;

  void addParts(StageTime &to, const StageTime &from) {
    to.compute += from.compute;
    to.recompute += from.recompute;
    to.bubble += from.bubble;
    to.communication += from.communication;
    to.flops += from.flops;
    to.gemm += from.gemm;
    for (size_t a = 0; a < std::size(to.exposed); ++a) {
      to.exposed[a] += from.exposed[a];
    }
  }

  /// The compute stream waited `seconds` for the communication stream.
  static void blameWait(StageTime &parts, const Blame &blame, double seconds) {
    if (seconds <= 0) {
      return;
    }
    (blame.transfer ? parts.bubble : parts.exposed[static_cast<int>(blame.axis)]) += seconds;
  }

  void record(Run &run, int lane, const plan::Command &command, double start, double seconds) {
    if (withTimeline && seconds > 0) {
      TimelineEvent event;
      event.stage = run.stage;
      event.stream = static_cast<uint32_t>(lane);
      event.start = start;
      event.seconds = seconds;
      event.name = eventName(command);
      event.program = run.program->name();
      event.microBatch = command.has_micro_batch() ? command.micro_batch() : -1;
      run.timeline.push_back(std::move(event));
    }
  }

  Status calleeTime(const Run &run, const plan::Command &command, const ProgramTime *&time) {
    const plan::Attribute *callee = rt::findAttribute(command, "program");
    if (!callee) {
      return Status(StatusCode::kInvalidArgument, "a call without a program attribute");
    }
    auto key = std::make_pair(run.plan, callee->s());
    auto it = programTimes.find(key);
    if (it == programTimes.end()) {
      const plan::Program *program = nullptr;
      for (const plan::Program &p : run.plan->programs()) {
        program = p.name() == callee->s() ? &p : program;
      }
      if (!program) {
        return Status(StatusCode::kInvalidArgument,
                      "call of unknown program '" + callee->s() + "'");
      }
      std::vector<Run> inner(1);
      MLPERF_RETURN_IF_ERROR(start(inner[0], *run.plan, *program, run.stage));
      inner[0].isolated = true;
      MLPERF_RETURN_IF_ERROR(runAll(inner));
      ProgramTime computed;
      computed.seconds = inner[0].parts.step;
      computed.parts = inner[0].parts;
      computed.lastCommunication = inner[0].blame;
      computed.timeline = std::move(inner[0].timeline);
      it = programTimes.emplace(key, std::move(computed)).first;
    }
    time = &it->second;
    return Status::ok();
  }

  /// Advances `lane` of `run` by one command if it can run now.
  Status step(Run &run, int lane, bool &advanced) {
    int c = run.lane[lane][run.next[lane]];
    const plan::Command &command = run.program->commands(c);
    const std::string &op = command.op();
    double &now = run.time[lane];
    if (op == "call") {
      int other = 1 - lane;
      if (run.next[other] >= run.lane[other].size() || run.lane[other][run.next[other]] != c) {
        return Status::ok(); // the other stream has not reached the barrier yet
      }
      const ProgramTime *callee = nullptr;
      MLPERF_RETURN_IF_ERROR(calleeTime(run, command, callee));
      double begin = std::max(run.time[0], run.time[1]);
      blameWait(run.parts, run.blame, run.time[1] - run.time[0]);
      addParts(run.parts, callee->parts);
      if (withTimeline) {
        for (const TimelineEvent &event : callee->timeline) {
          TimelineEvent shifted = event;
          shifted.start += begin;
          shifted.stage = run.stage;
          if (command.has_micro_batch() && shifted.microBatch < 0) {
            shifted.microBatch = command.micro_batch();
          }
          run.timeline.push_back(std::move(shifted));
        }
      }
      if (callee->parts.communication > 0) {
        run.blame = callee->lastCommunication;
      }
      run.time[0] = run.time[1] = begin + callee->seconds;
      ++run.next[0];
      ++run.next[1];
      advanced = true;
      return Status::ok();
    }
    if (op == "event_record") {
      run.recorded[command.event()] = {now, run.blame};
    } else if (op == "event_wait") {
      auto it = run.recorded.find(command.event());
      if (it == run.recorded.end()) {
        return Status::ok(); // recorded later on the other stream
      }
      double waited = it->second.first - now;
      if (lane == 0) {
        blameWait(run.parts, it->second.second, waited);
      }
      now = std::max(now, it->second.first);
    } else {
      CommandCost cost = commandCost(*run.plan, command, speed, run.mesh, run.stage);
      if (cost.kind == CostKind::kTransfer && cost.axis == rt::MeshAxis::kPP) {
        const plan::Attribute *shift = rt::findAttribute(command, "shift");
        const plan::Attribute *tag = rt::findAttribute(command, "tag");
        int64_t peer = run.stage + (shift ? shift->i() : 0);
        int64_t key = tag ? tag->i() : 0;
        if (op == "send") {
          // Sends are asynchronous (the runtime completes them in the background): the
          // stream only issues it; the message arrives after its transfer time.
          mailboxes[{run.stage, peer, key}].push_back({now + cost.seconds});
          cost.seconds = speed.commandSeconds;
        } else {
          auto box = mailboxes.find({peer, run.stage, key});
          if (box == mailboxes.end() || box->second.empty()) {
            if (run.isolated) {
              return Status(StatusCode::kInvalidArgument,
                            "program '" + run.program->name() + "' receives from pipeline stage " +
                                std::to_string(peer) +
                                " in isolation: the model simulates pipeline transfers in the "
                                "step programs only");
            }
            return Status::ok(); // the sender has not got there yet
          }
          double arrival = box->second.front().arrival;
          box->second.pop_front();
          if (arrival > now) {
            if (lane == 0) {
              run.parts.bubble += arrival - now;
            }
            now = arrival;
          }
          cost.seconds = speed.commandSeconds;
        }
      }
      double begin = now;
      now += cost.seconds;
      record(run, lane, command, begin, cost.seconds);
      run.parts.flops += cost.flops;
      if (lane == 1) {
        run.parts.communication += cost.seconds;
        if (cost.kind == CostKind::kCollective || cost.kind == CostKind::kTransfer) {
          run.blame = {cost.kind == CostKind::kTransfer, cost.axis};
        }
      } else if (cost.kind == CostKind::kCollective) {
        run.parts.exposed[static_cast<int>(cost.axis)] += cost.seconds;
      } else if (cost.kind == CostKind::kTransfer) {
        run.parts.bubble += cost.seconds;
      } else {
        bool again = recomputed(command);
        (again ? run.parts.recompute : run.parts.compute) += cost.seconds;
        if (!again && (cost.kind == CostKind::kGemm || cost.kind == CostKind::kAttention)) {
          run.parts.gemm += cost.seconds;
        }
      }
    }
    ++run.next[lane];
    advanced = true;
    return Status::ok();
  }

  /// The stage's end: the later stream; a communication tail the compute stream did not
  /// cover is exposed.
  void finish(Run &run) {
    blameWait(run.parts, run.blame, run.time[1] - run.time[0]);
    run.parts.step = std::max(run.time[0], run.time[1]);
  }
};

} // namespace

Status predictStep(const std::vector<const plan::Plan *> &stages, const DeviceSpeed &speed,
                   StepPrediction &prediction, bool withTimeline, std::string_view programName) {
  if (stages.empty()) {
    return Status(StatusCode::kInvalidArgument, "no plan to predict");
  }
  Simulator simulator(speed, withTimeline);
  std::vector<Run> runs(stages.size());
  for (size_t s = 0; s < stages.size(); ++s) {
    const plan::Program *program = nullptr;
    for (const plan::Program &p : stages[s]->programs()) {
      program = p.name() == programName ? &p : program;
    }
    if (!program) {
      return Status(StatusCode::kInvalidArgument, "the plan of stage " + std::to_string(s) +
                                                      " has no program '" +
                                                      std::string(programName) + "'");
    }
    int64_t stage = stages.size() > 1 ? static_cast<int64_t>(s) : stages[s]->pipeline_stage();
    MLPERF_RETURN_IF_ERROR(simulator.start(runs[s], *stages[s], *program, stage));
  }
  MLPERF_RETURN_IF_ERROR(simulator.runAll(runs));
  prediction = StepPrediction();
  for (size_t s = 0; s < runs.size(); ++s) {
    prediction.stages.push_back(runs[s].parts);
    if (runs[s].parts.step > prediction.stepSeconds) {
      prediction.stepSeconds = runs[s].parts.step;
      prediction.criticalStage = s;
    }
    if (withTimeline) {
      for (TimelineEvent &event : runs[s].timeline) {
        prediction.timeline.push_back(std::move(event));
      }
    }
  }
  return Status::ok();
}

} // namespace mlperf
