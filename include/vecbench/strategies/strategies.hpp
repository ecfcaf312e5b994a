// All strategies and the registry that makes them by name.
#pragma once
#include <memory>
#include <string>

#include "vecbench/strategies/data_parallel.hpp"
#include "vecbench/strategies/mirrored.hpp"
#include "vecbench/strategies/naive.hpp"
#include "vecbench/strategies/sequential.hpp"
#include "vecbench/strategies/sharded.hpp"

namespace vecbench {

/// Makes a strategy by name; ConfigError for an unknown one.
inline std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  if (name == "naive") return std::make_unique<NaiveStrategy>();
  if (name == "sequential") return std::make_unique<SequentialStrategy>();
  if (name == "sharded") return std::make_unique<ShardedStrategy>();
  if (name == "data-parallel") return std::make_unique<DataParallelStrategy>();
  if (name == "mirrored") return std::make_unique<MirroredStrategy>();
  throw ConfigError("strategy",
                    "unknown strategy '" + name + "' (use naive, sequential, sharded, data-parallel or mirrored)");
}

}  // namespace vecbench
