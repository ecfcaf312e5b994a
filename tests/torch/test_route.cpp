// The route of `vecbench vectorize` when flags leave it open: the defaults are the fast path
// (the oneDNN engine on CPU) and give the TorchScript engine's features on real photos; a
// profile saved for this machine and model is used and named in the first line; flags win.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "build_paths.hpp"
#include "vecbench/app/route.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/testing/rel_l2.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {

const std::string kModel = VECBENCH_DEFAULT_MODEL;
const std::string kPhotos = "/usr/share/doc/opencv-doc/examples/data";

/// `vecbench vectorize ARGS` with profiles in `profiles`; stdout and stderr together.
CommandResult vectorize(const fs::path& profiles, const std::string& args) {
  return run_command("VECBENCH_PROFILE_DIR=" + profiles.string() + " " + VECBENCH_EXE + " vectorize " + args,
                     Stderr::merge);
}

/// The start line (inputs, model, route); other lines (a profile's warning) may come before it.
std::string first_line(const std::string& out) {
  const auto route = out.find("(route from ");
  if (route == std::string::npos) return "";
  const auto at = out.rfind("vecbench: ", route);
  return out.substr(at, out.find('\n', route) - at);
}

bool onednn_here() {
  return has_engine(EngineKind::onednn) &&
         backend_info().value("onednn", nlohmann::json::object()).value("isa", std::string("older")) != "older";
}

}  // namespace

TEST(Route, DefaultsPickTheFastRouteAndEqualTheTorchScriptEngineOnRealPhotos) {
  const fs::path d = vecbench::testing::fresh_temp_dir("route_defaults");
  std::ofstream list(d / "list.txt");
  int n = 0;
  for (const char* f : {"lena.jpg", "baboon.jpg", "fruits.jpg", "box.png", "messi5.jpg", "orange.jpg", "home.jpg"})
    if (fs::exists(fs::path(kPhotos) / f)) list << (fs::path(kPhotos) / f).string() << "\n", ++n;
  list.close();
  ASSERT_GE(n, 5) << "opencv-doc photos missing (apt-get install opencv-doc)";
  const std::string in = " --images " + (d / "list.txt").string() + " --format npy --progress 0 --out ";
  const auto def = vectorize(d / "no-profiles", in + (d / "def").string());
  ASSERT_EQ(def.exit_code, 0) << def.output;
  const std::string line = first_line(def.output);
  EXPECT_NE(line.find("(route from defaults)"), std::string::npos) << line;
  EXPECT_NE(line.find(onednn_here() ? "engine onednn" : "engine torchscript"), std::string::npos) << line;
  EXPECT_NE(line.find("strategy data-parallel"), std::string::npos) << line;
  const auto ref =
      vectorize(d / "no-profiles",
                in + (d / "ref").string() + " --engine torchscript --strategy sequential --devices cpu --batch 1");
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  EXPECT_NE(first_line(ref.output).find("flags: --engine --strategy --devices --batch"), std::string::npos)
      << first_line(ref.output);
  int compared = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "ref")) {
    if (e.path().extension() != ".npy") continue;
    const auto a = npy::as_f32(npy::load(e.path())),
               b = npy::as_f32(npy::load(d / "def" / fs::relative(e.path(), d / "ref")));
    ASSERT_EQ(a.size(), 2048u);
    ASSERT_EQ(b.size(), 2048u);
    EXPECT_LE(vecbench::testing::rel_l2(a.data(), b.data(), a.size()), 1e-4)
        << e.path();  // docs/engines.md: within 1e-4
    ++compared;
  }
  EXPECT_EQ(compared, n);
  fs::remove_all(d);
}

// LibTorch and OpenCV are loaded only when a run needs them (engine/torch_plugin.hpp,
// input/opencv_plugin.hpp): with both libraries made unloadable, the default route on JPEG and
// PNG photos (oneDNN engine, weights file present) runs and writes the same vectors; what needs
// LibTorch fails before writing, naming the library; a BMP fails alone, naming the file.
TEST(Route, TheDefaultRouteRunsWithoutLoadingLibTorchOrOpenCv) {
  if (!onednn_here()) GTEST_SKIP() << "the default route here is the TorchScript engine (no AVX2 oneDNN)";
  const fs::path d = vecbench::testing::fresh_temp_dir("route_no_torch");
  std::ofstream list(d / "list.txt");
  for (const char* f : {"baboon.jpg", "box.png", "fruits.jpg"}) list << (fs::path(kPhotos) / f).string() << "\n";
  list.close();
  const std::string in = " --images " + (d / "list.txt").string() + " --format npy --progress 0 --out ";
  const auto first = vectorize(d / "no-profiles", in + (d / "a").string());  // writes the weights file if missing
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string unloadable = "VECBENCH_TORCH_LIBRARY=" + (d / "none" / "libvecbench_torch.so").string() +
                                 " VECBENCH_OPENCV_LIBRARY=" + (d / "none" / "libvecbench_opencv.so").string() + " ";
  const auto bare = run_command(unloadable + "VECBENCH_PROFILE_DIR=" + (d / "no-profiles").string() + " " +
                                    VECBENCH_EXE + " vectorize" + in + (d / "b").string(),
                                Stderr::merge);
  ASSERT_EQ(bare.exit_code, 0) << bare.output;
  EXPECT_NE(first_line(bare.output).find("engine onednn"), std::string::npos) << bare.output;
  int same = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "a")) {
    if (e.path().extension() != ".npy") continue;
    EXPECT_EQ(npy::as_f32(npy::load(e.path())), npy::as_f32(npy::load(d / "b" / fs::relative(e.path(), d / "a"))))
        << e.path();
    ++same;
  }
  EXPECT_EQ(same, 3);
  const auto ts = run_command(
      unloadable + VECBENCH_EXE + " vectorize" + in + (d / "c").string() + " --engine torchscript --no-profile",
      Stderr::merge);
  EXPECT_EQ(ts.exit_code, 1) << ts.output;
  EXPECT_NE(ts.output.find("cannot load LibTorch's part of vecbench"), std::string::npos) << ts.output;
  EXPECT_NE(ts.output.find((d / "none" / "libvecbench_torch.so").string() + ": no such file"), std::string::npos)
      << ts.output;
  EXPECT_FALSE(fs::exists(d / "c")) << ts.output;  // refused before OUT was made
  fs::create_directories(d / "in");
  fs::copy_file(fs::path(kPhotos) / "baboon.jpg", d / "in" / "x.jpg");
  std::ofstream(d / "in" / "y.bmp") << "BM not really a bitmap";
  const auto bmp = run_command(unloadable + VECBENCH_EXE + " vectorize --images " + (d / "in").string() +
                                   " --format npy --progress 0 --no-profile --out " + (d / "e").string(),
                               Stderr::merge);
  EXPECT_EQ(bmp.exit_code, 2) << bmp.output;
  EXPECT_NE(bmp.output.find((d / "in" / "y.bmp").string() + ": cannot decode BMP here: cannot load OpenCV's part"),
            std::string::npos)
      << bmp.output;
  EXPECT_TRUE(fs::exists(d / "e" / "x.jpg.npy")) << bmp.output;
  EXPECT_FALSE(fs::exists(d / "e" / "y.bmp.npy")) << bmp.output;
  fs::remove_all(d);
}

TEST(Route, ASavedProfileIsUsedNamedInTheFirstLineAndFlagsStillWin) {
  const fs::path d = vecbench::testing::fresh_temp_dir("route_profile");
  const std::string sha = read_model_meta(kModel).value("weight_sha256", std::string());
  ASSERT_FALSE(sha.empty());
  ::setenv("VECBENCH_PROFILE_DIR", (d / "profiles").string().c_str(), 1);
  const MachineKey key = machine_key(sha, cuda_device_count());
  const std::string path = profile_path(key);
  ::unsetenv("VECBENCH_PROFILE_DIR");
  ASSERT_EQ(fs::path(path).parent_path(), d / "profiles");
  RouteChoice r;
  r.engine = EngineKind::torchscript;
  r.strategy = "data-parallel";
  r.devices = "cpu/2";
  r.batch = 3;
  r.decode_threads = 2;
  save_profile(path, key, r, {{"img_per_s", 1.0}});
  const std::string in = " --images synthetic:4 --format none --progress 0 --out ";
  const auto used = vectorize(d / "profiles", in + (d / "a").string());
  ASSERT_EQ(used.exit_code, 0) << used.output;
  std::string line = first_line(used.output);
  EXPECT_NE(line.find("(route from profile " + path + ")"), std::string::npos) << line;
  EXPECT_NE(line.find("engine torchscript, strategy data-parallel on cpu/2"), std::string::npos) << line;
  EXPECT_NE(line.find("batch 3, decode threads 2"), std::string::npos) << line;
  const auto flags = vectorize(d / "profiles", in + (d / "b").string() + " --batch 2");
  ASSERT_EQ(flags.exit_code, 0) << flags.output;
  line = first_line(flags.output);
  EXPECT_NE(line.find("batch 2, decode threads 2 (route from profile " + path + "; flags: --batch)"), std::string::npos)
      << line;
  const auto ignored = vectorize(d / "profiles", in + (d / "c").string() + " --no-profile");
  ASSERT_EQ(ignored.exit_code, 0) << ignored.output;
  EXPECT_NE(first_line(ignored.output).find("(route from defaults)"), std::string::npos) << ignored.output;
  // A profile of another host/CPU/model is not used, and the run says why.
  MachineKey other = key;
  other.cpu_model = "another CPU";
  save_profile(path, other, r, {});
  const auto foreign = vectorize(d / "profiles", in + (d / "e").string());
  ASSERT_EQ(foreign.exit_code, 0) << foreign.output;
  EXPECT_NE(foreign.output.find("made for another host, CPU or model"), std::string::npos) << foreign.output;
  EXPECT_NE(first_line(foreign.output).find("(route from defaults)"), std::string::npos) << foreign.output;
  fs::remove_all(d);
}

TEST(Route, DefaultsFollowTheCores) {
  RouteFacts f;
  f.onednn_available = true;
  f.model_is_export = true;
  f.cores = 2;
  RouteChoice r = default_route(f);
  EXPECT_EQ(r.engine, EngineKind::onednn);
  EXPECT_EQ(r.devices, "cpu/2");
  EXPECT_EQ(r.decode_threads, 1);
  f.cores = 16;
  r = default_route(f);
  EXPECT_EQ(r.devices, "cpu/8");  // 2-core replicas
  EXPECT_EQ(r.decode_threads, 2);
  f.model_is_export = false;  // not an export: the onednn engine cannot read it
  EXPECT_EQ(default_route(f).engine, EngineKind::torchscript);
  f.model_is_export = true;
  f.cuda_devices = 1;
  r = default_route(f);
  EXPECT_EQ(r.engine, EngineKind::torchscript);
  EXPECT_EQ(r.devices, "cuda");
}
