// Helpers of the multi-process tests (test_shards.cpp, test_mpi.cpp): run commands, read every
// feature vector an output directory holds through its manifest.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "build_paths.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/testing/temp_dir.hpp"

namespace vecbench::disttest {

inline const std::string kExe = VECBENCH_EXE;
inline const std::string kPhotos = "/usr/share/doc/opencv-doc/examples/data";

inline fs::path tmpdir(const std::string& name) { return vecbench::testing::fresh_temp_dir(name); }

struct Cmd {
  int rc;
  std::string out;
};
/// Runs `cmd` through the shell; stdout and stderr together.
inline Cmd sh(const std::string& cmd) {
  const CommandResult r = run_command(cmd, Stderr::merge);
  return {r.exit_code, r.output};
}

inline std::vector<nlohmann::json> lines_of(const fs::path& p) {
  std::vector<nlohmann::json> v;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) v.push_back(nlohmann::json::parse(line));
  return v;
}

/// Every ok input of `dir`'s manifest.jsonl -> its features (shard row or .npy file). Fails the
/// test when an input has two lines.
inline std::map<std::string, std::vector<float>> features_of(const fs::path& dir) {
  std::map<std::string, std::vector<float>> out;
  std::map<std::string, std::vector<float>> shards;
  for (const auto& j : lines_of(dir / "manifest.jsonl")) {
    const std::string input = j["input"];
    EXPECT_EQ(out.count(input), 0u) << input << " has two manifest lines";
    if (j["status"] != "ok") continue;
    if (j.contains("shard")) {
      const std::string s = j["shard"];
      if (!shards.count(s)) shards[s] = npy::as_f32(npy::load(dir / s));
      const std::size_t row = j["row"];
      const auto& all = shards[s];
      out[input].assign(all.begin() + static_cast<std::ptrdiff_t>(row * 2048),
                        all.begin() + static_cast<std::ptrdiff_t>((row + 1) * 2048));
    } else {
      out[input] = npy::as_f32(npy::load(dir / j["output"].get<std::string>()));
    }
  }
  return out;
}

/// Inputs with an ok line in any of `dir`'s manifests (per-rank ones included), with counts.
inline std::map<std::string, int> ok_counts(const fs::path& dir) {
  std::map<std::string, int> n;
  for (const auto& f : manifest_files(dir)) {
    if (f.filename() == "manifest.jsonl") continue;
    for (const auto& j : lines_of(f))
      if (j["status"] == "ok") ++n[j["input"].get<std::string>()];
  }
  return n;
}

/// Expects `got` to hold exactly the inputs of `ref`, each bit for bit equal.
inline void expect_same_features(const std::map<std::string, std::vector<float>>& got,
                                 const std::map<std::string, std::vector<float>>& ref) {
  ASSERT_EQ(got.size(), ref.size());
  for (const auto& [k, v] : ref) {
    const auto it = got.find(k);
    ASSERT_NE(it, got.end()) << k << " missing";
    ASSERT_EQ(it->second.size(), 2048u) << k;
    EXPECT_TRUE(it->second == v) << k << ": features differ from the one-process run";
  }
}

}  // namespace vecbench::disttest
