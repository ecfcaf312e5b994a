// `vecbench calibrate`: the activation ranges of the int8 route (engine/int8_calibration.hpp),
// from real images run through the oneDNN engine in fp32, one image at a time (a padded batch
// would add the ranges of blank images).
#include <chrono>
#include <iostream>
#include <vector>

#include "vecbench/app/commands.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/input/inputs.hpp"

namespace vecbench {

int cmd_calibrate(const CalibrateArgs& a) {
  const ModelInfo info = read_model_info(a.model);
  if (!info.is_export())
    throw ConfigError(a.model,
                      "int8 runs on the onednn engine, which runs models of the export tool only "
                      "(tools/export_inception.py)");
  if (!has_engine(EngineKind::onednn))
    throw ConfigError("calibrate", "this vecbench was built without oneDNN (install libdnnl-dev and rebuild)");
  InputOptions in;
  in.resize = a.resize.value_or(info.resize_default);
  auto source = make_source(a.images, in);
  if (source->kind() == SourceKind::synthetic)
    std::cerr << "vecbench: calibrating on synthetic images: their ranges fit no real photos (for tests)\n";
  const std::size_t n = a.limit > 0 ? std::min(a.limit, source->size()) : source->size();

  ModelSettings ms{a.model};
  ms.engine = EngineKind::onednn;
  ms.precision = Precision::fp32;
  ms.observe = std::make_shared<ActivationRanges>();
  VirtualDevice dev;
  dev.threads = hardware_cores();
  auto model = model_factory(ms)(dev);
  model->prepare(1);

  const int size = info.input_size;
  std::vector<float> pixels(3 * static_cast<std::size_t>(size) * size), feature(info.feature_dim);
  Sha256 pixels_sha;
  auto last = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    if (stop_flag()) {
      std::cerr << "vecbench: interrupted: no calibration written\n";
      return kExitInterrupted;
    }
    StageTimes t;
    source->load(i, size, pixels.data(), t);  // InputError naming the file: no calibration from a partial set
    pixels_sha.update(pixels.data(), pixels.size() * sizeof(float));
    model->forward(pixels.data(), 1, feature.data());
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last).count() >= 10 || i + 1 == n) {
      std::cerr << "vecbench: calibrate: " << i + 1 << "/" << n << " images\n";
      last = now;
    }
  }
  Int8Calibration c;
  c.model_sha256 = info.identity();
  c.images = n;
  c.images_sha256 = pixels_sha.hex();
  c.resize = to_string(in.resize);
  c.method = a.method;
  c.ranges = ms.observe->ranges(a.method);
  const std::string sha = save_int8_calibration(c, a.out);
  std::cout << "int8 calibration of " << a.model << " on " << n << " images (" << c.ranges.size()
            << " activation ranges; pixels sha256 " << c.images_sha256.substr(0, 16) << "): " << a.out << " (sha256 "
            << sha.substr(0, 16) << ")\n";
  return 0;
}

}  // namespace vecbench
