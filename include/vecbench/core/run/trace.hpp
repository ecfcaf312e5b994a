// Trace spans: every thread of a run records what it did when (read, decode, ..., forward, write,
// queue waits, setup) into a span buffer of its own, registered with the run's Trace. A thread
// binds its buffer with a TraceThread guard; code deep in the pipeline (StageTimer, TraceSpan)
// finds it through one thread-local pointer, so tracing off costs a null check and tracing on
// one steady_clock read and a vector push per span (no lock, no allocation beyond growth).
// results/trace_json.hpp writes a Trace as Chrome trace-event JSON; core/run/trace_figures.hpp
// derives busy / starved / blocked shares and the devices' forward overlap from it.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/base/enum_names.hpp"

namespace vecbench {

/// What a span is: the eight pipeline stages (same order as core/run/metrics.hpp's Stage), the two
/// queue waits and the replica's setup.
enum class SpanKind : std::uint8_t {
  read,
  decode,
  resize,
  assemble,
  h2d,
  forward,
  d2h,
  write,
  wait_input,   ///< starved: waiting for work (an empty queue, the next step of a lockstep run)
  wait_output,  ///< blocked: waiting for room downstream (a full queue) or for a barrier
  setup,        ///< replica made and warmed up, before the clock starts
};
inline constexpr std::size_t kSpanKindCount = 11;
template <>
struct EnumNames<SpanKind> {
  static constexpr const char* what = "span kind";
  static constexpr std::array<std::pair<SpanKind, const char*>, kSpanKindCount> names = {
      {{SpanKind::read, "read"},
       {SpanKind::decode, "decode"},
       {SpanKind::resize, "resize"},
       {SpanKind::assemble, "assemble"},
       {SpanKind::h2d, "h2d"},
       {SpanKind::forward, "forward"},
       {SpanKind::d2h, "d2h"},
       {SpanKind::write, "write"},
       {SpanKind::wait_input, "wait_input"},
       {SpanKind::wait_output, "wait_output"},
       {SpanKind::setup, "setup"}}};
};
namespace detail {
constexpr bool span_names_in_order() {
  for (std::size_t i = 0; i < kSpanKindCount; ++i)
    if (static_cast<std::size_t>(EnumNames<SpanKind>::names[i].first) != i) return false;
  return true;
}
}  // namespace detail
static_assert(detail::span_names_in_order(), "EnumNames<SpanKind> lists the kinds in their order");

/// The name of kind `k`, by its index (the table is in the kinds' order: the trace writer's hot path).
inline const char* span_kind_name(SpanKind k) { return EnumNames<SpanKind>::names[static_cast<std::size_t>(k)].second; }

/// Monotonic time in ns (steady_clock since its epoch): what spans are stamped with.
inline std::int64_t trace_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// One span: [start_ns, start_ns + dur_ns) on the steady clock; `batch` is the run's batch
/// number (-1: none), `images` the images it covers (1 for per-image stages).
struct Span {
  std::int64_t start_ns = 0;
  std::int64_t dur_ns = 0;
  std::int64_t batch = -1;
  std::int32_t images = 0;
  SpanKind kind = SpanKind::read;
};

/// The spans of one thread (a lane of the timeline). Only its thread writes it while a run goes
/// on; it is read after the run (every thread has finished).
struct TraceLane {
  std::string name;         ///< "device 0 (cpu/3#0)", "decoder 1", "writer", ...
  int device = -1;          ///< index of the run's device this lane is the worker of; -1: none
  std::vector<Span> spans;  ///< in the order recorded
  std::int64_t batch = -1;  ///< context: the batch now worked on (see trace_batch)
  std::int32_t images = 0;  ///< context: its image count
  void add(SpanKind k, std::int64_t t0, std::int64_t t1) {
    const bool per_image = k == SpanKind::read || k == SpanKind::decode || k == SpanKind::resize;
    spans.push_back(Span{t0, t1 - t0, batch, per_image ? 1 : images, k});
  }
};

/// All lanes of a run (or of several runs on the same threads: the chunks of a dynamic MPI job
/// reuse a lane by name). `run_begin_ns`/`run_end_ns` is the timed part (clock start to
/// finish); setup spans lie before it.
class Trace {
 public:
  explicit Trace(int pid = 0, std::string process = "vecbench") : pid_(pid), process_(std::move(process)) {}
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  /// The lane named `name` (made on first use); its address stays valid for the Trace's life.
  TraceLane* lane(const std::string& name, int device = -1) {
    std::lock_guard<std::mutex> lk(m_);
    for (auto& l : lanes_)
      if (l.name == name) return &l;
    lanes_.push_back(TraceLane{name, device, {}, -1, 0});
    lanes_.back().spans.reserve(1024);
    return &lanes_.back();
  }
  /// Widens the timed window to include [begin_ns, end_ns].
  void add_window(std::int64_t begin_ns, std::int64_t end_ns) {
    std::lock_guard<std::mutex> lk(m_);
    if (run_begin_ns_ == 0 || begin_ns < run_begin_ns_) run_begin_ns_ = begin_ns;
    if (end_ns > run_end_ns_) run_end_ns_ = end_ns;
  }
  /// Sets the device names (index = TraceLane::device).
  void set_devices(std::vector<std::string> names) {
    std::lock_guard<std::mutex> lk(m_);
    devices_ = std::move(names);
  }

  // Read after the run.
  const std::deque<TraceLane>& lanes() const { return lanes_; }
  std::deque<TraceLane>& lanes() { return lanes_; }
  const std::vector<std::string>& devices() const { return devices_; }
  std::int64_t run_begin_ns() const { return run_begin_ns_; }
  std::int64_t run_end_ns() const { return run_end_ns_; }
  int pid() const { return pid_; }
  const std::string& process() const { return process_; }
  std::size_t span_count() const {
    std::size_t n = 0;
    for (const auto& l : lanes_) n += l.spans.size();
    return n;
  }
  /// Counts of spans of kind `k` (all lanes).
  std::size_t count(SpanKind k) const {
    std::size_t n = 0;
    for (const auto& l : lanes_)
      for (const auto& s : l.spans) n += s.kind == k ? 1 : 0;
    return n;
  }

 private:
  int pid_;
  std::string process_;
  std::mutex m_;                      ///< guards lanes_ (growth), the window and devices_
  std::deque<TraceLane> lanes_;       ///< a deque: lane addresses stay put as lanes are added
  std::vector<std::string> devices_;  ///< device names, by index
  std::int64_t run_begin_ns_ = 0, run_end_ns_ = 0;
};

namespace detail {
/// The calling thread's lane; null: this thread does not trace.
inline TraceLane*& tls_trace_lane() {
  thread_local TraceLane* lane = nullptr;
  return lane;
}
}  // namespace detail

/// Binds the calling thread to lane `name` of `trace` for the guard's life (null trace: off);
/// restores the previous binding on the way out.
class TraceThread {
 public:
  TraceThread(Trace* trace, const std::string& name, int device = -1) : prev_(detail::tls_trace_lane()) {
    if (trace) detail::tls_trace_lane() = trace->lane(name, device);
  }
  ~TraceThread() { detail::tls_trace_lane() = prev_; }
  TraceThread(const TraceThread&) = delete;
  TraceThread& operator=(const TraceThread&) = delete;

 private:
  TraceLane* prev_;
};

/// Sets the batch context of the calling thread's lane: later spans carry `batch` and `images`.
inline void trace_batch(std::int64_t batch, int images) {
  if (TraceLane* l = detail::tls_trace_lane()) {
    l->batch = batch;
    l->images = images;
  }
}

/// Records a span [t0_ns, t1_ns) on the calling thread's lane (nothing when it does not trace).
inline void trace_span(SpanKind k, std::int64_t t0_ns, std::int64_t t1_ns) {
  if (TraceLane* l = detail::tls_trace_lane()) l->add(k, t0_ns, t1_ns);
}

/// Records the scope as a span of kind `k` on the calling thread's lane.
class TraceSpan {
 public:
  explicit TraceSpan(SpanKind k) : lane_(detail::tls_trace_lane()), kind_(k) {
    if (lane_) t0_ = trace_now_ns();
  }
  ~TraceSpan() {
    if (lane_) lane_->add(kind_, t0_, trace_now_ns());
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  TraceLane* lane_;
  SpanKind kind_;
  std::int64_t t0_ = 0;
};

}  // namespace vecbench
