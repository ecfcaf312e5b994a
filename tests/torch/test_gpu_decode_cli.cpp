// CUDA and GPU decoding where there is no GPU (every CI machine): `vecbench devices` says what the
// build has and why CUDA devices are refused, `--devices cuda` and `--decode gpu` fail with a
// clear error before anything is written, and the file source hands over exactly the JPEGs a
// device decoder may take (everything else decodes on the host as before).
#include <gtest/gtest.h>

#include <fstream>

#include "build_paths.hpp"
#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {

const std::string kPhotos = "/usr/share/doc/opencv-doc/examples/data";
const std::string kExe = VECBENCH_EXE;

CommandResult run(const std::string& cmd) { return run_command(cmd, Stderr::merge); }

}  // namespace

TEST(Cuda, DevicesSaysWhatTheBuildHasAndCudaDevicesAreRefusedWithoutAGpu) {
  const auto r = run(kExe + " devices");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const bool cuda_build = !backend_info()["cuda"].is_null();
#ifdef VECBENCH_WITH_CUDA
  EXPECT_TRUE(cuda_build);
#else
  EXPECT_FALSE(cuda_build);
#endif
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU: " << r.output;
  EXPECT_NE(r.output.find(cuda_build ? "no usable GPU here" : "CUDA: not in this build"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(nvjpeg_available() ? "nvJPEG yes"
                          : cuda_build       ? "nvJPEG no"
                                             : "not in this build"),
            std::string::npos)
      << r.output;
  const fs::path out = vecbench::testing::fresh_temp_dir("cuda-refused") / "out";
  for (const char* spec : {"cuda", "cuda:0", "cuda:0/3"}) {
    const auto v = run(kExe + " vectorize --images " + kPhotos + " --out " + out.string() + " --devices " + spec);
    EXPECT_NE(v.exit_code, 0) << spec << ": " << v.output;
    EXPECT_NE(v.output.find(spec), std::string::npos) << v.output;
    EXPECT_TRUE(v.output.find("no CUDA device") != std::string::npos ||
                v.output.find("no such CUDA device") != std::string::npos)
        << v.output;
    EXPECT_FALSE(fs::exists(out)) << spec << ": a refused run wrote " << out;
  }
}

TEST(DecodeGpu, RefusedWithItsReasonWhereItCannotRun) {
  const fs::path out = vecbench::testing::fresh_temp_dir("decode-gpu-refused") / "out";
  const auto v =
      run(kExe + " vectorize --images " + kPhotos + " --out " + out.string() + " --devices cpu --decode gpu");
  EXPECT_NE(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("--decode gpu"), std::string::npos) << v.output;
  // without nvJPEG in the build that is the reason; with it, the devices are not CUDA
  EXPECT_NE(v.output.find(nvjpeg_available() ? "not all CUDA" : "without nvJPEG"), std::string::npos) << v.output;
  EXPECT_FALSE(fs::exists(out));
  const auto bad = run(kExe + " vectorize --images " + kPhotos + " --out " + out.string() + " --decode nvjpeg");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("auto, cpu, exact, tf or gpu"), std::string::npos) << bad.output;
}

TEST(DecodeGpu, TheFileSourceHandsOverOnlyJpegsADeviceMayDecode) {
  const fs::path dir = vecbench::testing::fresh_temp_dir("decode-gpu-source");
  const fs::path jpg = fs::path(kPhotos) / "baboon.jpg", png = fs::path(kPhotos) / "box.png";
  ASSERT_TRUE(fs::exists(jpg) && fs::exists(png));
  {  // a JPEG cut short: the host decoder reports it, the device never sees it
    std::ifstream in(jpg, std::ios::binary);
    std::string b((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(dir / "cut.jpg", std::ios::binary) << b.substr(0, b.size() / 2);
  }
  const std::string list = (dir / "list.txt").string();
  std::ofstream(list) << jpg.string() << "\n" << png.string() << "\n" << (dir / "cut.jpg").string() << "\n";
  InputOptions in;
  in.decode_where = DecodeWhere::gpu;
  const auto gpu = make_source(list, in);
  const auto host = make_source(list, InputOptions{});
  const int S = 299;
  std::vector<float> a(3 * S * S), b(3 * S * S);
  std::vector<std::uint8_t> bytes;
  StageTimes t;
  EXPECT_TRUE(gpu->load_or_encoded(0, S, a.data(), bytes, t));  // the JPEG: its bytes, as on disk
  EXPECT_EQ(bytes.size(), fs::file_size(jpg));
  EXPECT_FALSE(gpu->load_or_encoded(1, S, a.data(), bytes, t));  // the PNG: decoded here, as before
  EXPECT_TRUE(bytes.empty());
  host->load(1, S, b.data(), t);
  EXPECT_EQ(a, b);
  try {
    gpu->load_or_encoded(2, S, a.data(), bytes, t);
    FAIL() << "a truncated JPEG was handed over";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated JPEG"), std::string::npos) << e.what();
  }
  // host decoding (the default) never hands over bytes
  EXPECT_FALSE(host->load_or_encoded(0, S, a.data(), bytes, t));
  host->load(0, S, b.data(), t);
  EXPECT_EQ(a, b);
  // settings a device decoder would not honour keep JPEGs on the host
  InputOptions exif = in;
  exif.exif = ExifPolicy::apply;
  EXPECT_FALSE(make_source(list, exif)->load_or_encoded(0, S, a.data(), bytes, t));
  InputOptions fast = in;
  fast.fast_decode = true;
  EXPECT_FALSE(make_source(list, fast)->load_or_encoded(0, S, a.data(), bytes, t));
}
