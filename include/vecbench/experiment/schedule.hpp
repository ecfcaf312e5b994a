// The scheduler: decides, step by step, whether the next repetition runs, and records why one
// does not (the run already ended, a stop request, the time budget).
#pragma once
#include <atomic>
#include <functional>
#include <sstream>
#include <string>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

/// What one step of the schedule does.
enum class StepAction {
  go,           ///< run the repetition
  pass,         ///< the run already ended (skipped or in error): nothing to do
  interrupted,  ///< a stop was requested (Ctrl-C): the run is skipped
  budget,       ///< the time budget is spent: the run is skipped
};

template <>
struct EnumNames<StepAction> {
  static constexpr const char* what = "schedule action";
  static constexpr std::array<std::pair<StepAction, const char*>, 4> names = {{{StepAction::go, "go"},
                                                                               {StepAction::pass, "pass"},
                                                                               {StepAction::interrupted, "interrupted"},
                                                                               {StepAction::budget, "budget"}}};
};

inline const char* to_string(StepAction a) { return enum_name(a); }

/// The action named `s` (what rank 0 broadcasts to the other ranks).
inline StepAction parse_step_action(const std::string& s) { return parse_enum<StepAction>(s, "schedule"); }

/// Decides each step from the run's status, the stop flag and the time spent so far.
class Scheduler {
 public:
  /// `time_budget_s` <= 0: no budget. `stop` may be null. `elapsed_s` gives the seconds since
  /// the experiment began.
  Scheduler(double time_budget_s, const std::atomic<bool>* stop, std::function<double()> elapsed_s)
      : budget_s_(time_budget_s), stop_(stop), elapsed_s_(std::move(elapsed_s)) {}

  StepAction decide(const RunResult& run) const {
    if (run.status != RunStatus::ok) return StepAction::pass;
    if (stop_ && stop_->load()) return StepAction::interrupted;
    if (budget_s_ > 0 && elapsed_s_() > budget_s_) return StepAction::budget;
    return StepAction::go;
  }

  /// Marks `run` skipped for a step that did not go (interrupted or budget) before `rep`.
  void record(StepAction a, RunResult& run, int rep) const {
    if (a != StepAction::interrupted && a != StepAction::budget) return;
    run.status = RunStatus::skipped;
    if (a == StepAction::interrupted) {
      run.reason = "interrupted";
      return;
    }
    std::ostringstream why;
    why << "time budget of " << budget_s_ << " s exhausted before repetition " << rep + 1;
    run.reason = why.str();
  }

 private:
  double budget_s_;
  const std::atomic<bool>* stop_;
  std::function<double()> elapsed_s_;
};

}  // namespace vecbench
