// Strategy base: what every execution strategy gets (RunContext), shared steps (forward a
// batch, deliver it). The registry of strategies by name is strategies/strategies.hpp.
#pragma once
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/core/run/metrics.hpp"
#include "vecbench/core/run/sink.hpp"
#include "vecbench/core/run/trace.hpp"
#include "vecbench/engine/model.hpp"
#include "vecbench/input/image_source.hpp"
#include "vecbench/pipeline/batch.hpp"
#include "vecbench/pipeline/replica_pool.hpp"

namespace vecbench {

/// Settings of one run that every strategy reads.
struct RunSettings {
  int batch_size = 1;        ///< images per forward call (per device for `mirrored`)
  int prefetch_batches = 4;  ///< data-parallel: depth of the queue of ready batches
  int decode_threads = 1;    ///< data-parallel: threads that read, decode and resize
  /// data-parallel: up to this many decode threads, one more whenever the devices spend over a
  /// quarter of their time waiting for input (decoding is the bottleneck); <= decode_threads: off.
  int max_decode_threads = 0;
  int warmup_batches = 3;  ///< untimed forwards per replica before the clock starts
  /// data-parallel: the decoders start while the replicas build, so the queue is full when the
  /// clock starts (vectorize: set-up hidden behind decoding); false for benchmarks, which
  /// measure the steady state from an empty queue.
  bool overlap_setup = false;
  /// Set (e.g. by SIGINT) to stop early: no new batch is started, what is in flight is
  /// finished and delivered. May be null.
  const std::atomic<bool>* stop = nullptr;
  /// Records every thread's spans here (core/run/trace.hpp); null: tracing off (the default).
  Trace* trace = nullptr;
  /// Device decoding (`--decode gpu`): a batch of the run's own first inputs, JPEGs still as
  /// bytes, that each replica decodes and runs `warmup_batches` times before the clock instead of
  /// the model's plain warm-up, so its JPEG decoder is made, sized and run outside the timed
  /// window (decode_warmup_batch; run_strategy fills it when the source hands over JPEGs).
  std::shared_ptr<const Batch> decode_warmup{};
  /// Where batch buffers live: on a CUDA run the engine's pinned memory (host_memory_for in
  /// engines.hpp), which the replicas copy from without staging; null: ordinary memory.
  HostMemory* host_memory = nullptr;
};

/// Everything a strategy runs on.
struct RunContext {
  const ImageSource& source;           ///< where the inputs come from
  std::vector<std::size_t> todo;       ///< input indices to process (resume skips done ones)
  std::vector<VirtualDevice> devices;  ///< devices of the run: workers 0..n-1 of `pool` (sequential: the first)
  ReplicaPool& pool;                   ///< the long-lived workers that own the replicas
  ResultSink& sink;                    ///< receives every input's features or error
  Metrics& metrics;                    ///< this run's figures (device i = devices[i])
  RunSettings settings;                ///< the run's settings
  int input_size = 299;                ///< image side the model takes (set from the replica)

  bool stop_requested() const { return settings.stop && settings.stop->load(); }
  /// The name of device i's trace lane: "device i (NAME)".
  std::string device_lane(std::size_t i) const {
    return "device " + std::to_string(i) + " (" + devices.at(i).name() + ")";
  }
};

namespace detail {
/// The spans of one forward call that began at t0_ns, laid end to end as the model timed them
/// (h2d, device decode, forward, d2h; a part of 0 s is left out). On CUDA the model's parts end in a stream
/// synchronize, so they are device time, not launch time.
inline void trace_forward(std::int64_t t0_ns, const ForwardTiming& ft) {
  std::int64_t t = t0_ns;
  for (const auto& [kind, s] : {std::pair<SpanKind, double>{SpanKind::h2d, ft.h2d_s},
                                {SpanKind::decode, ft.decode_s},
                                {SpanKind::forward, ft.forward_s},
                                {SpanKind::d2h, ft.d2h_s}}) {
    const auto ns = static_cast<std::int64_t>(s * 1e9);
    if (ns <= 0 && kind != SpanKind::forward) continue;
    trace_span(kind, t, t + ns);
    t += ns;
  }
}
}  // namespace detail

/// Runs one forward over a loaded batch on `model` and records device time.
inline void forward_batch(Model& model, Batch& b, std::size_t device, Metrics& metrics) {
  if (b.n() == 0) return;
  b.output.resize(static_cast<std::size_t>(b.n()) * static_cast<std::size_t>(model.feature_dim()));
  trace_batch(static_cast<std::int64_t>(b.seq), b.n());
  const std::int64_t t0 = detail::tls_trace_lane() ? trace_now_ns() : 0;
  ForwardTiming ft;
  if (b.encoded.empty()) {
    ft = model.forward(b.input.data(), b.n(), b.output.data());
  } else {  // --decode gpu: the replica decodes the JPEGs still held as bytes
    DeviceDecodeCounts c;
    ft = model.forward_encoded(b.input.data(), b.encoded, b.n(), b.output.data(), c);
    b.failed_slots = std::move(c.failed);
    metrics.add_device_decode(c.on_device, c.cpu_fallback);
  }
  if (detail::tls_trace_lane()) detail::trace_forward(t0, ft);
  StageTimes t;
  t[Stage::h2d] = ft.h2d_s;
  t[Stage::forward] = ft.forward_s;
  t[Stage::d2h] = ft.d2h_s;
  t[Stage::decode] += ft.decode_s;
  metrics.add_stages(t);
  metrics.add_batch(device, static_cast<std::size_t>(b.n()), ft.total(),
                    std::chrono::duration<double, std::milli>(Clock::now() - b.created).count());
}

/// Delivers a forwarded batch's features to the sink.
inline void deliver_batch(const Batch& b, int dim, ResultSink& sink, Metrics& metrics) {
  StageTimes t;
  trace_batch(static_cast<std::int64_t>(b.seq), b.n());
  {
    StageTimer timer(t, Stage::write);
    std::size_t next_failed = 0;  // failed_slots are in slot order
    for (int k = 0; k < b.n(); ++k) {
      const std::size_t idx = b.indices[static_cast<std::size_t>(k)];
      if (next_failed < b.failed_slots.size() && b.failed_slots[next_failed].first == k) {
        sink.on_error(idx, b.failed_slots[next_failed++].second);
        metrics.add_result(false);
        continue;
      }
      sink.on_features(idx, b.output.data() + static_cast<std::size_t>(k) * dim, dim);
      metrics.add_result(true);
    }
  }
  metrics.add_stages(t);
}

/// The warm-up batch of a run whose source hands JPEG bytes to the replicas (RunSettings::decode_warmup):
/// `todo`'s first `batch` inputs loaded as a run loads them (inputs that fail are left out here and
/// reported by the run itself); null when the source keeps none of them as bytes (nothing for a
/// device decoder to warm up on), or hands over none at all.
inline std::shared_ptr<const Batch> decode_warmup_batch(const ImageSource& src, const std::vector<std::size_t>& todo,
                                                        int batch, int size, HostMemory* memory = nullptr) {
  if (!src.hands_over_jpegs() || todo.empty()) return nullptr;
  struct Discard : ResultSink {
    void on_features(std::size_t, const float*, int) override {}
    void on_error(std::size_t, const std::string&) override {}
  } discard;
  Metrics scratch({});
  auto b = std::make_shared<Batch>(make_batch(memory));
  load_batch(src, todo, 0, std::min(todo.size(), static_cast<std::size_t>(std::max(1, batch))), size, *b, discard,
             scratch);
  if (b->encoded.empty()) return nullptr;
  return b;
}

/// Fills `s.decode_warmup` from `src` and `todo` where the run warms up and nothing filled it yet.
inline void add_decode_warmup(RunSettings& s, const ImageSource& src, const std::vector<std::size_t>& todo, int size) {
  if (s.warmup_batches > 0 && !s.decode_warmup)
    s.decode_warmup = decode_warmup_batch(src, todo, s.batch_size, size, s.host_memory);
}

namespace detail {
/// `calls` untimed forwards of the warm-up batch `w` through the device decoder (its encoded
/// slots decoded by the replica, as in the run); nothing is counted or delivered.
inline void warm_up_decoding(Model& m, const Batch& w, int calls) {
  HostFloats in(w.input.get_allocator());  // the run's memory, as its batches'
  std::vector<float> out(static_cast<std::size_t>(w.n()) * static_cast<std::size_t>(m.feature_dim()));
  for (int i = 0; i < calls; ++i) {
    in = w.input;  // the host decoder writes the slots the device rejects: a fresh copy each call
    DeviceDecodeCounts ignored;
    m.forward_encoded(in.data(), w.encoded, w.n(), out.data(), ignored);
  }
}
}  // namespace detail

/// In a worker's job: the worker's replica (made on first use), prepared for batch
/// `s.batch_size` (Model::prepare) and warmed up with `s.warmup_batches` forwards of that batch,
/// or of `s.decode_warmup` through the device decoder where the run decodes on the devices.
/// Errors name the device.
inline Model& prepare_replica(Replica& r, const RunSettings& s) {
  TraceSpan span(SpanKind::setup);
  Model& m = r.model();
  try {
    m.prepare(s.batch_size);
    if (s.warmup_batches > 0 && s.decode_warmup)
      detail::warm_up_decoding(m, *s.decode_warmup, s.warmup_batches);
    else if (s.warmup_batches > 0)
      m.warmup(s.batch_size, s.warmup_batches);
  } catch (const std::exception& e) {
    throw ReplicaError(r.device().name() + ": " + e.what());
  }
  return m;
}

/// Splits n items into k contiguous chunks [begin, end) (the first n % k chunks get one more).
inline std::vector<std::pair<std::size_t, std::size_t>> split_contiguous(std::size_t n, std::size_t k) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t len = n / k + (i < n % k ? 1 : 0);
    out.emplace_back(begin, begin + len);
    begin += len;
  }
  return out;
}

/// An execution strategy.
class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  /// Processes ctx.todo; every input ends in exactly one sink call unless the run stops early
  /// or fails. Throws after every thread has joined if a replica fails.
  virtual void run(RunContext& ctx) = 0;
  /// The most batches a run on `devices` devices holds at once (what run_strategy has the run's
  /// host memory reserve before the clock): one a device, unless the strategy queues more.
  virtual std::size_t batches_in_flight(const RunSettings& s, std::size_t devices) const {
    (void)s;
    return devices;
  }
};

}  // namespace vecbench
