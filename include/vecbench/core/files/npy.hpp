// Minimal NumPy .npy (v1.0) reader and writer for float32 and uint8 C-order arrays.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"

namespace vecbench::npy {

/// A loaded array: `descr` is the NumPy dtype string ("<f4" or "|u1"), `data` the raw bytes.
struct Array {
  std::string descr;
  std::vector<std::size_t> shape;
  std::vector<std::uint8_t> data;
  std::size_t count() const { return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>()); }
};

namespace detail {
inline std::string header(const std::string& descr, const std::vector<std::size_t>& shape) {
  std::string s = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    s += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) s += ",";
    if (i + 1 < shape.size()) s += " ";
  }
  s += "), }";
  const std::size_t total = 10 + s.size() + 1;
  s.append((64 - total % 64) % 64, ' ');
  s += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto len = static_cast<std::uint16_t>(s.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  return out + s;
}
}  // namespace detail

/// Serializes an array to .npy bytes.
inline std::string to_bytes(const std::string& descr, const std::vector<std::size_t>& shape, const void* data,
                            std::size_t nbytes) {
  std::string out = detail::header(descr, shape);
  out.append(static_cast<const char*>(data), nbytes);
  return out;
}

/// Writes a float32 array atomically.
inline void save_f32(const fs::path& path, const float* data, const std::vector<std::size_t>& shape) {
  const std::size_t n = std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
  atomic_write(path, to_bytes("<f4", shape, data, n * sizeof(float)));
}

/// Writes a uint8 array atomically.
inline void save_u8(const fs::path& path, const std::uint8_t* data, const std::vector<std::size_t>& shape) {
  const std::size_t n = std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
  atomic_write(path, to_bytes("|u1", shape, data, n));
}

/// Parses the header of an .npy file; leaves `in` at the first data byte.
inline Array read_header(std::istream& in, const std::string& name) {
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw IoError(name, "not a .npy file (bad magic)");
  std::size_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::size_t>(b[3]) << 24);
  }
  std::string h(hlen, '\0');
  if (!in.read(h.data(), static_cast<std::streamsize>(hlen))) throw IoError(name, "truncated .npy header");
  Array a;
  const auto d = h.find("'descr'");
  const auto q1 = h.find('\'', h.find(':', d) + 1);
  const auto q2 = h.find('\'', q1 + 1);
  if (d == std::string::npos || q1 == std::string::npos || q2 == std::string::npos)
    throw IoError(name, "bad .npy header (no descr)");
  a.descr = h.substr(q1 + 1, q2 - q1 - 1);
  if (a.descr == "<u1") a.descr = "|u1";
  if (h.find("'fortran_order': True") != std::string::npos)
    throw IoError(name, "Fortran-order .npy arrays are not supported");
  const auto p1 = h.find('(', h.find("'shape'"));
  const auto p2 = h.find(')', p1);
  if (p1 == std::string::npos || p2 == std::string::npos) throw IoError(name, "bad .npy header (no shape)");
  std::stringstream ss(h.substr(p1 + 1, p2 - p1 - 1));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_not_of(' ') == std::string::npos) continue;
    a.shape.push_back(std::stoull(tok));
  }
  // a crafted header's shape must not wrap count() around (2^62 x 4 is 0 elements): at most 2^48
  constexpr std::size_t kMaxElements = std::size_t{1} << 48;
  std::size_t n = 1;
  for (const std::size_t dim : a.shape) {
    if (dim > kMaxElements || (dim != 0 && n > kMaxElements / dim))
      throw IoError(name, "a .npy shape of more than 2^48 elements (a corrupt or crafted header)");
    n = dim == 0 ? n : n * dim;
  }
  return a;
}

inline std::size_t itemsize(const std::string& descr, const std::string& name) {
  if (descr == "<f4") return 4;
  if (descr == "|u1") return 1;
  throw IoError(name, "unsupported .npy dtype '" + descr + "' (need float32 or uint8)");
}

/// Loads a whole .npy file.
inline Array load(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot open");
  Array a = read_header(in, path.string());
  const std::size_t bytes = a.count() * itemsize(a.descr, path.string());
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec && static_cast<std::uint64_t>(in.tellg()) + bytes > size)
    throw IoError(path.string(), "truncated .npy data (its header says " + std::to_string(bytes) + " bytes)");
  a.data.resize(bytes);
  if (!in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(a.data.size())))
    throw IoError(path.string(), "truncated .npy data");
  return a;
}

/// Copies a float32 array's values out.
inline std::vector<float> as_f32(const Array& a) {
  if (a.descr != "<f4") throw Error("npy: expected float32, got " + a.descr);
  std::vector<float> v(a.count());
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace vecbench::npy
