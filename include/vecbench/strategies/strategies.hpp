// All strategies and the registry that makes them by name.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "vecbench/core/base/strategy_name.hpp"
#include "vecbench/strategies/data_parallel.hpp"
#include "vecbench/strategies/mirrored.hpp"
#include "vecbench/strategies/naive.hpp"
#include "vecbench/strategies/sequential.hpp"
#include "vecbench/strategies/sharded.hpp"

namespace vecbench {

/// One entry of the strategy registry.
struct StrategyEntry {
  const char* name;                     ///< as in --strategy and experiment files
  std::unique_ptr<Strategy> (*make)();  ///< makes a fresh strategy object
  const char* summary;                  ///< one line for help texts
  bool first_device_only = false;       ///< runs on the first of the devices given (the reference)
};

template <class S>
std::unique_ptr<Strategy> make_as() {
  return std::make_unique<S>();
}

/// Every strategy, in presentation order: adding one is its header and one line here.
inline const std::vector<StrategyEntry>& strategy_registry() {
  static const std::vector<StrategyEntry> r = {
      {"naive", make_as<NaiveStrategy>, "the seed's mistake: devices run one after another"},
      {kSequentialStrategy, make_as<SequentialStrategy>, "one device, the reference", true},
      {"sharded", make_as<ShardedStrategy>, "each device takes a contiguous share"},
      {"data-parallel", make_as<DataParallelStrategy>, "decode pool feeds whichever device is free"},
      {"mirrored", make_as<MirroredStrategy>, "every device gets a slice of each batch"},
  };
  return r;
}

/// The registered names, "a, b or c" (for messages).
inline std::string strategy_list() {
  std::string s;
  const auto& r = strategy_registry();
  for (std::size_t i = 0; i < r.size(); ++i)
    s += (i == 0 ? "" : i + 1 == r.size() ? " or " : ", ") + std::string(r[i].name);
  return s;
}

/// The registry's entry of a strategy name; ConfigError for an unknown one.
inline const StrategyEntry& find_strategy(const std::string& name) {
  for (const auto& e : strategy_registry())
    if (name == e.name) return e;
  throw ConfigError("strategy", "unknown strategy '" + name + "' (use " + strategy_list() + ")");
}

/// Makes a strategy by name; ConfigError for an unknown one.
inline std::unique_ptr<Strategy> make_strategy(const std::string& name) { return find_strategy(name).make(); }

}  // namespace vecbench
