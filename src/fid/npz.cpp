// NumPy .npz read and write (include/vecbench/fid/npz.hpp): the zip container by its
// specification (APPNOTE: local headers, central directory, end record; zip64 read, as NumPy writes
// it, not written: members up to 4 GiB), zlib for CRC-32 and for deflated members. Members are read
// by seeking to them: a member not asked for is never read (an ADM reference batch's images).
#include "vecbench/fid/npz.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"

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

namespace {

/// One member as the zip's central directory describes it.
struct Member {
  std::string name;  ///< as stored (with ".npy")
  std::uint32_t method = 0, crc = 0;
  std::uint64_t csize = 0, usize = 0, local = 0;
};

std::string read_at(std::ifstream& in, std::uint64_t at, std::uint64_t n, const std::string& name,
                    const std::string& what) {
  std::string s(n, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(at));
  if (!in.read(s.data(), static_cast<std::streamsize>(n))) throw IoError(name, "cut short (" + what + ")");
  return s;
}
std::uint64_t get64(const std::string& s, std::size_t at) {
  return get32(s, at) | std::uint64_t{get32(s, at + 4)} << 32;
}

/// A zip64 central directory entry's 8-byte sizes and offset (those whose 4-byte field is all ones).
void zip64_fields(const std::string& extra, Member& m) {
  for (std::size_t at = 0; at + 4 <= extra.size();) {
    const std::uint32_t id = get16(extra, at), len = get16(extra, at + 2);
    if (id == 0x0001) {
      std::size_t v = at + 4;
      for (std::uint64_t* f : {&m.usize, &m.csize, &m.local})
        if (*f == 0xffffffffu && v + 8 <= at + 4 + len) *f = get64(extra, v), v += 8;
    }
    at += 4 + len;
  }
}

/// The central directory (zip64 where the end record points to it), read from the end of the file.
std::vector<Member> directory(std::ifstream& in, const std::string& name) {
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  if (size < 22) throw IoError(name, "not a .npz file (too short for a zip archive)");
  // The end of central directory record: the last signature within the final 64 KiB + 22 bytes.
  const std::uint64_t lo = size > 65557 + 20 ? size - 65557 - 20 : 0;
  const std::string tail = read_at(in, lo, size - lo, name, "zip directory");
  std::size_t eocd = std::string::npos;
  for (std::size_t i = tail.size() - 21; i-- > 0;)
    if (get32(tail, i) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos) throw IoError(name, "not a .npz file (no zip directory)");
  std::uint64_t entries = get16(tail, eocd + 10), cd_size = get32(tail, eocd + 12), cd_at = get32(tail, eocd + 16);
  if (eocd >= 20 && get32(tail, eocd - 20) == 0x07064b50) {  // zip64: members or offsets past 4 GiB
    const std::string z64 = read_at(in, get64(tail, eocd - 20 + 8), 56, name, "zip64 directory record");
    if (get32(z64, 0) != 0x06064b50) throw IoError(name, "corrupt zip64 directory record");
    entries = get64(z64, 32), cd_size = get64(z64, 40), cd_at = get64(z64, 48);
  }
  if (cd_at + cd_size > size) throw IoError(name, "corrupt zip directory (past the end of the file)");
  const std::string cd = read_at(in, cd_at, cd_size, name, "zip directory");
  std::vector<Member> out;
  std::size_t at = 0;
  for (std::uint64_t e = 0; e < entries; ++e) {
    if (at + 46 > cd.size() || get32(cd, at) != 0x02014b50) throw IoError(name, "corrupt zip directory");
    Member m;
    m.method = get16(cd, at + 10), m.crc = get32(cd, at + 16), m.csize = get32(cd, at + 20);
    m.usize = get32(cd, at + 24), m.local = get32(cd, at + 42);
    const std::uint32_t nlen = get16(cd, at + 28), xlen = get16(cd, at + 30), clen = get16(cd, at + 32);
    if (at + 46 + nlen + xlen > cd.size()) throw IoError(name, "corrupt zip directory");
    m.name = cd.substr(at + 46, nlen);
    zip64_fields(cd.substr(at + 46 + nlen, xlen), m);
    at += 46 + nlen + xlen + clen;
    out.push_back(std::move(m));
  }
  return out;
}

std::string short_name(std::string member) {
  if (member.size() > 4 && member.compare(member.size() - 4, 4, ".npy") == 0) member.resize(member.size() - 4);
  return member;
}

/// One member's array: a stored member read straight into the array, a deflated one inflated.
npy::Array read_member(std::ifstream& in, const Member& m, const std::string& name) {
  const std::string where = name + ": " + short_name(m.name);
  const std::string local = read_at(in, m.local, 30, name, "zip member " + m.name);
  if (get32(local, 0) != 0x04034b50) throw IoError(name, "corrupt zip member " + m.name);
  const std::uint64_t data_at = m.local + 30 + get16(local, 26) + get16(local, 28);
  if (m.method == 8) {
    // sizes from the directory, checked before anything that large is allocated: the compressed
    // bytes lie in the file, and deflate shrinks at most 1032:1
    in.clear();
    in.seekg(0, std::ios::end);
    const auto file = static_cast<std::uint64_t>(in.tellg());
    if (data_at > file || m.csize > file - data_at || m.usize / 1032 > m.csize + 1)
      throw IoError(name, "zip member " + m.name + ": sizes in the directory that the file cannot hold (corrupt)");
    const std::string bytes = inflate_raw(read_at(in, data_at, m.csize, name, "zip member " + m.name), m.usize, where);
    if (crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())) != m.crc)
      throw IoError(name, "zip member " + m.name + " fails its CRC-32 (corrupted)");
    std::istringstream s(bytes.substr(0, std::min<std::size_t>(bytes.size(), 1 << 20)));
    npy::Array a = npy::read_header(s, where);
    const auto h = static_cast<std::size_t>(s.tellg());
    const std::size_t n = a.count() * dtype_size(a.descr, where);  // checked before it is allocated
    if (h + n > bytes.size()) throw IoError(name, "member " + m.name + " is cut short");
    a.data.resize(n);
    std::memcpy(a.data.data(), bytes.data() + h, a.data.size());
    return a;
  }
  if (m.method != 0)
    throw IoError(name, "zip member " + m.name + " uses compression method " + std::to_string(m.method));
  in.clear();
  in.seekg(static_cast<std::streamoff>(data_at));
  npy::Array a = npy::read_header(in, where);
  const auto h = static_cast<std::uint64_t>(in.tellg()) - data_at;
  const std::size_t n = a.count() * dtype_size(a.descr, where);  // checked before it is allocated
  if (h + n != m.usize) throw IoError(name, "member " + m.name + " is cut short");
  a.data.resize(n);
  if (!in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(a.data.size())))
    throw IoError(name, "member " + m.name + " is cut short");
  const std::string head = read_at(in, data_at, h, name, "zip member " + m.name);
  uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(head.data()), static_cast<uInt>(head.size()));
  for (std::size_t at = 0; at < a.data.size(); at += std::size_t{1} << 30)  // uInt lengths
    crc = crc32(crc, a.data.data() + at, static_cast<uInt>(std::min(a.data.size() - at, std::size_t{1} << 30)));
  if (crc != m.crc) throw IoError(name, "zip member " + m.name + " fails its CRC-32 (corrupted)");
  return a;
}

std::map<std::string, npy::Array> load_some(const std::filesystem::path& path, const std::vector<std::string>* only) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(name, "cannot open");
  std::map<std::string, npy::Array> out;
  for (const Member& m : directory(in, name)) {
    const std::string key = short_name(m.name);
    if (only && std::find(only->begin(), only->end(), key) == only->end()) continue;
    out[key] = read_member(in, m, name);
  }
  return out;
}

}  // namespace

std::vector<std::string> members(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot open");
  std::vector<std::string> out;
  for (const Member& m : directory(in, path.string())) out.push_back(short_name(m.name));
  return out;
}

std::map<std::string, npy::Array> load(const std::filesystem::path& path) { return load_some(path, nullptr); }

std::map<std::string, npy::Array> load(const std::filesystem::path& path, const std::vector<std::string>& only) {
  return load_some(path, &only);
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
