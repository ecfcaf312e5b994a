// The output folder's append-only manifests: file names, a torn last line cut on open, lines
// appended with one write each, and checks that the data a line points at is complete.
// manifest.jsonl (one writer) or manifest-rRRRR.jsonl (rank R of a multi-process job) hold one
// JSON object per line: {"input", "output" | "shard"+"row", "status": "ok"|"error", "error"?,
// "warning"?, "fp"}; "fp" is the fingerprint id of OUT/vecbench.json the vector was made under.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/output/manifest_line.hpp"

namespace vecbench {

/// Parses `s` as exactly `prefix` DIGITS `suffix`; returns the number, or -1. With `rest`,
/// the suffix may be followed by more text, which goes there.
inline long parse_numbered(const std::string& s, const std::string& prefix, const std::string& suffix,
                           std::string* rest = nullptr) {
  if (s.compare(0, prefix.size(), prefix) != 0) return -1;
  std::size_t i = prefix.size(), j = i;
  while (j < s.size() && j - i < 12 && s[j] >= '0' && s[j] <= '9') ++j;
  if (j == i || s.compare(j, suffix.size(), suffix) != 0) return -1;
  const std::size_t end = j + suffix.size();
  if (rest)
    *rest = s.substr(end);
  else if (end != s.size())
    return -1;
  return std::stol(s.substr(i, j - i));
}

/// The manifest files of an output directory: manifest.jsonl (when there), then every
/// per-rank manifest-rRRRR.jsonl, by rank.
inline std::vector<fs::path> manifest_files(const fs::path& dir) {
  std::vector<fs::path> v;
  std::error_code ec;
  if (fs::exists(dir / "manifest.jsonl", ec)) v.push_back(dir / "manifest.jsonl");
  std::vector<fs::path> ranks;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (parse_numbered(e.path().filename().string(), "manifest-r", ".jsonl") >= 0) ranks.push_back(e.path());
  }
  std::sort(ranks.begin(), ranks.end());
  v.insert(v.end(), ranks.begin(), ranks.end());
  return v;
}

/// The manifest file name of writer `rank` (-1: the only writer).
inline std::string manifest_name(int rank) {
  if (rank < 0) return "manifest.jsonl";
  char b[40];
  std::snprintf(b, sizeof b, "manifest-r%04d.jsonl", rank);
  return b;
}

/// True for the name of a shard file of any writer ("shard-NNNNN.npy", "shard-rRRRR-NNNNN.npy").
inline bool is_shard_name(const std::string& name) {
  if (parse_numbered(name, "shard-", ".npy") >= 0) return true;
  std::string rest;
  return parse_numbered(name, "shard-r", "-", &rest) >= 0 && parse_numbered(rest, "", ".npy") >= 0;
}

/// The number of a shard file of writer `rank` ("shard-NNNNN.npy" for the only writer, -1;
/// "shard-rRRRR-NNNNN.npy" for rank R), or -1 for any other name.
inline long shard_number_of(const std::string& name, int rank) {
  if (rank < 0) return parse_numbered(name, "shard-", ".npy");
  std::string rest;
  if (parse_numbered(name, "shard-r", "-", &rest) != rank) return -1;
  return parse_numbered(rest, "", ".npy");
}

/// One manifest line. File names that are not valid UTF-8 (Linux allows any bytes) get U+FFFD
/// for the bad bytes in "input" (readable), and their exact bytes in "input_hex".
inline std::string manifest_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

/// True when `s` is valid UTF-8 (nlohmann's strict dump refuses anything else).
inline bool is_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

/// A name made of ASCII and valid UTF-8 only: when `s` is not valid UTF-8, every byte >= 0x80
/// becomes '_' (output names; the input's own bytes stay in the manifest's "input_hex").
inline std::string utf8_safe(std::string s) {
  if (is_utf8(s)) return s;
  for (char& c : s)
    if (static_cast<unsigned char>(c) >= 0x80) c = '_';
  return s;
}

/// Sets a manifest line's input: "input" always; "input_hex" (its bytes, two lowercase hex digits
/// each) when the name is not valid UTF-8, so that the line names the real file and a rerun
/// finds it done.
inline void set_manifest_input(nlohmann::json& j, const std::string& name) {
  j["input"] = name;
  if (is_utf8(name)) return;
  static const char* hex = "0123456789abcdef";
  std::string h;
  for (unsigned char c : name) {
    h += hex[c >> 4];
    h += hex[c & 15];
  }
  j["input_hex"] = h;
}

/// Cuts a partial last line (a write cut by a crash) off the manifest `path`, so that the next
/// line starts on a line of its own. Returns the bytes cut (0: the file ends with a full line).
inline std::size_t repair_manifest_tail(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size == 0) return 0;
  std::ifstream in(path, std::ios::binary);
  std::size_t keep = 0;
  const std::size_t chunk = 1 << 16;
  for (std::size_t end = size; end > 0 && keep == 0;) {  // the last '\n', reading backwards
    const std::size_t begin = end > chunk ? end - chunk : 0;
    std::string buf(end - begin, '\0');
    in.seekg(static_cast<std::streamoff>(begin));
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto nl = buf.rfind('\n');
    if (nl != std::string::npos) keep = begin + nl + 1;
    end = begin;
  }
  if (keep == size) return 0;
  fs::resize_file(path, keep, ec);
  if (ec) throw IoError(path.string(), "cannot cut its partial last line: " + ec.message());
  return size - keep;
}

/// Calls `fn` with every complete line of a manifest that is a JSON object, read into a
/// ManifestLine (with its offset and length in the file); a partial last line, which another
/// writer may be appending right now, is left out.
inline void for_each_manifest_line(const fs::path& path, const std::function<void(const ManifestLine&)>& fn) {
  std::ifstream in(path, std::ios::binary);
  std::string text;
  ManifestLine line;
  std::uint64_t offset = 0;
  while (std::getline(in, text)) {
    if (in.eof()) break;  // no '\n' after it: not a complete line
    if (parse_manifest_line(text, line)) {
      line.offset = offset;
      line.length = static_cast<std::uint32_t>(text.size());
      fn(line);
    }
    offset += text.size() + 1;
  }
}

/// Reads lines of a manifest back where for_each_manifest_line found them (one pread(2) a line:
/// no stream buffer refilled after each seek). Opened when first read, and refused when the file
/// at the path is no longer the one that was scanned (another inode: replaced since).
class ManifestLineReader {
 public:
  /// `path` as it was when scanned: its device and inode (stat before the scan).
  ManifestLineReader(fs::path path, dev_t dev, ino_t ino) : path_(std::move(path)), dev_(dev), ino_(ino) {}
  ManifestLineReader(ManifestLineReader&& o) noexcept
      : path_(std::move(o.path_)), dev_(o.dev_), ino_(o.ino_), fd_(o.fd_) {
    o.fd_ = -1;
  }
  ManifestLineReader(const ManifestLineReader&) = delete;
  ManifestLineReader& operator=(const ManifestLineReader&) = delete;
  ManifestLineReader& operator=(ManifestLineReader&&) = delete;
  ~ManifestLineReader() { close(); }
  /// The line's text (no '\n'); IoError naming the file when it cannot be read back whole.
  std::string text(std::uint64_t offset, std::uint32_t length) {
    open();
    std::string t(length, '\0');
    std::size_t got = 0;
    while (got < length) {
      const ssize_t n = ::pread(fd_, t.data() + got, length - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (got < length)
      throw IoError(path_.string(), "cannot read back its line at byte " + std::to_string(offset) +
                                        " (the manifest was cut or changed while it was read)");
    return t;
  }
  bool is_open() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  void open() {
    if (fd_ >= 0) return;
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      throw IoError(path_.string(), std::string("cannot open it again to read its lines: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
      close();
      throw IoError(path_.string(),
                    "was replaced by another file while it was read (another process wrote the folder)");
    }
  }
  fs::path path_;
  dev_t dev_;
  ino_t ino_;
  int fd_ = -1;
};

/// Appends complete lines to a manifest: each call is one write(2) of whole lines on an O_APPEND
/// descriptor, so a crash leaves at most one partial line at the end (cut on the next open).
class ManifestAppender {
 public:
  ManifestAppender() = default;
  explicit ManifestAppender(fs::path path) : path_(std::move(path)) {
    std::error_code ec;
    const bool created = !fs::exists(path_, ec);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw IoError(path_.string(), std::string("cannot open for append: ") + std::strerror(errno));
    if (created) sync_directory(path_.parent_path());  // the new manifest's entry survives a power loss
  }
  ~ManifestAppender() {
    if (fd_ >= 0) ::close(fd_);
  }
  ManifestAppender(const ManifestAppender&) = delete;
  ManifestAppender& operator=(const ManifestAppender&) = delete;
  /// Appends `lines` (each ending in '\n').
  void append(const std::string& lines) {
    std::size_t done = 0;
    while (done < lines.size()) {
      const ssize_t n = ::write(fd_, lines.data() + done, lines.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw IoError(path_.string(), std::string("write failed: ") + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
  }
  /// Puts what was appended on disk.
  void sync() {
    if (fd_ >= 0) ::fsync(fd_);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  int fd_ = -1;
};

/// The shape of `path` when it is a complete float32 .npy (header readable, file size = header +
/// data) whose last dimension is `dim` (any when `dim` <= 0); empty otherwise.
inline std::vector<std::size_t> complete_f32_npy_shape(const fs::path& path, int dim) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return {};
  try {
    const auto a = npy::read_header(in, path.string());
    const auto data_at = static_cast<std::uintmax_t>(in.tellg());
    if (a.descr != "<f4" || a.shape.empty() || a.count() * 4 + data_at != size) return {};
    if (dim > 0 && a.shape.back() != static_cast<std::size_t>(dim)) return {};
    return a.shape;
  } catch (const std::exception&) {
    return {};
  }
}

/// True when `path` is a complete float32 .npy whose shape is [rows, dim] with rows > `row`
/// (or [dim] when `row` < 0).
inline bool npy_rows_complete(const fs::path& path, long row, int dim) {
  const auto shape = complete_f32_npy_shape(path, dim);
  if (row < 0) return shape.size() == 1;
  return shape.size() == 2 && shape[0] > static_cast<std::size_t>(row);
}

/// True when `path` can be a complete `.vc` file of `dim` values ("%.18e\n" lines are 25 bytes,
/// 26 with a minus sign): checked by size, without reading it.
inline bool vc_complete(const fs::path& path, int dim) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || dim <= 0) return !ec && size > 0;
  return size >= static_cast<std::uintmax_t>(dim) * 25 && size <= static_cast<std::uintmax_t>(dim) * 26;
}

/// Is the data an ok manifest line of `dir` points at complete? Output files by their size (and
/// .npy header), shard rows by the shard's header and size (checked once per shard).
class LineDataCheck {
 public:
  LineDataCheck(fs::path dir, int dim) : dir_(std::move(dir)), dim_(dim) {}
  bool operator()(const ManifestLine& l) {
    if (l.output) {
      const fs::path p = dir_ / *l.output;
      return p.extension() == ".vc" ? vc_complete(p, dim_) : npy_rows_complete(p, -1, dim_);
    }
    if (!l.shard || !l.row) return false;
    auto it = rows_.find(*l.shard);
    if (it == rows_.end()) it = rows_.emplace(*l.shard, complete_rows(dir_ / *l.shard)).first;
    return *l.row >= 0 && *l.row < it->second;
  }

 private:
  /// Rows of a complete [rows, dim] float32 shard; -1 when it is missing, cut or of another shape.
  long complete_rows(const fs::path& p) const {
    const auto shape = complete_f32_npy_shape(p, dim_);
    return shape.size() == 2 ? static_cast<long>(shape[0]) : -1;
  }
  fs::path dir_;
  int dim_;
  std::map<std::string, long> rows_;
};

}  // namespace vecbench
