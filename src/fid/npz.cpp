// NumPy .npz read and write (include/vecbench/fid/npz.hpp): the zip container by its
// specification (APPNOTE: local headers, central directory, end record; no zip64: members up to
// 4 GiB), zlib for CRC-32 and for deflated members.
#include "vecbench/fid/npz.hpp"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "vecbench/core/error.hpp"
#include "vecbench/core/fs_util.hpp"

namespace vecbench::npz {
namespace {

void put16(std::string& s, std::uint32_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& s, std::uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}
std::uint32_t get16(const std::string& s, std::size_t at) {
  return static_cast<unsigned char>(s[at]) | static_cast<unsigned char>(s[at + 1]) << 8;
}
std::uint32_t get32(const std::string& s, std::size_t at) { return get16(s, at) | get16(s, at + 2) << 16; }

/// A deflated member's bytes (raw deflate, as zip stores it).
std::string inflate_raw(const std::string& in, std::size_t out_size, const std::string& where) {
  std::string out(out_size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw IoError(where, "zlib cannot start inflating");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  inflateEnd(&z);
  if (rc != Z_STREAM_END || z.total_out != out_size) throw IoError(where, "corrupt deflated member");
  return out;
}

}  // namespace

std::size_t dtype_size(const std::string& descr, const std::string& where) {
  if (descr.size() >= 3 && descr.find_first_not_of("0123456789", 2) == std::string::npos) {
    const char kind = descr[1];
    const std::size_t n = std::stoul(descr.substr(2));
    if (kind == 'U') return 4 * n;
    if (kind == 'f' || kind == 'i' || kind == 'u' || kind == 'b' || kind == 'S') return n;
  }
  throw IoError(where, "unsupported .npy dtype '" + descr + "'");
}

std::vector<double> as_f64(const npy::Array& a, const std::string& where) {
  std::vector<double> v(a.count());
  if (a.descr == "<f8") {
    std::memcpy(v.data(), a.data.data(), v.size() * sizeof(double));
  } else if (a.descr == "<f4") {
    for (std::size_t i = 0; i < v.size(); ++i) {
      float f;
      std::memcpy(&f, a.data.data() + 4 * i, 4);
      v[i] = f;
    }
  } else {
    throw IoError(where, "expected float64 or float32, got dtype '" + a.descr + "'");
  }
  return v;
}

std::map<std::string, npy::Array> load(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(name, "cannot open");
  const std::string z((std::istreambuf_iterator<char>(in)), {});
  // The end of central directory record: the last signature within the final 64 KiB + 22 bytes.
  if (z.size() < 22) throw IoError(name, "not a .npz file (too short for a zip archive)");
  const std::size_t lo = z.size() > 65557 ? z.size() - 65557 : 0;
  std::size_t eocd = std::string::npos;
  for (std::size_t i = z.size() - 21; i-- > lo;)
    if (get32(z, i) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos) throw IoError(name, "not a .npz file (no zip directory)");
  const std::uint32_t entries = get16(z, eocd + 10), cd_at = get32(z, eocd + 16);
  std::map<std::string, npy::Array> out;
  std::size_t at = cd_at;
  for (std::uint32_t e = 0; e < entries; ++e) {
    if (at + 46 > z.size() || get32(z, at) != 0x02014b50) throw IoError(name, "corrupt zip directory");
    const std::uint32_t method = get16(z, at + 10), csize = get32(z, at + 20), usize = get32(z, at + 24);
    const std::uint32_t nlen = get16(z, at + 28), xlen = get16(z, at + 30), clen = get16(z, at + 32);
    const std::uint32_t local = get32(z, at + 42), crc = get32(z, at + 16);
    std::string member = z.substr(at + 46, nlen);
    at += 46 + nlen + xlen + clen;
    if (local + 30 > z.size() || get32(z, local) != 0x04034b50) throw IoError(name, "corrupt zip member " + member);
    const std::size_t data_at = local + 30 + get16(z, local + 26) + get16(z, local + 28);
    if (data_at + csize > z.size()) throw IoError(name, "zip member " + member + " is cut short");
    std::string bytes = z.substr(data_at, csize);
    if (method == 8)
      bytes = inflate_raw(bytes, usize, name + ": " + member);
    else if (method != 0)
      throw IoError(name, "zip member " + member + " uses compression method " + std::to_string(method));
    if (crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())) != crc)
      throw IoError(name, "zip member " + member + " fails its CRC-32 (corrupted)");
    if (member.size() > 4 && member.compare(member.size() - 4, 4, ".npy") == 0) member.resize(member.size() - 4);
    std::istringstream s(bytes);
    npy::Array a = npy::read_header(s, name + ": " + member);
    a.data.resize(a.count() * dtype_size(a.descr, name + ": " + member));
    if (!s.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(a.data.size())))
      throw IoError(name, "member " + member + " is cut short");
    out[member] = std::move(a);
  }
  return out;
}

void save(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::string>>& members) {
  std::string body, dir;
  for (const auto& [m, bytes] : members) {
    const std::string fname = m + ".npy";
    const auto crc = static_cast<std::uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
    const auto offset = static_cast<std::uint32_t>(body.size());
    auto common = [&](std::string& s) {                                     // version needed .. name length
      put16(s, 20), put16(s, 0), put16(s, 0), put16(s, 0), put16(s, 0x21);  // 1980-01-01, no time
      put32(s, crc), put32(s, static_cast<std::uint32_t>(bytes.size()));
      put32(s, static_cast<std::uint32_t>(bytes.size())), put16(s, static_cast<std::uint32_t>(fname.size()));
    };
    put32(body, 0x04034b50);
    common(body);
    put16(body, 0);
    body += fname + bytes;
    put32(dir, 0x02014b50);
    put16(dir, 20);
    common(dir);
    put16(dir, 0), put16(dir, 0), put16(dir, 0), put16(dir, 0), put32(dir, 0), put32(dir, offset);
    dir += fname;
  }
  std::string end;
  put32(end, 0x06054b50), put16(end, 0), put16(end, 0);
  put16(end, static_cast<std::uint32_t>(members.size())), put16(end, static_cast<std::uint32_t>(members.size()));
  put32(end, static_cast<std::uint32_t>(dir.size())), put32(end, static_cast<std::uint32_t>(body.size())),
      put16(end, 0);
  atomic_write(path, body + dir + end);
}

}  // namespace vecbench::npz
