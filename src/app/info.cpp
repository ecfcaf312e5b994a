// `vecbench predecode`, `vecbench devices`, `vecbench model info`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "vecbench/app/commands.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/engine/cpu_route.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/engine/torch_plugin.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/results/trace_json.hpp"

namespace vecbench {

int cmd_predecode(const std::string& images, const std::string& out, const std::string& resize, int size) {
  InputOptions in;
  in.resize = parse_resize_mode(resize);
  auto src = make_source(images, in);
  const std::size_t per = static_cast<std::size_t>(size) * size * 3;
  std::vector<std::uint8_t> all;
  std::vector<float> chw(per);
  std::size_t ok = 0, failed = 0;
  StageTimes t;
  for (std::size_t i = 0; i < src->size(); ++i) {
    try {
      src->load(i, size, chw.data(), t);
    } catch (const std::exception& e) {
      std::cerr << "vecbench: error: " << e.what() << "\n";
      ++failed;
      continue;
    }
    const std::size_t plane = static_cast<std::size_t>(size) * size;
    const std::size_t base = all.size();
    all.resize(base + per);
    for (std::size_t p = 0; p < plane; ++p)
      for (std::size_t c = 0; c < 3; ++c)
        all[base + p * 3 + c] = static_cast<std::uint8_t>(std::lround(std::clamp(chw[c * plane + p], 0.0f, 255.0f)));
    ++ok;
  }
  npy::save_u8(out, all.data(), {ok, static_cast<std::size_t>(size), static_cast<std::size_t>(size), 3});
  std::printf("predecode images=%zu failed=%zu out=%s\n", ok, failed, out.c_str());
  return failed > 0 ? 2 : 0;
}

int cmd_devices(const std::vector<std::string>& specs) {
  const int ncuda = cuda_device_count();
  const auto info = backend_info();
  std::printf("host: %d CPU cores; CUDA devices: %d; LibTorch %s\n", hardware_cores(), ncuda,
              info.value("libtorch", "?").c_str());
  std::printf("LibTorch is opened only when a run needs it, from %s\n", torch_plugin_path().c_str());
  if (info["cuda"].is_null())
    std::printf("CUDA: not in this build (LibTorch without CUDA); --devices cuda is refused\n");
  else
    std::printf("CUDA: %s build, nvJPEG %s; %s\n", info["cuda"].get<std::string>().c_str(),
                nvjpeg_available() ? "yes (--decode gpu)" : "no",
                ncuda > 0 ? "ready" : "no usable GPU here (no device or no driver): --devices cuda is refused");
  for (const auto& g : info["gpus"]) std::printf("  %s\n", g.dump().c_str());
  if (info.contains("onednn")) {  // the oneDNN engine's route for each precision on this CPU
    const auto& o = info["onednn"];
    std::printf("oneDNN %s runs %s code; its routes here:\n", o.value("version", "?").c_str(),
                o.value("isa", "?").c_str());
#if VECBENCH_WITH_ONEDNN
    for (const Precision p : {Precision::fp32, Precision::bf16, Precision::int8})
      std::printf("  %-5s %s\n", enum_name(p), cpu_route(p).describe().c_str());
#endif
  }
  std::vector<std::string> list = specs;
  if (list.empty()) {
    list = {"cpu", "cpu/2", "cpu/3"};
    if (ncuda > 0) list.insert(list.end(), {"cuda", "cuda:0", "cuda:0/3"});
  }
  DeviceOptions o;
  o.cuda_devices = ncuda;
  for (const auto& s : list) {
    std::printf("%-10s ->", s.c_str());
    try {
      for (const auto& d : expand_devices(s, o)) std::printf(" %s[%d thr]", d.name().c_str(), d.threads);
      std::printf("\n");
    } catch (const std::exception& e) {
      std::printf(" error: %s\n", e.what());
    }
  }
  return 0;
}

int cmd_model_info(const std::string& path) {
  const auto meta = read_model_meta(path);
  std::printf("model: %s\n", path.c_str());
  if (meta.empty()) {
    std::printf("  (no vecbench_meta.json in this file: not made by tools/export_inception.py)\n");
    return 0;
  }
  for (const auto& [k, v] : meta.items())
    std::printf("  %-16s %s\n", k.c_str(), v.is_string() ? v.get<std::string>().c_str() : v.dump().c_str());
  return 0;
}

int cmd_trace_summarize(const std::string& path) {
  const auto traces = load_traces(path);
  if (traces.empty()) throw Error(path + ": no spans");
  for (const auto& t : traces)
    std::cout << "## " << t->process() << "\n\n" << trace_figures_markdown(trace_figures(*t)) << "\n";
  return 0;
}

}  // namespace vecbench
