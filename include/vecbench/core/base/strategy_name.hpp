// The one spelling of the reference strategy's name, for every layer that names it.
#pragma once

namespace vecbench {

/// The reference strategy (one device, batches in order): its name in the strategies' registry
/// (strategies/strategies.hpp), an experiment's default strategy, the run that speedups are
/// measured against (results/baseline.hpp) and that verification compares with (experiment/verify.hpp).
inline constexpr const char* kSequentialStrategy = "sequential";

}  // namespace vecbench
