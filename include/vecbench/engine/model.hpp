// The small model interface the strategies need. LibTorch lives behind it (engines.hpp),
// and tests use a tiny stand-in (testing/stub_model.hpp).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vecbench/core/run/device.hpp"
#include "vecbench/input/device_decode.hpp"

namespace vecbench {

/// Seconds spent in the three parts of one forward call.
struct ForwardTiming {
  double h2d_s = 0.0;      ///< host-to-device copy (0 on CPU)
  double forward_s = 0.0;  ///< the model itself
  double d2h_s = 0.0;      ///< device-to-host copy of the features
  double decode_s = 0.0;   ///< JPEG decode and resize on the device (`--decode gpu`; 0 otherwise)
  double total() const { return h2d_s + decode_s + forward_s + d2h_s; }
};

/// One model replica bound to one (virtual) device. Not thread-safe: one thread owns it.
class Model {
 public:
  virtual ~Model() = default;
  /// Length of one feature vector (2048 for Inception-v3 pool_3).
  virtual int feature_dim() const = 0;
  /// Side of the square input image (299 for Inception-v3).
  virtual int input_size() const = 0;
  /// Runs `n` images: `input` holds n*3*S*S floats (NCHW, RGB, 0..255, S = input_size()),
  /// `output` receives n*feature_dim() floats. Throws on failure.
  virtual ForwardTiming forward(const float* input, int n, float* output) = 0;
  /// Runs `n` images of which those in `enc` are still JPEG bytes (`--decode gpu`): a CUDA engine
  /// decodes them on its device into their slots (device_decode.hpp), the files its decoder
  /// rejects on the host; this default (host engines) decodes them all on the host into their
  /// slots of `input`, then runs forward(). `counts` gets what was decoded where, and the slots
  /// of files neither decoder could decode (their outputs are garbage, not to be delivered).
  virtual ForwardTiming forward_encoded(float* input, const EncodedImages& enc, int n, float* output,
                                        DeviceDecodeCounts& counts) {
    counts = decode_on_host(enc, input_size(), input);
    return forward(input, n, output);
  }
  /// Builds what forwards of up to `max_batch` images need (called once per run, before the
  /// clock, in the replica's thread). Engines that build nothing ignore it.
  virtual void prepare(int max_batch) { (void)max_batch; }
  /// Runs `calls` throw-away forwards of batch `n` so that the first timed call is steady.
  virtual void warmup(int n, int calls) {
    const std::size_t s = static_cast<std::size_t>(input_size());
    std::vector<float> in(static_cast<std::size_t>(n) * 3 * s * s, 128.0f);
    std::vector<float> out(static_cast<std::size_t>(n) * static_cast<std::size_t>(feature_dim()));
    for (int i = 0; i < calls; ++i) forward(in.data(), n, out.data());
  }
  /// Peak device memory this replica used, in bytes (0 where not measurable, e.g. CPU).
  virtual std::size_t peak_memory_bytes() const { return 0; }
};

/// Makes one replica for a device. Called inside the worker thread that will run the replica,
/// so per-thread state (intra-op threads, inference mode, JIT executor) belongs to that thread.
using ModelFactory = std::function<std::unique_ptr<Model>(const VirtualDevice&)>;

}  // namespace vecbench
