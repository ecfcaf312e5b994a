// Merging what several processes wrote: the per-rank manifests of output directories into one
// manifest.jsonl, and per-rank samples or per-shard result files into one result with
// per-rank and total figures (throughput = total images / slowest rank's wall time).
#pragma once
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/fs_util.hpp"
#include "vecbench/core/stats.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/output/output_lock.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/results/result.hpp"
#include "vecbench/results/run_json.hpp"

namespace vecbench {

/// Natural order of names: runs of digits compare as numbers ("synthetic:2" < "synthetic:10").
inline bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
      x.erase(0, std::min(x.find_first_not_of('0'), x.size()));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

/// What merge_manifests found.
struct ManifestMerge {
  std::size_t inputs = 0;       ///< lines written (one per input)
  std::size_t ok = 0;           ///< of which "ok"
  std::size_t errors = 0;       ///< of which "error" (no ok line for the input anywhere)
  std::size_t lines = 0;        ///< manifest lines read
  std::size_t dropped = 0;      ///< "ok" lines whose output or shard file is missing or incomplete
  std::size_t other_fp = 0;     ///< lines made under another fingerprint than their folder's (left out)
  std::vector<fs::path> files;  ///< manifests read
  std::string fingerprint_id;   ///< the fingerprint every merged line has ("" for folders without one)
};

/// The one fingerprint of the output folders `dirs` (empty when none has vecbench.json).
/// OutputFolderError when they differ, or when some have one and others hold manifests without:
/// merge never mixes vectors made differently.
inline Fingerprint common_fingerprint(const std::vector<fs::path>& dirs) {
  Fingerprint common;
  std::string first;
  bool unfingerprinted = false;
  for (const auto& dir : dirs) {
    const Fingerprint fp = read_store_fingerprint(dir);
    if (fp.empty()) {
      unfingerprinted = unfingerprinted || !manifest_files(dir).empty();
    } else if (common.empty()) {
      common = fp;
      first = dir.string();
    } else if (fp.id() != common.id()) {
      std::string why =
          "its vectors were made under fingerprint " + fp.id() + ", those of " + first + " under " + common.id() + ":";
      for (const auto& d : fingerprint_diff(common.fields, fp.fields)) why += "\n  " + d;
      throw OutputFolderError(dir.string(), why + "\nmerge refuses to mix them");
    }
    if (!common.empty() && unfingerprinted)
      throw OutputFolderError(dir.string(),
                              "merge refuses to mix folders with a fingerprint (vecbench.json) and "
                              "folders written before fingerprints");
  }
  return common;
}

/// Combines every manifest (manifest.jsonl and manifest-rRRRR.jsonl) of the output directories
/// `dirs` into `out`/manifest.jsonl (atomically): one line per input. An input's line is its
/// first "ok" line whose data (output file, or shard rows) is complete, else its last "error"
/// line. Lines of another fingerprint than their folder's are left out; folders of different
/// fingerprints are refused (common_fingerprint), and `out` gets their vecbench.json.
/// Lines of a directory other than `out` get their output/shard paths rewritten relative to
/// `out`. Order: the input names in `order` first, in that order, then the rest in natural order.
inline ManifestMerge merge_manifests(const std::vector<fs::path>& dirs, const fs::path& out,
                                     const std::vector<std::string>& order = {}) {
  ManifestMerge m;
  std::error_code ec;
  for (const auto& dir : dirs)
    if (!fs::is_directory(dir, ec)) throw IoError(dir.string(), "not a directory");
  const Fingerprint fp = common_fingerprint(dirs);
  m.fingerprint_id = fp.empty() ? "" : fp.id();
  const int dim = fp.empty() ? 0 : fp.fields.value("feature_dim", 0);
  const fs::path out_c = fs::weakly_canonical(out, ec);
  std::map<std::string, nlohmann::json> ok, err;
  std::vector<std::string> seen;
  std::set<std::string> seen_set;
  for (const auto& dir : dirs) {
    const fs::path dir_c = fs::weakly_canonical(dir, ec);
    const bool same = dir_c == out_c;
    LineDataCheck complete(dir, dim);
    for (const auto& file : manifest_files(dir)) {
      m.files.push_back(file);
      for_each_manifest_line(file, [&](nlohmann::json j) {
        if (!j.contains("input") || !j["input"].is_string()) return;
        ++m.lines;
        if (j.value("fp", std::string()) != m.fingerprint_id) {
          ++m.other_fp;
          return;
        }
        const std::string input = j["input"].get<std::string>();
        if (seen_set.insert(input).second) seen.push_back(input);
        if (j.value("status", "") == "ok") {
          if (ok.count(input)) return;
          if (!complete(j)) {
            ++m.dropped;
            return;
          }
          if (!same)
            for (const char* k : {"output", "shard"})
              if (j.contains(k) && j[k].is_string())
                j[k] = (dir_c / j[k].get<std::string>()).lexically_normal().lexically_relative(out_c).string();
          ok[input] = j;
        } else {
          err[input] = j;
        }
      });
    }
  }
  if (!fp.empty()) open_store_identity(out, fp, false, std::cerr);
  std::map<std::string, std::size_t> rank;
  for (std::size_t i = 0; i < order.size(); ++i) rank.emplace(order[i], i);
  std::stable_sort(seen.begin(), seen.end(), [&](const std::string& a, const std::string& b) {
    const auto ia = rank.find(a), ib = rank.find(b);
    if (ia != rank.end() || ib != rank.end()) {
      if (ia == rank.end()) return false;
      if (ib == rank.end()) return true;
      return ia->second < ib->second;
    }
    return natural_less(a, b);
  });
  std::string text;
  for (const auto& input : seen) {
    const auto it = ok.find(input);
    if (it != ok.end()) {
      text += manifest_text(it->second);
      ++m.ok;
    } else if (err.count(input)) {
      text += manifest_text(err[input]);
      ++m.errors;
    } else {
      continue;  // only ok lines with missing data
    }
    ++m.inputs;
  }
  atomic_write(out / "manifest.jsonl", text);
  return m;
}

// ---- Samples of several ranks -------------------------------------------------------------------

/// One rank's sample of a run: its figures as a result sample (run_stats_json), its devices
/// named "r<rank>/<device>" when there are several ranks, and "ranks" holding this rank alone.
/// `chunks`: inputs requests served by rank 0 (dynamic mode; < 0: none).
inline nlohmann::json rank_sample_json(const RunStats& st, int rep, int rank, const std::string& host, int count,
                                       const std::string& distribution, long chunks = -1) {
  nlohmann::json j = run_stats_json(st, rep);
  if (count > 1)
    for (auto& d : j["devices"]) d["name"] = "r" + std::to_string(rank) + "/" + d["name"].get<std::string>();
  nlohmann::json e = {{"rank", rank},           {"host", host},          {"images", j["images"]},
                      {"failed", j["failed"]},  {"wall_s", j["wall_s"]}, {"images_per_s", j["images_per_s"]},
                      {"setup_s", j["setup_s"]}};
  if (chunks >= 0) e["chunks"] = chunks;
  j["ranks"] = {{"count", count}, {"distribution", distribution}, {"per_rank", nlohmann::json::array({e})}};
  return j;
}

/// Combines samples of one repetition from several ranks or shards (each with "ranks"; a sample
/// without is taken as rank <its position>) into one: images and failures summed, wall time the
/// slowest rank's, throughput = images / that wall time, stage times summed, devices listed,
/// latency percentiles over every rank's batches when `latencies` (per part, ms) are given (else
/// the largest of each part's), and "ranks" with every rank's figures and the scaling efficiency
/// (throughput / sum of the ranks' own throughputs: 1 when no rank waited on another).
inline nlohmann::json combine_samples(const std::vector<nlohmann::json>& parts,
                                      const std::vector<std::vector<double>>* latencies = nullptr) {
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
      per_rank.push_back({{"rank", static_cast<std::int64_t>(i)},
                          {"images", p.value("images", std::int64_t{0})},
                          {"failed", p.value("failed", std::int64_t{0})},
                          {"wall_s", p.value("wall_s", 0.0)},
                          {"images_per_s", p.value("images_per_s", 0.0)},
                          {"setup_s", p.value("setup_s", 0.0)}});
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

/// Combines verification records of several ranks (null ones are skipped; null if all are).
inline nlohmann::json combine_verifications(const std::vector<nlohmann::json>& vs) {
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

/// Merges the result files of the shards of one job (`vecbench run --shard-index I --num-shards
/// N`, one file per shard) into one result: per run, each repetition present in every file
/// becomes one sample combined as combine_samples does. A run is "error" when it is in error in
/// any file, "skipped" when skipped in any or missing from one. `names` name the files in
/// reasons and in meta.merged_from. The result is checked against the result schema.
inline nlohmann::json merge_result_files(const std::vector<nlohmann::json>& files,
                                         const std::vector<std::string>& names, std::ostream* log = nullptr) {
  if (files.empty()) throw ConfigError("merge --results", "no result files given");
  auto name_of = [&](std::size_t i) { return i < names.size() ? names[i] : "file " + std::to_string(i); };
  for (std::size_t i = 0; i < files.size(); ++i) (void)result_from_json(files[i], name_of(i));  // each is well-formed
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

  std::vector<std::string> ids;
  std::set<std::string> known;
  for (const auto& f : files)
    for (const auto& r : f["runs"])
      if (known.insert(r["id"].get<std::string>()).second) ids.push_back(r["id"].get<std::string>());
  out["runs"] = nlohmann::json::array();
  std::size_t incomplete = 0;
  for (const auto& id : ids) {
    std::vector<const nlohmann::json*> runs(files.size(), nullptr);
    for (std::size_t i = 0; i < files.size(); ++i)
      for (const auto& r : files[i]["runs"])
        if (r["id"] == id) runs[i] = &r;
    const nlohmann::json* base = nullptr;
    for (auto* r : runs)
      if (r && !base) base = r;
    nlohmann::json run = {{"id", id},
                          {"params", (*base)["params"]},
                          {"status", "ok"},
                          {"reason", ""},
                          {"effective", base->value("effective", nlohmann::json::object())},
                          {"samples", nlohmann::json::array()}};
    std::string errors, skips;
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (!runs[i]) {
        skips += (skips.empty() ? "" : "; ") + name_of(i) + ": run missing";
        continue;
      }
      const std::string st = (*runs[i])["status"].get<std::string>();
      const std::string why = name_of(i) + ": " + runs[i]->value("reason", std::string());
      if (st == "error") errors += (errors.empty() ? "" : "; ") + why;
      if (st == "skipped") skips += (skips.empty() ? "" : "; ") + why;
    }
    if (!errors.empty()) {
      run["status"] = "error";
      run["reason"] = errors;
    } else if (!skips.empty()) {
      run["status"] = "skipped";
      run["reason"] = skips;
    }
    // Samples: each repetition found in every file that has the run.
    std::set<std::int64_t> reps;
    for (const auto& s : (*base)["samples"]) reps.insert(s.value("rep", std::int64_t{0}));
    for (const std::int64_t rep : reps) {
      std::vector<nlohmann::json> parts;
      bool all = true;
      for (std::size_t i = 0; i < files.size(); ++i) {
        if (!runs[i]) continue;
        const nlohmann::json* found = nullptr;
        for (const auto& s : (*runs[i])["samples"])
          if (s.value("rep", std::int64_t{0}) == rep) found = &s;
        if (!found) {
          all = false;
          break;
        }
        nlohmann::json part = *found;
        if (!part.contains("ranks")) {
          part["ranks"] = {{"count", files.size()},
                           {"distribution", "shards"},
                           {"per_rank", nlohmann::json::array({{{"rank", i},
                                                                {"host", files[i]["meta"].value("host", "")},
                                                                {"images", part.value("images", 0)},
                                                                {"failed", part.value("failed", 0)},
                                                                {"wall_s", part.value("wall_s", 0.0)},
                                                                {"images_per_s", part.value("images_per_s", 0.0)},
                                                                {"setup_s", part.value("setup_s", 0.0)}}})}};
        }
        parts.push_back(part);
      }
      if (!all) continue;
      const auto c = combine_samples(parts);
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
    out["runs"].push_back(run);
  }
  if (incomplete && log)
    *log << "vecbench merge: warning: " << incomplete
         << " sample(s) hold fewer ranks than their job had: a shard's result file is missing\n";
  ResultFile f = result_from_json(out, "the merged result");
  for (auto& r : f.runs) summarize_run(r);
  return nlohmann::json(f);
}

/// `vecbench merge`: with `results`, merges those result files into the file `out`; otherwise
/// merges the manifests of each directory of `dirs` in place, or of all of them into `out`
/// (`out` alone: that directory in place). Prints what it did on `info`; returns the exit status.
inline int merge_command(const std::vector<std::string>& dirs, const std::vector<std::string>& results,
                         const std::string& out, std::ostream& info, std::ostream& log) {
  if (!results.empty()) {
    if (out.empty()) throw ConfigError("--out", "merge --results needs --out FILE for the merged result");
    if (!dirs.empty()) throw ConfigError("merge", "give result files after --results, or output directories, not both");
    std::vector<nlohmann::json> files;
    for (const auto& f : results) {
      std::ifstream in(f);
      if (!in) throw IoError(f, "cannot open result file");
      const auto j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_discarded()) throw ResultFormatError(f, "", "not valid JSON");
      files.push_back(j);
    }
    const auto merged = merge_result_files(files, results, &log);
    atomic_write(out, merged.dump(2) + "\n");
    std::size_t ok = 0;
    for (const auto& r : merged["runs"]) ok += r["status"] == "ok";
    info << "merge: " << out << ": " << merged["runs"].size() << " runs (" << ok << " ok) from " << files.size()
         << " result files\n";
    return 0;
  }
  auto report = [&](const fs::path& target, const ManifestMerge& m) {
    info << "merge: " << (target / "manifest.jsonl").string() << ": " << m.inputs << " inputs (" << m.ok << " ok, "
         << m.errors << " failed) from " << m.files.size() << " manifests";
    if (m.dropped) info << "; " << m.dropped << " ok lines dropped: their output is missing or incomplete";
    if (m.other_fp) info << "; " << m.other_fp << " lines of another fingerprint left out";
    info << "\n";
  };
  if (dirs.empty() && out.empty())
    throw ConfigError("merge", "give output directories (or --out DIR, or --results FILES --out FILE)");
  if (!out.empty() && !dirs.empty()) {
    std::vector<fs::path> v(dirs.begin(), dirs.end());
    std::error_code ec;
    fs::create_directories(out, ec);
    const OutputLock lock(out, -1);  // the only writer of `out` while merging
    report(out, merge_manifests(v, out));
    return 0;
  }
  for (const auto& d : dirs.empty() ? std::vector<std::string>{out} : dirs) {
    const OutputLock lock(d, -1);  // refused while a vectorize (or its shards) writes there
    report(d, merge_manifests({d}, d));
  }
  return 0;
}

}  // namespace vecbench
