// The route of a `vectorize` run: defaults from the devices, machine profiles (include/vecbench/app/route.hpp).
#include "vecbench/app/route.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/core/system/host.hpp"
#include "vecbench/core/system/machine_load.hpp"

namespace vecbench {

RouteChoice default_route(const RouteFacts& f) {
  RouteChoice r;
  r.strategy = "data-parallel";
  const int cores = std::max(1, f.cores);
  if (f.cuda_devices > 0) {  // GPUs: LibTorch on every GPU, big batches, the CPU decodes
    r.engine = EngineKind::torchscript;
    r.devices = "cuda";
    r.batch = 32;
    r.decode_threads = std::max(1, cores - 1);
    return r;
  }
  // CPU: single-thread replicas (no OpenMP barrier between cores) up to 4 cores, then groups of
  // 2 or 4 cores; batch 4 (measured: results/whole-job/); decoding gets the cores left, at least one.
  r.engine = f.onednn_available && f.model_is_export && f.precision != Precision::fp16 ? EngineKind::onednn
                                                                                       : EngineKind::torchscript;
  const int per = cores <= 4 ? 1 : cores <= 16 ? 2 : 4;
  const int replicas = std::max(1, cores / per);
  r.devices = replicas == 1 ? "cpu" : "cpu/" + std::to_string(replicas);
  r.batch = 4;
  r.decode_threads = std::max({1, cores - replicas * per, cores / 8});
  return r;
}

MachineKey machine_key(const std::string& model_sha256, int cuda_devices) {
  MachineKey k;
  k.host = host_name();
  k.cpu_model = cpu_model();
  k.gpu_model = cuda_devices > 0 ? std::to_string(cuda_devices) + " GPU" : "none";
  k.model_sha256 = model_sha256;
  return k;
}

std::string profile_dir() {
  if (const char* d = std::getenv("VECBENCH_PROFILE_DIR"); d && *d) return d;
  return (cache_dir() / "profiles").string();
}

std::string profile_path(const MachineKey& key) {
  std::string host;
  for (const char c : key.host) host += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  const std::string hw = sha256_hex(key.cpu_model + "\n" + key.gpu_model).substr(0, 8);
  return (fs::path(profile_dir()) / (host + "-" + hw + "-" + key.model_sha256.substr(0, 16) + ".json")).string();
}

namespace {
nlohmann::json key_json(const MachineKey& k) {
  return {{"host", k.host}, {"cpu_model", k.cpu_model}, {"gpu_model", k.gpu_model}, {"model_sha256", k.model_sha256}};
}
}  // namespace

std::optional<RouteChoice> load_profile(const std::string& path, const MachineKey& key, std::string* why) {
  if (why) why->clear();
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  auto fail = [&](const std::string& reason) -> std::optional<RouteChoice> {
    if (why) *why = path + ": " + reason + " (ignored; `vecbench tune --save` rewrites it)";
    return std::nullopt;
  };
  if (j.is_discarded() || !j.is_object() || !j.contains("route") || !j["route"].is_object())
    return fail("not a vecbench profile");
  if (j.value("key", nlohmann::json::object()) != key_json(key)) return fail("made for another host, CPU or model");
  const auto& r = j["route"];
  RouteChoice c;
  try {
    if (const std::string e = r.value("engine", std::string()); !e.empty()) c.engine = parse_engine(e);
    c.strategy = r.value("strategy", std::string());
    c.devices = r.value("devices", std::string());
    c.batch = r.value("batch", 0);
    c.threads = r.value("threads", 0);
    c.decode_threads = r.value("decode_threads", 0);
  } catch (const std::exception& e) {  // a JSON type error, or an engine name this build does not know
    return fail(std::string("bad route: ") + e.what());
  }
  if (c.batch < 0 || c.batch > 4096 || c.threads < 0 || c.decode_threads < 0 || c.decode_threads > 256)
    return fail("route values out of range");
  return c;
}

void save_profile(const std::string& path, const MachineKey& key, const RouteChoice& route,
                  const nlohmann::json& extra) {
  nlohmann::json j = {{"vecbench_profile", 1},
                      {"key", key_json(key)},
                      {"route",
                       {{"engine", route.engine ? to_string(*route.engine) : ""},
                        {"strategy", route.strategy},
                        {"devices", route.devices},
                        {"batch", route.batch},
                        {"threads", route.threads},
                        {"decode_threads", route.decode_threads}}},
                      {"saved_utc", utc_stamp("%Y-%m-%dT%H:%M:%SZ")}};
  j["measured"] = extra;
  fs::create_directories(fs::path(path).parent_path());
  atomic_write(path, j.dump(2) + "\n");
}

std::string merge_route(RouteChoice& flags, const std::optional<RouteChoice>& profile, const std::string& profile_file,
                        const RouteChoice& defaults) {
  std::string from_flags;
  bool from_profile = false;
  auto fill = [&](auto& field, auto unset, const auto& p, const auto& d, const char* flag) {
    if (field != unset) {
      from_flags += std::string(from_flags.empty() ? "" : " ") + flag;
      return;
    }
    if (profile && p != unset) {
      field = p;
      from_profile = true;
      return;
    }
    field = d;
  };
  const RouteChoice none;
  const RouteChoice& p = profile ? *profile : none;
  fill(flags.engine, std::optional<EngineKind>(), p.engine, defaults.engine, "--engine");
  fill(flags.strategy, std::string(), p.strategy, defaults.strategy, "--strategy");
  fill(flags.devices, std::string(), p.devices, defaults.devices, "--devices");
  fill(flags.batch, 0, p.batch, defaults.batch, "--batch");
  fill(flags.threads, 0, p.threads, defaults.threads, "--threads");
  fill(flags.decode_threads, 0, p.decode_threads, defaults.decode_threads, "--decode-threads");
  std::string origin = from_profile ? "profile " + profile_file : "defaults";
  if (!from_flags.empty()) origin += "; flags: " + from_flags;
  return origin;
}

}  // namespace vecbench
