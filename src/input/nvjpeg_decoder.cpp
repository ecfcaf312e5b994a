// The nvJPEG device decoder (`--decode gpu`): a batch of JPEGs decoded on the replica's CUDA
// device into reused interleaved-RGB device buffers, then resized into the replica's device input
// batch by the resize kernel (src/input/resize_kernel.cu), all enqueued on the replica's stream.
//   - The hardware JPEG engine (A100, H100, H200: NVJPEG_BACKEND_HARDWARE) takes the images it
//     supports (nvjpegDecodeBatchedSupported) in one nvjpegDecodeBatched call; the others, or
//     all of them on a device without the engine, go to the default (hybrid) backend, batched.
//   - A batched call that fails is redone one image at a time (nvjpegDecode), so that only the
//     files at fault are rejected (and decoded on the CPU by the caller).
//   - A file's fault (corrupt, unsupported: CMYK, arithmetic coding, ...) rejects that image;
//     anything else (allocation, execution, internal errors, and INVALID_PARAMETER: a misuse of
//     the API, which must not hide as host fallbacks) throws Error naming the call.
//   - The hardware engine failing to set up (its handle, states or stream) leaves the decoder on
//     the default backend alone ("hybrid"), as on a device without the engine.
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/input/device_decode.hpp"
#include "vecbench/input/resize_kernel.hpp"

namespace vecbench {
namespace {

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS:
      return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG:
      return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "nvJPEG status (unknown)";
}

[[noreturn]] void fail(const char* call, nvjpegStatus_t s) {
  throw Error(std::string("nvJPEG: ") + call + " failed: " + status_name(s) + " (" +
              std::to_string(static_cast<int>(s)) + ")");
}
void check(nvjpegStatus_t s, const char* call) {
  if (s != NVJPEG_STATUS_SUCCESS) fail(call, s);
}
void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw Error(std::string("CUDA: ") + call + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

/// The statuses of a per-image call that are the file's fault (the image is rejected).
/// INVALID_PARAMETER is not: it is what nvJPEG says to a wrong call.
bool file_fault(nvjpegStatus_t s) {
  return s == NVJPEG_STATUS_BAD_JPEG || s == NVJPEG_STATUS_JPEG_NOT_SUPPORTED ||
         s == NVJPEG_STATUS_INCOMPLETE_BITSTREAM || s == NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
}

/// Images larger than this many pixels are left to the CPU (no device buffer of gigabytes).
constexpr std::size_t kMaxPixels = std::size_t{1} << 28;

/// One nvJPEG handle with its states: one for batched decoding, one for single images.
struct Codec {
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t batched = nullptr;
  nvjpegJpegState_t single = nullptr;
  int batch_size = 0;  ///< what the batched state was initialized for (0: must be initialized)
  void release() noexcept {
    if (single) nvjpegJpegStateDestroy(single);
    if (batched) nvjpegJpegStateDestroy(batched);
    if (handle) nvjpegDestroy(handle);
    single = batched = nullptr;
    handle = nullptr;
  }
};

/// Creates `c` on `backend` with its states; returns the first status that was not SUCCESS
/// (`c` then released) and names its call in `*call`.
nvjpegStatus_t create_codec(Codec& c, nvjpegBackend_t backend, const char** call) {
  nvjpegStatus_t s = nvjpegCreateEx(backend, nullptr, nullptr, 0, &c.handle);
  *call = "nvjpegCreateEx";
  if (s != NVJPEG_STATUS_SUCCESS) {
    c.handle = nullptr;
    return s;
  }
  *call = "nvjpegJpegStateCreate";
  s = nvjpegJpegStateCreate(c.handle, &c.batched);
  if (s == NVJPEG_STATUS_SUCCESS) s = nvjpegJpegStateCreate(c.handle, &c.single);
  if (s != NVJPEG_STATUS_SUCCESS) c.release();
  return s;
}

struct DeviceBuffer {
  std::uint8_t* ptr = nullptr;
  std::size_t capacity = 0;
};

struct Dims {
  int w = 0, h = 0;
};

class NvjpegDecoder final : public DeviceJpegDecoder {
 public:
  NvjpegDecoder(int ordinal, void* stream, int max_batch, int size, ResizeMode mode)
      : ordinal_(ordinal), stream_(static_cast<cudaStream_t>(stream)), size_(size), mode_(mode) {
    if (size <= 0) throw Error("nvJPEG decoder: bad output size " + std::to_string(size));
    try {
      set_device();
      setup_hardware();
      const char* call = "";
      const nvjpegStatus_t s = create_codec(sw_, NVJPEG_BACKEND_DEFAULT, &call);
      if (s != NVJPEG_STATUS_SUCCESS) fail(call, s);
      buffers_.resize(static_cast<std::size_t>(max_batch > 0 ? max_batch : 1));
    } catch (...) {
      release();
      throw;
    }
  }
  ~NvjpegDecoder() override { release(); }
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  std::vector<bool> decode_resize(const std::vector<EncodedView>& images, const std::vector<int>& slots,
                                  float* device_batch) override;
  std::string backend() const override { return hw_.handle ? "hardware" : "hybrid"; }

 private:
  void set_device() { check_cuda(cudaSetDevice(ordinal_), "cudaSetDevice"); }
  void setup_hardware() noexcept;
  void release() noexcept;
  bool probe(const EncodedView& img, Dims& d);
  bool hardware_supports(const EncodedView& img);
  nvjpegImage_t destination(std::size_t k, const Dims& d);
  void decode_batched(Codec& c, const std::vector<std::size_t>& list, const std::vector<EncodedView>& images,
                      const std::vector<Dims>& dims, std::vector<bool>& ok);
  bool decode_single(std::size_t k, const EncodedView& img, const Dims& d);

  int ordinal_;
  cudaStream_t stream_;
  int size_;
  ResizeMode mode_;
  Codec hw_, sw_;
  nvjpegJpegStream_t hw_stream_ = nullptr;
  std::vector<DeviceBuffer> buffers_;  ///< one per position in the batch, grown, never shrunk
};

/// The hardware engine where the device has one and it sets up; otherwise (ARCH_MISMATCH,
/// NOT_SUPPORTED, or any failure of its handle, states or stream) only the default backend.
void NvjpegDecoder::setup_hardware() noexcept {
  const char* call = "";
  if (create_codec(hw_, NVJPEG_BACKEND_HARDWARE, &call) != NVJPEG_STATUS_SUCCESS) return;
  if (nvjpegJpegStreamCreate(hw_.handle, &hw_stream_) != NVJPEG_STATUS_SUCCESS) {
    hw_stream_ = nullptr;
    hw_.release();
  }
}

void NvjpegDecoder::release() noexcept {
  cudaSetDevice(ordinal_);
  cudaStreamSynchronize(stream_);  // pending decodes and resizes may still use the buffers
  for (auto& b : buffers_)
    if (b.ptr) cudaFree(b.ptr);
  buffers_.clear();
  if (hw_stream_) nvjpegJpegStreamDestroy(hw_stream_);
  hw_stream_ = nullptr;
  hw_.release();
  sw_.release();
}

/// Reads the header: false for a file nvJPEG cannot decode to RGB (corrupt, CMYK/YCCK, unknown
/// chroma subsampling, empty or huge).
bool NvjpegDecoder::probe(const EncodedView& img, Dims& d) {
  if (img.data == nullptr || img.size == 0) return false;
  int components = 0;
  nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
  int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
  const nvjpegStatus_t s = nvjpegGetImageInfo(sw_.handle, img.data, img.size, &components, &css, widths, heights);
  if (s != NVJPEG_STATUS_SUCCESS) {
    if (file_fault(s)) return false;
    fail("nvjpegGetImageInfo", s);
  }
  if (css == NVJPEG_CSS_UNKNOWN || (components != 1 && components != 3)) return false;
  if (widths[0] <= 0 || heights[0] <= 0) return false;
  if (static_cast<std::size_t>(widths[0]) * static_cast<std::size_t>(heights[0]) > kMaxPixels) return false;
  d = Dims{widths[0], heights[0]};
  return true;
}

/// Whether the hardware engine decodes this file (baseline, one scan, a subsampling it has).
bool NvjpegDecoder::hardware_supports(const EncodedView& img) {
  if (!hw_.handle) return false;
  nvjpegStatus_t s = nvjpegJpegStreamParse(hw_.handle, img.data, img.size, 0, 0, hw_stream_);
  if (s != NVJPEG_STATUS_SUCCESS) {
    if (file_fault(s)) return false;  // the default backend gets it (and may reject it)
    fail("nvjpegJpegStreamParse", s);
  }
  int unsupported = 1;  // 0 means supported
  s = nvjpegDecodeBatchedSupported(hw_.handle, hw_stream_, &unsupported);
  if (s != NVJPEG_STATUS_SUCCESS) {
    if (file_fault(s)) return false;
    fail("nvjpegDecodeBatchedSupported", s);
  }
  return unsupported == 0;
}

/// The RGBI destination of batch position `k` (its buffer grown to fit).
nvjpegImage_t NvjpegDecoder::destination(std::size_t k, const Dims& d) {
  if (buffers_.size() <= k) buffers_.resize(k + 1);
  DeviceBuffer& b = buffers_[k];
  const std::size_t pitch = 3u * static_cast<std::size_t>(d.w);
  const std::size_t bytes = pitch * static_cast<std::size_t>(d.h);
  if (b.capacity < bytes) {
    if (b.ptr) check_cuda(cudaFree(b.ptr), "cudaFree");  // waits for the work still using it
    b.ptr = nullptr;
    b.capacity = 0;
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
    b.ptr = static_cast<std::uint8_t*>(p);
    b.capacity = bytes;
  }
  nvjpegImage_t out{};
  out.channel[0] = b.ptr;
  out.pitch[0] = pitch;
  return out;
}

bool NvjpegDecoder::decode_single(std::size_t k, const EncodedView& img, const Dims& d) {
  nvjpegImage_t dst = destination(k, d);
  const nvjpegStatus_t s = nvjpegDecode(sw_.handle, sw_.single, img.data, img.size, NVJPEG_OUTPUT_RGBI, &dst, stream_);
  if (s == NVJPEG_STATUS_SUCCESS) return true;
  if (file_fault(s)) return false;
  fail("nvjpegDecode", s);
}

void NvjpegDecoder::decode_batched(Codec& c, const std::vector<std::size_t>& list,
                                   const std::vector<EncodedView>& images, const std::vector<Dims>& dims,
                                   std::vector<bool>& ok) {
  if (list.empty()) return;
  if (list.size() > 1 || &c == &hw_) {
    std::vector<const unsigned char*> data;
    std::vector<std::size_t> lengths;
    std::vector<nvjpegImage_t> dst;
    for (std::size_t k : list) {
      data.push_back(images[k].data);
      lengths.push_back(images[k].size);
      dst.push_back(destination(k, dims[k]));
    }
    const int n = static_cast<int>(list.size());
    if (c.batch_size != n) {
      c.batch_size = 0;
      check(nvjpegDecodeBatchedInitialize(c.handle, c.batched, n, 1, NVJPEG_OUTPUT_RGBI),
            "nvjpegDecodeBatchedInitialize");
      c.batch_size = n;
    }
    if (nvjpegDecodeBatched(c.handle, c.batched, data.data(), lengths.data(), dst.data(), stream_) ==
        NVJPEG_STATUS_SUCCESS) {
      for (std::size_t k : list) ok[k] = true;
      return;
    }
    c.batch_size = 0;  // a failed batch: initialize again before the next one
  }
  // One at a time on the default backend: only the files at fault are rejected; a device
  // failure throws from decode_single.
  for (std::size_t k : list) ok[k] = decode_single(k, images[k], dims[k]);
}

std::vector<bool> NvjpegDecoder::decode_resize(const std::vector<EncodedView>& images, const std::vector<int>& slots,
                                               float* device_batch) {
  if (images.size() != slots.size()) throw Error("nvJPEG decoder: as many slots as images are needed");
  set_device();
  const std::size_t n = images.size();
  std::vector<bool> ok(n, false);
  std::vector<Dims> dims(n);
  std::vector<std::size_t> on_hardware, on_default;
  for (std::size_t k = 0; k < n; ++k) {
    if (!probe(images[k], dims[k])) continue;
    (hardware_supports(images[k]) ? on_hardware : on_default).push_back(k);
  }
  decode_batched(hw_, on_hardware, images, dims, ok);
  decode_batched(sw_, on_default, images, dims, ok);
  const std::size_t per = 3u * static_cast<std::size_t>(size_) * static_cast<std::size_t>(size_);
  for (std::size_t k = 0; k < n; ++k) {
    if (!ok[k]) continue;
    if (slots[k] < 0) throw Error("nvJPEG decoder: negative batch slot");
    const Dims& d = dims[k];
    launch_resize_rgb_to_chw(buffers_[k].ptr, d.h, d.w, 3u * static_cast<std::size_t>(d.w), size_, mode_,
                             device_batch + static_cast<std::size_t>(slots[k]) * per, stream_);
  }
  return ok;
}

}  // namespace

bool nvjpeg_available() { return true; }

bool nvjpeg_status_is_file_fault(int status) { return file_fault(static_cast<nvjpegStatus_t>(status)); }

std::unique_ptr<DeviceJpegDecoder> make_nvjpeg_decoder(int ordinal, void* stream, int max_batch, int size,
                                                       ResizeMode mode) {
  // the device resizes in the bilinear modes only (resize_formula.hpp); resolve_decode keeps
  // the bicubic modes on the host, and this keeps any other path from treating it as bilinear
  if (host_only_resize(mode))
    throw ConfigError(
        "decode",
        "--decode gpu: the device resizes tf-legacy and bilinear alone; every other resize mode (the bicubic and "
        "cropping ones) runs on the host only");
  return std::make_unique<NvjpegDecoder>(ordinal, stream, max_batch, size, mode);
}

}  // namespace vecbench
