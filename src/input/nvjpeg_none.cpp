// The device JPEG decoder of a build without CUDA or without nvJPEG: `--decode gpu` is refused.
#include "vecbench/input/device_decode.hpp"

namespace vecbench {

bool nvjpeg_available() { return false; }

bool nvjpeg_status_is_file_fault(int) { return false; }

std::unique_ptr<DeviceJpegDecoder> make_nvjpeg_decoder(int, void*, int, int, ResizeMode) {
  throw ConfigError("decode",
                    "gpu decoding needs nvJPEG, and this build has no nvJPEG (a CUDA build with the nvidia-nvjpeg "
                    "wheel or a CUDA toolkit that has nvjpeg.h; see VECBENCH_NVJPEG_ROOT): use --decode exact or tf");
}

}  // namespace vecbench
