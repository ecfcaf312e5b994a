// The checksum of a stored vector, as its manifest line records it ("xxh3"): XXH3-64 (xxHash,
// Debian's libxxhash-dev, header-only here) of its float32 values' bytes, 16 lowercase hex digits.
// `vecbench verify` recomputes it from the file (a .vc file's text gives back the same floats).
// With `--hash-inputs`, an input file's own XXH3-64 is its content identity ("src"."xxh3").
#pragma once
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace vecbench {

inline std::string vector_xxh3(const float* f, int dim) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(f, static_cast<std::size_t>(dim) * sizeof(float))));
  return b;
}

/// XXH3-64 of a file's bytes (`--hash-inputs`: an input's content identity), "" when it cannot be
/// read (its decode reports why).
inline std::string file_xxh3(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    XXH3_64bits_update(st, buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  const bool ok = in.eof();
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(XXH3_64bits_digest(st)));
  XXH3_freeState(st);
  return ok ? b : "";
}

}  // namespace vecbench
