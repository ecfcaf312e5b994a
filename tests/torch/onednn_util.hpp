// What the oneDNN engine's test files share (tests/torch/test_onednn*.cpp): the default model,
// whether the engine is built, and a strategy run over an image source.
#pragma once
#include <memory>
#include <string>

#include "build_paths.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/rel_l2.hpp"

namespace onednn_test {
using namespace vecbench;  // NOLINT: test helpers

inline const std::string kModel = VECBENCH_DEFAULT_MODEL;

inline bool have_onednn() { return has_engine(EngineKind::onednn); }

inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  return vecbench::testing::rel_l2(a.data(), b.data(), a.size());
}

/// `strategy` over every image of `src` on `devices` (threads per replica: 0 splits the cores).
inline std::unique_ptr<MemorySink> run_on(const ImageSource& src, const ModelSettings& mo, const std::string& strategy,
                                          const std::string& devices, int batch, int threads = 0, int warmup = 0) {
  auto sink = std::make_unique<MemorySink>(src.size());
  RunSettings s;
  s.batch_size = batch;
  s.warmup_batches = warmup;
  DeviceOptions dopt;
  dopt.threads_per_replica = threads;
  run_strategy(strategy, src, all_indices(src.size()), expand_devices(devices, dopt), model_factory(mo), *sink, s, 299);
  return sink;
}

inline std::unique_ptr<MemorySink> run_engine(const ImageSource& src, const ModelSettings& mo,
                                              const std::string& devices, int batch) {
  return run_on(src, mo, batch == 1 && devices == "cpu" ? "sequential" : "data-parallel", devices, batch, 0, 1);
}

}  // namespace onednn_test
