// Runs one strategy over one image source: the piece `vecbench vectorize` and experiments share.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "vecbench/strategies/strategies.hpp"

namespace vecbench {

/// Runs `strategy` over `todo` of `source` on `devices`, delivering to `sink`.
/// `input_size` is the model's image side. Returns the run's figures; throws on replica failure
/// (after every thread has joined).
inline RunStats run_strategy(const std::string& strategy, const ImageSource& source, std::vector<std::size_t> todo,
                             const std::vector<VirtualDevice>& devices, const ModelFactory& factory, ResultSink& sink,
                             const RunSettings& settings, int input_size) {
  auto s = make_strategy(strategy);
  std::vector<VirtualDevice> devs = devices;
  if (strategy == "sequential") devs.resize(1);
  std::vector<std::string> names;
  for (const auto& d : devs) names.push_back(d.name());
  reset_peak_rss();
  Metrics metrics(names);
  RunContext ctx{source, std::move(todo), devs, factory, sink, metrics, settings, input_size};
  s->run(ctx);
  return metrics.finish();
}

/// All input indices 0..n-1.
inline std::vector<std::size_t> all_indices(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace vecbench
