// XXH3-64 checksums (xxHash, Debian's libxxhash-dev) as 16 lowercase hex digits: of a stored
// vector's float32 bytes (its manifest line's "xxh3", which `vecbench verify` recomputes; a .vc
// file's text gives back the same floats), of an input file's bytes (`--hash-inputs`: its content
// identity, "src"."xxh3"), and of the oneDNN weights cache's files. The same digests either way:
// from libxxhash's run-time dispatch (AVX-512/AVX2/SSE2) where CMake found it
// (VECBENCH_XXH_DISPATCH), header-only (XXH_INLINE_ALL, SSE2 on x86-64) otherwise.
#pragma once
#if defined(VECBENCH_XXH_DISPATCH)
#include <xxh_x86dispatch.h>  // XXH3_64bits and XXH3_64bits_update -> their _dispatch versions
#else
#define XXH_INLINE_ALL
#include <xxhash.h>
#endif

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace vecbench {

/// A 64-bit digest as 16 lowercase hex digits.
inline std::string hex16(unsigned long long v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", v);
  return b;
}

/// XXH3-64 over data given in pieces (the same digest as xxh3_hex of the pieces joined).
class Xxh3 {
 public:
  Xxh3() : st_(XXH3_createState()) { XXH3_64bits_reset(st_); }
  ~Xxh3() { XXH3_freeState(st_); }
  Xxh3(const Xxh3&) = delete;
  Xxh3& operator=(const Xxh3&) = delete;
  void update(const void* data, std::size_t n) { XXH3_64bits_update(st_, data, n); }
  /// The digest of everything so far, as 16 lowercase hex digits.
  std::string hex() const { return hex16(XXH3_64bits_digest(st_)); }
  /// The same digest as a number.
  std::uint64_t digest() const { return XXH3_64bits_digest(st_); }

 private:
  XXH3_state_t* st_;
};

inline std::string xxh3_hex(const void* data, std::size_t n) { return hex16(XXH3_64bits(data, n)); }

/// A stored vector's checksum: its `dim` float32 values' bytes.
inline std::string vector_xxh3(const float* f, int dim) {
  return xxh3_hex(f, static_cast<std::size_t>(dim) * sizeof(float));
}

/// XXH3-64 of a file's bytes, "" when it cannot be read (its decode reports why).
inline std::string file_xxh3(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  Xxh3 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  return in.eof() ? h.hex() : "";
}

}  // namespace vecbench
