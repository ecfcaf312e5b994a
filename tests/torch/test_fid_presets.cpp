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
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

TEST(FidPresets, CleanFidsTwoModesShareNvidiasFileWithTheirOwnResize) {
  const FidPreset& clean = find_fid_preset("clean-fid");
  const FidPreset& legacy = find_fid_preset("clean-fid-legacy-tensorflow");
  EXPECT_STREQ(clean.weights_file, "inception-2015-12-05.pt");
  EXPECT_STREQ(legacy.weights_file, clean.weights_file);
  EXPECT_EQ(clean.resize, ResizeMode::pil_bicubic);  // PIL's bicubic on float channels
  EXPECT_EQ(legacy.resize, ResizeMode::tf_legacy);   // the file's own grid_sample: TF1's resize
  EXPECT_EQ(clean.home, WeightsHome::tmp);
  EXPECT_EQ(&find_fid_preset("clean-fid-legacy-pytorch"), &fid_presets().front());  // pytorch-fid's
  EXPECT_STREQ(fid_presets().front().name, "pytorch-fid");                          // tried first without --like
  ::setenv("VECBENCH_MODELS", "/opt/models", 1);
  const auto dirs = weight_search_dirs(clean);
  ::unsetenv("VECBENCH_MODELS");
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], "/opt/models");
  EXPECT_EQ(dirs[1], "/tmp");  // where clean-fid downloads it
  EXPECT_THROW(find_fid_preset("clean-fid-legacy"), ConfigError);
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
