// torch.cdist of float32 rows as torch 1.13 computes it on the CPU (Debian's build, BLAS by
// OpenBLAS), reproduced operation for operation: torch-fidelity 0.4's precision and recall decide
// "within the k-th neighbour's radius" on these float32 distances, and a sample on a ball's edge
// goes the way their rounding sends it (metrics --like torch-fidelity). Checked bit for bit
// against torch.cdist and x.pow(2).sum(-1) of the fid-tools venv's torch (tests/py/metrics_tools.py).
#pragma once
#include <cstddef>
#include <vector>

namespace vecbench::torch_cpu {

/// x.pow(2).sum(-1) of one row of `d` floats, in float32 as ATen 1.13 sums it (SumKernel's
/// cascade_sum: the squares rounded, then 8-lane AVX2 vectors, four at a time, in levels of 16;
/// rows under 8 values by scalars, four at a time).
float row_sq_norm(const float* x, std::size_t d);

/// torch.cdist(x1, x2) (p = 2, compute_mode 'use_mm_for_euclid_dist_if_necessary') of `r1` rows
/// `x1` and `r2` rows `x2` of `d` floats (row-major), `n1` and `n2` their row_sq_norm, into `out`
/// (r1 x r2, row-major). When r1 > 25 or r2 > 25, ATen's _euclidean_dist: the rows [-2 x1, |x1|^2, 1]
/// times [x2, 1, |x2|^2] by one sgemm of exactly these shapes (OpenBLAS's results depend on them),
/// clamped at 1e-30, square root; else its direct kernel: the squared differences summed in
/// order, the last d % 4 by fused multiply-add (as GCC vectorized ATen's loop), square root.
void cdist(const float* x1, const float* n1, std::size_t r1, const float* x2, const float* n2, std::size_t r2,
           std::size_t d, std::vector<float>& out);

}  // namespace vecbench::torch_cpu
