// libvecbench_torch.so, the only library that includes LibTorch, which the vecbench executable
// opens only when a run needs LibTorch (engine/torch_plugin.hpp): the replicas and the plugin's
// table here, the module files in torch_modules.cpp (one translation unit with this one in unity
// builds). Its one exported symbol is vecbench_torch_plugin, the table of the functions below.
#include "vecbench/engine/torch_plugin.hpp"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>

#include "torch_modules.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/engine/null_model.hpp"
#include "vecbench/engine/onednn_inception.hpp"

#ifdef VECBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace vecbench {
namespace {

using namespace torch_detail;  // NOLINT: the module files' functions (torch_modules.hpp)

using clk = std::chrono::steady_clock;
double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

#ifdef VECBENCH_WITH_CUDA
/// `--decode gpu` on one replica: nvJPEG (made on the first encoded batch, remade for a larger
/// batch or another resize mode) into the slots of a device batch on the replica's stream; the
/// files it rejects decoded on the host and copied into theirs.
class DeviceJpegStage {
 public:
  DeviceJpegStage(const VirtualDevice& dev, std::function<cudaStream_t()> stream)
      : dev_(dev), stream_(std::move(stream)) {}
  DeviceDecodeCounts decode(const EncodedImages& enc, float* device_batch, int batch, int size) {
    if (!decoder_ || mode_ != enc.mode || batch_ < batch) {
      decoder_.reset();
      batch_ = std::max(batch, batch_);
      decoder_ = make_nvjpeg_decoder(dev_.ordinal, stream_(), batch_, size, enc.mode);
      mode_ = enc.mode;
    }
    cudaStream_t st = stream_();
    const SlotUpload upload = [st](const float* host, float* dst, std::size_t floats) {
      cudaError_t e = cudaMemcpyAsync(dst, host, floats * sizeof(float), cudaMemcpyHostToDevice, st);
      if (e == cudaSuccess) e = cudaStreamSynchronize(st);  // the host buffer is reused for the next file
      if (e != cudaSuccess)
        throw Error(std::string("copying a host-decoded image to the GPU: ") + cudaGetErrorString(e));
    };
    return decode_on_device(*decoder_, enc, size, device_batch, scratch_, upload);
  }

 private:
  VirtualDevice dev_;
  std::function<cudaStream_t()> stream_;
  std::unique_ptr<DeviceJpegDecoder> decoder_;
  ResizeMode mode_ = ResizeMode::tf_legacy;
  int batch_ = 0;
  std::vector<float> scratch_;
};

/// `--engine none` on a CUDA device: the input pipeline alone, with `--decode gpu` decoding on
/// the device as a real replica would (the GPU decode ceiling); zero features.
class DeviceDecodeOnlyModel : public NullModel {
 public:
  DeviceDecodeOnlyModel(const VirtualDevice& dev, int dim, int size)
      : NullModel(dim, size),
        dev_(dev),
        stream_(c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(dev.ordinal))),
        jpeg_(dev, [this] { return stream_.stream(); }) {}
  ForwardTiming forward_encoded(float* input, const EncodedImages& enc, int n, float* output,
                                DeviceDecodeCounts& counts) override {
    ForwardTiming t;
    const auto t0 = clk::now();
    c10::cuda::CUDAStreamGuard sg(stream_);
    const int64_t s = input_size();
    if (!buf_.defined() || buf_.size(0) < n)
      buf_ = torch::empty({n, 3, s, s}, torch::TensorOptions().dtype(torch::kFloat).device(dev_.torch_device()));
    counts = jpeg_.decode(enc, buf_.data_ptr<float>(), n, input_size());
    stream_.synchronize();
    t.decode_s = since(t0);
    const ForwardTiming z = forward(input, n, output);
    t.forward_s = z.forward_s;
    return t;
  }

 private:
  VirtualDevice dev_;
  c10::cuda::CUDAStream stream_;
  DeviceJpegStage jpeg_;
  torch::Tensor buf_;
};

/// Batch buffers in page-locked memory: a replica copies them to its GPU directly. Pinning and
/// unpinning are slow (and may synchronize the device), so freed blocks are kept for the next
/// batch or run (up to kIdleBytes), and reserve() pins a run's blocks before its clock starts.
class PinnedHostMemory final : public HostMemory {
 public:
  static constexpr std::size_t kIdleBytes = std::size_t{8} << 30;
  void* allocate(std::size_t bytes) override {
    bytes = std::max<std::size_t>(bytes, 1);
    {
      std::lock_guard<std::mutex> lk(m_);
      auto it = idle_.lower_bound(bytes);  // the smallest kept block that fits
      if (it != idle_.end() && fits(it->first, bytes)) {
        void* p = it->second;
        idle_bytes_ -= it->first;
        idle_.erase(it);
        return p;
      }
    }
    return pin(bytes);
  }
  void deallocate(void* p, std::size_t) noexcept override {
    if (!p) return;
    std::lock_guard<std::mutex> lk(m_);
    const auto c = capacity_.find(p);
    if (c != capacity_.end() && idle_bytes_ + c->second <= kIdleBytes) {
      idle_.emplace(c->second, p);
      idle_bytes_ += c->second;
      return;
    }
    if (c != capacity_.end()) capacity_.erase(c);
    cudaFreeHost(p);
  }
  void reserve(std::size_t count, std::size_t bytes) override {
    bytes = std::max<std::size_t>(bytes, 1);
    std::size_t ready = 0;
    {
      std::lock_guard<std::mutex> lk(m_);
      for (auto it = idle_.lower_bound(bytes); it != idle_.end() && fits(it->first, bytes); ++it) ++ready;
    }
    for (; ready < count; ++ready) deallocate(pin(bytes), bytes);
  }
  const char* name() const override { return "pinned (cudaHostAlloc)"; }

 private:
  /// A kept block of `capacity` serves `bytes` (at most `capacity`) when it is not twice too big.
  static bool fits(std::size_t capacity, std::size_t bytes) { return capacity / 2 <= bytes; }
  void* pin(std::size_t bytes) {
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (e != cudaSuccess)
      throw Error("cudaHostAlloc of " + std::to_string(bytes) +
                  " bytes (a pinned batch buffer): " + cudaGetErrorString(e));
    std::lock_guard<std::mutex> lk(m_);
    capacity_[p] = bytes;
    return p;
  }
  std::mutex m_;
  std::multimap<std::size_t, void*> idle_;  ///< kept blocks by capacity
  std::map<void*, std::size_t> capacity_;   ///< every block made and not unpinned
  std::size_t idle_bytes_ = 0;
};

/// Whether `p` is page-locked host memory the GPU copies from directly.
bool is_pinned_host(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // pageable memory on an old runtime: an error to clear, not to keep
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

/// fp32 on CUDA is fp32: cuDNN's convolutions (and cuBLAS's matmuls, where allowed) use TF32
/// by default, inputs rounded to a 10-bit mantissa, which can put features beyond the 1e-4 that
/// fp32 verification allows against the CPU reference.
/// Process-wide switches, set once by the first fp32 CUDA replica (never turned back on), and
/// said in the log; backend_info() records it as cuda_fp32_tf32.
void fp32_without_tf32() {
  static std::once_flag once;
  std::call_once(once, [] {
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
    std::fprintf(stderr, "vecbench: fp32 on CUDA: TF32 off (cuDNN convolutions, cuBLAS matmuls)\n");
  });
}
#endif

class TorchScriptModel : public Model {
 public:
  TorchScriptModel(const VirtualDevice& dev, const ModelSettings& opt)
      : dev_(dev), opt_(opt), device_(dev.torch_device()) {
    (void)at::get_num_threads();  // force lazy init before setting this thread's count
    at::set_num_threads(dev.threads);
    if (opt.flush_denormal) at::globalContext().setFlushDenormal(true);  // MXCSR: per thread
    std::string meta_text;
#ifdef VECBENCH_WITH_CUDA
    if (dev.is_cuda()) {
      c10::cuda::CUDAGuard g(static_cast<c10::DeviceIndex>(dev.ordinal));
      stream_ = std::make_unique<c10::cuda::CUDAStream>(
          c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(dev.ordinal)));
      if (dev.memory_cap_gb > 0) {
        const auto props = at::cuda::getDeviceProperties(dev.ordinal);
        const double frac = dev.memory_cap_gb * dev.virtual_count * 1e9 / static_cast<double>(props->totalGlobalMem);
        c10::cuda::CUDACachingAllocator::setMemoryFraction(std::min(1.0, frac), dev.ordinal);
      }
    }
#else
    if (dev.is_cuda()) throw ReplicaError("this vecbench was built without CUDA");
#endif
    if (opt.precision != Precision::fp32 && !dev.is_cuda())
      throw ReplicaError(dev.name() + ": precision " + to_string(opt.precision) + " is for CUDA devices only");
    module_ = opt.share_weights && !dev.is_cuda() && opt.precision == Precision::fp32
                  ? shared_cpu_module(opt.path, &meta_text)
                  : load_module(opt.path, device_, &meta_text);
    module_.eval();
    if (opt.precision == Precision::fp16) module_.to(torch::kHalf);
    if (opt.precision == Precision::bf16) module_.to(torch::kBFloat16);
#ifdef VECBENCH_WITH_CUDA
    if (dev.is_cuda()) at::globalContext().setBenchmarkCuDNN(opt.cudnn_benchmark);
    if (dev.is_cuda() && opt.precision == Precision::fp32) fp32_without_tf32();
#endif
    const ModelInfo info = model_info_from(opt.path, parse_meta(meta_text));
    feature_dim_ = info.feature_dim;
    input_size_ = info.input_size;
    if (info.cpu_only && dev.is_cuda())
      throw ReplicaError(opt.path + ": this model runs on CPU only (fuse=" + (info.fuse.empty() ? "?" : info.fuse) +
                         "); export one without --fuse for " + dev.name());
    // A model exported with --fuse prepacked is already folded, and freezing it would
    // constant-fold its lazily built oneDNN contexts away.
    if (opt.optimize && info.optimize_after_load) {
      try {
        module_ = torch::jit::optimize_for_inference(module_);
      } catch (const c10::Error& e) {
        throw ReplicaError(opt.path + ": optimize_for_inference failed: " + e.what_without_backtrace());
      }
    }
    if (const char* dump = std::getenv("VECBENCH_DUMP_GRAPH")) {  // for performance work: the graph that runs
      std::ofstream(dump) << *module_.get_method("forward").graph();
    }
  }

  int feature_dim() const override { return feature_dim_; }
  int input_size() const override { return input_size_; }
  /// The run's batch: on CUDA with cuDNN's autotuning on, shorter batches (the last of a run or
  /// of a shard) are padded to it, so every forward has the one shape the warm-up tuned.
  void prepare(int max_batch) override { max_batch_ = max_batch; }

  ForwardTiming forward(const float* in, int n, float* out) override { return run(in, n, out, nullptr, nullptr); }

  ForwardTiming forward_encoded(float* in, const EncodedImages& enc, int n, float* out,
                                DeviceDecodeCounts& counts) override {
    if (dev_.is_cuda()) return run(in, n, out, &enc, &counts);
    return Model::forward_encoded(in, enc, n, out, counts);
  }

#ifdef VECBENCH_WITH_CUDA
  /// The batch on the device, on this replica's stream, in the precision and layout the module
  /// takes: `x` uploaded (straight from the pipeline's pinned buffer, else staged through this
  /// replica's own), the JPEGs of `enc` decoded into their slots (`*counts`), padded to the
  /// prepared batch while cuDNN autotunes. Times go to `t`.
  torch::Tensor device_batch(const torch::Tensor& x, int n, const EncodedImages* enc, DeviceDecodeCounts* counts,
                             ForwardTiming& t) {
    const int64_t s = input_size_;
    auto t0 = clk::now();
    // cuDNN autotunes each input shape the first time it sees it: a short batch is padded to
    // the prepared one (its slots past n hold an earlier batch's images; their features are
    // dropped), so that tuning happened in the warm-up, not inside the clock.
    const int64_t rows = opt_.cudnn_benchmark && n < max_batch_ ? max_batch_ : n;
    if (!device_in_.defined() || device_in_.size(0) < rows)
      device_in_ = torch::zeros({rows, 3, s, s}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
    auto xd = device_in_.narrow(0, 0, rows);
    if (is_pinned_host(x.data_ptr())) {  // the pipeline's pinned batch buffer: straight to the device
      const cudaError_t e =
          cudaMemcpyAsync(xd.data_ptr(), x.data_ptr(), static_cast<std::size_t>(x.numel()) * sizeof(float),
                          cudaMemcpyHostToDevice, stream_->stream());
      if (e != cudaSuccess) throw ReplicaError(dev_.name() + ": copying a batch to the GPU: " + cudaGetErrorString(e));
    } else {  // ordinary memory (warm-up, a caller's buffer): staged through this replica's pinned buffer
      if (!pinned_.defined() || pinned_.numel() < x.numel())
        pinned_ = torch::empty({x.numel()}, torch::TensorOptions().dtype(torch::kFloat).pinned_memory(true));
      auto staged = pinned_.narrow(0, 0, x.numel()).view(x.sizes());
      staged.copy_(x);
      xd.narrow(0, 0, n).copy_(staged, /*non_blocking=*/true);
    }
    if (enc && !enc->empty()) {  // --decode gpu: the JPEGs into their slots of xd, on this stream
      stream_->synchronize();
      t.h2d_s = since(t0);
      t0 = clk::now();
      *counts = jpeg_.decode(*enc, xd.data_ptr<float>(), static_cast<int>(rows), input_size_);
      stream_->synchronize();
      t.decode_s = since(t0);
      t0 = clk::now();
    }
    if (opt_.channels_last) xd = xd.contiguous(at::MemoryFormat::ChannelsLast);
    if (opt_.precision == Precision::fp16) xd = xd.to(torch::kHalf);
    if (opt_.precision == Precision::bf16) xd = xd.to(torch::kBFloat16);
    stream_->synchronize();
    t.h2d_s += since(t0);
    return xd;
  }
#endif

  /// One forward; on a CUDA device the JPEGs of `enc` (if any) are decoded into their slots of the
  /// device batch after the upload, and what was decoded where goes to `*counts`.
  ForwardTiming run(const float* in, int n, float* out, const EncodedImages* enc, DeviceDecodeCounts* counts) {
    (void)enc;  // read on CUDA devices only
    (void)counts;
    if (at::get_num_threads() != dev_.threads) at::set_num_threads(dev_.threads);  // naive: replicas share a thread
    c10::InferenceMode guard;
    ForwardTiming t;
    const int64_t s = input_size_;
    auto x = torch::from_blob(const_cast<float*>(in), {n, 3, s, s}, torch::kFloat);
    torch::Tensor y;
    try {
#ifdef VECBENCH_WITH_CUDA
      if (dev_.is_cuda()) {
        c10::cuda::CUDAStreamGuard sg(*stream_);
        const torch::Tensor xd = device_batch(x, n, enc, counts, t);
        auto t0 = clk::now();
        const int64_t rows = xd.size(0);
        ++calls_;
        if (opt_.cuda_graphs && calls_ > 3 && (!graph_ || graph_batch_ == rows)) {
          // CUDA graph of this replica's forward for its batch: captured once after warm-up on the
          // replica's own stream, then replayed (no per-op launch cost). A shorter batch (padded
          // while cuDNN autotunes, so only when that is off) takes the normal path.
          if (!graph_) {
            static_in_ = xd.clone();
            graph_ = std::make_unique<at::cuda::CUDAGraph>();
            graph_->capture_begin();
            static_out_ = output_of(module_.forward({static_in_}));
            graph_->capture_end();
            graph_batch_ = static_cast<int>(rows);
          }
          static_in_.copy_(xd, /*non_blocking=*/true);
          graph_->replay();
          y = static_out_;
        } else {
          y = output_of(module_.forward({xd}));
        }
        stream_->synchronize();
        t.forward_s = since(t0);
        t0 = clk::now();
        y = y.narrow(0, 0, n).to(torch::kFloat).to(torch::kCPU).contiguous();
        t.d2h_s = since(t0);
      } else
#endif
      {
        auto t0 = clk::now();
        if (opt_.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
        if (opt_.per_image && n > 1) {  // ModelSettings::per_image: the same products whatever the batch
          std::vector<torch::Tensor> rows;
          rows.reserve(static_cast<std::size_t>(n));
          for (int i = 0; i < n; ++i) rows.push_back(output_of(module_.forward({x.narrow(0, i, 1)})));
          y = torch::cat(rows, 0).contiguous();
        } else {
          y = output_of(module_.forward({x})).contiguous();
        }
        t.forward_s = since(t0);
      }
    } catch (const c10::Error& e) {
      throw ReplicaError(dev_.name() + ": forward failed: " + e.what_without_backtrace());
    }
    if (y.dim() != 2 || y.size(0) != n || y.size(1) != feature_dim_ || y.scalar_type() != torch::kFloat)
      throw ReplicaError(opt_.path + ": model returned shape " + std::to_string(y.dim() == 2 ? y.size(1) : -1) +
                         " per image, expected float [N," + std::to_string(feature_dim_) + "]");
    std::memcpy(out, y.data_ptr<float>(), sizeof(float) * static_cast<std::size_t>(n) * feature_dim_);
    return t;
  }

  std::size_t peak_memory_bytes() const override {
#ifdef VECBENCH_WITH_CUDA
    if (dev_.is_cuda()) {
      const auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(dev_.ordinal);
      return static_cast<std::size_t>(st.allocated_bytes[0].peak);
    }
#endif
    return 0;
  }

 private:
  static torch::Tensor output_of(const c10::IValue& v) {
    if (v.isTuple()) return v.toTupleRef().elements().at(0).toTensor();
    return v.toTensor();
  }
  VirtualDevice dev_;
  ModelSettings opt_;
  torch::Device device_;
  torch::jit::Module module_;
  int feature_dim_ = 2048;
  int input_size_ = 299;
  torch::Tensor pinned_;
  int calls_ = 0;
  int max_batch_ = 0;  ///< prepare()'s batch (0: not prepared, nothing padded)
#ifdef VECBENCH_WITH_CUDA
  torch::Tensor device_in_;  ///< the device input batch, max(rows) x 3 x S x S fp32, reused
  std::unique_ptr<c10::cuda::CUDAStream> stream_;
  DeviceJpegStage jpeg_{dev_, [this] { return stream_->stream(); }};
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  torch::Tensor static_in_, static_out_;
  int graph_batch_ = 0;
#endif
};

/// Replicas of the TorchScript engine.
ModelFactory plugin_factory(const ModelSettings& opt) {
  return [opt](const VirtualDevice& dev) -> std::unique_ptr<Model> {
    return std::make_unique<TorchScriptModel>(dev, opt);
  };
}

/// `--engine none` on CUDA devices (engines.cpp asks only for those): decoding on the device.
ModelFactory device_decode_factory(int dim, int size) {
  return [dim, size](const VirtualDevice& dev) -> std::unique_ptr<Model> {
#ifdef VECBENCH_WITH_CUDA
    return std::make_unique<DeviceDecodeOnlyModel>(dev, dim, size);
#else
    (void)dim, (void)size;
    throw ReplicaError(dev.name() + ": this vecbench was built without CUDA");
#endif
  };
}

int plugin_cuda_device_count() {
#ifdef VECBENCH_WITH_CUDA
  return static_cast<int>(torch::cuda::device_count());
#else
  return 0;
#endif
}

HostMemory* pinned_host_memory() {
#ifdef VECBENCH_WITH_CUDA
  if (plugin_cuda_device_count() == 0) return nullptr;
  static PinnedHostMemory* memory = new PinnedHostMemory();  // never freed: buffers may outlive static destructors
  return memory;
#else
  return nullptr;
#endif
}

nlohmann::json plugin_backend_info() {
  nlohmann::json j;
  j["libtorch"] = TORCH_VERSION;
  j["cuda"] = nullptr;
  j["cudnn"] = nullptr;
  j["gpus"] = nlohmann::json::array();
#ifdef VECBENCH_WITH_CUDA
  j["cuda"] = std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION / 10 % 100);
  j["cuda_fp32_tf32"] = false;  // fp32_without_tf32(): fp32 replicas on CUDA turn TF32 off
  for (int k = 0; k < plugin_cuda_device_count(); ++k) {
    const auto* p = at::cuda::getDeviceProperties(k);
    j["gpus"].push_back({{"name", p->name}, {"memory_bytes", p->totalGlobalMem}});
  }
#endif
  j["parallel_info"] = at::get_parallel_info();
  // The ISA of ATen's own CPU kernels, as its build summary says it ("CPU capability usage: AVX2").
  const std::string config = at::show_config(), key = "CPU capability usage: ";
  const auto at_key = config.find(key);
  j["aten_cpu_capability"] = at_key == std::string::npos
                                 ? "unknown"
                                 : config.substr(at_key + key.size(), config.find('\n', at_key) - at_key - key.size());
  return j;
}

TorchPluginApi make_api() {
  TorchPluginApi api;
  api.torchscript_factory = &plugin_factory;
  api.device_decode_factory = &device_decode_factory;
  api.load_model_meta = &load_model_meta;
  api.read_inception_weights = &read_inception_weights;
  api.read_vit_weights = &read_vit_weights;
  api.module_loads = &module_loads;
  api.cuda_device_count = &plugin_cuda_device_count;
  api.backend_info = &plugin_backend_info;
  api.pinned_host_memory = &pinned_host_memory;
  return api;
}

}  // namespace
}  // namespace vecbench

extern "C" __attribute__((visibility("default"))) const vecbench::TorchPluginApi* vecbench_torch_plugin(int abi) {
  static const vecbench::TorchPluginApi api = vecbench::make_api();
  return abi == vecbench::kTorchPluginAbi ? &api : nullptr;
}
