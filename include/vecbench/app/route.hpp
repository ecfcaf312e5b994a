// The route of a `vectorize` run (engine, strategy, devices, batch, threads, decode threads)
// when flags leave it open: from the machine profile that `vecbench tune --save` wrote for this
// host, CPU/GPU and model file, else from defaults chosen from the devices found (the fast path:
// on CPU the oneDNN engine, one single-thread replica per core or core group, batch 4). Flags
// always win. The first line of `vectorize` names what was chosen and where it came from.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "vecbench/engine/engine_kind.hpp"

namespace vecbench {

/// The route's settings; unset / empty / 0 = not set (left to the next source: profile, then
/// defaults).
struct RouteChoice {
  std::optional<EngineKind> engine;
  std::string strategy;  ///< a registered strategy
  std::string devices;   ///< a device spec (cpu/2, cuda, ...)
  int batch = 0;
  int threads = 0;         ///< intra-op threads per replica (0: split the cores)
  int decode_threads = 0;  ///< data-parallel decode threads
};

/// What a profile is for: this host, its CPU model (and GPU model), and one model file's weights.
struct MachineKey {
  std::string host, cpu_model, gpu_model, model_sha256;
};

/// What the defaults are chosen from.
struct RouteFacts {
  int cores = 1;                          ///< cores this process may use
  int cuda_devices = 0;                   ///< GPUs the backend sees
  bool onednn_available = false;          ///< this build has the oneDNN engine and the CPU runs it (AVX2 or better)
  bool model_is_export = false;           ///< the model file has the export's metadata (the onednn engine reads it)
  Precision precision = Precision::fp32;  ///< the run's precision (fp16 is for CUDA: TorchScript)
};

/// The defaults for these facts: every field set.
RouteChoice default_route(const RouteFacts& f);

/// The key of this machine for a model whose weights have `model_sha256`.
MachineKey machine_key(const std::string& model_sha256, int cuda_devices);

/// The folder of profiles: $VECBENCH_PROFILE_DIR, else the cache folder's profiles/
/// (core/files/fs_util.hpp cache_dir: $VECBENCH_CACHE, $XDG_CACHE_HOME/vecbench or ~/.cache/vecbench).
std::string profile_dir();

/// The profile file of `key` in profile_dir().
std::string profile_path(const MachineKey& key);

/// The route a profile file holds, when it exists, is readable and is for `key`; a broken or
/// foreign one yields nothing and `*why` says why (empty when the file does not exist).
std::optional<RouteChoice> load_profile(const std::string& path, const MachineKey& key, std::string* why);

/// Writes the profile (atomically, creating the folder): the key, the route and `extra`
/// (what tune measured).
void save_profile(const std::string& path, const MachineKey& key, const RouteChoice& route,
                  const nlohmann::json& extra);

/// Fills the unset fields of `flags` from `profile` (if any), then from `defaults`; returns where
/// the route came from, for the first line ("defaults", "profile PATH", and "; flags: --batch ...").
std::string merge_route(RouteChoice& flags, const std::optional<RouteChoice>& profile, const std::string& profile_file,
                        const RouteChoice& defaults);

}  // namespace vecbench
