// The CPU features vecbench's own kernels need (engine/winograd.hpp, first_conv.hpp,
// pool_kernels.hpp), probed once per process: the one place they are asked of the CPU (CPUID,
// through GCC's __builtin_cpu_supports). What oneDNN runs is asked of oneDNN itself, once too
// (src/engine/onednn_common.hpp): it may run less than the CPU has (ONEDNN_MAX_CPU_ISA).
#pragma once

namespace vecbench {

struct CpuFeatures {
  bool avx2_fma = false;      ///< AVX2 and FMA: the Winograd kernels on 8-channel blocks
  bool avx512f = false;       ///< AVX-512 F: the Winograd kernels on 16-channel blocks
  bool avx512_bw_vl = false;  ///< AVX-512 F, BW and VL: the first-layer and pooling kernels (u8)
  bool avx512_bf16 = false;   ///< and AVX-512 BF16: the same kernels writing bf16
};

/// This CPU's features (none on other architectures than x86).
inline const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures c;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    c.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512_bw_vl = c.avx512f && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    c.avx512_bf16 = c.avx512_bw_vl && __builtin_cpu_supports("avx512bf16");
#endif
    return c;
  }();
  return f;
}

}  // namespace vecbench
