// Figures derived from a run's trace spans (core/run/trace.hpp): per device, the fraction of the
// timed window it was busy (h2d, forward, d2h), starved (waiting for input) and blocked (waiting
// for the writer or a barrier), and the overlap of the devices' forward spans: the sum of their
// forward time over the length of its union, so 1 device-equivalent is fully serialized and N
// is N devices computing side by side all the time.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/run/trace.hpp"

namespace vecbench {

/// One device's shares of the timed window (fractions 0..1; the rest is idle or host work such
/// as decoding in the device's own thread).
struct DeviceShare {
  std::string name;      ///< device name
  double busy = 0.0;     ///< in h2d, forward or d2h spans
  double starved = 0.0;  ///< in wait_input spans of the device's lane
  double blocked = 0.0;  ///< in wait_output spans of the device's lane
};

/// What a trace says about one run.
struct TraceFigures {
  double wall_s = 0.0;               ///< the timed window, seconds
  double forward_overlap = 0.0;      ///< device-equivalents computing at once (0: no forward span)
  std::int64_t spans = 0;            ///< spans recorded (all lanes, setup included)
  std::vector<DeviceShare> devices;  ///< one per device of the run, in order
  std::string file;                  ///< where the trace was written ("" when it was not)
};

namespace detail {
using Interval = std::pair<std::int64_t, std::int64_t>;

/// Total length of the union of `v` (sorted in place).
inline std::int64_t union_length(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  std::int64_t total = 0, cur_b = 0, cur_e = 0;
  bool open = false;
  for (const auto& [b, e] : v) {
    if (!open || b > cur_e) {
      if (open) total += cur_e - cur_b;
      cur_b = b;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  return open ? total + cur_e - cur_b : total;
}

/// Span `s` clipped to [lo, hi); false when nothing is left.
inline bool clip(const Span& s, std::int64_t lo, std::int64_t hi, Interval& out) {
  out = {std::max(lo, s.start_ns), std::min(hi, s.start_ns + s.dur_ns)};
  return out.second > out.first;
}
}  // namespace detail

/// The figures of `t` over its timed window (the whole span range when no window was set).
inline TraceFigures trace_figures(const Trace& t) {
  TraceFigures f;
  std::int64_t lo = t.run_begin_ns(), hi = t.run_end_ns();
  if (hi <= lo) {  // no window: the range the spans cover
    lo = INT64_MAX;
    hi = INT64_MIN;
    for (const auto& l : t.lanes())
      for (const auto& s : l.spans) {
        lo = std::min(lo, s.start_ns);
        hi = std::max(hi, s.start_ns + s.dur_ns);
      }
    if (hi <= lo) return f;
  }
  f.wall_s = static_cast<double>(hi - lo) * 1e-9;
  f.spans = static_cast<std::int64_t>(t.span_count());
  std::size_t n_dev = t.devices().size();
  for (const auto& l : t.lanes()) n_dev = std::max(n_dev, static_cast<std::size_t>(l.device + 1));
  std::vector<std::vector<detail::Interval>> busy(n_dev), starved(n_dev), blocked(n_dev);
  std::vector<detail::Interval> forwards;
  std::int64_t forward_sum = 0;
  for (const auto& l : t.lanes()) {
    if (l.device < 0) continue;
    const auto d = static_cast<std::size_t>(l.device);
    for (const auto& s : l.spans) {
      detail::Interval iv;
      if (!detail::clip(s, lo, hi, iv)) continue;
      if (s.kind == SpanKind::h2d || s.kind == SpanKind::forward || s.kind == SpanKind::d2h) busy[d].push_back(iv);
      if (s.kind == SpanKind::wait_input) starved[d].push_back(iv);
      if (s.kind == SpanKind::wait_output) blocked[d].push_back(iv);
      if (s.kind == SpanKind::forward) {
        forwards.push_back(iv);
        forward_sum += iv.second - iv.first;
      }
    }
  }
  const double window = static_cast<double>(hi - lo);
  for (std::size_t d = 0; d < n_dev; ++d) {
    DeviceShare ds;
    ds.name = d < t.devices().size() ? t.devices()[d] : "device " + std::to_string(d);
    ds.busy = static_cast<double>(detail::union_length(busy[d])) / window;
    ds.starved = static_cast<double>(detail::union_length(starved[d])) / window;
    ds.blocked = static_cast<double>(detail::union_length(blocked[d])) / window;
    f.devices.push_back(ds);
  }
  const std::int64_t covered = detail::union_length(forwards);
  f.forward_overlap = covered > 0 ? static_cast<double>(forward_sum) / static_cast<double>(covered) : 0.0;
  return f;
}

}  // namespace vecbench
