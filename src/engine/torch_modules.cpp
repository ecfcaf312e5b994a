// The TorchScript files of libvecbench_torch.so (see torch_modules.hpp).
#include "torch_modules.hpp"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/engine/encoder.hpp"
#include "vecbench/engine/engines.hpp"

namespace vecbench::torch_detail {

namespace {
std::atomic<std::size_t> g_module_loads{0};
}  // namespace

nlohmann::json parse_meta(const std::string& text) {
  if (text.empty()) return nlohmann::json::object();
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

torch::jit::Module load_module(const std::string& path, const torch::Device& device, std::string* meta) {
  ++g_module_loads;
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw IoError(path, "model file not found (build the default model or pass --model)");
  torch::jit::ExtraFilesMap extra{{"vecbench_meta.json", ""}};
  try {
    auto m = torch::jit::load(path, device, extra);
    if (meta) *meta = extra["vecbench_meta.json"];
    return m;
  } catch (const c10::Error& e) {
    throw IoError(path, std::string("not a loadable TorchScript file: ") + e.what_without_backtrace());
  }
}

torch::jit::Module shared_cpu_module(const std::string& path, std::string* meta) {
  static std::mutex mu;
  static std::map<std::string, std::pair<torch::jit::Module, std::string>> loaded;
  std::error_code ec;
  const auto when = std::filesystem::last_write_time(path, ec).time_since_epoch().count();
  const std::string key =
      path + "\n" + std::to_string(std::filesystem::file_size(path, ec)) + "\n" + std::to_string(when);
  std::lock_guard<std::mutex> lk(mu);
  auto it = loaded.find(key);
  if (it == loaded.end()) {
    std::string text;
    torch::jit::Module m = load_module(path, torch::Device("cpu"), &text);
    m.eval();
    it = loaded.emplace(key, std::make_pair(std::move(m), std::move(text))).first;
  }
  if (meta) *meta = it->second.second;
  return it->second.first.clone(true);
}

namespace {
std::vector<float> floats_of(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

void read_inception_weights(const std::string& path, InceptionWeights& out) {
  std::string meta_text;
  auto m = load_module(path, torch::Device("cpu"), &meta_text);
  const ModelInfo info = model_info_from(path, parse_meta(meta_text));
  InceptionWeights* w = &out;
  w->source = path;
  if (!info.is_export())
    throw ReplicaError(path +
                       ": no vecbench metadata (arch); the onednn engine takes files from tools/export_inception.py");
  w->arch = parse_enum<InceptionArch>(info.arch, path + ": arch");
  w->input_size = info.input_size;
  w->feature_dim = info.feature_dim;
  std::map<std::string, torch::Tensor> t;
  for (const auto& p : m.named_parameters(true)) t[p.name] = p.value;
  for (const auto& b : m.named_buffers(true)) t[b.name] = b.value;
  std::map<std::string, torch::jit::Module> mods;
  for (const auto& sm : m.named_modules()) mods.emplace(sm.name, sm.value);
  auto need = [&](const std::string& k) -> const torch::Tensor& {
    auto it = t.find(k);
    if (it == t.end()) throw ReplicaError(path + ": tensor " + k + " is missing (onednn engine)");
    return it->second;
  };
  const auto div = floats_of(need("input_div")), mean = floats_of(need("input_mean")),
             sd = floats_of(need("input_std"));
  if (div.size() != 1 || mean.size() != 3 || sd.size() != 3)
    throw ReplicaError(path + ": input normalization buffers have unexpected shapes");
  w->input_div = div[0];
  for (int c = 0; c < 3; ++c) w->input_mean[c] = mean[c], w->input_std[c] = sd[c];
  const std::string conv_w = ".conv.weight";
  for (const auto& [key, weight] : t) {
    std::string layer;
    torch::Tensor wt, bias;
    if (key.size() > conv_w.size() && key.compare(key.size() - conv_w.size(), conv_w.size(), conv_w) == 0) {
      layer = key.substr(0, key.size() - conv_w.size());  // conv + BatchNorm2d: fold here
      const auto bn = layer + ".bn";
      double eps = 1e-3;
      if (auto it = mods.find(bn); it != mods.end()) {
        const auto type = it->second.type();
        if (type->hasConstant("eps"))
          eps = type->getConstant("eps").toDouble();
        else if (it->second.hasattr("eps"))
          eps = it->second.attr("eps").toDouble();
      }
      const auto scale = need(bn + ".weight") / torch::sqrt(need(bn + ".running_var") + eps);
      wt = weight * scale.reshape({-1, 1, 1, 1});
      bias = need(bn + ".bias") - need(bn + ".running_mean") * scale;
    } else if (key.size() > 7 && key.compare(key.size() - 7, 7, ".weight") == 0 && weight.dim() == 4 &&
               key.find(".bn.") == std::string::npos) {
      layer = key.substr(0, key.size() - 7);  // --fuse prepacked: already folded
      wt = weight;
      bias = need(layer + ".bias");
    } else {
      continue;
    }
    FoldedConv f;
    for (int d = 0; d < 4; ++d) f.shape[d] = wt.size(d);
    f.weight = floats_of(wt);
    f.bias = floats_of(bias);
    w->convs.emplace(layer, std::move(f));
  }
}

void read_vit_weights(const std::string& path, VitWeights& w) {
  std::string meta_text;
  auto m = load_module(path, torch::Device("cpu"), &meta_text);
  const ModelInfo info = model_info_from(path, parse_meta(meta_text));
  if (!info.is_export() || !vit_arch(info.arch))
    throw ReplicaError(path + ": not a vision transformer from tools/export_encoder.py (arch '" + info.arch + "')");
  w.source = path;
  w.encoder = info.arch;
  w.family = info.arch.rfind("clip-", 0) == 0 ? VitFamily::clip : VitFamily::dinov2;
  w.input_size = info.input_size;
  w.feature_dim = info.feature_dim;
  auto keep = [&](const std::string& name, const torch::Tensor& t) {
    VitTensor v;
    v.shape.assign(t.sizes().begin(), t.sizes().end());
    v.data = floats_of(t);
    w.tensors[name] = std::move(v);
  };
  for (const auto& p : m.named_parameters(true)) keep(p.name, p.value);
  for (const auto& b : m.named_buffers(true)) keep(b.name, b.value);
  auto need = [&](const std::string& k) -> const VitTensor& {
    auto it = w.tensors.find(k);
    if (it == w.tensors.end()) throw ReplicaError(path + ": tensor " + k + " is missing (onednn engine)");
    return it->second;
  };
  const auto &div = need("input_div").data, &mean = need("input_mean").data, &sd = need("input_std").data;
  if (div.size() != 1 || mean.size() != 3 || sd.size() != 3)
    throw ReplicaError(path + ": input normalization buffers have unexpected shapes");
  w.input_div = div[0];
  for (int c = 0; c < 3; ++c) w.input_mean[c] = mean[c], w.input_std[c] = sd[c];
  const bool clip = w.family == VitFamily::clip;
  const VitTensor& patch = need(clip ? "conv1.weight" : "patch_embed.proj.weight");
  if (patch.shape.size() != 4) throw ReplicaError(path + ": the patch embedding is not a convolution's weight");
  w.dim = static_cast<int>(patch.shape[0]);
  w.patch = static_cast<int>(patch.shape[2]);
  const std::string blocks = clip ? "transformer.resblocks." : "blocks.";
  while (w.tensors.count(blocks + std::to_string(w.depth) + (clip ? ".ln_1.weight" : ".norm1.weight"))) ++w.depth;
  w.swiglu = w.tensors.count("blocks.0.mlp.w12.weight") > 0;
  std::map<std::string, torch::jit::Module> mods;
  for (const auto& sm : m.named_modules()) mods.emplace(sm.name, sm.value);
  auto attr = [&](const std::string& mod, const std::string& name) -> c10::IValue {
    const auto it = mods.find(mod);
    if (it == mods.end()) throw ReplicaError(path + ": module " + mod + " is missing (onednn engine)");
    const auto type = it->second.type();
    if (type->hasConstant(name)) return type->getConstant(name);
    if (it->second.hasattr(name)) return it->second.attr(name);
    throw ReplicaError(path + ": module " + mod + " has no " + name + " (onednn engine)");
  };
  w.heads = static_cast<int>(attr(blocks + "0.attn", clip ? "num_heads" : "heads").toInt());
  w.ln_eps = static_cast<float>(attr(clip ? "ln_post" : "norm", "eps").toDouble());
  w.l2_normalize = clip && m.hasattr("l2_normalize") && m.attr("l2_normalize").toBool();
}

nlohmann::json load_model_meta(const std::string& path) {
  std::string text;
  load_module(path, torch::Device("cpu"), &text);
  return parse_meta(text);
}

std::size_t module_loads() { return g_module_loads.load(); }

}  // namespace vecbench::torch_detail
