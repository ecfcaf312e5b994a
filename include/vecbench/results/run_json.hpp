// A run's figures as one "sample" of the result schema (schema/result.schema.json).
#pragma once
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "vecbench/core/metrics.hpp"

namespace vecbench {

inline nlohmann::json run_stats_json(const RunStats& st, int rep = 0) {
  nlohmann::json j;
  j["rep"] = rep;
  j["images"] = st.images_ok;
  j["failed"] = st.images_failed;
  j["wall_s"] = st.wall_s;
  j["setup_s"] = st.setup_s;
  j["images_per_s"] = st.images_per_s();
  nlohmann::json stages = nlohmann::json::object();
  for (std::size_t i = 0; i < kStageCount; ++i) stages[kStageNames[i]] = st.stages.s[i];
  j["stage_s"] = stages;
  // Percentiles of per-batch latency; none when no batch ran (the schema allows numbers only).
  nlohmann::json lat = nlohmann::json::object();
  for (const auto& [k, q] : {std::pair<const char*, double>{"p50", 50}, {"p90", 90}, {"p99", 99}}) {
    const double v = st.latency_percentile_ms(q);
    if (!std::isnan(v)) lat[k] = v;
  }
  j["latency_ms"] = lat;
  j["devices"] = nlohmann::json::array();
  for (const auto& d : st.devices)
    j["devices"].push_back({{"name", d.name},
                            {"images", d.images},
                            {"batches", d.batches},
                            {"busy_s", d.busy_s},
                            {"busy_fraction", d.busy_fraction},
                            {"peak_memory_bytes", d.peak_memory_bytes}});
  // Queue depth over time, thinned to at most 200 points.
  j["queue_depth"] = nlohmann::json::array();
  const std::size_t n = st.queue_depth.size(), step = n > 200 ? (n + 199) / 200 : 1;
  for (std::size_t i = 0; i < n; i += step)
    j["queue_depth"].push_back({st.queue_depth[i].first, st.queue_depth[i].second});
  j["peak_rss_bytes"] = st.peak_rss_bytes;
  return j;
}

}  // namespace vecbench
