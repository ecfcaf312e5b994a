// vecbench's PNG decoders on the same files: libpng alone (src/input/codec.cpp), the libdeflate
// fast path with libpng behind it (the default, png_fast.hpp), and libspng where CMake finds it
// (VECBENCH_WITH_SPNG; issue #13 compared it). Not part of the product.
//   ./build/bench/vecbench_png_decoders FILE.png... [--reps N]
// For each file, interleaved: one decode with each, N times (the first round is a warm-up and not
// timed). Prints the total time of each, how many files the fast path took, and whether the RGB
// pixels are identical to libpng's; exits 2 when some are not.
#ifdef VECBENCH_WITH_SPNG
#include <spng.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vecbench/input/codec.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::uint8_t> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

vecbench::DecodeResult decode(const std::vector<std::uint8_t>& b, bool libdeflate) {
  vecbench::CodecOptions o;
  o.png_libdeflate = libdeflate;
  return vecbench::decode_png(b.data(), b.size(), o);
}

#ifdef VECBENCH_WITH_SPNG
/// libspng's RGB8 decode (16-bit samples reduced, alpha dropped, gray expanded); empty on error.
std::vector<std::uint8_t> spng_rgb(const std::vector<std::uint8_t>& b) {
  spng_ctx* c = spng_ctx_new(0);
  std::vector<std::uint8_t> out;
  std::size_t size = 0;
  if (c && spng_set_png_buffer(c, b.data(), b.size()) == 0 && spng_decoded_image_size(c, SPNG_FMT_RGB8, &size) == 0) {
    out.resize(size);
    if (spng_decode_image(c, out.data(), size, SPNG_FMT_RGB8, 0) != 0) out.clear();
  }
  spng_ctx_free(c);
  return out;
}
#endif

struct Totals {
  double libpng = 0, fast = 0, spng = 0, megapixels = 0;
  int fast_taken = 0, fast_same = 0, spng_same = 0;
};

void run_file(const std::vector<std::uint8_t>& bytes, int reps, Totals& t) {
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const vecbench::DecodeResult p = decode(bytes, false);
    const auto t1 = Clock::now();
    const vecbench::DecodeResult f = decode(bytes, true);
    const auto t2 = Clock::now();
#ifdef VECBENCH_WITH_SPNG
    const std::vector<std::uint8_t> s = spng_rgb(bytes);
#endif
    const auto t3 = Clock::now();
    if (r == 0) {
      t.megapixels += static_cast<double>(p.image.width) * p.image.height / 1e6;
      t.fast_taken += f.png_libdeflate;
      t.fast_same += f.image.pixels == p.image.pixels;
#ifdef VECBENCH_WITH_SPNG
      t.spng_same += s == p.image.pixels;
#endif
      continue;
    }
    t.libpng += std::chrono::duration<double>(t1 - t0).count();
    t.fast += std::chrono::duration<double>(t2 - t1).count();
    t.spng += std::chrono::duration<double>(t3 - t2).count();
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::vector<const char*> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = std::max(2, std::atoi(argv[++i]));
    else
      files.push_back(argv[i]);
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s FILE.png... [--reps N]\n", argv[0]);
    return 1;
  }
  Totals t;
  for (const char* path : files) run_file(read_file(path), reps, t);
  const double n = reps - 1;
  std::printf(
      "files %zu (%.1f MP); per pass: libpng %.3f s (%.1f MP/s); fast path %.3f s (%.1f MP/s), took %d files, "
      "pixels identical to libpng's %d; fast / libpng speed %.2fx\n",
      files.size(), t.megapixels, t.libpng / n, t.megapixels * n / t.libpng, t.fast / n, t.megapixels * n / t.fast,
      t.fast_taken, t.fast_same, t.libpng / t.fast);
  bool same = t.fast_same == static_cast<int>(files.size());
#ifdef VECBENCH_WITH_SPNG
  std::printf("libspng %.3f s (%.1f MP/s), pixels identical to libpng's %d; libspng / libpng speed %.2fx\n", t.spng / n,
              t.megapixels * n / t.spng, t.spng_same, t.libpng / t.spng);
  same = same && t.spng_same == static_cast<int>(files.size());
#endif
  return same ? 0 : 2;
}
