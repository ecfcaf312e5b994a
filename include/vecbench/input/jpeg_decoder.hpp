// Which JPEG decoder's arithmetic vecbench reproduces (no OpenCV here, so that the CLI and the
// output folder's fingerprint can use the setting in any build).
#pragma once
#include <string>

#include "vecbench/core/error.hpp"

namespace vecbench {

/// exact: libjpeg's accurate inverse DCT, as OpenCV and PIL decode (the seed fed PIL's pixels to
/// `DecodeJpeg:0`; the default). tf: libjpeg's fast integer inverse DCT with fancy upsampling, as
/// TensorFlow's own `DecodeJpeg` decodes the JPEG bytes fed to `DecodeJpeg/contents:0` (its
/// default `dct_method`); pixels differ from exact by a few levels, pool_3 by 0.2-0.9 %.
/// PNG and other formats decode the same way under both.
enum class JpegDecoder { exact, tf };

inline const char* to_string(JpegDecoder d) { return d == JpegDecoder::tf ? "tf" : "exact"; }

inline JpegDecoder parse_jpeg_decoder(const std::string& s) {
  if (s == "exact") return JpegDecoder::exact;
  if (s == "tf") return JpegDecoder::tf;
  throw ConfigError("decode", "unknown JPEG decoder '" + s + "' (use exact or tf)");
}

}  // namespace vecbench
