// `vecbench stats` and `vecbench fid` at the sizes FID is computed at (issue #28): the float64
// statistics streamed over a feature matrix of N x 2048 (N = 5,000 and 50,000; the process's
// peak RSS as a counter: it must not grow with N), and FID from two sets of statistics (two
// 2048 x 2048 eigendecompositions and the matrix products between them).
#include <sys/resource.h>

#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/fid/fid.hpp"

using namespace vecbench;

namespace {

constexpr int kDim = 2048;

/// A float32 [n, 2048] .npy of non-negative values (as pool_3's), written in chunks so that the
/// benchmark's own memory stays small; kept in the temp folder for the process.
fs::path feature_matrix(std::size_t n, unsigned seed) {
  const fs::path p =
      fs::temp_directory_path() / ("vecbench_bench_fid_" + std::to_string(n) + "_" + std::to_string(seed) + ".npy");
  if (fs::exists(p)) return p;
  std::ofstream out(p, std::ios::binary);
  out << npy::detail::header("<f4", {n, static_cast<std::size_t>(kDim)});
  std::mt19937 rng(seed);
  std::gamma_distribution<float> g(2.0f, 1.0f + 0.1f * static_cast<float>(seed));
  std::vector<float> row(kDim);
  for (std::size_t i = 0; i < n; ++i) {
    for (auto& v : row) v = g(rng);
    out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * sizeof(float)));
  }
  return p;
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void BM_StatsOfMatrix(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const fs::path p = feature_matrix(n, 1);
  for (auto _ : st) {
    const FeatureStats s = compute_stats(p);
    benchmark::DoNotOptimize(s.sigma.data());
  }
  st.counters["vectors_per_s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_StatsOfMatrix)
    ->Arg(5000)
    ->Arg(50000)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1)
    ->Repetitions(3);

void BM_FidOfTwoStats(benchmark::State& st) {
  const FeatureStats a = compute_stats(feature_matrix(5000, 1)), b = compute_stats(feature_matrix(5000, 2));
  for (auto _ : st) {
    const FidResult r = frechet_distance(a, b);
    benchmark::DoNotOptimize(r.fid);
  }
}
BENCHMARK(BM_FidOfTwoStats)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1)->Repetitions(3);

}  // namespace

BENCHMARK_MAIN();
