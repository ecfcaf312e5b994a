// Reading a member of a model file without LibTorch: a TorchScript file is a zip archive whose
// members are stored uncompressed, so the export's `extra/vecbench_meta.json` can be read in
// microseconds instead of loading the whole module (about half a second) just to learn the
// model's arch, sizes and weight checksum at start-up (engine/engines.cpp), and its classifier's
// extra files without LibTorch at all (fid/metrics.cpp).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace vecbench {

namespace detail {
inline std::uint32_t le16(const unsigned char* p) { return p[0] | (p[1] << 8); }
inline std::uint32_t le32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
}  // namespace detail

/// Reads the first member of the zip file `path` whose name ends with `suffix` into `out`, when
/// it is stored uncompressed in a plain (not zip64) archive. Returns false otherwise (not a zip,
/// no such member, compressed, zip64): the caller then falls back to a full load.
inline bool read_stored_zip_member(const std::string& path, const std::string& suffix, std::string& out) {
  using detail::le16;
  using detail::le32;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  auto read_at = [f](long off, std::size_t n, std::vector<unsigned char>& b) {
    b.resize(n);
    return std::fseek(f, off, SEEK_SET) == 0 && std::fread(b.data(), 1, n, f) == n;
  };
  if (std::fseek(f, 0, SEEK_END) != 0) return false;
  const long size = std::ftell(f);
  if (size < 22) return false;
  const long tail = size < 65557 ? size : 65557;  // EOCD (22 bytes) + the longest comment
  std::vector<unsigned char> b;
  if (!read_at(size - tail, static_cast<std::size_t>(tail), b)) return false;
  long eocd = -1;
  for (long i = tail - 22; i >= 0 && eocd < 0; --i)
    if (le32(&b[static_cast<std::size_t>(i)]) == 0x06054b50u) eocd = i;
  if (eocd < 0) return false;
  const unsigned char* e = &b[static_cast<std::size_t>(eocd)];
  const std::uint32_t entries = le16(e + 10), cd_size = le32(e + 12), cd_off = le32(e + 16);
  if (entries == 0xFFFF || cd_off == 0xFFFFFFFFu || static_cast<long>(cd_off) + cd_size > size) return false;
  std::vector<unsigned char> cd;
  if (!read_at(static_cast<long>(cd_off), cd_size, cd)) return false;
  for (std::size_t p = 0, n = 0; n < entries && p + 46 <= cd.size(); ++n) {
    const unsigned char* h = &cd[p];
    if (le32(h) != 0x02014b50u) return false;
    const std::uint32_t method = le16(h + 10), csize = le32(h + 20), usize = le32(h + 24);
    const std::uint32_t nlen = le16(h + 28), xlen = le16(h + 30), clen = le16(h + 32), local = le32(h + 42);
    if (p + 46 + nlen > cd.size()) return false;
    const std::string name(reinterpret_cast<const char*>(h + 46), nlen);
    p += 46 + nlen + xlen + clen;
    if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    if (method != 0 || csize != usize || csize == 0xFFFFFFFFu || local == 0xFFFFFFFFu) return false;
    std::vector<unsigned char> lh;
    if (!read_at(static_cast<long>(local), 30, lh) || le32(lh.data()) != 0x04034b50u) return false;
    const long data = static_cast<long>(local) + 30 + le16(&lh[26]) + le16(&lh[28]);
    std::vector<unsigned char> d;
    if (data + static_cast<long>(csize) > size || !read_at(data, csize, d)) return false;
    out.assign(d.begin(), d.end());
    return true;
  }
  return false;
}

}  // namespace vecbench
