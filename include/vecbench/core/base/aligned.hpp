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

/// `bytes` (at least one) at a 64-byte boundary, uninitialized, to be freed with std::free;
/// throws std::bad_alloc.
inline void* aligned_block(std::size_t bytes) {
  constexpr std::size_t kAlign = 64;
  void* p = std::aligned_alloc(kAlign, (std::max<std::size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign);
  if (!p) throw std::bad_alloc();
  return p;
}

/// n floats (at least one), 64-byte aligned, uninitialized; throws std::bad_alloc.
inline AlignedFloats aligned_floats(std::size_t n) {
  return AlignedFloats(static_cast<float*>(aligned_block(std::max<std::size_t>(n, 1) * sizeof(float))));
}

/// n bytes as aligned_block, owned by a shared pointer (buffers several owners hold).
inline std::shared_ptr<void> aligned_shared_bytes(std::size_t n) { return {aligned_block(n), FreeDeleter()}; }

}  // namespace vecbench
