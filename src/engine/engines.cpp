// The engine functions of engines.hpp, without LibTorch: the oneDNN engine from its
// weights file, `--engine none` on CPU devices and the model's stored metadata need no LibTorch;
// everything else goes to libvecbench_torch.so, opened on first use (torch_plugin.hpp).
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <system_error>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/zip_member.hpp"
#include "vecbench/engine/encoder.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/engine/null_model.hpp"
#include "vecbench/engine/torch_plugin.hpp"

#ifdef VECBENCH_WITH_ONEDNN
#include "vecbench/engine/onednn_inception.hpp"
#include "vecbench/engine/onednn_vit.hpp"
#include "vecbench/engine/weights_file.hpp"
#endif

namespace vecbench {
namespace {

#ifdef VECBENCH_WITH_ONEDNN
/// The weights of an export: from its weights file (weights_file.hpp) when there is one for
/// these weights, else read from the module by LibTorch (then written to the weights file, so
/// that the next start loads no LibTorch).
std::shared_ptr<const InceptionWeights> folded_inception_weights(const std::string& path, const std::string& file,
                                                                 const std::string& sha) {
  std::string why;
  if (!file.empty())
    if (auto w = load_inception_weights(file, sha, path, &why)) return w;
  if (!why.empty())  // a cache that does not check out is never run on: rebuilt from the model
    std::cerr << "vecbench: weights cache " + file + ": " + why + ": rebuilt from " + path + "\n" << std::flush;
  auto w = std::make_shared<InceptionWeights>();
  torch_plugin().read_inception_weights(path, *w);
  if (!file.empty()) try {
      save_inception_weights(*w, file, sha);
      prune_weights_cache(weights_cache_dir(), file, weights_cache_budget());
    } catch (const std::exception&) {  // a read-only or full cache only costs the next start-up time
    }
  return w;
}

/// The weights of an export (folded_inception_weights), with the packed copies its last runs on
/// this CPU wrote (weights_file.hpp, packed_file_path): the replicas neither reorder nor transform
/// them again.
std::shared_ptr<const InceptionWeights> cached_inception_weights(const std::string& path) {
  const std::string sha = read_model_info(path).weight_sha256;  // "" when not an export: no weights file
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  const std::string file = ec ? "" : weights_file_path(sha, bytes);
  auto w = folded_inception_weights(path, file, sha);
  if (!file.empty()) {
    const std::string packed = packed_file_path(file);
    std::string why;
    attach_packed_weights(*w, packed, sha, &why);
    if (!why.empty())  // packed again by this run, and written for the next
      std::cerr << "vecbench: packed weights cache " + packed + ": " + why + ": packed again\n" << std::flush;
  }
  return w;
}

/// Replicas of the oneDNN engine: the weights are read once, by the first replica to start.
ModelFactory onednn_factory(const ModelSettings& opt) {
  std::shared_ptr<const std::map<std::string, float>> ranges;
  if (opt.precision == Precision::int8)
    ranges = std::make_shared<const std::map<std::string, float>>(checked_int8_calibration(opt).ranges);
  struct Shared {
    std::mutex mu;
    std::shared_ptr<const InceptionWeights> weights;
  };
  auto shared = std::make_shared<Shared>();
  return [opt, shared, ranges](const VirtualDevice& dev) -> std::unique_ptr<Model> {
    std::shared_ptr<const InceptionWeights> w;
    {
      std::lock_guard<std::mutex> lk(shared->mu);
      if (!shared->weights) shared->weights = cached_inception_weights(opt.path);
      w = shared->weights;
    }
    OneDnnOptions o;
    o.winograd = opt.winograd;
    o.own_first_layer = opt.own_first_layer;
    o.own_pooling = opt.own_pooling;
    o.precision = opt.precision;
    o.int8_ranges = ranges;
    o.observe = opt.observe;
    return make_onednn_inception(std::move(w), dev, o);  // sets this thread's OpenMP thread count
  };
}

/// Replicas of the oneDNN engine's transformer route: the export's tensors read once (through
/// LibTorch), by the first replica to start; every replica's matmuls read that one copy.
ModelFactory onednn_vit_factory(const ModelSettings& opt) {
  struct Shared {
    std::mutex mu;
    std::shared_ptr<const VitWeights> weights;
  };
  auto shared = std::make_shared<Shared>();
  return [opt, shared](const VirtualDevice& dev) -> std::unique_ptr<Model> {
    std::shared_ptr<const VitWeights> w;
    {
      std::lock_guard<std::mutex> lk(shared->mu);
      if (!shared->weights) {
        auto v = std::make_shared<VitWeights>();
        torch_plugin().read_vit_weights(opt.path, *v);
        shared->weights = std::move(v);
      }
      w = shared->weights;
    }
    return make_onednn_vit(std::move(w), dev);  // sets this thread's OpenMP thread count
  };
}
#endif

#ifdef VECBENCH_WITH_CUDA
/// GPUs the CUDA driver sees, asked without LibTorch (so that a CUDA build starts the oneDNN
/// route on a machine without GPUs as fast as a CPU build): 0 when there is no driver or it says
/// there is no device, -1 when it cannot tell (then LibTorch is asked).
int driver_device_count() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;  // no driver: no CUDA runtime can use a GPU here
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  auto init = reinterpret_cast<Init>(::dlsym(h, "cuInit"));
  auto count = reinterpret_cast<Count>(::dlsym(h, "cuDeviceGetCount"));
  if (!init || !count) return -1;
  const int e = init(0);
  if (e == 100) return 0;  // CUDA_ERROR_NO_DEVICE
  int n = 0;
  if (e != 0 || count(&n) != 0) return -1;
  return n;
}
#endif

}  // namespace

std::vector<EngineKind> available_engines() {
#ifdef VECBENCH_WITH_ONEDNN
  return {EngineKind::torchscript, EngineKind::onednn, EngineKind::none};
#else
  return {EngineKind::torchscript, EngineKind::none};
#endif
}

bool has_engine(EngineKind k) {
  const auto e = available_engines();
  return std::find(e.begin(), e.end(), k) != e.end();
}

Int8Calibration checked_int8_calibration(const ModelSettings& opt) {
#ifdef VECBENCH_WITH_ONEDNN
  if (const CpuRoute r = cpu_route(Precision::int8); !r.runs()) throw ConfigError("--precision", r.why_not());
#endif
  if (opt.calibration.empty())
    throw ConfigError("--precision",
                      "int8 needs activation ranges: make them with `vecbench calibrate --images "
                      "PHOTOS --out CAL.json` and pass --calibration CAL.json");
  Int8Calibration c = load_int8_calibration(opt.calibration);
  if (!opt.calibration_sha256.empty() && c.sha256 != opt.calibration_sha256)
    throw ConfigError(opt.calibration, "int8 calibration changed while the run started (sha256 " +
                                           c.sha256.substr(0, 16) + ", the fingerprint names " +
                                           opt.calibration_sha256.substr(0, 16) + ")");
  const std::string model = read_model_info(opt.path).identity();
  if (c.model_sha256 != model)
    throw ConfigError(opt.calibration, "int8 calibration made for model " + c.model_sha256.substr(0, 16) +
                                           ", not for " + opt.path + " (" + model.substr(0, 16) + ")");
  return c;
}

ModelFactory model_factory(const ModelSettings& opt) {
  if (opt.precision == Precision::int8 && opt.engine != EngineKind::onednn)
    throw ConfigError("--precision",
                      std::string("int8 runs on the onednn engine only (CPU devices), not ") + to_string(opt.engine));
  if (opt.engine == EngineKind::none) {  // the input pipeline alone; the model file only gives the shapes
    const ModelInfo info = read_model_info(opt.path);
    const int dim = info.feature_dim, size = info.input_size;
    // A CUDA device decodes on the device as a real replica would (in libvecbench_torch.so).
    return [dim, size](const VirtualDevice& dev) -> std::unique_ptr<Model> {
      if (dev.is_cuda()) return torch_plugin().device_decode_factory(dim, size)(dev);
      return std::make_unique<NullModel>(dim, size);
    };
  }
  if (opt.engine == EngineKind::onednn) {
    const ModelInfo info = read_model_info(opt.path);
    const bool vit = info.is_export() && vit_arch(info.arch);
    if (info.is_export() && !inception_arch(info.arch) && !vit)  // checked before the engine reads any weight
      throw ConfigError("--engine", "onednn runs Inception-v3, DINOv2 and CLIP's image towers; " + opt.path + " is " +
                                        info.arch + ": use --engine torchscript");
    if (vit && opt.precision != Precision::fp32)
      throw ConfigError("--precision", std::string("the onednn engine runs ") + info.arch + " in fp32 only, not " +
                                           to_string(opt.precision));
#ifdef VECBENCH_WITH_ONEDNN
    if (vit) return onednn_vit_factory(opt);
    return onednn_factory(opt);
#else
    throw ConfigError("--engine", "this vecbench was built without oneDNN (install libdnnl-dev and rebuild)");
#endif
  }
  ModelSettings o = opt;  // a module that runs as loaded: its replicas share one copy of its tensors
  const ModelInfo info = read_model_info(opt.path);
  const char* off = std::getenv("VECBENCH_SHARE_WEIGHTS");  // "0": a copy per replica (for measurements)
  o.share_weights = !(opt.optimize && info.optimize_after_load) && !(off && std::string(off) == "0");
  o.per_image = info.is_export() && !inception_arch(info.arch);  // ModelSettings::per_image: batch-independent vectors
  return torch_plugin().torchscript_factory(o);
}

std::size_t torchscript_module_loads() {
  const TorchPluginApi* p = torch_plugin_if_loaded();
  return p ? p->module_loads() : 0;
}

nlohmann::json read_model_meta(const std::string& path) {
  std::string text;
  // The export's metadata straight from the zip (no LibTorch at start-up); a file without it
  // (not from the export, or compressed) is loaded, which also checks that it is TorchScript.
  if (read_stored_zip_member(path, "/extra/vecbench_meta.json", text)) {
    auto meta = nlohmann::json::parse(text, nullptr, false);
    if (!meta.is_discarded() && meta.is_object() && !meta.empty()) return meta;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw IoError(path, "model file not found (build the default model or pass --model)");
  return torch_plugin().load_model_meta(path);
}

int cuda_device_count() {
#ifdef VECBENCH_WITH_CUDA
  static const int driver = driver_device_count();
  if (driver == 0) return 0;
  return torch_plugin().cuda_device_count();
#else
  return 0;  // a CPU build: no LibTorch needed to know
#endif
}

HostMemory* host_memory_for(const std::vector<VirtualDevice>& devices) {
  for (const auto& d : devices)
    if (d.is_cuda()) return torch_plugin().pinned_host_memory();
  return nullptr;
}

nlohmann::json backend_info() {
  auto j = torch_plugin().backend_info();
#ifdef VECBENCH_WITH_ONEDNN
  j["onednn"] = onednn_info();
#endif
  return j;
}

}  // namespace vecbench
