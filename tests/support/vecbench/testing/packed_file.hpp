// The oneDNN engine's packed-weights file as tests see it: where a run wrote it, one value of its
// JSON header, and a same-length edit of that header (resealed with its checksum or not), so that
// a test can make a file that only the header's meaning refuses.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "vecbench/core/files/checksum.hpp"

namespace vecbench::testing {

/// The packed-weights file in `dir` (the engine's VECBENCH_WEIGHTS_DIR), or an empty path.
inline std::filesystem::path packed_file_in(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) return {};
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().string().find(".packed.") != std::string::npos) return e.path();
  return {};
}

/// Replaces `from` by `to` (the same length) in `file`'s header; with `reseal`, writes the
/// header's checksum (XXH3-64 of the header after the file's 24-byte prefix) again, so that only
/// the header's meaning can refuse it.
inline void patch_header(const std::filesystem::path& file, const std::string& from, const std::string& to,
                         bool reseal) {
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::uint64_t hlen = 0;
  std::memcpy(&hlen, bytes.data() + 8, sizeof hlen);
  const std::size_t at = bytes.find(from, 24);
  ASSERT_TRUE(at != std::string::npos && at < 24 + hlen) << from << " not in the header of " << file;
  ASSERT_EQ(from.size(), to.size());
  bytes.replace(at, from.size(), to);
  if (reseal) {
    const std::uint64_t sum = XXH3_64bits(bytes.data() + 24, static_cast<std::size_t>(hlen));
    std::memcpy(bytes.data() + 16, &sum, sizeof sum);
  }
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

/// The 16 hex digits after the first `key` that follows `after` in `file`'s header.
inline std::string header_value(const std::filesystem::path& file, const std::string& key,
                                const std::string& after = "") {
  std::string head(1 << 16, '\0');
  std::ifstream(file, std::ios::binary).read(head.data(), static_cast<std::streamsize>(head.size()));
  const std::size_t from = head.find(after);
  const std::size_t at = from == std::string::npos ? from : head.find(key, from);
  return at == std::string::npos ? "" : head.substr(at + key.size(), 16);
}

}  // namespace vecbench::testing
