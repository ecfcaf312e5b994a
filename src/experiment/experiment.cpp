// The experiment file's parser (include/vecbench/experiment/experiment.hpp): every key checked,
// every value typed where it enters, errors naming the file and the key.
#include <fstream>
#include <set>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/experiment/experiment.hpp"
#include "vecbench/strategies/strategies.hpp"

namespace vecbench {

namespace {
void check_keys(const nlohmann::json& j, const std::string& where, const std::set<std::string>& allowed) {
  if (!j.is_object()) throw ConfigError(where.empty() ? "<top>" : where, "must be a JSON object");
  for (const auto& [k, v] : j.items()) {
    (void)v;
    if (!allowed.count(k)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ConfigError(where.empty() ? k : where + "." + k, "unknown key (allowed: " + list + ")");
    }
  }
}
template <class T>
T get_as(const nlohmann::json& j, const std::string& key) {
  try {
    return j.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(key, "wrong type (got " + std::string(j.type_name()) + ")");
  }
}
template <class T>
std::vector<T> get_list(const nlohmann::json& j, const std::string& key) {
  if (!j.is_array()) return {get_as<T>(j, key)};
  std::vector<T> v;
  for (std::size_t i = 0; i < j.size(); ++i) v.push_back(get_as<T>(j[i], key + "[" + std::to_string(i) + "]"));
  if (v.empty()) throw ConfigError(key, "must not be empty");
  return v;
}
}  // namespace

namespace {
/// "images": exactly one of dir, list, predecoded, synthetic, generate.
ImageSetSpec parse_images(const nlohmann::json& im) {
  check_keys(im, "images", {"dir", "list", "predecoded", "synthetic", "generate"});
  if (im.size() != 1) throw ConfigError("images", "give exactly one of dir, list, predecoded, synthetic, generate");
  ImageSetSpec spec;
  if (im.contains("dir")) spec.dir = get_as<std::string>(im["dir"], "images.dir");
  if (im.contains("list")) spec.list = get_as<std::string>(im["list"], "images.list");
  if (im.contains("predecoded")) spec.predecoded = get_as<std::string>(im["predecoded"], "images.predecoded");
  if (im.contains("synthetic")) {
    const int n = get_as<int>(im["synthetic"], "images.synthetic");
    if (n < 1) throw ConfigError("images.synthetic", "must be >= 1");
    spec.synthetic = static_cast<std::size_t>(n);
  }
  if (!im.contains("generate")) return spec;
  const auto& g = im["generate"];
  check_keys(g, "images.generate", {"count", "seed", "sizes", "formats", "from", "jpeg_quality"});
  auto& G = spec.generate;
  if (!g.contains("count")) throw ConfigError("images.generate.count", "required");
  const int c = get_as<int>(g["count"], "images.generate.count");
  if (c < 1) throw ConfigError("images.generate.count", "must be >= 1");
  G.count = static_cast<std::size_t>(c);
  if (g.contains("seed")) G.seed = get_as<unsigned>(g["seed"], "images.generate.seed");
  if (g.contains("from")) G.from = get_as<std::string>(g["from"], "images.generate.from");
  if (g.contains("jpeg_quality")) G.jpeg_quality = get_as<int>(g["jpeg_quality"], "images.generate.jpeg_quality");
  if (g.contains("formats")) {
    const auto names = get_list<std::string>(g["formats"], "images.generate.formats");
    G.formats.clear();
    for (std::size_t i = 0; i < names.size(); ++i)
      G.formats.push_back(parse_enum<ImageFileFormat>(names[i], "images.generate.formats[" + std::to_string(i) + "]"));
  }
  if (g.contains("sizes")) {
    const auto sz = get_list<std::vector<int>>(g["sizes"], "images.generate.sizes");
    for (std::size_t i = 0; i < sz.size(); ++i) {
      if (sz[i].size() != 2 || sz[i][0] < 8 || sz[i][1] < 8 || sz[i][0] > 8192 || sz[i][1] > 8192)
        throw ConfigError("images.generate.sizes[" + std::to_string(i) + "]", "must be [width, height] in 8..8192");
      G.sizes.emplace_back(sz[i][0], sz[i][1]);
    }
  }
  return spec;
}

/// One matrix object; `w` names it in errors ("matrix" or "matrix[2]").
Experiment::Matrix parse_matrix(const nlohmann::json& m, const std::string& w) {
  check_keys(m, w, {"strategy", "devices", "batch", "threads", "resize"});
  Experiment::Matrix x;
  if (m.contains("strategy")) x.strategies = get_list<std::string>(m["strategy"], w + ".strategy");
  if (m.contains("batch")) x.batch_sizes = get_list<int>(m["batch"], w + ".batch");
  if (m.contains("threads")) x.threads = get_list<int>(m["threads"], w + ".threads");
  std::vector<std::string> resize_names = {kDefaultKeyword};
  if (m.contains("resize")) resize_names = get_list<std::string>(m["resize"], w + ".resize");
  auto at = [&](const char* k, std::size_t i) { return w + "." + k + "[" + std::to_string(i) + "]"; };
  const auto& reg = strategy_registry();
  for (std::size_t i = 0; i < x.strategies.size(); ++i)
    if (std::none_of(reg.begin(), reg.end(), [&](const StrategyEntry& s) { return x.strategies[i] == s.name; }))
      throw ConfigError(at("strategy", i), "unknown strategy '" + x.strategies[i] + "' (use " + strategy_list() + ")");
  if (m.contains("devices")) {
    const auto specs = get_list<std::string>(m["devices"], w + ".devices");
    x.devices.clear();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      try {
        x.devices.push_back(DevicesSpec::parse(specs[i]));
      } catch (const ConfigError& e) {
        throw ConfigError(at("devices", i), e.cause);
      }
    }
  }
  for (std::size_t i = 0; i < x.batch_sizes.size(); ++i)
    if (x.batch_sizes[i] < 1 || x.batch_sizes[i] > 4096) throw ConfigError(at("batch", i), "must be in 1..4096");
  for (std::size_t i = 0; i < x.threads.size(); ++i)
    if (x.threads[i] < 0 || x.threads[i] > 1024) throw ConfigError(at("threads", i), "must be in 0..1024");
  x.resize.clear();
  for (std::size_t i = 0; i < resize_names.size(); ++i) {
    if (resize_names[i] == kDefaultKeyword) {
      x.resize.emplace_back();
      continue;
    }
    const auto mode = find_enum<ResizeMode>(resize_names[i]);
    if (!mode)
      throw ConfigError(at("resize", i),
                        "unknown resize mode '" + resize_names[i] + "' (use default, " + enum_list<ResizeMode>() + ")");
    x.resize.push_back(*mode);
  }
  return x;
}

/// "external": [{name, command, regex?}, ...].
std::vector<Experiment::External> parse_external(const nlohmann::json& x) {
  if (!x.is_array()) throw ConfigError("external", "must be an array");
  std::vector<Experiment::External> out;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::string key = "external[" + std::to_string(i) + "]";
    check_keys(x[i], key, {"name", "command", "regex"});
    Experiment::External ex;
    if (!x[i].contains("name") || !x[i].contains("command")) throw ConfigError(key, "needs name and command");
    ex.name = get_as<std::string>(x[i]["name"], key + ".name");
    ex.command = get_as<std::string>(x[i]["command"], key + ".command");
    if (x[i].contains("regex")) ex.regex = get_as<std::string>(x[i]["regex"], key + ".regex");
    out.push_back(ex);
  }
  return out;
}

/// The model keys: model, optimize, precision, calibration, channels_last, cuda_graphs, memory_cap_gb, engine,
/// winograd.
void parse_model_settings(const nlohmann::json& j, Experiment& e) {
  ModelSettings& m = e.model;
  if (j.contains("model")) {
    const std::string path = get_as<std::string>(j["model"], "model");
    e.default_model = path == kDefaultKeyword;
    m.path = e.default_model ? std::string() : path;
  }
  if (j.contains("optimize")) m.optimize = get_as<bool>(j["optimize"], "optimize");
  if (j.contains("channels_last")) m.channels_last = get_as<bool>(j["channels_last"], "channels_last");
  if (j.contains("cuda_graphs")) m.cuda_graphs = get_as<bool>(j["cuda_graphs"], "cuda_graphs");
  if (j.contains("memory_cap_gb")) {
    e.memory_cap_gb = get_as<double>(j["memory_cap_gb"], "memory_cap_gb");
    if (!(e.memory_cap_gb >= 0.0 && e.memory_cap_gb <= 4096.0))
      throw ConfigError("memory_cap_gb", "must be 0 (no cap) to 4096 GB");
  }
  if (j.contains("winograd")) m.winograd = get_as<bool>(j["winograd"], "winograd");
  if (j.contains("engine")) m.engine = parse_engine(get_as<std::string>(j["engine"], "engine"));
  if (j.contains("precision")) m.precision = parse_precision(get_as<std::string>(j["precision"], "precision"));
  if (j.contains("calibration")) m.calibration = get_as<std::string>(j["calibration"], "calibration");
}

/// The run keys: repetitions, warm-up, interleaving, budget, queues, output, verification.
void parse_run_settings(const nlohmann::json& j, Experiment& e) {
  auto int_in = [&](const char* key, int& field, int lo, int hi) {
    if (!j.contains(key)) return;
    field = get_as<int>(j[key], key);
    if (field < lo || field > hi)
      throw ConfigError(key, "must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  };
  int_in("warmup_batches", e.warmup_batches, 0, 1000);
  int_in("repetitions", e.repetitions, 1, 1000);
  int_in("max_repetitions", e.max_repetitions, 0, 1000);
  if (e.max_repetitions != 0 && e.max_repetitions < e.repetitions)
    throw ConfigError("max_repetitions",
                      "must be 0 (fixed count) or >= repetitions (" + std::to_string(e.repetitions) + ")");
  if (j.contains("target_median_ci_pct")) {
    e.target_median_ci_pct = get_as<double>(j["target_median_ci_pct"], "target_median_ci_pct");
    if (!(e.target_median_ci_pct > 0.0 && e.target_median_ci_pct <= 100.0))
      throw ConfigError("target_median_ci_pct", "must be in (0, 100] %");
  }
  int_in("decode_threads", e.decode_threads, 1, 256);
  int_in("prefetch_batches", e.prefetch_batches, 1, 4096);
  if (j.contains("interleave")) e.interleave = get_as<bool>(j["interleave"], "interleave");
  if (j.contains("verify")) e.verify = get_as<bool>(j["verify"], "verify");
  if (j.contains("seed_timing_lines")) e.seed_timing_lines = get_as<bool>(j["seed_timing_lines"], "seed_timing_lines");
  if (j.contains("keep_replicas")) e.keep_replicas = get_as<bool>(j["keep_replicas"], "keep_replicas");
  if (j.contains("time_budget_s")) {
    e.time_budget_s = get_as<double>(j["time_budget_s"], "time_budget_s");
    if (e.time_budget_s < 0) throw ConfigError("time_budget_s", "must be >= 0");
  }
  if (j.contains("output_format"))
    e.output_format = parse_output_format(get_as<std::string>(j["output_format"], "output_format"), "output_format");
}
}  // namespace

Experiment parse_experiment(const nlohmann::json& j, const std::string& origin) {
  Experiment e;
  e.raw = j;
  try {
    check_keys(j, "", {"name",           "description",     "model",
                       "optimize",       "precision",       "channels_last",
                       "cuda_graphs",    "memory_cap_gb",   "engine",
                       "winograd",       "images",          "matrix",
                       "warmup_batches", "repetitions",     "interleave",
                       "time_budget_s",  "decode_threads",  "prefetch_batches",
                       "output_format",  "verify",          "seed_timing_lines",
                       "external",       "max_repetitions", "target_median_ci_pct",
                       "keep_replicas",  "calibration"});
    if (!j.contains("name")) throw ConfigError("name", "required");
    e.name = get_as<std::string>(j["name"], "name");
    if (e.name.empty() || e.name.find_first_of("/\\") != std::string::npos || e.name[0] == '.')
      throw ConfigError("name", "must be a plain non-empty name (it names the results folder)");
    if (j.contains("description")) e.description = get_as<std::string>(j["description"], "description");
    parse_model_settings(j, e);
    if (!j.contains("images")) throw ConfigError("images", "required");
    e.images = parse_images(j["images"]);
    if (j.contains("matrix")) {
      const auto& mj = j["matrix"];
      if (mj.is_array() && mj.empty()) throw ConfigError("matrix", "must not be empty");
      e.matrices.clear();
      if (!mj.is_array()) e.matrices.push_back(parse_matrix(mj, "matrix"));
      for (std::size_t mi = 0; mj.is_array() && mi < mj.size(); ++mi)
        e.matrices.push_back(parse_matrix(mj[mi], "matrix[" + std::to_string(mi) + "]"));
    }
    parse_run_settings(j, e);
    if (j.contains("external")) e.external = parse_external(j["external"]);
  } catch (const ConfigError& err) {
    throw ConfigError(origin, err.what());
  }
  return e;
}

Experiment load_experiment(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path, "cannot open experiment file");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw ConfigError(path, "not valid JSON");
  return parse_experiment(j, path);
}

}  // namespace vecbench
