// The FID tools' presets (app/fid_presets.hpp): clean-fid's two NVIDIA-file modes, where each
// tool's file is looked for, and a file in a folder every user may write taken only when no one
// else can replace it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "vecbench/app/fid_presets.hpp"
#include "vecbench/engine/encoder.hpp"
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

TEST(FidPresets, AFileOthersMayWriteInASharedFolderIsRefused) {
  vecbench::testing::ScopedTempDir dir("fid_presets_shared");
  const auto f = dir.path / "inception-2015-12-05.pt";
  std::ofstream(f) << "x";
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  EXPECT_EQ(shared_folder_refusal(f), "");  // this user's, no one else may write it
  ASSERT_EQ(::chmod(f.c_str(), 0666), 0);
  EXPECT_NE(shared_folder_refusal(f).find("is writable by other users"), std::string::npos);
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  if (::geteuid() == 0) {  // root can give it away: another user's file
    ASSERT_EQ(::chown(f.c_str(), 65534, 65534), 0);
    EXPECT_NE(shared_folder_refusal(f).find("belongs to another user (uid 65534)"), std::string::npos);
  }
}
