/* fma_peak: the CPU's measured peak fp32 multiply-accumulate rate, every core busy with
 * independent fused multiply-adds on the widest vectors it has (AVX-512 where the CPU has it, else
 * AVX2): what "fraction of peak" in the benchmark reports divides by (tools/bench_vit.py). Measured,
 * not computed from a clock: lscpu gives no maximum clock under some hypervisors, and the turbo
 * clock with every core busy is what a benchmark runs at.
 *
 *   cc -O3 -fopenmp -o fma_peak tools/fma_peak.c && ./fma_peak      # prints: gmacs=... isa=... threads=...
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>

#define CHAINS 12 /* independent accumulators: more than latency x FMA units on every x86 core since Haswell */

__attribute__((target("avx2,fma"))) static double run_avx2(long iters) {
  double macs = 0;
#pragma omp parallel reduction(+ : macs)
  {
    __m256 acc[CHAINS];
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; ++i) acc[i] = _mm256_set1_ps((float)i);
    for (long k = 0; k < iters; ++k)
#pragma GCC unroll 12 /* the accumulators in registers: a loop over an array in memory halves the rate */
      for (int i = 0; i < CHAINS; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    float sink[8];
    __m256 s = acc[0];
    for (int i = 1; i < CHAINS; ++i) s = _mm256_add_ps(s, acc[i]);
    _mm256_storeu_ps(sink, s);
    macs += 8.0 * CHAINS * (double)iters + (sink[0] == 12345.0f);
  }
  return macs;
}

__attribute__((target("avx512f"))) static double run_avx512(long iters) {
  double macs = 0;
#pragma omp parallel reduction(+ : macs)
  {
    __m512 acc[CHAINS];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; ++i) acc[i] = _mm512_set1_ps((float)i);
    for (long k = 0; k < iters; ++k)
#pragma GCC unroll 12
      for (int i = 0; i < CHAINS; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __m512 s = acc[0];
    for (int i = 1; i < CHAINS; ++i) s = _mm512_add_ps(s, acc[i]);
    macs += 16.0 * CHAINS * (double)iters + (_mm512_reduce_add_ps(s) == 12345.0f);
  }
  return macs;
}

int main(void) {
  __builtin_cpu_init();
  const int wide = __builtin_cpu_supports("avx512f");
  const long iters = 100000000L;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) { /* the best of three: the first may run before the clock rises */
    const double t0 = omp_get_wtime();
    const double macs = wide ? run_avx512(iters) : run_avx2(iters);
    const double rate = macs / (omp_get_wtime() - t0) / 1e9;
    if (rate > best) best = rate;
  }
  printf("gmacs=%.2f isa=%s threads=%d\n", best, wide ? "avx512" : "avx2", omp_get_max_threads());
  return 0;
}
