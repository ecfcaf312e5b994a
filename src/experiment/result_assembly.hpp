// The experiment runner's result file from its finished plan (private to src/experiment/): the
// effective configuration, the summaries, the verification and validity verdicts.
#pragma once
#include <vector>

#include "vecbench/dist/distributed_run.hpp"
#include "vecbench/experiment/experiment_runner.hpp"
#include "vecbench/experiment/plan.hpp"

namespace vecbench {

/// The result file of the finished plan `runs` (moved out of it): summaries made, verifications
/// judged, validity judged, `config.effective` as the runner resolved it.
ResultFile assemble(const Experiment& e, const ExperimentEnv& env, const Distribution* dist,
                    std::vector<PlannedRun>& runs);

}  // namespace vecbench
