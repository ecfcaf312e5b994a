// The device JPEG decoder of a build without nvJPEG (no CUDA LibTorch, or no nvJPEG found).
#include "vecbench/input/device_decode.hpp"

namespace vecbench {

bool nvjpeg_available() { return false; }

std::unique_ptr<DeviceJpegDecoder> make_nvjpeg_decoder(int, void*, int, int, ResizeMode) {
  throw ConfigError("decode",
                    "--decode gpu: this vecbench was built without nvJPEG (build against a CUDA LibTorch with the "
                    "nvidia-nvjpeg wheel; see README)");
}

}  // namespace vecbench
