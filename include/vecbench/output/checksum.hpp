// The checksum of a stored vector, as its manifest line records it ("xxh3"): XXH3-64 (xxHash,
// Debian's libxxhash-dev, header-only here) of its float32 values' bytes, 16 lowercase hex digits.
// `vecbench verify` recomputes it from the file (a .vc file's text gives back the same floats).
#pragma once
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <string>

namespace vecbench {

inline std::string vector_xxh3(const float* f, int dim) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(f, static_cast<std::size_t>(dim) * sizeof(float))));
  return b;
}

}  // namespace vecbench
