// The FID tools' presets (app/fid_presets.hpp): clean-fid's two NVIDIA-file modes, where each
// tool's file is looked for, every encoder's weights taken only where no one else can replace them
// (core/files/trusted_file.hpp), and imported from what was checked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "build_paths.hpp"
#include "vecbench/app/fid_presets.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/engine/encoder.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

TEST(FidPresets, CleanFidsTwoModesShareNvidiasFileWithTheirOwnResize) {
  const FidPreset& clean = find_fid_preset("clean-fid");
  const FidPreset& legacy = find_fid_preset("clean-fid-legacy-tensorflow");
  EXPECT_EQ(clean.weights_file, "inception-2015-12-05.pt");
  EXPECT_EQ(legacy.weights_file, clean.weights_file);
  EXPECT_EQ(clean.resize, ResizeMode::pil_bicubic);  // PIL's bicubic on float channels
  EXPECT_EQ(legacy.resize, ResizeMode::tf_legacy);   // the file's own grid_sample: TF1's resize
  EXPECT_EQ(clean.home, WeightsHome::tmp);
  EXPECT_EQ(&find_fid_preset("clean-fid-legacy-pytorch"), &fid_presets().front());  // pytorch-fid's
  EXPECT_EQ(fid_presets().front().name, "pytorch-fid");                             // tried first without --like
  ::setenv("VECBENCH_MODELS", "/opt/models", 1);
  const auto dirs = weight_search_dirs(clean);
  ::unsetenv("VECBENCH_MODELS");
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], "/opt/models");
  EXPECT_EQ(dirs[1], "/tmp");  // where clean-fid downloads it
  EXPECT_THROW(find_fid_preset("clean-fid-legacy"), ConfigError);
}

TEST(FidPresets, EachToolFeedsEachOfItsEncodersItsOwnWay) {
  const FidPreset& dgm = find_fid_preset("dgm-eval");  // FD_DINOv2's reference: ViT-L/14 by default
  EXPECT_EQ(dgm.encoder, "dinov2-vit-l-14");
  EXPECT_EQ(dgm.weights_file, "dinov2_vitl14_pretrain.pth");
  EXPECT_EQ(dgm.resize, ResizeMode::pil_bicubic_u8);
  EXPECT_EQ(dgm.home, WeightsHome::torch_hub);
  EXPECT_EQ(&find_fid_preset("edm2-pil"), &dgm);  // EDM2's 'pil' mode is dgm-eval's preprocessing
  EXPECT_EQ(find_fid_preset("edm2").resize, ResizeMode::torch_bicubic_aa);
  EXPECT_EQ(find_fid_preset("edm2", "dinov2-vit-s-14").weights_file, "dinov2_vits14_pretrain.pth");
  const FidPreset& tf = find_fid_preset("torch-fidelity", "dinov2-vit-s-14");
  EXPECT_EQ(tf.resize, ResizeMode::tf_legacy);
  EXPECT_EQ(find_fid_preset("torch-fidelity").encoder, "inception-v3");  // a tool's first encoder
  EXPECT_EQ(find_fid_preset("torch-fidelity", "vgg16").weights_file, "vgg16-397923af.pth");
  // torch-fidelity's CLIP extractors: OpenAI's file under torch-fidelity's name, TF1's resize to 336 for the 336 px one
  const FidPreset& clip336 = find_fid_preset("torch-fidelity", "clip-vit-l-14-336px");
  EXPECT_EQ(clip336.weights_file,
            "clip-vit-l-14-336px-3035c92b350959924f9f00213499208652fc7ea050643e8b385c2dac08641f02.pt");
  EXPECT_EQ(clip336.resize, ResizeMode::tf_legacy);
  EXPECT_EQ(clip336.home, WeightsHome::torch_hub);
  EXPECT_EQ(find_encoder(clip336.encoder).input_size, 336);
  EXPECT_EQ(find_encoder("clip-vit-b-32").width, 512);
  EXPECT_NE(clip336.pipeline.find("336x336"), std::string::npos) << clip336.pipeline;
  EXPECT_THROW(find_fid_preset("dgm-eval", "clip-vit-b-32"), ConfigError);  // not a protocol of dgm-eval's
  // a model file names its preset by its "like" and the encoder of its "arch"
  EXPECT_EQ(preset_of_model("torch-fidelity", "dinov2-vit-s-14"), &tf);
  EXPECT_EQ(preset_of_model("torch-fidelity", "tf2015"), &find_fid_preset("torch-fidelity"));
  EXPECT_EQ(preset_of_model("dgm-eval", "tf2015"), nullptr);
  EXPECT_THROW(find_fid_preset("pytorch-fid", "dinov2-vit-s-14"), ConfigError);  // pytorch-fid has Inception only
  EXPECT_THROW(find_fid_preset("dgm-eval", "dinov2-vit-x-14"), ConfigError);
  for (const auto& p : fid_presets()) {  // every preset's encoder is in the registry, with its input size
    const EncoderSpec& e = find_encoder(p.encoder);
    EXPECT_EQ(p.inception(), e.input_size == 299) << p.name << " " << p.encoder;
  }
}

namespace {

/// An environment variable set (or unset: nullopt) for one test, and put back afterwards.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::optional<std::string>& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    if (value) ::setenv(name.c_str(), value->c_str(), 1);
    if (!value) ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    if (!old) ::unsetenv(name.c_str());
  }
};

void put(const fs::path& p, const std::string& bytes, mode_t mode = 0644) {
  std::ofstream(p, std::ios::binary) << bytes;
  ::chmod(p.c_str(), mode);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// Every encoder's weights by the same rules (core/files/trusted_file.hpp), wherever they are looked for:
// $TORCH_HOME's DINOv2 and VGG-16 files are used from folders of root's, refused when others may
// write them or (as root, who gives the folder away) when the folder is another user's, and
// --like and --encoder say why instead of "not found".
TEST(FidPresets, EveryEncodersWeightsAreRefusedWhereAnotherUserCouldReplaceThem) {
  vecbench::testing::ScopedTempDir dir("fid_presets_shared");
  ::chmod(dir.path.c_str(), 0755);
  const fs::path home = dir.path / "torch", ckpt = home / "hub" / "checkpoints";
  fs::create_directories(ckpt);
  ScopedEnv models("VECBENCH_MODELS", std::nullopt), torch_home("TORCH_HOME", home.string());
  const FidPreset& dino = find_fid_preset("dgm-eval", "dinov2-vit-s-14");
  const FidPreset& vgg = find_fid_preset("torch-fidelity", "vgg16");
  put(ckpt / dino.weights_file, "d");
  put(ckpt / vgg.weights_file, "v");
  std::string why;
  auto w = find_preset_weights(dino, &why);
  ASSERT_TRUE(w) << why;
  EXPECT_EQ(w->path(), ckpt / dino.weights_file);
  EXPECT_EQ(w->sha256(), sha256_hex("d"));
  ::chmod((ckpt / vgg.weights_file).c_str(), 0666);
  EXPECT_FALSE(find_preset_weights(vgg, &why));
  EXPECT_TRUE(has(why, (ckpt / vgg.weights_file).string() + ": it may be written by every user (mode 0666)")) << why;
  ::chmod((ckpt / vgg.weights_file).c_str(), 0644);
  if (::geteuid() != 0)
    GTEST_SKIP() << "the rest needs root, to give the folder to another user (uid 65534, nobody); CI runs the tests "
                    "as root";
  ASSERT_EQ(::chown(home.c_str(), 65534, 65534), 0);
  for (const FidPreset* p : {&dino, &vgg}) {
    why.clear();
    EXPECT_FALSE(find_preset_weights(*p, &why)) << p->encoder;
    EXPECT_TRUE(has(why, (ckpt / p->weights_file).string() + ": the folder " + home.string() +
                             " belongs to user 65534 (nobody), who is neither you nor root; not used"))
        << why;
  }
  try {
    choose_fid_model("", "dgm-eval", "dinov2-vit-s-14");
    ADD_FAILURE() << "--like dgm-eval took a file from another user's folder";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(has(e.what(), "belongs to user 65534")) << e.what();
  }
  try {
    choose_fid_model("", "", "vgg16");
    ADD_FAILURE() << "--encoder vgg16 took a file from another user's folder";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(has(e.what(), "refused:\n" + (ckpt / vgg.weights_file).string())) << e.what();
  }
}

// A swap between the check and the import (the fault: another checkpoint renamed over the checked
// one after find_preset_weights returned, before preset_model imports): the model is the checked
// file's, by the SHA-256 vecbench read from the descriptor and by the one the export tool computed
// from what it imported; the swapped-in file, as valid, is not what was imported.
TEST(FidPresets, TheImportReadsTheCheckedFileNotWhatThePathNamesAfterwards) {
  if (std::string(VECBENCH_PYTHON).empty()) GTEST_SKIP() << "no Python with torch (VECBENCH_PYTHON)";
  vecbench::testing::ScopedTempDir dir("fid_presets_swap");
  ::chmod(dir.path.c_str(), 0755);
  const FidPreset& p = find_fid_preset("dgm-eval", "dinov2-vit-s-14");
  const fs::path ckpt = dir.path / "torch" / "hub" / "checkpoints", a = dir.path / "a.pth", b = dir.path / "b.pth";
  fs::create_directories(ckpt);
  // two checkpoints in the hub's format (random weights, seeds 2 and 3): each one imports
  const CommandResult made = run_command(
      std::string(VECBENCH_PYTHON) + " -c \"import sys, torch; sys.path.insert(0, '" + VECBENCH_SOURCE_DIR +
      "/tools'); from vecbench_export import dinov2; [torch.save(dinov2.seeded_checkpoint('dinov2-vit-s-14', s), f) "
      "for s, f in ((2, '" +
      a.string() + "'), (3, '" + b.string() + "'))]\"");
  ASSERT_TRUE(made.ok()) << made.output;
  const std::string sha_a = sha256_file(a), sha_b = sha256_file(b);
  ASSERT_NE(sha_a, sha_b);
  fs::copy_file(a, ckpt / p.weights_file);
  ScopedEnv models("VECBENCH_MODELS", std::nullopt), home("TORCH_HOME", (dir.path / "torch").string()),
      cache("VECBENCH_CACHE", (dir.path / "cache").string());
  std::string why;
  const auto w = find_preset_weights(p, &why);  // the check
  ASSERT_TRUE(w) << why;
  ASSERT_EQ(::rename(b.c_str(), (ckpt / p.weights_file).c_str()), 0);  // the swap
  ASSERT_EQ(sha256_file(ckpt / p.weights_file), sha_b);
  const std::string model = preset_model(p, *w);  // the import
  const ModelInfo m = read_model_info(model);
  EXPECT_EQ(m.weight_sha256, sha_a);  // the export tool's own hash of the file it imported
  EXPECT_EQ(m.weight_source.text(), "weights:" + p.weights_file);
  EXPECT_EQ(m.weight_source.origin(), WeightOrigin::checkpoint);
  EXPECT_EQ(m.weight_source.detail(), p.weights_file);
  EXPECT_TRUE(has(model, sha_a.substr(0, 16))) << model;
  for (const auto& e : fs::directory_iterator(dir.path / "cache" / "models"))  // the private copy is gone
    EXPECT_FALSE(has(e.path().filename().string(), ".weights-")) << e.path();
}

TEST(FidPresets, CmmdsReferenceReadsOpenAisFileWhereItsClipPackageKeepsIt) {
  // ViT-L/14@336px by default; the centre crop
  const FidPreset& cmmd = find_fid_preset("cmmd");
  EXPECT_EQ(cmmd.encoder, "clip-vit-l-14-336px");
  EXPECT_EQ(cmmd.weights_file, "ViT-L-14-336px.pt");
  EXPECT_EQ(cmmd.resize, ResizeMode::center_crop_pil_bicubic_u8);
  {
    const ScopedEnv home("HOME", std::string("/home/u")), models("VECBENCH_MODELS", std::nullopt);
    EXPECT_EQ(weight_search_dirs(cmmd), std::vector<fs::path>{"/home/u/.cache/clip"});
  }
  EXPECT_THROW(find_fid_preset("cmmd", "clip-vit-b-32"), ConfigError);  // its ViT-L/14@336px only
}

TEST(FidPresets, CleanFidsClipFidIsViTB32InClipsOwnPreprocessing) {
  // clean-fid's default is still Inception; its CLIP-FID is ViT-B/32 alone, clip.load's file
  EXPECT_EQ(find_fid_preset("clean-fid").encoder, "inception-v3");
  const FidPreset& p = find_fid_preset("clean-fid", "clip-vit-b-32");
  EXPECT_EQ(p.tool, FidTool::clean_fid);
  EXPECT_EQ(p.weights_file, "ViT-B-32.pt");
  EXPECT_EQ(p.resize, ResizeMode::pil_bicubic_u8_short_side_crop);
  {
    const ScopedEnv home("HOME", std::string("/home/u")), models("VECBENCH_MODELS", std::nullopt);
    EXPECT_EQ(weight_search_dirs(p), std::vector<fs::path>{"/home/u/.cache/clip"});
  }
  try {
    find_fid_preset("clean-fid", "clip-vit-l-14");
    ADD_FAILURE() << "clean-fid has no ViT-L/14 CLIP-FID";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("its encoders: inception-v3, clip-vit-b-32"), std::string::npos) << e.what();
  }
}

TEST(FidPresets, OpenAisClipFileIsFoundWhereverAnotherToolKeepsIt) {
  // torch-fidelity's hub/checkpoints name and the clip package's ~/.cache/clip name hold the same
  // bytes: each CLIP preset tries its own tool's place first, then the others'
  vecbench::testing::ScopedTempDir dir("fid_presets_clip_places");
  ::chmod(dir.path.c_str(), 0755);
  const fs::path torch = dir.path / "torch", home = dir.path / "home";
  const ScopedEnv models("VECBENCH_MODELS", std::nullopt), th("TORCH_HOME", torch.string()), h("HOME", home.string());
  const FidPreset& tf = find_fid_preset("torch-fidelity", "clip-vit-b-32");
  const FidPreset& cf = find_fid_preset("clean-fid", "clip-vit-b-32");
  const fs::path hub = torch / "hub" / "checkpoints" / tf.weights_file,
                 cache = home / ".cache" / "clip" / "ViT-B-32.pt";
  EXPECT_EQ(weight_candidates(tf), (std::vector<fs::path>{hub, cache}));
  EXPECT_EQ(weight_candidates(cf), (std::vector<fs::path>{cache, hub}));
  const FidPreset& cmmd = find_fid_preset("cmmd");  // ViT-L/14@336px: its own two places, not B/32's
  EXPECT_EQ(weight_candidates(cmmd),
            (std::vector<fs::path>{home / ".cache" / "clip" / "ViT-L-14-336px.pt",
                                   torch / "hub" / "checkpoints" /
                                       find_fid_preset("torch-fidelity", "clip-vit-l-14-336px").weights_file}));
  // ViT-L/14 has torch-fidelity's preset alone: the clip package's file name is tried too
  const FidPreset& l14 = find_fid_preset("torch-fidelity", "clip-vit-l-14");
  EXPECT_EQ(weight_candidates(l14), (std::vector<fs::path>{torch / "hub" / "checkpoints" / l14.weights_file,
                                                           home / ".cache" / "clip" / "ViT-L-14.pt"}));
  // no other encoder's file is taken under another tool's name (their files differ)
  const FidPreset& dino = find_fid_preset("dgm-eval", "dinov2-vit-l-14");
  EXPECT_EQ(weight_candidates(dino).size(), 1u);
  EXPECT_EQ(weight_candidates(find_fid_preset("torch-fidelity")).size(), 1u);  // Inception: not pytorch-fid's file
  // only the clip package's copy there: torch-fidelity's preset finds it
  fs::create_directories(cache.parent_path());
  put(cache, "openai");
  std::string why;
  const auto w = find_preset_weights(tf, &why);
  ASSERT_TRUE(w) << why;
  EXPECT_EQ(w->path(), cache);
  EXPECT_EQ(w->sha256(), sha256_hex("openai"));
  // both there: each its own tool's first
  fs::create_directories(hub.parent_path());
  put(hub, "hub");
  EXPECT_EQ(find_preset_weights(tf)->path(), hub);
  EXPECT_EQ(find_preset_weights(cf)->path(), cache);
}
