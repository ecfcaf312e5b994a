// One-off: throughput of the checksums a store could use over the oneDNN weights cache's payload
// size (87 MB) and over one pool_3 vector (8 KiB), medians of 7 runs each.
#define XXH_INLINE_ALL
#include <openssl/evp.h>
#include <xxhash.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>
#include "vecbench/core/sha256.hpp"
using Clock = std::chrono::steady_clock;
template <class F>
double median_s(F f, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
int main() {
  for (std::size_t n : {std::size_t(87u << 20), std::size_t(8192)}) {
    std::vector<unsigned char> buf(n);
    std::mt19937 g(1);
    for (auto& c : buf) c = static_cast<unsigned char>(g());
    const int reps = n > 1000000 ? 7 : 7;
    const int inner = n > 1000000 ? 1 : 10000;
    volatile unsigned long long sink = 0;
    double xx = median_s(
                    [&] {
                      for (int i = 0; i < inner; ++i) sink = sink + XXH3_64bits(buf.data(), n);
                    },
                    reps) /
                inner;
    double ossl = median_s(
                      [&] {
                        for (int i = 0; i < inner; ++i) {
                          unsigned char md[32];
                          unsigned int l;
                          EVP_Digest(buf.data(), n, md, &l, EVP_sha256(), nullptr);
                          sink = sink + md[0];
                        }
                      },
                      reps) /
                  inner;
    const std::string s(reinterpret_cast<const char*>(buf.data()), n);
    const int inner2 = n > 1000000 ? 1 : 1000;
    double own = median_s(
                     [&] {
                       for (int i = 0; i < inner2; ++i) sink = sink + vecbench::sha256_hex(s)[0];
                     },
                     reps) /
                 inner2;
    std::printf(
        "%zu bytes: XXH3-64 %.3f ms (%.1f GB/s), OpenSSL SHA-256 %.3f ms (%.2f GB/s), core/sha256.hpp %.3f ms (%.3f "
        "GB/s)\n",
        n, xx * 1e3, n / xx / 1e9, ossl * 1e3, n / ossl / 1e9, own * 1e3, n / own / 1e9);
  }
}
