// Runs one strategy over one image source: the piece `vecbench vectorize` and experiments share.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/strategies/strategies.hpp"

namespace vecbench {

/// The devices `strategy` runs on of `devices`: sequential uses only the first (the host's CPU
/// when `devices` is empty).
inline std::vector<VirtualDevice> strategy_devices(const StrategyEntry& strategy,
                                                   const std::vector<VirtualDevice>& devices) {
  std::vector<VirtualDevice> devs = devices;
  if (strategy.first_device_only) devs.resize(1);
  return devs;
}

namespace detail {
inline std::int64_t steady_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
}  // namespace detail

/// Runs `strategy` over `todo` of `source` on the replicas of `pool` (all its workers;
/// sequential: the first), delivering to `sink`. The replicas stay in the pool for later runs:
/// each is made once for the life of the pool, and warmed up (`settings.warmup_batches`) in
/// every run before the clock starts. One run at a time per pool (a second one waits).
/// `input_size` is the model's image side. With `settings.trace`, every thread of the run records
/// its spans there, and the run's timed window widens the trace's. Returns the run's figures;
/// throws on replica failure (after every job of the run has finished).
inline RunStats run_strategy(const StrategyEntry& strategy, const ImageSource& source, std::vector<std::size_t> todo,
                             ReplicaPool& pool, ResultSink& sink, const RunSettings& settings, int input_size) {
  auto s = strategy.make();
  const std::vector<VirtualDevice> devs = strategy_devices(strategy, pool.devices());
  if (devs.empty()) throw ConfigError("devices", "no device to run on");
  std::vector<std::string> names;
  for (const auto& d : devs) names.push_back(d.name());
  auto lease = pool.lease();
  reset_peak_rss();
  Metrics metrics(names);
  RunContext ctx{source, std::move(todo), devs, pool, sink, metrics, settings, input_size};
  add_decode_warmup(ctx.settings, source, ctx.todo, input_size);  // --decode gpu: the decoders warm up too
  if (settings.trace && settings.trace->devices().empty()) settings.trace->set_devices(names);
  if (settings.host_memory)  // pinned on CUDA: the run's batch buffers pinned before its clock
    settings.host_memory->reserve(
        s->batches_in_flight(settings, devs.size()),
        static_cast<std::size_t>(std::max(1, settings.batch_size)) * 3 * input_size * input_size * sizeof(float));
  struct Window {  // the trace's timed window: clock start to the run's end, however it ends
    Trace* trace;
    Metrics& metrics;
    ~Window() {
      if (trace) trace->add_window(detail::steady_ns(metrics.start_time()), trace_now_ns());
    }
  } window{settings.trace, metrics};
  s->run(ctx);
  return metrics.finish();
}

/// Runs `strategy` over `todo` of `source` on `devices`, delivering to `sink`, on replicas made
/// by `factory` for this run only (a pool of its own).
/// `input_size` is the model's image side. Returns the run's figures; throws on replica failure
/// (after every thread has joined).
inline RunStats run_strategy(const StrategyEntry& strategy, const ImageSource& source, std::vector<std::size_t> todo,
                             const std::vector<VirtualDevice>& devices, const ModelFactory& factory, ResultSink& sink,
                             const RunSettings& settings, int input_size) {
  ReplicaPool pool(strategy_devices(strategy, devices), factory);
  return run_strategy(strategy, source, std::move(todo), pool, sink, settings, input_size);
}

/// The same by the strategy's name (find_strategy: an unknown name fails before any worker starts).
template <class... Rest>
RunStats run_strategy(const std::string& strategy, const ImageSource& source, std::vector<std::size_t> todo,
                      Rest&&... rest) {
  return run_strategy(find_strategy(strategy), source, std::move(todo), std::forward<Rest>(rest)...);
}

/// All input indices 0..n-1.
inline std::vector<std::size_t> all_indices(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace vecbench
