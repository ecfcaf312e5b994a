// What tracing costs (core/run/trace.hpp): one span recorded on a bound lane and the null check of
// an unbound thread, the StageTimer every stage runs with and without a lane, and a whole
// data-parallel pipeline on the stand-in model with tracing off and on (images/s).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "vecbench/core/run/metrics.hpp"
#include "vecbench/core/run/trace.hpp"
#include "vecbench/core/run/trace_figures.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/stub_model.hpp"

using namespace vecbench;

namespace {

constexpr int kSpansPerIteration = 1000;

/// TraceSpan x 1000 per iteration; the lane is emptied (capacity kept) after each iteration.
void BM_TraceSpan(benchmark::State& st, bool on) {
  Trace t;
  TraceThread lane(on ? &t : nullptr, "bench", 0);
  for (auto _ : st) {
    for (int i = 0; i < kSpansPerIteration; ++i) {
      TraceSpan s(SpanKind::forward);
      benchmark::ClobberMemory();
    }
    if (on) t.lanes()[0].spans.clear();
  }
  st.SetItemsProcessed(st.iterations() * kSpansPerIteration);  // spans per second
}
BENCHMARK_CAPTURE(BM_TraceSpan, off, false);
BENCHMARK_CAPTURE(BM_TraceSpan, on, true);

/// StageTimer (two steady_clock reads and a sum) x 1000, with and without a bound lane.
void BM_StageTimer(benchmark::State& st, bool on) {
  Trace t;
  TraceThread lane(on ? &t : nullptr, "bench", 0);
  StageTimes times;
  for (auto _ : st) {
    for (int i = 0; i < kSpansPerIteration; ++i) {
      StageTimer s(times, Stage::decode);
      benchmark::ClobberMemory();
    }
    if (on) t.lanes()[0].spans.clear();
  }
  benchmark::DoNotOptimize(times);
  st.SetItemsProcessed(st.iterations() * kSpansPerIteration);
}
BENCHMARK_CAPTURE(BM_StageTimer, off, false);
BENCHMARK_CAPTURE(BM_StageTimer, on, true);

/// `strategy` over 256 small synthetic images with the stub model (no sleep: the spans are as
/// dense as a real pipeline's at its fastest), tracing off or on; items/s = images/s.
/// sequential: one thread does everything (least scheduling noise); data-parallel: 2 virtual
/// devices, a decoder and the writer.
void BM_PipelineTrace(benchmark::State& st, const std::string& strategy, bool on) {
  testing::StubOptions o;
  o.input_size = 64;
  SyntheticSource src(256);
  RunSettings s;
  s.batch_size = 4;
  s.decode_threads = 1;
  s.warmup_batches = 0;
  const auto devs = expand_devices(strategy == "sequential" ? "cpu" : "cpu/2");
  ReplicaPool pool(devs, testing::stub_factory(o));
  std::size_t spans = 0;
  for (auto _ : st) {
    Trace t;
    s.trace = on ? &t : nullptr;
    MemorySink sink(src.size());
    run_strategy(strategy, src, all_indices(src.size()), pool, sink, s, o.input_size);
    spans = t.span_count();
  }
  st.counters["spans_per_run"] = static_cast<double>(spans);
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(src.size()));
}
BENCHMARK_CAPTURE(BM_PipelineTrace, sequential_off, std::string("sequential"), false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PipelineTrace, sequential_on, std::string("sequential"), true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PipelineTrace, data_parallel_off, std::string("data-parallel"), false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PipelineTrace, data_parallel_on, std::string("data-parallel"), true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
