// Test helpers for writer and store tests: a synthetic source with chosen input names, and the
// JSON lines of a manifest.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/input/image_source.hpp"

namespace vecbench::testing {

/// Synthetic images under the given names (and root), as a file list would name them.
class NamedSource : public SyntheticSource {
 public:
  explicit NamedSource(std::vector<std::string> names, std::filesystem::path root = {})
      : SyntheticSource(names.size()), names_(std::move(names)), root_(std::move(root)) {}
  std::string name(std::size_t i) const override { return names_.at(i); }
  std::filesystem::path root() const override { return root_; }

 private:
  std::vector<std::string> names_;
  std::filesystem::path root_;
};

/// Every line of a JSON-lines file, parsed (a line that does not parse fails the caller's test
/// with nlohmann's exception).
inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& p) {
  std::vector<nlohmann::json> v;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) v.push_back(nlohmann::json::parse(line));
  return v;
}

}  // namespace vecbench::testing
