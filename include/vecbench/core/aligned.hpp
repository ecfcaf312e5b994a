// Floats at a 64-byte boundary (a cache line; what AVX loads and oneDNN's buffers want), freed
// with std::free. std::aligned_alloc needs a size that is a multiple of the alignment: the one
// place that rounds it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace vecbench {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float, FreeDeleter>;

/// n floats (at least one), 64-byte aligned, uninitialized; throws std::bad_alloc.
inline AlignedFloats aligned_floats(std::size_t n) {
  constexpr std::size_t kAlign = 64;
  const std::size_t bytes = (std::max<std::size_t>(n, 1) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, bytes);
  if (!p) throw std::bad_alloc();
  return AlignedFloats(static_cast<float*>(p));
}

}  // namespace vecbench
