// The Winograd F(4x4, 3x3) kernels, written once for a vector of kLanes floats (one pixel's
// channel block): src/engine/winograd.cpp includes this file twice, inside an anonymous
// namespace and a `#pragma GCC target` region each, after defining for that ISA:
//   Vec, kLanes (floats per vector = channels per block), kRows (tiles per micro-kernel), and
//   vload, vstore, vzero, vset1, vbcast, vadd, vsub, vfmadd (a*b+c), vfnmadd (c-a*b), vmax.
// Every function here then carries that ISA's target and internal linkage: no vector code can
// reach another translation unit, and each copy runs only where available(kLanes) is true.
// Not a header of its own: no include guard, no includes.

constexpr int kPanel = 2 * kLanes;  // columns of the micro-kernel (output channels): two vectors

/// B^T applied to 6 values (one column or row of an input tile).
inline void input_1d(const Vec d[6], Vec r[6]) {
  const Vec four = vset1(4.0f), five = vset1(5.0f), two = vset1(2.0f);
  // r0 = 4 d0 - 5 d2 + d4;      r5 = 4 d1 - 5 d3 + d5
  r[0] = vfnmadd(five, d[2], vfmadd(four, d[0], d[4]));
  r[5] = vfnmadd(five, d[3], vfmadd(four, d[1], d[5]));
  // r1 = -4 (d1 + d2) + (d3 + d4);  r2 = 4 (d1 - d2) + (d4 - d3)
  const Vec s12 = vadd(d[1], d[2]), s34 = vadd(d[3], d[4]);
  r[1] = vfnmadd(four, s12, s34);
  r[2] = vfmadd(four, vsub(d[1], d[2]), vsub(d[4], d[3]));
  // r3 = 2 (d3 - d1) + (d4 - d2);  r4 = 2 (d1 - d3) + (d4 - d2)
  const Vec d31 = vsub(d[3], d[1]), d42 = vsub(d[4], d[2]);
  r[3] = vfmadd(two, d31, d42);
  r[4] = vfnmadd(two, d31, d42);
}

/// A^T applied to 6 values: 4 outputs.
inline void output_1d(const Vec m[6], Vec o[4]) {
  const Vec s12 = vadd(m[1], m[2]), d12 = vsub(m[1], m[2]);
  const Vec s34 = vadd(m[3], m[4]), d34 = vsub(m[3], m[4]);
  o[0] = vadd(vadd(m[0], s12), s34);
  o[1] = vfmadd(vset1(2.0f), d34, d12);
  o[2] = vfmadd(vset1(4.0f), s34, s12);
  o[3] = vadd(vfmadd(vset1(8.0f), d34, d12), m[5]);
}

/// F(2, 5)'s A^T applied to 6 values: 2 outputs (the points of output_1d).
inline void output_1d_2(const Vec m[6], Vec o[2]) {
  o[0] = vadd(vadd(vadd(m[0], m[1]), vadd(m[2], m[3])), m[4]);
  o[1] = vadd(vfmadd(vset1(2.0f), vsub(m[3], m[4]), vsub(m[1], m[2])), m[5]);
}

// A block's transformed inputs V are kept tile by tile: tile t's 36 positions of in_c channels at
// [t][p][c], so that each tile's transform writes one contiguous stretch of memory.

/// The 6x6 input tiles (F(4x4, 3x3), F(2x2, 5x5)) at tiles[0, count) into V (rows x kPos x in_c),
/// rows >= count zeroed.
inline void transform_inputs(const ConvShape& s, const BlockedTensor& src, const TileAt* tiles, int count, int rows,
                             float* v) {
  const std::size_t pos_stride = static_cast<std::size_t>(s.in_c), ldv = kPos * pos_stride;
  // channel blocks outermost: consecutive tiles then read neighbouring pixels (4 apart), which
  // the hardware prefetchers follow; a channel block's plane is a whole map away
  for (int cb = 0; cb < s.in_c / kLanes; ++cb)
    for (int tl = 0; tl < count; ++tl) {
      const TileAt at = tiles[tl];
      const int y0 = at.y - s.pad, x0 = at.x - s.pad;
      const bool inside = y0 >= 0 && x0 >= 0 && y0 + kIn <= s.in_h && x0 + kIn <= s.in_w;
      const float* base = src.data + src.offset + at.n * src.stride_n + cb * src.stride_cb;
      Vec d[kIn][kIn];
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j) {
          const int y = y0 + i, x = x0 + j;
          d[i][j] = inside || (y >= 0 && y < s.in_h && x >= 0 && x < s.in_w)
                        ? vload(base + y * src.stride_y + x * src.stride_x)
                        : vzero();
        }
      Vec col[kIn], t[kIn][kIn];
      for (int j = 0; j < kIn; ++j) {  // B^T d: down each column
        Vec in[kIn];
        for (int i = 0; i < kIn; ++i) in[i] = d[i][j];
        input_1d(in, col);
        for (int i = 0; i < kIn; ++i) t[i][j] = col[i];
      }
      float* out = v + static_cast<std::size_t>(tl) * ldv + static_cast<std::size_t>(cb) * kLanes;
      for (int i = 0; i < kIn; ++i) {  // (B^T d) B: along each row
        Vec r[kIn];
        input_1d(t[i], r);
        for (int j = 0; j < kIn; ++j) vstore(out + static_cast<std::size_t>(i * kIn + j) * pos_stride, r[j]);
      }
    }
  std::fill(v + static_cast<std::size_t>(count) * ldv, v + static_cast<std::size_t>(rows) * ldv, 0.0f);
}

/// C (kRows x kPanel, row stride ldc) = A (kRows x k, row stride lda) * B (k x kPanel, dense panel).
/// The kRows x 2 accumulators stay in registers (the loops are unrolled).
inline void micro_kernel(const float* a, std::size_t lda, const float* b, int k, float* c, std::size_t ldc) {
  Vec acc[kRows][2];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = vzero();
  for (int i = 0; i < k; ++i, b += kPanel) {
    const Vec b0 = vload(b), b1 = vload(b + kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const Vec x = vbcast(a + static_cast<std::size_t>(r) * lda + i);
      acc[r][0] = vfmadd(x, b0, acc[r][0]);
      acc[r][1] = vfmadd(x, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    vstore(c + static_cast<std::size_t>(r) * ldc, acc[r][0]);
    vstore(c + static_cast<std::size_t>(r) * ldc + kLanes, acc[r][1]);
  }
}

/// The input tiles of a 1-D layer (1xR or Rx1: F(4, R) along its axis, `tc` its matrices) at
/// tiles[0, count) into V (rows x T::kN x in_c), rows >= count zeroed.
template <class T>
inline void transform_inputs_line(const T& tc, const ConvShape& s, const BlockedTensor& src, const TileAt* tiles,
                                  int count, int rows, float* v) {
  constexpr int kN = T::kN;
  const bool down = along_y(s.kernel);
  const std::int64_t step = down ? src.stride_y : src.stride_x;
  const int len = down ? s.in_h : s.in_w;
  const std::size_t pos_stride = static_cast<std::size_t>(s.in_c), ldv = kN * pos_stride;
  for (int cb = 0; cb < s.in_c / kLanes; ++cb)
    for (int tl = 0; tl < count; ++tl) {
      const TileAt at = tiles[tl];
      const int first = (down ? at.y : at.x) - s.pad;  // the tile's first input along the axis
      const float* base = src.data + src.offset + at.n * src.stride_n + cb * src.stride_cb +
                          (down ? 0 : at.y * src.stride_y) + (down ? at.x * src.stride_x : 0);
      Vec d[kN];
      for (int l = 0; l < kN; ++l)
        d[l] = first + l >= 0 && first + l < len ? vload(base + (first + l) * step) : vzero();
      float* out = v + static_cast<std::size_t>(tl) * ldv + static_cast<std::size_t>(cb) * kLanes;
      for (int j = 0; j < kN; ++j) {  // B^T d
        Vec r = vzero();
        for (int l = 0; l < kN; ++l) r = vfmadd(vset1(tc.bt[j][l]), d[l], r);
        vstore(out + static_cast<std::size_t>(j) * pos_stride, r);
      }
    }
  std::fill(v + static_cast<std::size_t>(count) * ldv, v + static_cast<std::size_t>(rows) * ldv, 0.0f);
}

/// M (rows x npos x kPanel) = V U for the npos positions of panel j (kPanel output channels):
/// a small buffer, still in L1/L2 when the output transform reads it back. V (rows x npos x in_c)
/// stays in L2 for every panel; the transformed filters stream through once per block.
inline void multiply_panel(const Filter& f, int npos, int rows, const float* v, float* m, std::size_t j) {
  const std::size_t ic = static_cast<std::size_t>(f.in_c), oc = static_cast<std::size_t>(f.out_c);
  const std::size_t ldv = static_cast<std::size_t>(npos) * ic, ldm = static_cast<std::size_t>(npos) * kPanel;
  const float* uj = f.u + j * ic * kPanel;
  for (int p = 0; p < npos; ++p)
    for (int r = 0; r < rows; r += kRows)
      micro_kernel(v + p * ic + r * ldv, ldv, uj + static_cast<std::size_t>(p) * ic * oc, f.in_c,
                   m + p * kPanel + r * ldm, ldm);
}

/// A^T M A + bias, ReLU of panel j's 6x6-input tiles into dst: kOut x kOut outputs each, 4 for
/// F(4x4, 3x3) (A^T: output_1d), 2 for F(2x2, 5x5) (output_1d_2).
template <int kOut>
inline void output_square(const Filter& f, const ConvShape& s, const BlockedTensor& dst, const TileAt* tiles, int count,
                          const float* m, std::size_t j) {
  const auto a_t = [](const Vec in[kIn], Vec out[kOut]) {
    if constexpr (kOut == kTile)
      output_1d(in, out);
    else
      output_1d_2(in, out);
  };
  const std::size_t ldm = kPos * kPanel;
  const int oh = s.out_h(), ow = s.out_w();
  const Vec zero = vzero();
  for (int tl = 0; tl < count; ++tl) {
    const TileAt at = tiles[tl];
    const int ny = std::min(kOut, oh - at.y), nx = std::min(kOut, ow - at.x);
    for (int half = 0; half < 2; ++half) {
      const std::size_t cb = 2 * j + static_cast<std::size_t>(half);
      const float* in = m + static_cast<std::size_t>(tl) * ldm + static_cast<std::size_t>(half) * kLanes;
      Vec t[kOut][kIn];
      for (int c = 0; c < kIn; ++c) {  // A^T M: down each column
        Vec col[kIn], o[kOut];
        for (int i = 0; i < kIn; ++i) col[i] = vload(in + (i * kIn + c) * kPanel);
        a_t(col, o);
        for (int i = 0; i < kOut; ++i) t[i][c] = o[i];
      }
      const Vec bias = vload(f.bias + cb * kLanes);
      float* base = dst.data + dst.offset + at.n * dst.stride_n + static_cast<std::int64_t>(cb) * dst.stride_cb;
      for (int i = 0; i < ny; ++i) {  // (A^T M) A: along each row
        Vec o[kOut];
        a_t(t[i], o);
        float* row = base + (at.y + i) * dst.stride_y + at.x * dst.stride_x;
        for (int x = 0; x < nx; ++x)
          // max(0, NaN) is NaN: a NaN stays visible (oneDNN's own ReLU turns it into 0)
          vstore(row + x * dst.stride_x, vmax(zero, vadd(o[x], bias)));
      }
    }
  }
}

/// A^T M + bias, ReLU of panel j's 1-D tiles (F(4, R), `tc` its matrices) into dst.
template <class T>
inline void output_line(const T& tc, const Filter& f, const ConvShape& s, const BlockedTensor& dst, const TileAt* tiles,
                        int count, const float* m, std::size_t j) {
  constexpr int kN = T::kN;
  const bool down = along_y(s.kernel);
  const std::int64_t step = down ? dst.stride_y : dst.stride_x;
  const int len = down ? s.out_h() : s.out_w();
  const std::size_t ldm = kN * kPanel;
  const Vec zero = vzero();
  for (int tl = 0; tl < count; ++tl) {
    const TileAt at = tiles[tl];
    const int n = std::min(kTile, len - (down ? at.y : at.x));
    for (int half = 0; half < 2; ++half) {
      const std::size_t cb = 2 * j + static_cast<std::size_t>(half);
      const float* in = m + static_cast<std::size_t>(tl) * ldm + static_cast<std::size_t>(half) * kLanes;
      Vec col[kN];
      for (int p = 0; p < kN; ++p) col[p] = vload(in + p * kPanel);
      const Vec bias = vload(f.bias + cb * kLanes);
      float* base = dst.data + dst.offset + at.n * dst.stride_n + static_cast<std::int64_t>(cb) * dst.stride_cb +
                    at.y * dst.stride_y + at.x * dst.stride_x;
      for (int i = 0; i < n; ++i) {
        Vec o = bias;
        for (int p = 0; p < kN; ++p) o = vfmadd(vset1(tc.at[i][p]), col[p], o);
        vstore(base + i * step, vmax(zero, o));  // a NaN stays visible, as above
      }
    }
  }
}

/// run_units for this ISA (the layout checks are the caller's).
inline void run_units_isa(const Filter& f, const ConvShape& s, const BlockedTensor& src, const BlockedTensor& dst,
                          int groups, int first, int last, float* scratch) {
  const int per_block = block_tiles(s), tiles = tile_count(s), npos = f.positions;
  const std::size_t panels = static_cast<std::size_t>(s.out_c / kPanel), g = static_cast<std::size_t>(groups);
  float* v = scratch;
  float* m = scratch + static_cast<std::size_t>(npos) * per_block * s.in_c;
  int transformed = -1;       // the block whose tiles are in v
  TileAt at[kMaxBlockTiles];  // where its tiles lie
  for (int u = first; u < last; ++u) {
    const int b = u / groups;
    const std::size_t group = static_cast<std::size_t>(u % groups);
    const int t0 = b * per_block, count = std::min(per_block, tiles - t0);
    const int rows = (count + kRows - 1) / kRows * kRows;
    if (b != transformed) {
      for (int tl = 0; tl < count; ++tl) at[tl] = tile_at(s, t0 + tl);
      if (s.kernel == Kernel::k3x3 || s.kernel == Kernel::k5x5)
        transform_inputs(s, src, at, count, rows, v);
      else if (npos == Toom<4, 7>::kN)
        transform_inputs_line(toom7(), s, src, at, count, rows, v);
      else
        transform_inputs_line(toom3(), s, src, at, count, rows, v);
      transformed = b;
    }
    for (std::size_t j = group * panels / g; j < (group + 1) * panels / g; ++j) {
      multiply_panel(f, npos, rows, v, m, j);
      if (s.kernel == Kernel::k3x3)
        output_square<kTile>(f, s, dst, at, count, m, j);
      else if (s.kernel == Kernel::k5x5)
        output_square<kTile5>(f, s, dst, at, count, m, j);
      else if (npos == Toom<4, 7>::kN)
        output_line(toom7(), f, s, dst, at, count, m, j);
      else
        output_line(toom3(), f, s, dst, at, count, m, j);
    }
  }
}
