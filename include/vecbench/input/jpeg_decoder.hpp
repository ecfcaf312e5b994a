// `--decode`: which JPEG decoder's arithmetic vecbench reproduces, and where images are decoded
// (no OpenCV here, so that the CLI and the output folder's fingerprint can use it in any build).
#pragma once
#include <string>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"

namespace vecbench {

/// exact: libjpeg's accurate inverse DCT, as OpenCV and PIL decode (the seed fed PIL's pixels to
/// `DecodeJpeg:0`; the default). tf: libjpeg's fast integer inverse DCT with fancy upsampling, as
/// TensorFlow's own `DecodeJpeg` decodes the JPEG bytes fed to `DecodeJpeg/contents:0` (its
/// default `dct_method`); pixels differ from exact by a few levels, pool_3 by 0.2-0.9 %.
/// PNG and other formats decode the same way under both.
enum class JpegDecoder { exact, tf };

template <>
struct EnumNames<JpegDecoder> {
  static constexpr const char* what = "JPEG decoder";
  static constexpr std::array<std::pair<JpegDecoder, const char*>, 2> names = {
      {{JpegDecoder::exact, "exact"}, {JpegDecoder::tf, "tf"}}};
};
inline const char* to_string(JpegDecoder d) { return enum_name(d); }
inline JpegDecoder parse_jpeg_decoder(const std::string& s) { return parse_enum<JpegDecoder>(s, "decode"); }

/// Where images are decoded.
enum class DecodeWhere {
  cpu,  ///< on the host (libjpeg/libpng, OpenCV for other formats), with the JpegDecoder arithmetic
  gpu,  ///< JPEGs on the replica's CUDA device (nvJPEG); other formats and rejected files on the host
};

/// `--decode`: auto | cpu (alias exact) | tf | gpu.
struct DecodeSetting {
  bool automatic = true;                  ///< auto: gpu when every device is CUDA and nvJPEG is built in, else cpu
  DecodeWhere where = DecodeWhere::cpu;   ///< where (for auto: the fallback, cpu)
  JpegDecoder jpeg = JpegDecoder::exact;  ///< the host's JPEG arithmetic
};

/// The values `--decode` takes.
enum class DecodeChoice { automatic, cpu, exact, tf, gpu };
template <>
struct EnumNames<DecodeChoice> {
  static constexpr const char* what = "decode setting";
  static constexpr std::array<std::pair<DecodeChoice, const char*>, 5> names = {{{DecodeChoice::automatic, "auto"},
                                                                                 {DecodeChoice::cpu, "cpu"},
                                                                                 {DecodeChoice::exact, "exact"},
                                                                                 {DecodeChoice::tf, "tf"},
                                                                                 {DecodeChoice::gpu, "gpu"}}};
};

inline DecodeSetting parse_decode(const std::string& s) {
  switch (parse_enum<DecodeChoice>(s, "decode")) {
    case DecodeChoice::automatic:
      return {};
    case DecodeChoice::cpu:
    case DecodeChoice::exact:
      return {false, DecodeWhere::cpu, JpegDecoder::exact};
    case DecodeChoice::tf:
      return {false, DecodeWhere::cpu, JpegDecoder::tf};
    case DecodeChoice::gpu:
      break;
  }
  return {false, DecodeWhere::gpu, JpegDecoder::exact};
}

/// The effective decoder's name as results and the output fingerprint record it: "gpu", "tf" or
/// "cpu" (exact on the host).
inline const char* decode_name(DecodeWhere w, JpegDecoder j) {
  return w == DecodeWhere::gpu ? "gpu" : j == JpegDecoder::tf ? "tf" : "cpu";
}

/// Resolves `auto` and checks `gpu` against the run's devices: `all_cuda` (every replica is on a
/// CUDA device), `nvjpeg` (this build has nvJPEG) and `device_resize` (the device has the run's
/// resize: a bilinear mode). Throws ConfigError for gpu where it cannot run.
inline DecodeWhere resolve_decode(const DecodeSetting& d, bool all_cuda, bool nvjpeg, const std::string& devices,
                                  bool device_resize = true) {
  if (d.automatic) return all_cuda && nvjpeg && device_resize ? DecodeWhere::gpu : DecodeWhere::cpu;
  if (d.where != DecodeWhere::gpu) return d.where;
  if (!device_resize)
    throw ConfigError(
        "decode",
        "--decode gpu: the device resizes tf-legacy and bilinear alone; every other resize mode (the bicubic and "
        "cropping ones) runs on the host only");
  if (!nvjpeg)
    throw ConfigError("decode",
                      "--decode gpu: this vecbench was built without nvJPEG (build against a CUDA LibTorch with "
                      "the nvidia-nvjpeg wheel; see docs/gpu.md)");
  if (!all_cuda) throw ConfigError("decode", "--decode gpu needs CUDA devices, and '" + devices + "' are not all CUDA");
  return DecodeWhere::gpu;
}

}  // namespace vecbench
