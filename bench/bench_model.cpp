// Model-only forward throughput of the default model, per engine (TorchScript, and the oneDNN
// engine when built), batch size and thread count (no decoding). Set VECBENCH_MODEL to use
// another model file.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "vecbench/engine/engines.hpp"

using namespace vecbench;

namespace {

void BM_ModelForward(benchmark::State& st, EngineKind engine) {
  if (!has_engine(engine)) {
    st.SkipWithError((std::string("this build has no ") + to_string(engine) + " engine").c_str());
    return;
  }
  const int batch = static_cast<int>(st.range(0));
  VirtualDevice d;
  d.threads = static_cast<int>(st.range(1));
  ModelSettings o;
  const char* env = std::getenv("VECBENCH_MODEL");
  o.path = env ? env : VECBENCH_DEFAULT_MODEL;
  o.engine = engine;
  auto model = model_factory(o)(d);
  model->warmup(batch, 3);
  const std::size_t s = static_cast<std::size_t>(model->input_size());
  std::vector<float> in(static_cast<std::size_t>(batch) * 3 * s * s, 100.0f),
      out(static_cast<std::size_t>(batch) * 2048);
  for (auto _ : st) model->forward(in.data(), batch, out.data());
  st.SetItemsProcessed(st.iterations() * batch);
}
BENCHMARK_CAPTURE(BM_ModelForward, torchscript, EngineKind::torchscript)
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({8, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(3.0);
BENCHMARK_CAPTURE(BM_ModelForward, onednn, EngineKind::onednn)
    ->Args({1, 1})
    ->Args({4, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(3.0);

}  // namespace
