// JPEG decoding on the replica's CUDA device (nvJPEG), behind an interface with no CUDA types, so
// that the routing and the fallback to CPU decoding build and are tested in every build:
//   - load_batch keeps the bytes of each JPEG that the device may decode (EncodedImages) and
//     decodes every other input on the CPU as before;
//   - the replica's model (Model::forward_encoded) decodes them on its stream straight into its
//     device input batch through a DeviceJpegDecoder, and decodes on the CPU (counted) each file
//     that the device decoder rejects (decode_on_device).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/input/resize.hpp"

namespace vecbench {

/// The JPEG bytes of some slots of one batch, to be decoded and resized on the device.
struct EncodedImages {
  std::vector<int> slot;                         ///< position of each image in the batch
  std::vector<std::vector<std::uint8_t>> bytes;  ///< the file's bytes, one per slot
  /// Decodes the image in batch slot `slot` on the CPU into `dst` (3*S*S floats, CHW, 0..255),
  /// for the files the device decoder rejects. Throws InputError naming the file.
  std::function<void(int slot, float* dst)> cpu_fallback;
  ResizeMode mode = ResizeMode::tf_legacy;  ///< how the device resizes them (the source's mode)
  std::size_t size() const { return slot.size(); }
  bool empty() const { return slot.empty(); }
  void clear() {
    slot.clear();
    bytes.clear();
  }
};

/// One JPEG as a device decoder sees it (the bytes stay owned by EncodedImages).
struct EncodedView {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

/// Decodes a batch of JPEGs on one CUDA device and stream and resizes each into its slot of a
/// device float batch. Bound to one replica's thread (not thread-safe).
class DeviceJpegDecoder {
 public:
  virtual ~DeviceJpegDecoder() = default;
  /// Decodes `images[k]` and resizes it to S x S (the mode given at creation) into
  /// `device_batch + slots[k] * 3*S*S` (CHW float 0..255, in the device's memory), enqueued on
  /// the decoder's stream. Returns one flag per image: false where the decoder rejected the
  /// file (unsupported by nvJPEG, e.g. CMYK or arithmetic coding; or corrupt), whose slot is
  /// then left untouched. Throws Error on a device failure (not a file's fault).
  virtual std::vector<bool> decode_resize(const std::vector<EncodedView>& images, const std::vector<int>& slots,
                                          float* device_batch) = 0;
  /// The backend in use ("hardware", "gpu-hybrid", "hybrid"), for the run's record.
  virtual std::string backend() const = 0;
};

/// Host-to-device copy of one slot of floats, enqueued on the replica's stream.
using SlotUpload = std::function<void(const float* host, float* device_dst, std::size_t floats)>;

/// What decoding one batch's encoded images did.
struct DeviceDecodeCounts {
  std::size_t on_device = 0;  ///< JPEGs the device decoded
  std::size_t cpu_fallback =
      0;  ///< JPEGs decoded on the host instead (rejected by the device decoder, or a host engine)
  /// Slots whose file neither decoder could decode, with the host decoder's InputError message;
  /// their features are not delivered (the file is reported failed).
  std::vector<std::pair<int, std::string>> failed;
};

namespace detail {
/// Decodes encoded image k on the host into `dst`: counted as a host decode, or, where the host
/// decoder fails too, put into `c.failed` with its message. Returns whether it decoded.
inline bool decode_slot_on_host(const EncodedImages& enc, std::size_t k, float* dst, DeviceDecodeCounts& c) {
  try {
    enc.cpu_fallback(enc.slot[k], dst);
  } catch (const InputError& e) {
    c.failed.emplace_back(enc.slot[k], e.what());
    return false;
  }
  ++c.cpu_fallback;
  return true;
}
}  // namespace detail

/// Host decoding of every encoded image into its slot of the host batch `input` (3*size*size
/// floats a slot): what a host engine does with a batch that was meant for a device decoder.
inline DeviceDecodeCounts decode_on_host(const EncodedImages& enc, int size, float* input) {
  DeviceDecodeCounts c;
  const std::size_t per = 3u * static_cast<std::size_t>(size) * static_cast<std::size_t>(size);
  for (std::size_t k = 0; k < enc.size(); ++k) {
    if (!enc.cpu_fallback) throw Error("encoded images without a host decoder");
    detail::decode_slot_on_host(enc, k, input + static_cast<std::size_t>(enc.slot[k]) * per, c);
  }
  return c;
}

/// Decodes `enc` into `device_batch` (slots of 3*size*size floats): all images through
/// `decoder`, then each rejected one on the host (enc.cpu_fallback into `host_scratch`) and
/// uploaded into its slot. A file the host cannot decode either goes to `failed`.
inline DeviceDecodeCounts decode_on_device(DeviceJpegDecoder& decoder, const EncodedImages& enc, int size,
                                           float* device_batch, std::vector<float>& host_scratch,
                                           const SlotUpload& upload) {
  DeviceDecodeCounts c;
  if (enc.empty()) return c;
  std::vector<EncodedView> views;
  views.reserve(enc.size());
  for (const auto& b : enc.bytes) views.push_back({b.data(), b.size()});
  const std::vector<bool> ok = decoder.decode_resize(views, enc.slot, device_batch);
  if (ok.size() != enc.size()) throw Error("device JPEG decoder returned the wrong number of results");
  const std::size_t per = 3u * static_cast<std::size_t>(size) * static_cast<std::size_t>(size);
  for (std::size_t k = 0; k < enc.size(); ++k) {
    if (ok[k]) {
      ++c.on_device;
      continue;
    }
    if (!enc.cpu_fallback) throw Error("device JPEG decoder rejected a file and no host decoder was given");
    host_scratch.resize(per);
    if (detail::decode_slot_on_host(enc, k, host_scratch.data(), c))
      upload(host_scratch.data(), device_batch + static_cast<std::size_t>(enc.slot[k]) * per, per);
  }
  return c;
}

/// True when this build has the nvJPEG decoder (a CUDA build with nvJPEG found).
bool nvjpeg_available();

/// Whether an nvJPEG status (nvjpegStatus_t's value) from a per-image call is the file's fault
/// (BAD_JPEG, JPEG_NOT_SUPPORTED, INCOMPLETE_BITSTREAM, IMPLEMENTATION_NOT_SUPPORTED: the image is
/// rejected and decoded on the host) rather than an error that throws (INVALID_PARAMETER, a wrong
/// call; allocation, execution, internal failures). False in a build without nvJPEG.
bool nvjpeg_status_is_file_fault(int status);

/// Makes an nvJPEG decoder on CUDA device `ordinal`, enqueuing on `stream` (a cudaStream_t),
/// for batches of up to `max_batch` images resized to `size` x `size` with `mode`.
/// Throws ConfigError where the build has no nvJPEG, Error where nvJPEG fails to start.
std::unique_ptr<DeviceJpegDecoder> make_nvjpeg_decoder(int ordinal, void* stream, int max_batch, int size,
                                                       ResizeMode mode);

}  // namespace vecbench
