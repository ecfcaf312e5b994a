// A run's figures (RunStats) as one sample of the result model (results/result.hpp); its JSON is
// the result schema's "sample" (schema/result.schema.json).
#pragma once
#include <cmath>
#include <cstdint>
#include <utility>

#include <nlohmann/json.hpp>

#include "vecbench/core/run/metrics.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

/// Repetition `rep` of a run as a result Sample: stage times, p50/p90/p99 of per-batch latency
/// (none when no batch ran), per-device counters and the queue depth thinned to <= 200 points.
inline Sample sample_from_stats(const RunStats& st, int rep = 0) {
  Sample s;
  s.rep = rep;
  s.images = static_cast<std::int64_t>(st.images_ok);
  s.failed = static_cast<std::int64_t>(st.images_failed);
  s.wall_s = st.wall_s;
  s.setup_s = st.setup_s;
  s.images_per_s = st.images_per_s();
  for (std::size_t i = 0; i < kStageCount; ++i) s.stage_s[kStageNames[i]] = st.stages.s[i];
  for (const auto& [k, q] : {std::pair<const char*, double>{"p50", 50}, {"p90", 90}, {"p99", 99}}) {
    const double v = st.latency_percentile_ms(q);
    if (!std::isnan(v)) s.latency_ms[k] = v;
  }
  for (const auto& d : st.devices)
    s.devices.push_back({d.name, static_cast<std::int64_t>(d.images), d.busy_fraction,
                         static_cast<std::int64_t>(d.batches), d.busy_s,
                         static_cast<std::int64_t>(d.peak_memory_bytes)});
  const std::size_t n = st.queue_depth.size(), step = n > 200 ? (n + 199) / 200 : 1;
  for (std::size_t i = 0; i < n; i += step)
    s.queue_depth.emplace_back(st.queue_depth[i].first, static_cast<double>(st.queue_depth[i].second));
  s.peak_rss_bytes = static_cast<std::int64_t>(st.peak_rss_bytes);
  if (st.device_decoded + st.device_decode_fallbacks > 0) {
    s.device_decoded = static_cast<std::int64_t>(st.device_decoded);
    s.device_decode_fallbacks = static_cast<std::int64_t>(st.device_decode_fallbacks);
  }
  return s;
}

/// The same sample as JSON (what ranks send each other and per-rank records start from).
inline nlohmann::json run_stats_json(const RunStats& st, int rep = 0) { return sample_from_stats(st, rep); }

}  // namespace vecbench
