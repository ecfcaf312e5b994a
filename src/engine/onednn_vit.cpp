// DINOv2's and CLIP's vision transformers as oneDNN primitives (see
// include/vecbench/engine/onednn_vit.hpp). No LibTorch here.
#include "vecbench/engine/onednn_vit.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <dnnl.hpp>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "onednn_common.hpp"
#include "onednn_network.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/engine/cpu_route.hpp"

namespace vecbench {

namespace {
std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}
}  // namespace

const VitTensor& VitWeights::at(const std::string& key, const std::vector<int64_t>& shape) const {
  const auto it = tensors.find(key);
  if (it == tensors.end())
    throw ReplicaError(source + ": tensor " + key + " is missing (onednn engine, " + encoder + ")");
  if (it->second.shape != shape)
    throw ReplicaError(source + ": tensor " + key + " has shape " + shape_text(it->second.shape) + ", " + encoder +
                       " needs " + shape_text(shape) + " (onednn engine)");
  return it->second;
}

using namespace onednn_detail;  // NOLINT: the engine's private pieces (src/engine/onednn_*.hpp)

namespace {

using dims = memory::dims;

memory::desc plain(const dims& d) {
  return memory::desc(d, dt::f32, d.size() == 1 ? tag::a : d.size() == 2 ? tag::ab : tag::abc);
}

/// A matmul's arguments: `post` are its post-ops' extra inputs in order (null: none for that one).
Args matmul_args(const memory& src, const memory& wei, const memory& bias, const memory& dst,
                 const std::vector<memory>& post) {
  Args a{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  if (bias) a[DNNL_ARG_BIAS] = bias;
  for (std::size_t i = 0; i < post.size(); ++i)
    if (post[i]) a[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1] = post[i];
  return a;
}

/// The primitive descriptor of dst = src x wei (+ bias) with `attr`'s post-ops.
dnnl::matmul::primitive_desc matmul_pd(const memory& src, const memory& wei, const memory& bias, const memory& dst,
                                       const dnnl::primitive_attr& attr, const dnnl::engine& eng) {
  const memory::desc bias_md = bias ? bias.get_desc() : memory::desc();
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src.get_desc(), wei.get_desc(), bias_md, dst.get_desc()), attr,
                                      eng);
}

/// Whether `pd` (a matmul over `images` images' rows, one after another) gives an image's rows the same bits in every
/// slot of the group: run twice on 64-byte aligned buffers (as the arena's) with the images' rows (and, for a sum,
/// dst's rows) rotated by one slot. oneDNN's AVX2 gemm does for most shapes, not for all (DINOv2 ViT-S/14's 512 x 588 x
/// 384 patch embedding rounds slot 0's rows apart from slot 1's); the verdict is kept per shape and post-ops for the
/// process.
bool slot_free(const dnnl::matmul::primitive_desc& pd, const dnnl::engine& eng, int images, const memory& wei,
               const memory& bias, const std::vector<memory>& post, bool sum) {
  const memory::dims sd = pd.src_desc().dims(), dd = pd.dst_desc().dims();
  std::string key = std::to_string(images) + " " + std::to_string(sd[0]) + "x" + std::to_string(sd[1]) + "x" +
                    std::to_string(dd[1]) + (bias ? " bias" : "") + (sum ? " sum" : "") + " " + pd.impl_info_str();
  for (const auto& m : post) key += m ? " post" : " -";
  static std::mutex mu;
  static std::map<std::string, bool> verdicts;
  std::lock_guard<std::mutex> lk(mu);
  if (const auto it = verdicts.find(key); it != verdicts.end()) return it->second;
  const std::size_t rows = static_cast<std::size_t>(sd[0]), r = rows / static_cast<std::size_t>(images);
  const std::size_t k = static_cast<std::size_t>(sd[1]), c = static_cast<std::size_t>(dd[1]);
  auto fill = [&](float* p, std::size_t width, int shift) {  // slot n holds pattern (n + shift) % N
    for (std::size_t i = 0; i < rows * width; ++i) {
      const std::size_t slot = i / (r * width), pattern = (slot + static_cast<std::size_t>(shift)) % images;
      const std::uint32_t h = static_cast<std::uint32_t>((i % (r * width)) * 2654435761u + pattern * 40503u);
      p[i] = static_cast<float>(h >> 8) / 8388608.0f - 1.0f;
    }
  };
  std::vector<std::shared_ptr<void>> keep;
  auto buffer = [&](std::size_t floats) {
    keep.push_back(aligned_bytes(floats * sizeof(float)));
    return static_cast<float*>(keep.back().get());
  };
  float *a = buffer(rows * k), *out[2] = {buffer(rows * c), buffer(rows * c)};
  dnnl::stream st(eng);
  const dnnl::matmul prim(pd);
  for (int shift = 0; shift < 2; ++shift) {
    fill(a, k, shift);
    if (sum) fill(out[shift], c, shift);
    prim.execute(st,
                 matmul_args(memory(pd.src_desc(), eng, a), wei, bias, memory(pd.dst_desc(), eng, out[shift]), post));
    st.wait();
  }
  bool same = true;  // pattern p sits in slot p first, in slot p - 1 (mod N) then
  for (std::size_t slot = 0; slot < static_cast<std::size_t>(images) && same; ++slot) {
    const std::size_t moved = (slot + images - 1) % images;
    same = std::memcmp(out[0] + slot * r * c, out[1] + moved * r * c, r * c * sizeof(float)) == 0;
  }
  return verdicts[key] = same;
}

/// A group of `images` images through the transformer: their tokens are the rows of every matmul
/// (attention stays within each image). The group's size is fixed for the engine (kGroup): a
/// matmul's rounding depends on its row count, never on a row's place among them.
class VitNetwork {
 public:
  VitNetwork(const VitWeights& w, const dnnl::engine& eng, int images)
      : w_(w), net_(eng, images, 1, ActType{dt::f32, tag::nchw}), N_(net_.batch()) {
    T_ = w.tokens();
    D_ = w.dim;
    H_ = w.heads;
    if (H_ <= 0 || D_ % H_ != 0)
      throw ReplicaError(w.source + ": width " + std::to_string(D_) + " is not " + std::to_string(H_) +
                         " heads (onednn engine)");
    hd_ = D_ / H_;
    const bool clip = w.family == VitFamily::clip;
    memory in = net_.input(memory::desc({N_, 3, w.input_size, w.input_size}, dt::f32, tag::abcd));
    memory x = embed(in);
    if (clip) {  // ln_pre: the tokens as the blocks take them
      memory y = net_.buffer(plain({N_ * T_, D_}));
      layer_norm(x, y, "ln_pre");
      x = y;
    }
    for (int b = 0; b < w.depth; ++b) block(x, b);
    const std::string final_norm = clip ? "ln_post" : "norm";
    memory cls = class_tokens(x);
    memory z = net_.buffer(plain({N_, D_}));
    layer_norm(cls, z, final_norm);
    const int E = w.feature_dim;
    if (clip) {
      memory e = net_.buffer(plain({N_, E}));
      rows_matmul(z, weight("proj", {D_, E}, {D_, E}, tag::ab), memory(), e, dnnl::primitive_attr());
      if (w.l2_normalize) normalize(e, E);
      z = e;
    }
    memory out = net_.output(plain({N_, E}));
    const std::size_t bytes = static_cast<std::size_t>(N_) * E * sizeof(float);
    net_.add_own([z, out, bytes]() { std::memcpy(out.get_data_handle(), z.get_data_handle(), bytes); },
                 Args{{DNNL_ARG_SRC, z}, {DNNL_ARG_DST, out}});
    net_.finish();
  }
  /// The group's images of 3 x S x S floats at `in`, their vectors at `out`.
  void run(dnnl::stream& s, const float* in, float* out) { net_.run(s, in, out); }

 private:
  /// The weight `key` (of `shape` in the export) as a matmul's weights of `d` laid out as `t`, read in place.
  memory weight(const std::string& key, const std::vector<int64_t>& shape, const dims& d, tag t) {
    const VitTensor& v = w_.at(key, shape);
    return memory(memory::desc(d, dt::f32, t), net_.engine(), const_cast<float*>(v.data.data()));
  }
  memory vec(const std::string& key, int n, bool row = true) {
    const VitTensor& v = w_.at(key, {n});
    return memory(row ? plain({1, n}) : plain({n}), net_.engine(), const_cast<float*>(v.data.data()));
  }

  /// The input normalized and cut into patches (vecbench's kernel), their matmul with the patch
  /// embedding, then the class token and the position table: the [T, D] tokens.
  memory embed(const memory& in) {
    const int S = w_.input_size, p = w_.patch, G = S / p, P = G * G, K = 3 * p * p, N = N_;
    const bool clip = w_.family == VitFamily::clip;
    memory patches = net_.buffer(plain({N * P, K}));
    const VitWeights* w = &w_;
    net_.add_own(
        [in, patches, w, S, p, G, K, N]() {
          const auto* x = static_cast<const float*>(in.get_data_handle());
          auto* row = static_cast<float*>(patches.get_data_handle());
          for (int i = 0; i < N * G * G; ++i) {
            const int n = i / (G * G), gy = i % (G * G) / G, gx = i % G;
            for (int c = 0; c < 3; ++c)
              for (int ky = 0; ky < p; ++ky) {
                const float* src = x + ((static_cast<std::size_t>(n) * 3 + c) * S + gy * p + ky) * S + gx * p;
                for (int kx = 0; kx < p; ++kx)  // the module's (x / div - mean) / std, in its order
                  *row++ = (src[kx] / w->input_div - w->input_mean[c]) / w->input_std[c];
              }
          }
        },
        Args{{DNNL_ARG_SRC, in}, {DNNL_ARG_DST, patches}});
    memory emb = net_.buffer(plain({N * P, D_}));
    const std::string conv = clip ? "conv1.weight" : "patch_embed.proj.weight";
    memory bias = clip ? memory() : vec("patch_embed.proj.bias", D_);
    rows_matmul(patches, weight(conv, {D_, 3, p, p}, {K, D_}, tag::ba), bias, emb, dnnl::primitive_attr());
    memory x = net_.buffer(plain({N * T_, D_}));
    const VitTensor& cls = clip ? w_.at("class_embedding", {D_}) : w_.at("cls_token", {1, 1, D_});
    const VitTensor& pos = clip ? w_.at("positional_embedding", {T_, D_}) : w_.at("pos_embed_224", {1, T_, D_});
    const std::size_t T = T_, D = D_;
    net_.add_own(
        [emb, x, &cls, &pos, T, D, N]() {
          for (std::size_t n = 0; n < static_cast<std::size_t>(N); ++n) {
            const auto* e = static_cast<const float*>(emb.get_data_handle()) + n * (T - 1) * D;
            auto* t = static_cast<float*>(x.get_data_handle()) + n * T * D;
            for (std::size_t j = 0; j < D; ++j) t[j] = cls.data[j] + pos.data[j];
            for (std::size_t i = D; i < T * D; ++i) t[i] = e[i - D] + pos.data[i];
          }
        },
        Args{{DNNL_ARG_SRC, emb}, {DNNL_ARG_DST, x}});
    return x;
  }

  /// Each image's class token (its first row) gathered into [N, D].
  memory class_tokens(const memory& x) {
    memory cls = net_.buffer(plain({N_, D_}));
    const std::size_t T = T_, D = D_, N = N_;
    net_.add_own(
        [x, cls, T, D, N]() {
          const auto* t = static_cast<const float*>(x.get_data_handle());
          auto* c = static_cast<float*>(cls.get_data_handle());
          for (std::size_t n = 0; n < N; ++n) std::copy(t + n * T * D, t + n * T * D + D, c + n * D);
        },
        Args{{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, cls}});
    return cls;
  }

  void layer_norm(const memory& src, const memory& dst, const std::string& prefix) {
    const int n = static_cast<int>(src.get_desc().dims()[1]);
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(), w_.ln_eps, flags);
    dnnl::layer_normalization_forward::primitive_desc pd(d, net_.engine());
    Args a{{DNNL_ARG_SRC, src},
           {DNNL_ARG_DST, dst},
           {DNNL_ARG_SCALE, vec(prefix + ".weight", n, false)},
           {DNNL_ARG_SHIFT, vec(prefix + ".bias", n, false)}};
    if (pd.mean_desc().get_size()) a[DNNL_ARG_MEAN] = net_.buffer(pd.mean_desc());
    if (pd.variance_desc().get_size()) a[DNNL_ARG_VARIANCE] = net_.buffer(pd.variance_desc());
    net_.add(pd, std::move(a));
  }

  /// dst = src x wei (+ bias) with `attr`'s post-ops; `post` are their extra inputs in order.
  void matmul(const memory& src, const memory& wei, const memory& bias, const memory& dst,
              const dnnl::primitive_attr& attr, const std::vector<memory>& post = {}) {
    net_.add(matmul_pd(src, wei, bias, dst, attr, net_.engine()), matmul_args(src, wei, bias, dst, post));
  }

  /// dst = src x wei (+ bias, post-ops) where src and dst hold the group's images' rows one after
  /// another: one matmul over every row when the probe (slot_free) shows that an image's rows come
  /// out the same bits in whichever slot it sits, else one matmul per image. `sum`: the post-ops
  /// add to what dst holds.
  void rows_matmul(const memory& src, const memory& wei, const memory& bias, const memory& dst,
                   const dnnl::primitive_attr& attr, const std::vector<memory>& post = {}, bool sum = false) {
    const dnnl::matmul::primitive_desc pd = matmul_pd(src, wei, bias, dst, attr, net_.engine());
    if (N_ == 1 || slot_free(pd, net_.engine(), N_, wei, bias, post, sum))
      return net_.add(pd, matmul_args(src, wei, bias, dst, post));  // the probe's descriptor, not made again
    const memory::dims sd = src.get_desc().dims(), dd = dst.get_desc().dims();
    const memory::dim r = sd[0] / N_;
    for (int n = 0; n < N_; ++n)
      matmul(net_.view(src, plain({r, sd[1]}), sizeof(float) * static_cast<std::size_t>(n * r * sd[1])), wei, bias,
             net_.view(dst, plain({r, dd[1]}), sizeof(float) * static_cast<std::size_t>(n * r * dd[1])), attr, post);
  }

  /// x + layer scale (DINOv2) x (src x wei + bias), into x. Without layer scale the residual is the
  /// matmul's sum post-op; with it, the scaled product goes to a buffer and a binary add sums it
  /// (oneDNN 2.6's gemm matmul takes a sum only as its first post-op: a scale then a sum runs its
  /// reference code, ~250x slower).
  void residual(const memory& src, const memory& wei, const memory& bias, const memory& x, const std::string& gamma) {
    dnnl::post_ops po;
    dnnl::primitive_attr attr;
    if (gamma.empty()) {
      po.append_sum(1.0f);
      attr.set_post_ops(po);
      rows_matmul(src, wei, bias, x, attr, {memory()}, true);
      return;
    }
    po.append_binary(algorithm::binary_mul, plain({1, D_}));
    attr.set_post_ops(po);
    memory y = net_.buffer(x.get_desc());
    rows_matmul(src, wei, bias, y, attr, {vec(gamma, D_)});
    dnnl::binary::desc add(algorithm::binary_add, x.get_desc(), y.get_desc(), x.get_desc());
    net_.add(dnnl::binary::primitive_desc(add, net_.engine()),
             Args{{DNNL_ARG_SRC_0, x}, {DNNL_ARG_SRC_1, y}, {DNNL_ARG_DST, x}});
  }

  void block(const memory& x, int b) {
    const bool clip = w_.family == VitFamily::clip;
    const std::string p =
        clip ? "transformer.resblocks." + std::to_string(b) + "." : "blocks." + std::to_string(b) + ".";
    const int N = N_, T = T_, D = D_, H = H_, hd = hd_;
    memory h = net_.buffer(plain({N * T, D}));
    layer_norm(x, h, p + (clip ? "ln_1" : "norm1"));
    // attention: qkv, then per image and head softmax(q k^T / sqrt(hd)) v, read and written in place in [T, *] rows
    memory qkv = net_.buffer(plain({N * T, 3 * D}));
    const std::string qkv_w = clip ? p + "attn.in_proj_weight" : p + "attn.qkv.weight";
    const std::string qkv_b = clip ? p + "attn.in_proj_bias" : p + "attn.qkv.bias";
    rows_matmul(h, weight(qkv_w, {3 * D, D}, {D, 3 * D}, tag::ba), vec(qkv_b, 3 * D), qkv, dnnl::primitive_attr());
    const std::size_t f = sizeof(float);
    const memory::dim img = static_cast<memory::dim>(T) * 3 * D;  // one image's qkv rows
    memory q = net_.view(qkv, memory::desc({N, H, T, hd}, dt::f32, dims{img, hd, 3 * D, 1}));
    memory kt = net_.view(qkv, memory::desc({N, H, hd, T}, dt::f32, dims{img, hd, 1, 3 * D}), f * D);
    memory v = net_.view(qkv, memory::desc({N, H, T, hd}, dt::f32, dims{img, hd, 3 * D, 1}), f * 2 * D);
    memory scores = net_.buffer(memory::desc({N, H, T, T}, dt::f32, tag::abcd));
    dnnl::primitive_attr scale;
    scale.set_output_scales(0, {1.0f / std::sqrt(static_cast<float>(hd))});  // 1/8 for 64: exact, as q * scale
    matmul(q, kt, memory(), scores, scale);
    dnnl::softmax_forward::desc sd(dnnl::prop_kind::forward_inference, scores.get_desc(), 3);
    net_.add(dnnl::softmax_forward::primitive_desc(sd, net_.engine()),
             Args{{DNNL_ARG_SRC, scores}, {DNNL_ARG_DST, scores}});
    memory ctx = net_.buffer(plain({N * T, D}));
    memory ctx_heads =
        net_.view(ctx, memory::desc({N, H, T, hd}, dt::f32, dims{static_cast<memory::dim>(T) * D, hd, D, 1}));
    matmul(scores, v, memory(), ctx_heads, dnnl::primitive_attr());
    const std::string proj = clip ? p + "attn.out_proj" : p + "attn.proj";
    residual(ctx, weight(proj + ".weight", {D, D}, {D, D}, tag::ba), vec(proj + ".bias", D), x,
             clip ? "" : p + "ls1.gamma");
    // the feed-forward
    memory h2 = net_.buffer(plain({N * T, D}));
    layer_norm(x, h2, p + (clip ? "ln_2" : "norm2"));
    if (w_.swiglu) {
      swiglu(x, h2, p);
      return;
    }
    const std::string fc1 = clip ? p + "mlp.c_fc" : p + "mlp.fc1", fc2 = clip ? p + "mlp.c_proj" : p + "mlp.fc2";
    memory hidden = net_.buffer(plain({N * T, 4 * D}));
    dnnl::post_ops po;
    if (clip)
      po.append_eltwise(1.0f, algorithm::eltwise_swish, 1.702f, 0.0f);  // QuickGELU: x sigmoid(1.702 x)
    else
      po.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    dnnl::primitive_attr act;
    act.set_post_ops(po);
    rows_matmul(h2, weight(fc1 + ".weight", {4 * D, D}, {D, 4 * D}, tag::ba), vec(fc1 + ".bias", 4 * D), hidden, act);
    residual(hidden, weight(fc2 + ".weight", {D, 4 * D}, {4 * D, D}, tag::ba), vec(fc2 + ".bias", D), x,
             clip ? "" : p + "ls2.gamma");
  }

  /// DINOv2 ViT-g/14's feed-forward: w3(silu(x1) * x2) where [x1, x2] = w12(x), into x with layer scale.
  void swiglu(const memory& x, const memory& h2, const std::string& p) {
    const int T = N_ * T_, D = D_;  // every image's rows
    const auto it = w_.tensors.find(p + "mlp.w3.weight");
    if (it == w_.tensors.end() || it->second.shape.size() != 2)
      throw ReplicaError(w_.source + ": tensor " + p + "mlp.w3.weight is missing or not a matrix (onednn engine)");
    const int hid = static_cast<int>(it->second.shape[1]);
    memory both = net_.buffer(plain({T, 2 * hid}));
    rows_matmul(h2, weight(p + "mlp.w12.weight", {2 * hid, D}, {D, 2 * hid}, tag::ba), vec(p + "mlp.w12.bias", 2 * hid),
                both, dnnl::primitive_attr());
    memory gated = net_.buffer(plain({T, hid}));
    net_.add_own(
        [both, gated, T, hid]() {
          const auto* a = static_cast<const float*>(both.get_data_handle());
          auto* g = static_cast<float*>(gated.get_data_handle());
          for (int t = 0; t < T; ++t) {
            const float* r = a + static_cast<std::size_t>(t) * 2 * hid;
            float* o = g + static_cast<std::size_t>(t) * hid;
            for (int j = 0; j < hid; ++j) o[j] = r[j] / (1.0f + std::exp(-r[j])) * r[hid + j];  // silu(x1) x2
          }
        },
        Args{{DNNL_ARG_SRC, both}, {DNNL_ARG_DST, gated}});
    residual(gated, weight(p + "mlp.w3.weight", {D, hid}, {hid, D}, tag::ba), vec(p + "mlp.w3.bias", D), x,
             p + "ls2.gamma");
  }

  /// Each row of `out` (n floats) divided by its L2 norm (CMMD's protocol).
  void normalize(const memory& out, int n) {
    const int rows = N_;
    net_.add_own(
        [out, n, rows]() {
          for (int r = 0; r < rows; ++r) {
            auto* y = static_cast<float*>(out.get_data_handle()) + static_cast<std::size_t>(r) * n;
            double s = 0;
            for (int i = 0; i < n; ++i) s += static_cast<double>(y[i]) * y[i];
            const float norm = static_cast<float>(std::sqrt(s));
            for (int i = 0; i < n; ++i) y[i] /= norm;
          }
        },
        Args{{DNNL_ARG_DST, out}});
  }

  const VitWeights& w_;
  NetworkBuilder net_;
  const int N_;  ///< images per group: the network builder's batch
  int T_ = 0, D_ = 0, H_ = 0, hd_ = 0;
};

/// Images per network: the matmuls' row count, fixed so that a vector's bits never depend on the
/// batch (a matmul rounds by its shape). Two images' tokens (514 rows at 224 for a /14 patch) run
/// oneDNN's AVX2 gemm at ~41 GMAC/s a core where one image's 257 ran at ~33 (results/encoders/).
constexpr int kGroup = 2;

/// A replica: one network (of kGroup images) per thread of the device, each running whole groups on
/// one thread (the groups of a batch shared out among them; the last one padded with zeros). Every
/// image's arithmetic is then the same, one thread's, whatever the device's thread count: oneDNN's
/// gemm splits the reduction over threads for short token counts (CLIP ViT-B/32's 50 rows gave
/// other bits on 2 threads than on 1), which would make a vector depend on the route.
class OneDnnVit : public Model {
 public:
  OneDnnVit(std::shared_ptr<const VitWeights> w, const VirtualDevice& dev)
      : w_(std::move(w)), dev_(dev), eng_(cpu_engine()) {
    if (dev.is_cuda())
      throw ReplicaError(w_->source + ": the onednn engine runs on CPU devices only, not " + dev.name());
    if (const CpuRoute route = cpu_route(Precision::fp32); !route.runs())
      throw ReplicaError("onednn engine: " + route.why_not());
    omp_set_num_threads(1);  // what oneDNN sees: one thread per group (the workers are this replica's threads)
  }
  int feature_dim() const override { return w_->feature_dim; }
  int input_size() const override { return w_->input_size; }
  void prepare(int max_batch) override { build(workers_for(max_batch)); }
  ForwardTiming forward(const float* in, int n, float* out) override {
    if (omp_get_max_threads() != 1) omp_set_num_threads(1);  // naive: replicas share a thread
    ForwardTiming t;
    const auto t0 = std::chrono::steady_clock::now();
    const int workers = workers_for(n), groups = (n + kGroup - 1) / kGroup;
    build(workers);
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
    auto work = [&](int k) {
      try {
        for (int g = k; g < groups; g += workers) run_group(k, in, n, out, g);
      } catch (const dnnl::error& e) {
        errors[k] = std::make_exception_ptr(ReplicaError(dev_.name() + ": onednn forward failed: " + e.what()));
      } catch (...) {
        errors[k] = std::current_exception();
      }
    };
    if (workers == 1) {
      work(0);
    } else {
#pragma omp parallel num_threads(workers)
      {
        omp_set_num_threads(1);  // the primitives inside run on this thread alone
        work(omp_get_thread_num());
      }
    }
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    t.forward_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return t;
  }

 private:
  int workers_for(int n) const { return std::max(1, std::min(dev_.threads, (std::max(1, n) + kGroup - 1) / kGroup)); }
  /// Group `g` of the batch's `n` images on worker `k`'s network: in place, or through the
  /// worker's padded buffers when the group is short.
  void run_group(int k, const float* in, int n, float* out, int g) {
    const std::size_t s = static_cast<std::size_t>(w_->input_size), per_in = 3 * s * s;
    const std::size_t per_out = static_cast<std::size_t>(w_->feature_dim), first = static_cast<std::size_t>(g) * kGroup;
    const std::size_t count = std::min<std::size_t>(kGroup, static_cast<std::size_t>(n) - first);
    if (count == kGroup) return nets_[k]->run(streams_[k], in + per_in * first, out + per_out * first);
    Pad& p = pads_[k];
    p.in.assign(per_in * kGroup, 0.0f);
    p.out.assign(per_out * kGroup, 0.0f);
    std::copy(in + per_in * first, in + per_in * (first + count), p.in.begin());
    nets_[k]->run(streams_[k], p.in.data(), p.out.data());
    std::copy(p.out.begin(), p.out.begin() + static_cast<std::ptrdiff_t>(per_out * count), out + per_out * first);
  }
  /// Networks for `k` workers (built once; more when a larger batch needs them), made with oneDNN
  /// seeing one thread, as they run.
  void build(int k) {
    try {
      while (static_cast<int>(nets_.size()) < k) {
        nets_.push_back(std::make_unique<VitNetwork>(*w_, eng_, kGroup));
        streams_.emplace_back(eng_);
        pads_.emplace_back();
      }
    } catch (const dnnl::error& e) {
      throw ReplicaError(w_->source + ": building the oneDNN network failed: " + e.what());
    }
  }
  struct Pad {
    std::vector<float> in, out;
  };
  std::shared_ptr<const VitWeights> w_;
  VirtualDevice dev_;
  dnnl::engine eng_;
  std::vector<std::unique_ptr<VitNetwork>> nets_;  ///< one per worker thread
  std::vector<dnnl::stream> streams_;              ///< nets_[k]'s
  std::vector<Pad> pads_;                          ///< a short group's images, padded, per worker
};

}  // namespace

std::unique_ptr<Model> make_onednn_vit(std::shared_ptr<const VitWeights> weights, const VirtualDevice& dev) {
  return std::make_unique<OneDnnVit>(std::move(weights), dev);
}

}  // namespace vecbench
