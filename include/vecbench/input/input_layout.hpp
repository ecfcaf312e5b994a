// Several encoders' inputs from one decode (`vectorize --encoders`): each part is one encoder's
// input (its side and its preset's resize) as planar float RGB, the parts laid one after the other
// in one buffer. The pipeline moves images as 3*S*S floats, so a composite image is that buffer
// padded to the smallest side S that holds every part (engine/multi_encoder.hpp splits it again).
#pragma once
#include <cstddef>
#include <vector>

#include "vecbench/input/resize_formula.hpp"

namespace vecbench {

/// One encoder's input: an out x out planar RGB image resized with `mode`.
struct InputPart {
  int size = 0;
  ResizeMode mode = ResizeMode::tf_legacy;
  std::size_t floats() const { return 3 * static_cast<std::size_t>(size) * static_cast<std::size_t>(size); }
};

/// The parts of a composite input, in order.
struct InputLayout {
  std::vector<InputPart> parts;
  bool empty() const { return parts.empty(); }
  /// Where part `k` starts, in floats from the image's first.
  std::size_t offset(std::size_t k) const {
    std::size_t o = 0;
    for (std::size_t i = 0; i < k; ++i) o += parts[i].floats();
    return o;
  }
  /// Floats every part takes together.
  std::size_t total() const { return offset(parts.size()); }
  /// The smallest side S whose 3*S*S floats hold every part (the composite image's "input size").
  int side() const {
    int s = 1;
    while (3 * static_cast<std::size_t>(s) * static_cast<std::size_t>(s) < total()) ++s;
    return s;
  }
};

}  // namespace vecbench
