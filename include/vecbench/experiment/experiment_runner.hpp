// Runs an experiment's matrix (interleaved repetitions, time budget, verification against the
// sequential reference, external peers) and builds the result JSON (schema_version 1).
// Backend-agnostic: the caller supplies model factories and image sources.
#pragma once
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "vecbench/core/fs_util.hpp"
#include "vecbench/core/host.hpp"
#include "vecbench/core/stats.hpp"
#include "vecbench/dist/distributed_run.hpp"
#include "vecbench/experiment/experiment.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/results/run_json.hpp"
#include "vecbench/strategies/runner.hpp"

namespace vecbench {

/// What the runner needs from the outside world.
struct ExperimentEnv {
  /// Makes a replica factory for the experiment's model.
  std::function<ModelFactory()> make_factory;
  /// Factory for the fp32 CPU reference pass (defaults to make_factory).
  std::function<ModelFactory()> make_reference_factory;
  /// Makes the image source for a resize mode.
  std::function<std::unique_ptr<ImageSource>(ResizeMode)> make_source;
  ResizeMode model_resize = ResizeMode::tf_legacy;  ///< the model's default resize mode
  int input_size = 299;
  int cuda_devices = 0;
  nlohmann::json meta = nlohmann::json::object();  ///< the result's "meta" (argv, versions, model...)
  fs::path work_dir = "results/.tmp";              ///< scratch space for written outputs
  const std::atomic<bool>* stop = nullptr;
  std::ostream* log = &std::cerr;
  /// Several processes (MPI ranks or shards) share every run's inputs; null or one process: this
  /// process does all. Connected ranks must all call run_experiment; only rank 0's result is whole.
  const Distribution* dist = nullptr;
  int cpu_cores = 0;  ///< cores the CPU replicas split (0: the machine's)
};

/// One row of the matrix.
struct PlannedRun {
  nlohmann::json params;
  std::string id;
  bool external = false;
  std::size_t external_index = 0;
  nlohmann::json samples = nlohmann::json::array();
  std::string status = "ok", reason;
  nlohmann::json effective = nlohmann::json::object();
  nlohmann::json verification = nullptr;
  std::vector<double> ips;
};

namespace detail {
inline std::string run_id(const nlohmann::json& p) {
  std::string s;
  for (const char* k : {"strategy", "devices", "batch", "threads", "resize", "input"}) {
    if (!p.contains(k)) continue;
    s += (s.empty() ? "" : " ") + std::string(k) + "=" + (p[k].is_string() ? p[k].get<std::string>() : p[k].dump());
  }
  return s;
}

/// Runs an external command; returns its img/s (parsed by `x.regex`) or -1 with `reason` set.
/// `wall_s` gets the command's whole wall time, `images` the "images=N" it printed (else 0),
/// `line` the output line the img/s came from (peers name what they ran there: versions, settings).
inline double run_external(const Experiment::External& x, std::string& reason, double& wall_s, std::size_t& images,
                           std::string& line) {
  const auto t0 = Clock::now();
  std::FILE* f = ::popen((x.command + " 2>&1").c_str(), "r");
  if (!f) {
    reason = "cannot start: " + x.command;
    return -1;
  }
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int rc = ::pclose(f);
  wall_s = seconds_since(t0);
  std::smatch m;
  images = 0;
  if (std::regex_search(out, m, std::regex("images=([0-9]+)"))) images = std::stoull(m[1].str());
  if (rc == 0 && std::regex_search(out, m, std::regex(x.regex)) && m.size() > 1) {
    const auto at = static_cast<std::size_t>(m.position(0));
    const std::size_t from = out.rfind('\n', at) + 1;  // npos + 1 == 0: the first line
    line = out.substr(from, out.find('\n', at) - from);
    return std::stod(m[1].str());
  }
  std::string tail = out.size() > 300 ? out.substr(out.size() - 300) : out;
  for (auto& c : tail)
    if (c == '\n') c = ' ';
  reason = "exit status " + std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1) +
           (rc == 0 ? ", no match for /" + x.regex + "/" : "") + ": " + tail;
  return -1;
}

inline void summarize_into(nlohmann::json& run) {
  auto sum = [](const std::vector<double>& v) {
    const auto s = stats::summarize(v);
    auto num = [](double d) { return std::isnan(d) ? nlohmann::json(nullptr) : nlohmann::json(d); };
    return nlohmann::json{{"median", num(s.median)},
                          {"min", num(s.min)},
                          {"max", num(s.max)},
                          {"rel_spread", num(s.rel_spread)},
                          {"count", s.count}};
  };
  std::vector<double> ips, wall;
  std::map<std::string, std::vector<double>> lat, stage;
  for (const auto& s : run["samples"]) {
    ips.push_back(s.value("images_per_s", 0.0));
    if (s.contains("wall_s")) wall.push_back(s["wall_s"].get<double>());
    if (s.contains("latency_ms"))
      for (const auto& [k, v] : s["latency_ms"].items())
        if (v.is_number()) lat[k].push_back(v.get<double>());
    const double n = std::max(1.0, s.value("images", 0.0));
    if (s.contains("stage_s"))
      for (const auto& [k, v] : s["stage_s"].items()) stage[k].push_back(v.get<double>() / n);
  }
  nlohmann::json summary;
  summary["images_per_s"] = sum(ips);
  summary["wall_s"] = sum(wall);
  summary["latency_ms"] = nlohmann::json::object();
  for (const auto& [k, v] : lat) summary["latency_ms"][k] = sum(v);
  summary["stage_s_per_image"] = nlohmann::json::object();
  for (const auto& [k, v] : stage) summary["stage_s_per_image"][k] = stats::median(v);
  run["summary"] = summary;
}
}  // namespace detail

/// Max absolute and relative (L2 per image) differences between two feature sets.
inline nlohmann::json verify_features(const MemorySink& got, const MemorySink& ref) {
  double max_abs = 0, max_rel = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const auto& a = got.features(i);
    const auto& b = ref.features(i);
    if (a.empty() || b.empty() || a.size() != b.size()) continue;
    double d2 = 0, b2 = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double d = static_cast<double>(a[k]) - b[k];
      max_abs = std::max(max_abs, std::fabs(d));
      d2 += d * d;
      b2 += static_cast<double>(b[k]) * b[k];
    }
    max_rel = std::max(max_rel, b2 > 0 ? std::sqrt(d2 / b2) : std::sqrt(d2));
    ++n;
  }
  return {{"reference", "sequential"}, {"compared_images", n}, {"max_abs_diff", max_abs}, {"max_rel_diff", max_rel}};
}

/// Runs the experiment; returns the result JSON (schema_version 1).
inline nlohmann::json run_experiment(const Experiment& e, const ExperimentEnv& env) {
  std::ostream& log = *env.log;
  const auto t_begin = Clock::now();
  std::map<ResizeMode, std::unique_ptr<ImageSource>> sources;
  auto source_for = [&](ResizeMode m) -> const ImageSource& {
    auto& s = sources[m];
    if (!s) s = env.make_source(m);
    return *s;
  };
  auto resolve_resize = [&](const std::string& r) { return r == "default" ? env.model_resize : parse_resize_mode(r); };

  std::vector<PlannedRun> runs;
  std::set<std::string> ids;
  for (const auto& mx : e.matrices)
    for (const auto& s : mx.strategies)
      for (const auto& d : mx.devices)
        for (int b : mx.batch_sizes)
          for (int t : mx.threads)
            for (const auto& r : mx.resize) {
              PlannedRun p;
              p.params = {{"strategy", s},
                          {"devices", d},
                          {"batch", b},
                          {"threads", t},
                          {"resize", to_string(resolve_resize(r))},
                          {"input", source_for(resolve_resize(r)).kind()}};
              p.id = detail::run_id(p.params);
              if (ids.insert(p.id).second) runs.push_back(std::move(p));
            }
  for (std::size_t i = 0; i < e.external.size(); ++i) {
    PlannedRun p;
    p.external = true;
    p.external_index = i;
    p.params = {{"strategy", "external:" + e.external[i].name}, {"command", e.external[i].command}};
    p.id = "strategy=external:" + e.external[i].name;
    runs.push_back(std::move(p));
  }

  // The sequential reference features, per resize mode: the first repetition of a
  // `sequential cpu batch 1` run of the matrix, or else an extra untimed pass.
  std::map<ResizeMode, std::unique_ptr<MemorySink>> refs;
  auto is_reference_run = [](const nlohmann::json& p) {
    return p["strategy"] == "sequential" && p["devices"] == "cpu" && p["batch"] == 1 && p["threads"] == 0;
  };
  // Only the inputs that `got` has and the reference lacks are run (a rank of a multi-process
  // run checks its own share).
  auto reference = [&](ResizeMode m, const MemorySink& got) -> const MemorySink& {
    auto& r = refs[m];
    const auto& src = source_for(m);
    if (!r) r = std::make_unique<MemorySink>(src.size());
    std::vector<std::size_t> missing;
    for (std::size_t k = 0; k < src.size(); ++k)
      if (got.times_seen(k) > 0 && r->times_seen(k) == 0) missing.push_back(k);
    if (!missing.empty()) {
      RunSettings s;
      s.warmup_batches = 1;
      s.stop = env.stop;
      log << "vecbench: reference pass (sequential, cpu, batch 1) over " << missing.size() << " inputs\n";
      const auto factory = env.make_reference_factory ? env.make_reference_factory() : env.make_factory();
      DeviceOptions ro;
      ro.cpu_cores = env.cpu_cores;
      run_strategy("sequential", src, missing, expand_devices("cpu", ro), factory, *r, s, env.input_size);
    }
    return *r;
  };

  std::vector<std::pair<std::size_t, int>> order;  // (run, rep)
  if (e.interleave) {
    for (int rep = 0; rep < e.repetitions; ++rep)
      for (std::size_t i = 0; i < runs.size(); ++i) order.emplace_back(i, rep);
  } else {
    for (std::size_t i = 0; i < runs.size(); ++i)
      for (int rep = 0; rep < e.repetitions; ++rep) order.emplace_back(i, rep);
  }
  // Several processes: rank 0 decides what every rank does next (they must agree) and combines
  // every rank's sample; shards without MPI each write a result of their own share.
  const Distribution* dist = env.dist && env.dist->active() ? env.dist : nullptr;
  Comm* comm = dist ? &dist->comm() : nullptr;
  const bool talk = comm && comm->connected();
  std::size_t step = 0;
  for (const auto& [i, rep] : order) {
    ++step;
    PlannedRun& p = runs[i];
    std::string action = "go";
    if (p.status != "ok")
      action = "pass";
    else if (env.stop && env.stop->load())
      action = "interrupted";
    else if (e.time_budget_s > 0 && seconds_since(t_begin) > e.time_budget_s)
      action = "budget";
    if (talk) action = comm->broadcast(action);
    if (action == "pass") continue;
    if (action == "interrupted") {
      p.status = "skipped";
      p.reason = "interrupted";
      continue;
    }
    if (action == "budget") {
      p.status = "skipped";
      std::ostringstream why;
      why << "time budget of " << e.time_budget_s << " s exhausted before repetition " << rep + 1;
      p.reason = why.str();
      continue;
    }
    if (p.external && talk && comm->rank() != 0) continue;  // external commands run on rank 0 only
    log << "[" << step << "/" << order.size() << "] " << p.id << " rep " << rep + 1 << "/" << e.repetitions << " ... "
        << std::flush;
    try {
      if (p.external) {
        std::string reason;
        double wall = 0;
        std::size_t images = 0;
        std::string line;
        const double ips = detail::run_external(e.external[p.external_index], reason, wall, images, line);
        if (ips < 0) {
          p.status = "skipped";
          p.reason = reason;
          log << "skipped: " << reason << "\n";
          continue;
        }
        // wall_s is the whole command (start-up included); images_per_s is what the peer reports.
        p.samples.push_back({{"rep", rep}, {"images", images}, {"wall_s", wall}, {"images_per_s", ips}});
        p.ips.push_back(ips);
        p.effective["output"] = line;  // the peer's own account of what it ran (last repetition's)
        log << ips << " img/s\n";
        continue;
      }
      RunStats st;
      long chunks = -1;
      std::string local_error;
      nlohmann::json local_ver = nullptr;
      int batch = p.params["batch"].get<int>();
      try {
        const ResizeMode rm = parse_resize_mode(p.params["resize"].get<std::string>());
        const ImageSource& src = source_for(rm);
        DeviceOptions dopt;
        dopt.threads_per_replica = p.params["threads"].get<int>();
        dopt.cuda_devices = env.cuda_devices;
        dopt.cpu_cores = env.cpu_cores;
        const auto devs = expand_devices(p.params["devices"].get<std::string>(), dopt);
        RunSettings s;
        s.batch_size = batch;
        s.warmup_batches = e.warmup_batches;
        s.decode_threads = e.decode_threads;
        s.prefetch_batches = e.prefetch_batches;
        s.stop = env.stop;
        auto mem_p = std::make_unique<MemorySink>(src.size());
        MemorySink& mem = *mem_p;
        std::vector<ResultSink*> sinks{&mem};
        std::unique_ptr<OutputWriter> writer;
        const fs::path out = env.work_dir / ("run" + std::to_string(i) + "-rep" + std::to_string(rep));
        if (e.output_format != "none") {
          WriterOptions w;
          w.format = parse_output_format(e.output_format);
          w.out_dir = out;
          w.resume = false;
          w.quiet = rep > 0;
          writer = std::make_unique<OutputWriter>(src, w);
          sinks.push_back(writer.get());
        }
        TeeSink tee(sinks);
        const std::string strategy = p.params["strategy"].get<std::string>();
        std::vector<std::size_t> todo = all_indices(src.size());
        if (dist && !talk) todo = strided_share(todo, comm->rank(), comm->size());
        st = dist ? dist->run(strategy, src, todo, devs, env.make_factory(), tee, s, env.input_size, &chunks)
                  : run_strategy(strategy, src, todo, devs, env.make_factory(), tee, s, env.input_size);
        if (writer) writer->finish();
        std::error_code ec;
        fs::remove_all(out, ec);
        if (rep == 0) {
          nlohmann::json ed = nlohmann::json::array();
          const auto used = p.params["strategy"] == "sequential" ? std::vector<VirtualDevice>{devs[0]} : devs;
          for (const auto& d : used) ed.push_back({{"name", d.name()}, {"threads", d.threads}});
          p.effective = {{"devices", ed},
                         {"decode_threads", e.decode_threads},
                         {"prefetch_batches", e.prefetch_batches},
                         {"warmup_batches", e.warmup_batches},
                         {"batch", s.batch_size}};
          if (e.verify && is_reference_run(p.params) && !refs[rm]) refs[rm] = std::move(mem_p);
          if (e.verify) local_ver = verify_features(mem, reference(rm, mem));
        }
      } catch (const std::exception& ex) {
        if (!dist) throw;
        local_error = ex.what();  // reported by rank 0 after the samples are gathered
      }
      double ips = st.images_per_s(), wall = st.wall_s;
      std::size_t images = st.images_ok;
      if (!dist) {
        p.samples.push_back(run_stats_json(st, rep));
        p.ips.push_back(ips);
        if (rep == 0 && e.verify) p.verification = local_ver;
      } else {
        const nlohmann::json mine = {
            {"sample", rank_sample_json(st, rep, comm->rank(), dist->host(), comm->size(), dist->mode(), chunks)},
            {"latencies", st.batch_latency_ms},
            {"error", local_error},
            {"label", dist->label()},
            {"verification", local_ver}};
        const auto all = comm->gather(mine.dump());
        if (!comm->leader()) continue;
        std::vector<nlohmann::json> parts, vers;
        std::vector<std::vector<double>> lats;
        std::string errors;
        for (const auto& text : all) {
          const auto j = nlohmann::json::parse(text);
          if (!j["error"].get<std::string>().empty())
            errors +=
                (errors.empty() ? "" : "; ") + j["label"].get<std::string>() + ": " + j["error"].get<std::string>();
          parts.push_back(j["sample"]);
          lats.push_back(j["latencies"].get<std::vector<double>>());
          vers.push_back(j["verification"]);
        }
        if (!errors.empty()) throw Error(errors);
        const nlohmann::json c = combine_samples(parts, &lats);
        ips = c["images_per_s"].get<double>();
        wall = c["wall_s"].get<double>();
        images = c["images"].get<std::size_t>();
        p.samples.push_back(c);
        p.ips.push_back(ips);
        if (rep == 0 && e.verify) p.verification = combine_verifications(vers);
      }
      log << ips << " img/s"
          << (dist ? " (" + std::to_string(comm->size()) + " " + (talk ? "ranks" : "shards, this one") + ")" : "")
          << "\n";
      if (e.seed_timing_lines)
        std::printf("seed-style: %zu images vectorized in %.2f s (%.2f img/s) [%s on %s, batch %d]\n", images, wall,
                    ips, p.params["strategy"].get<std::string>().c_str(),
                    p.params["devices"].get<std::string>().c_str(), batch);
    } catch (const std::exception& ex) {
      p.status = "error";
      p.reason = ex.what();
      log << "error: " << ex.what() << "\n";
    }
  }
  std::error_code ec;
  fs::remove_all(env.work_dir, ec);

  nlohmann::json result;
  result["schema_version"] = 1;
  result["name"] = e.name;
  result["meta"] = env.meta;
  nlohmann::json eff = {{"model_resize", to_string(env.model_resize)},
                        {"input_size", env.input_size},
                        {"cores", hardware_cores()},
                        {"cuda_devices", env.cuda_devices}};
  nlohmann::json expansions = nlohmann::json::object();
  std::set<std::string> specs;
  for (const auto& mx : e.matrices) specs.insert(mx.devices.begin(), mx.devices.end());
  for (const auto& d : specs) {
    try {
      DeviceOptions o;
      o.cuda_devices = env.cuda_devices;
      nlohmann::json list = nlohmann::json::array();
      for (const auto& v : expand_devices(d, o)) list.push_back({{"name", v.name()}, {"threads", v.threads}});
      expansions[d] = list;
    } catch (const std::exception& ex) {
      expansions[d] = ex.what();
    }
  }
  eff["device_expansion"] = expansions;
  if (dist) eff["distribution"] = dist->describe();
  result["config"] = {{"requested", e.raw}, {"effective", eff}};
  result["runs"] = nlohmann::json::array();
  for (auto& p : runs) {
    if (p.status == "ok" && p.samples.empty()) {
      p.status = "skipped";
      p.reason = "no repetition ran";
    }
    nlohmann::json r = {{"id", p.id},
                        {"params", p.params},
                        {"status", p.status},
                        {"reason", p.reason},
                        {"effective", p.effective},
                        {"samples", p.samples},
                        {"verification", p.verification}};
    detail::summarize_into(r);
    result["runs"].push_back(r);
  }
  return result;
}

/// The end-of-run table (markdown).
inline std::string result_table(const nlohmann::json& result) {
  std::map<std::string, double> seq_best;  // batch/resize/input -> best sequential median
  auto key = [](const nlohmann::json& p) {
    return p.value("batch", nlohmann::json(0)).dump() + "|" + p.value("resize", std::string()) + "|" +
           p.value("input", std::string());
  };
  for (const auto& r : result["runs"])
    if (r["params"].value("strategy", "") == "sequential" && r["summary"]["images_per_s"]["median"].is_number())
      seq_best[key(r["params"])] =
          std::max(seq_best[key(r["params"])], r["summary"]["images_per_s"]["median"].get<double>());
  std::string s =
      "| strategy | devices | batch | threads | resize | img/s (median) | spread | vs sequential | max rel diff | "
      "status |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  char buf[512];
  for (const auto& r : result["runs"]) {
    const auto& p = r["params"];
    const auto& m = r["summary"]["images_per_s"];
    const double med = m["median"].is_number() ? m["median"].get<double>() : NAN;
    const double spread = m["rel_spread"].is_number() ? m["rel_spread"].get<double>() : NAN;
    const auto it = seq_best.find(key(p));
    const double vs = it != seq_best.end() && it->second > 0 ? med / it->second : NAN;
    const double rel = r["verification"].is_object() ? r["verification"]["max_rel_diff"].get<double>() : NAN;
    char vs_s[32] = "-", rel_s[32] = "-";  // no sequential run to compare with / not verified
    if (std::isfinite(vs)) std::snprintf(vs_s, sizeof vs_s, "%.2fx", vs);
    if (std::isfinite(rel)) std::snprintf(rel_s, sizeof rel_s, "%.1e", rel);
    std::snprintf(buf, sizeof buf, "| %s | %s | %s | %s | %s | %.2f | %.1f%% | %s | %s | %s |\n",
                  p.value("strategy", "").c_str(), p.value("devices", "-").c_str(),
                  p.contains("batch") ? p["batch"].dump().c_str() : "-",
                  p.contains("threads") ? p["threads"].dump().c_str() : "-", p.value("resize", "-").c_str(), med,
                  spread * 100, vs_s, rel_s,
                  (r["status"].get<std::string>() +
                   (r["reason"].get<std::string>().empty() ? "" : ": " + r["reason"].get<std::string>()))
                      .c_str());
    s += buf;
  }
  return s;
}

/// `results/<name>/<UTC timestamp>.json`
inline fs::path result_path(const fs::path& results_dir, const std::string& name) {
  return results_dir / name / (utc_stamp() + ".json");
}

}  // namespace vecbench
