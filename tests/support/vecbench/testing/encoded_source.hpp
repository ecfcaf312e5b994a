// A synthetic source as `--decode gpu` sees files: its even inputs arrive as "JPEG bytes" (the
// input's index, two bytes: encoded_index reads it back), the odd ones decoded on the host as
// usual; `corrupt` ones fail on the host decoder. For tests of the device-decoding route without
// a GPU or real JPEGs.
#pragma once
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/input/image_source.hpp"

namespace vecbench::testing {

class EncodedSource : public SyntheticSource {
 public:
  explicit EncodedSource(std::size_t n, std::set<std::size_t> corrupt = {})
      : SyntheticSource(n), corrupt_(std::move(corrupt)) {}
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    if (corrupt_.count(i)) throw InputError(name(i), "corrupt JPEG data (injected)");
    SyntheticSource::load(i, size, dst, t);
  }
  bool hands_over_jpegs() const override { return true; }
  bool load_or_encoded(std::size_t i, int size, float* dst, std::vector<std::uint8_t>& bytes,
                       StageTimes& t) const override {
    if (i % 2 != 0) return SyntheticSource::load_or_encoded(i, size, dst, bytes, t);
    bytes.assign({static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(i >> 8)});
    return true;
  }

 private:
  std::set<std::size_t> corrupt_;
};

/// The input index an EncodedSource wrote as "JPEG bytes".
inline std::size_t encoded_index(const std::vector<std::uint8_t>& bytes) {
  return bytes.at(0) | (static_cast<std::size_t>(bytes.at(1)) << 8);
}

}  // namespace vecbench::testing
