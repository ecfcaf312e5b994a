// The activation ranges of the int8 route (`--precision int8`): the largest value each of the
// network's quantization points (a layer's output, a block's concatenation) took on a set of real
// images, run in fp32 by `vecbench calibrate`. The oneDNN engine turns them into the u8 scales of
// its activations (engine/onednn_inception.hpp). The file names the model it was made for and the
// SHA-256 of the calibration images' pixels; its own SHA-256 is part of every int8 fingerprint, so
// vectors of two calibrations (or of int8 and fp32) never share an output folder.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/sha256.hpp"

namespace vecbench {

/// How a point's range is made from the largest value of each calibration image.
enum class CalibrationMethod {
  max,       ///< the largest over all images (nothing clips; coarse steps when one image has outliers)
  mean_max,  ///< the mean of the images' largest values (OpenVINO's default preset): finer steps, rare clipping
};
template <>
struct EnumNames<CalibrationMethod> {
  static constexpr const char* what = "calibration method";
  static constexpr std::array<std::pair<CalibrationMethod, const char*>, 2> names = {
      {{CalibrationMethod::mean_max, "mean-max"}, {CalibrationMethod::max, "max"}}};
};
inline const char* to_string(CalibrationMethod m) { return enum_name(m); }
inline CalibrationMethod parse_calibration_method(const std::string& s, const std::string& key = "--method") {
  return parse_enum<CalibrationMethod>(s, key);
}

/// The largest value of each quantization point in each forward (one image each, in calibration);
/// record() is called from every replica thread.
class ActivationRanges {
 public:
  void record(const std::string& point, float largest) {
    std::lock_guard<std::mutex> lk(mu_);
    Seen& s = seen_[point];
    s.max = std::max(s.max, largest);
    s.sum += largest;
    ++s.count;
  }
  std::map<std::string, float> ranges(CalibrationMethod m) const {
    std::lock_guard<std::mutex> lk(mu_);
    std::map<std::string, float> out;
    for (const auto& [k, s] : seen_)
      out[k] = m == CalibrationMethod::max ? s.max : static_cast<float>(s.sum / static_cast<double>(s.count));
    return out;
  }

 private:
  struct Seen {
    float max = 0.0f;
    double sum = 0.0;
    std::size_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Seen> seen_;
};

/// A calibration file (format "vecbench-int8-calibration", version 1).
struct Int8Calibration {
  std::string path;           ///< where it was read from ("" when made here)
  std::string model_sha256;   ///< the model's identity (ModelInfo::identity())
  std::string images_sha256;  ///< SHA-256 of the calibration images' float pixels, in order
  std::size_t images = 0;     ///< how many images
  std::string resize;         ///< how they were resized (the model's default unless asked)
  CalibrationMethod method = CalibrationMethod::max;
  std::map<std::string, float> ranges;  ///< quantization point -> the range its u8 steps cover
  std::string sha256;                   ///< SHA-256 of the file's bytes (the fingerprint's calibration id)

  nlohmann::json to_json() const {
    nlohmann::json ranges = nlohmann::json::object();
    for (const auto& [k, v] : this->ranges) ranges[k] = v;
    return {{"format", "vecbench-int8-calibration"}, {"version", 1},
            {"model_sha256", model_sha256},          {"images", images},
            {"images_sha256", images_sha256},        {"resize", resize},
            {"method", to_string(method)},           {"ranges", ranges}};
  }
};

/// Writes `c` to `path` atomically; returns the file's SHA-256.
inline std::string save_int8_calibration(const Int8Calibration& c, const std::string& path) {
  const std::string text = c.to_json().dump(1) + "\n";
  atomic_write(path, text);
  return sha256_hex(text);
}

/// Reads a calibration file; ConfigError naming the file and the cause when it is missing, not a
/// calibration file, or has a range that is not a finite number >= 0.
inline Int8Calibration load_int8_calibration(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot read the int8 calibration file (make one with `vecbench calibrate`)");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", std::string()) != "vecbench-int8-calibration")
    throw ConfigError(path, "not an int8 calibration file of `vecbench calibrate`");
  Int8Calibration c;
  c.path = path;
  c.sha256 = sha256_hex(text);
  try {
    if (j.at("version").get<int>() != 1)
      throw ConfigError(path, "int8 calibration version " + j.at("version").dump() + " (this vecbench reads 1)");
    c.model_sha256 = j.at("model_sha256").get<std::string>();
    c.images = j.at("images").get<std::size_t>();
    c.images_sha256 = j.at("images_sha256").get<std::string>();
    c.resize = j.at("resize").get<std::string>();
    c.method = parse_calibration_method(j.at("method").get<std::string>(), path + ": method");
    for (const auto& [k, v] : j.at("ranges").items()) {
      const float f = v.get<float>();
      if (!std::isfinite(f) || f < 0) throw ConfigError(path, "int8 calibration: range of " + k + " is " + v.dump());
      c.ranges[k] = f;
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(path, std::string("int8 calibration: ") + e.what());
  }
  if (c.images == 0 || c.ranges.empty()) throw ConfigError(path, "int8 calibration holds no ranges");
  return c;
}

}  // namespace vecbench
