// Copying manifest lines into another manifest (merge_manifests): reading them back through a
// bounded set of open manifests (the least recently read closed first), and pointing a line of
// another folder at its data by rewriting that one value in the line's own bytes (key order,
// escapes, numbers and keys vecbench does not know stay as they were written).
#pragma once
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/output/manifest.hpp"

namespace vecbench {

/// The manifests whose lines are read back, at most `capacity` of them open at once: a manifest
/// read again while open stays open, and when another must open, the one read least recently
/// closes (a merge of many ranks' manifests interleaves their lines).
class ManifestReaderCache {
 public:
  explicit ManifestReaderCache(std::size_t capacity = 64) : capacity_(std::max<std::size_t>(1, capacity)) {}
  /// Adds the manifest `path` as stat'ed before it was scanned; returns its index.
  std::uint32_t add(const fs::path& path, dev_t dev, ino_t ino) {
    readers_.emplace_back(path, dev, ino);
    used_.push_back(0);
    return static_cast<std::uint32_t>(readers_.size() - 1);
  }
  /// The line of manifest `file` at `offset` (ManifestLineReader::text).
  std::string text(std::uint32_t file, std::uint64_t offset, std::uint32_t length) {
    if (!readers_[file].is_open()) {
      if (open_.size() >= capacity_) {
        const auto lru = std::min_element(open_.begin(), open_.end(),
                                          [&](std::uint32_t a, std::uint32_t b) { return used_[a] < used_[b]; });
        readers_[*lru].close();
        *lru = file;
      } else {
        open_.push_back(file);
      }
      ++opens_;
    }
    used_[file] = ++tick_;
    return readers_[file].text(offset, length);
  }
  /// How many times a manifest was opened to read lines back.
  std::size_t opens() const { return opens_; }
  std::size_t size() const { return readers_.size(); }

 private:
  std::size_t capacity_;
  std::vector<ManifestLineReader> readers_;
  std::vector<std::uint64_t> used_;  ///< per manifest: when it was last read (a counter)
  std::vector<std::uint32_t> open_;  ///< the manifests open now
  std::uint64_t tick_ = 0;
  std::size_t opens_ = 0;
};

namespace detail {

/// Walks one JSON value's bytes (a line parse_manifest_line accepted: its syntax is known good).
struct JsonBytes {
  std::string_view s;
  std::size_t i = 0;
  void space() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool at(char c) const { return i < s.size() && s[i] == c; }
  bool string() {  // from its opening quote to past its closing one
    if (!at('"')) return false;
    for (++i; i < s.size(); ++i) {
      if (s[i] == '\\') {
        ++i;
      } else if (s[i] == '"') {
        ++i;
        return true;
      }
    }
    return false;
  }
  bool value() {
    space();
    if (at('"')) return string();
    if (at('{') || at('[')) {
      int depth = 0;
      while (i < s.size()) {
        const char c = s[i];
        if (c == '"') {
          if (!string()) return false;
          continue;
        }
        ++i;
        if (c == '{' || c == '[') ++depth;
        if ((c == '}' || c == ']') && --depth == 0) return true;
      }
      return false;
    }
    const std::size_t from = i;  // a number, true, false or null
    while (i < s.size() && std::string_view(",}] \t\r\n").find(s[i]) == std::string_view::npos) ++i;
    return i > from;
  }
};

/// A JSON string token's text, decoded; nullopt when it is not one.
inline std::optional<std::string> json_string_value(std::string_view token) {
  const auto j = nlohmann::json::parse(token.begin(), token.end(), nullptr, false);
  if (j.is_discarded() || !j.is_string()) return std::nullopt;
  return j.get<std::string>();
}

}  // namespace detail

/// `line` (one JSON object) with the string value of each top-level key in `keys` replaced by
/// `rewrite(key, value)` (the decoded value in, the new one out, written as a JSON string), every
/// other byte as it was; a value `rewrite` leaves as it is keeps its own bytes. nullopt when
/// `line` is not a JSON object. The new values must be valid UTF-8 (nlohmann's strict dump).
template <class Rewrite>
std::optional<std::string> splice_string_values(std::string_view line, const std::vector<std::string_view>& keys,
                                                Rewrite rewrite) {
  detail::JsonBytes p{line};
  p.space();
  if (!p.at('{')) return std::nullopt;
  ++p.i;
  p.space();
  if (p.at('}')) return std::string(line);
  std::string out;
  std::size_t copied = 0;
  for (;;) {
    p.space();
    const std::size_t k0 = p.i;
    if (!p.string()) return std::nullopt;
    const auto key = detail::json_string_value(line.substr(k0, p.i - k0));
    p.space();
    if (!key || !p.at(':')) return std::nullopt;
    ++p.i;
    p.space();
    const std::size_t v0 = p.i;
    const bool text = p.at('"');
    if (!p.value()) return std::nullopt;
    if (text && std::find(keys.begin(), keys.end(), std::string_view(*key)) != keys.end()) {
      const auto was = detail::json_string_value(line.substr(v0, p.i - v0));
      if (!was) return std::nullopt;
      const std::string now = rewrite(*key, *was);
      if (now != *was) {
        out.append(line.substr(copied, v0 - copied));
        out += nlohmann::json(now).dump();
        copied = p.i;
      }
    }
    p.space();
    if (p.at(',')) {
      ++p.i;
      continue;
    }
    if (!p.at('}')) return std::nullopt;
    break;
  }
  out.append(line.substr(copied));
  return out;
}

}  // namespace vecbench
