// libpng (vecbench's PNG decoder, src/input/codec.cpp) against libspng on the same files, to
// decide whether a faster PNG decoder exists in Debian (issue #13). Built when CMake finds
// libspng (apt-get install libspng-dev); not part of the product.
//   ./build/bench/vecbench_png_decoders FILE.png... [--reps N]
// For each file, interleaved: one libpng decode then one libspng decode, N times (the first
// round is a warm-up and not timed). Prints the total time of each and whether the RGB pixels
// are identical.
#include <spng.h>

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

std::vector<std::uint8_t> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

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

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
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
  double t_png = 0, t_spng = 0, megapixels = 0;
  int identical = 0;
  for (const char* path : files) {
    const auto bytes = read_file(path);
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const vecbench::DecodeResult d = vecbench::decode_png(bytes.data(), bytes.size());
      const auto t1 = std::chrono::steady_clock::now();
      const std::vector<std::uint8_t> s = spng_rgb(bytes);
      const auto t2 = std::chrono::steady_clock::now();
      if (r == 0) {
        megapixels += static_cast<double>(d.image.width) * d.image.height / 1e6;
        identical += s == d.image.pixels;
        continue;
      }
      t_png += seconds(t0, t1);
      t_spng += seconds(t1, t2);
    }
  }
  const double n = reps - 1;
  std::printf(
      "files %zu (%.1f MP), identical RGB pixels %d; per pass: libpng %.3f s (%.1f MP/s), libspng %.3f s "
      "(%.1f MP/s); libspng / libpng speed %.2fx\n",
      files.size(), megapixels, identical, t_png / n, megapixels * n / t_png, t_spng / n, megapixels * n / t_spng,
      t_png / t_spng);
  return identical == static_cast<int>(files.size()) ? 0 : 2;
}
