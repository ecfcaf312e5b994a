// Merging the figures of several processes (include/vecbench/dist/merge_results.hpp).
#include "vecbench/dist/merge_results.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "vecbench/core/run/stats.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

namespace {

/// The merged result's name, meta (with merged_from) and config; no runs yet.
nlohmann::json merged_header(const std::vector<nlohmann::json>& files,
                             const std::function<std::string(std::size_t)>& name_of, std::ostream* log) {
  const auto& first = files[0];
  nlohmann::json out;
  out["schema_version"] = kResultSchemaVersion;
  out["name"] = first["name"];
  for (std::size_t i = 1; i < files.size(); ++i)
    if (files[i]["name"] != first["name"] && log)
      *log << "vecbench merge: warning: " << name_of(i) << " is experiment '" << files[i]["name"].get<std::string>()
           << "', not '" << first["name"].get<std::string>() << "'\n";
  out["meta"] = first["meta"];
  nlohmann::json from = nlohmann::json::array();
  for (std::size_t i = 0; i < files.size(); ++i)
    from.push_back({{"file", name_of(i)},
                    {"host", files[i]["meta"].value("host", "")},
                    {"date_utc", files[i]["meta"].value("date_utc", "")}});
  out["meta"]["merged_from"] = from;
  out["config"] = first["config"];
  out["config"]["effective"]["distribution"] = {{"kind", "merged"}, {"files", files.size()}};
  out["runs"] = nlohmann::json::array();
  return out;
}

/// "error" when in error in any file, else "failed" when it failed verification in any, else
/// "skipped" when skipped in any or missing from one; the reasons name the files.
void merged_status(nlohmann::json& run, const std::vector<const nlohmann::json*>& runs,
                   const std::function<std::string(std::size_t)>& name_of) {
  std::map<RunStatus, std::string> why;  // status -> "file: reason; ..."
  auto add = [&](RunStatus st, const std::string& text) { why[st] += (why[st].empty() ? "" : "; ") + text; };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i]) {
      add(RunStatus::skipped, name_of(i) + ": run missing");
      continue;
    }
    // the files were read by the result reader before: every status is one of the names
    const RunStatus st = parse_run_status((*runs[i])["status"].get<std::string>()).value_or(RunStatus::error);
    if (st != RunStatus::ok) add(st, name_of(i) + ": " + runs[i]->value("reason", std::string()));
  }
  for (const RunStatus st : {RunStatus::error, RunStatus::failed, RunStatus::skipped})
    if (!why[st].empty()) {
      run["status"] = to_string(st);
      run["reason"] = why[st];
      return;
    }
}

/// Repetition `rep` of one run as one sample over every file that has the run; null when a file
/// lacks that repetition. A sample without "ranks" is taken as shard <its file's position>.
nlohmann::json merged_sample(const std::vector<nlohmann::json>& files, const std::vector<const nlohmann::json*>& runs,
                             std::int64_t rep) {
  std::vector<nlohmann::json> parts;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!runs[i]) continue;
    const nlohmann::json* found = nullptr;
    for (const auto& s : (*runs[i])["samples"])
      if (s.value("rep", std::int64_t{0}) == rep) found = &s;
    if (!found) return nullptr;
    nlohmann::json part = *found;
    if (!part.contains("ranks"))
      part["ranks"] = {{"count", files.size()},
                       {"distribution", "shards"},
                       {"per_rank", nlohmann::json::array({rank_record(part, static_cast<std::int64_t>(i),
                                                                       files[i]["meta"].value("host", ""))})}};
    parts.push_back(part);
  }
  return combine_samples(parts);
}

/// Run `id` merged over `files`; `incomplete` counts samples with fewer ranks than their job.
nlohmann::json merged_run(const std::string& id, const std::vector<nlohmann::json>& files,
                          const std::function<std::string(std::size_t)>& name_of, std::size_t& incomplete) {
  std::vector<const nlohmann::json*> runs(files.size(), nullptr);
  for (std::size_t i = 0; i < files.size(); ++i)
    for (const auto& r : files[i]["runs"])
      if (r["id"] == id) runs[i] = &r;
  const nlohmann::json* base = *std::find_if(runs.begin(), runs.end(), [](const nlohmann::json* r) { return r; });
  nlohmann::json run = {{"id", id},
                        {"params", (*base)["params"]},
                        {"status", "ok"},
                        {"reason", ""},
                        {"effective", base->value("effective", nlohmann::json::object())},
                        {"samples", nlohmann::json::array()}};
  merged_status(run, runs, name_of);
  std::set<std::int64_t> reps;
  for (const auto& s : (*base)["samples"]) reps.insert(s.value("rep", std::int64_t{0}));
  for (const std::int64_t rep : reps) {
    const nlohmann::json c = merged_sample(files, runs, rep);
    if (c.is_null()) continue;
    if (c["ranks"]["per_rank"].size() < c["ranks"]["count"].get<std::size_t>()) ++incomplete;
    run["samples"].push_back(c);
  }
  std::vector<nlohmann::json> vs;
  bool every = true;
  for (auto* r : runs) {
    if (!r || !r->contains("verification") || !(*r)["verification"].is_object()) every = false;
    if (r && r->contains("verification")) vs.push_back((*r)["verification"]);
  }
  run["verification"] = every ? combine_verifications(vs) : nlohmann::json(nullptr);
  const nlohmann::json empty = {
      {"median", nullptr}, {"min", nullptr}, {"max", nullptr}, {"rel_spread", nullptr}, {"count", 0}};
  run["summary"] = {{"images_per_s", empty}, {"wall_s", empty}};
  return run;
}

}  // namespace

nlohmann::json rank_record(const nlohmann::json& sample, std::int64_t rank, const std::string& host, long chunks) {
  nlohmann::json e = {{"rank", rank},
                      {"images", sample.value("images", std::int64_t{0})},
                      {"failed", sample.value("failed", std::int64_t{0})},
                      {"wall_s", sample.value("wall_s", 0.0)},
                      {"images_per_s", sample.value("images_per_s", 0.0)},
                      {"setup_s", sample.value("setup_s", 0.0)}};
  if (!host.empty()) e["host"] = host;
  if (chunks >= 0) e["chunks"] = chunks;
  return e;
}

nlohmann::json rank_sample_json(const RunStats& st, int rep, int rank, const std::string& host, int count,
                                const std::string& distribution, long chunks) {
  nlohmann::json j = run_stats_json(st, rep);
  if (count > 1)
    for (auto& d : j["devices"]) d["name"] = "r" + std::to_string(rank) + "/" + d["name"].get<std::string>();
  j["ranks"] = {{"count", count},
                {"distribution", distribution},
                {"per_rank", nlohmann::json::array({rank_record(j, rank, host, chunks)})}};
  return j;
}

nlohmann::json combine_samples(const std::vector<nlohmann::json>& parts,
                               const std::vector<std::vector<double>>* latencies) {
  nlohmann::json c = nlohmann::json::object();
  if (parts.empty()) return c;
  double wall = 0, setup = 0;
  std::int64_t images = 0, failed = 0, rss = 0, count = 0;
  std::map<std::string, double> stages;
  nlohmann::json devices = nlohmann::json::array(), per_rank = nlohmann::json::array(), queue = nlohmann::json::array();
  std::map<std::string, double> lat_max;
  std::string distribution;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    images += p.value("images", std::int64_t{0});
    failed += p.value("failed", std::int64_t{0});
    wall = std::max(wall, p.value("wall_s", 0.0));
    setup = std::max(setup, p.value("setup_s", 0.0));
    rss = std::max(rss, p.value("peak_rss_bytes", std::int64_t{0}));
    if (p.contains("stage_s") && p["stage_s"].is_object())
      for (const auto& [k, v] : p["stage_s"].items())
        if (v.is_number()) stages[k] += v.get<double>();
    if (p.contains("latency_ms") && p["latency_ms"].is_object())
      for (const auto& [k, v] : p["latency_ms"].items())
        if (v.is_number()) lat_max[k] = std::max(lat_max.count(k) ? lat_max[k] : v.get<double>(), v.get<double>());
    if (p.contains("devices") && p["devices"].is_array())
      for (const auto& d : p["devices"]) devices.push_back(d);
    if (queue.empty() && p.contains("queue_depth") && p["queue_depth"].is_array()) queue = p["queue_depth"];
    if (p.contains("ranks") && p["ranks"].is_object()) {
      const auto& r = p["ranks"];
      count = std::max(count, r.value("count", std::int64_t{0}));
      if (distribution.empty()) distribution = r.value("distribution", std::string());
      for (const auto& e : r.value("per_rank", nlohmann::json::array())) per_rank.push_back(e);
    } else {
      per_rank.push_back(rank_record(p, static_cast<std::int64_t>(i)));
    }
  }
  std::stable_sort(per_rank.begin(), per_rank.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("rank", std::int64_t{0}) < b.value("rank", std::int64_t{0});
  });
  count = std::max<std::int64_t>(count, static_cast<std::int64_t>(per_rank.size()));
  c["rep"] = parts[0].value("rep", std::int64_t{0});
  c["images"] = images;
  c["failed"] = failed;
  c["wall_s"] = wall;
  c["setup_s"] = setup;
  const double ips = wall > 0 ? static_cast<double>(images) / wall : 0.0;
  c["images_per_s"] = ips;
  c["stage_s"] = stages;
  nlohmann::json lat = nlohmann::json::object();
  std::vector<double> all;
  if (latencies)
    for (const auto& v : *latencies) all.insert(all.end(), v.begin(), v.end());
  if (!all.empty()) {
    for (const auto& [k, q] : {std::pair<const char*, double>{"p50", 50}, {"p90", 90}, {"p99", 99}}) {
      const double v = stats::percentile(all, q);
      if (!std::isnan(v)) lat[k] = v;
    }
  } else if (!latencies) {
    for (const auto& [k, v] : lat_max) lat[k] = v;
  }
  if (!lat.empty()) c["latency_ms"] = lat;
  c["devices"] = devices;
  c["queue_depth"] = queue;
  c["peak_rss_bytes"] = rss;
  nlohmann::json ranks = {{"count", count}, {"distribution", distribution}, {"per_rank", per_rank}};
  double sum_ips = 0;
  for (const auto& e : per_rank) sum_ips += e.value("images_per_s", 0.0);
  if (per_rank.size() > 1 && sum_ips > 0) ranks["scaling_efficiency"] = ips / sum_ips;
  c["ranks"] = ranks;
  return c;
}

nlohmann::json combine_verifications(const std::vector<nlohmann::json>& vs) {
  nlohmann::json c = nullptr;
  for (const auto& v : vs) {
    if (!v.is_object()) continue;
    if (c.is_null()) {
      c = v;
      continue;
    }
    c["compared_images"] = c.value("compared_images", std::int64_t{0}) + v.value("compared_images", std::int64_t{0});
    c["max_abs_diff"] = std::max(c.value("max_abs_diff", 0.0), v.value("max_abs_diff", 0.0));
    c["max_rel_diff"] = std::max(c.value("max_rel_diff", 0.0), v.value("max_rel_diff", 0.0));
  }
  return c;
}

nlohmann::json merge_result_files(const std::vector<nlohmann::json>& files, const std::vector<std::string>& names,
                                  std::ostream* log) {
  if (files.empty()) throw ConfigError("merge --results", "no result files given");
  const std::function<std::string(std::size_t)> name_of = [&](std::size_t i) {
    return i < names.size() ? names[i] : "file " + std::to_string(i);
  };
  for (std::size_t i = 0; i < files.size(); ++i) (void)result_from_json(files[i], name_of(i));  // each is well-formed
  nlohmann::json out = merged_header(files, name_of, log);
  std::vector<std::string> ids;
  std::set<std::string> known;
  for (const auto& f : files)
    for (const auto& r : f["runs"])
      if (known.insert(r["id"].get<std::string>()).second) ids.push_back(r["id"].get<std::string>());
  std::size_t incomplete = 0;
  for (const auto& id : ids) out["runs"].push_back(merged_run(id, files, name_of, incomplete));
  if (incomplete && log)
    *log << "vecbench merge: warning: " << incomplete
         << " sample(s) hold fewer ranks than their job had: a shard's result file is missing\n";
  ResultFile f = result_from_json(out, "the merged result");
  for (auto& r : f.runs) summarize_run(r);
  return nlohmann::json(f);
}

}  // namespace vecbench
