// The pickle writer and the values it writes (include/vecbench/fid/pickle.hpp): protocol 4, the
// opcodes and globals the reader (pickle.cpp) takes back, as NumPy's pickles name them.
#include <cstring>
#include <string>

#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/fid/pickle.hpp"

namespace vecbench::pickle {

const Value* Value::find(const std::string& key) const {
  if (kind != Kind::dict) return nullptr;
  for (const auto& [k, v] : dict)
    if (k == key) return &v;
  return nullptr;
}
void Value::set(const std::string& key, Value v) {
  kind = Kind::dict;
  for (auto& [k, old] : dict)
    if (k == key) {
      old = std::move(v);
      return;
    }
  dict.emplace_back(key, std::move(v));
}
Value Value::of_int(std::int64_t v) {
  Value x;
  x.kind = Kind::integer;
  x.integer = v;
  return x;
}
Value Value::of_array(npy::Array a) {
  Value x;
  x.kind = Kind::array;
  x.array = std::move(a);
  return x;
}

namespace {

void put_le(std::string& s, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_text(std::string& s, const std::string& t) {
  if (t.size() < 256) {
    s += '\x8c';  // SHORT_BINUNICODE
    put_le(s, t.size(), 1);
  } else {
    s += 'X';  // BINUNICODE
    put_le(s, t.size(), 4);
  }
  s += t;
}
void put_bytes(std::string& s, const void* data, std::size_t n) {
  if (n < 256) {
    s += 'C';  // SHORT_BINBYTES
    put_le(s, n, 1);
  } else if (n <= 0xffffffffu) {
    s += 'B';  // BINBYTES
    put_le(s, n, 4);
  } else {
    s += '\x8e';  // BINBYTES8
    put_le(s, n, 8);
  }
  s.append(static_cast<const char*>(data), n);
}
void put_int(std::string& s, std::int64_t v) {
  if (v >= 0 && v < 256) {
    s += 'K';
    put_le(s, static_cast<std::uint64_t>(v), 1);
  } else if (v >= 0 && v < 65536) {
    s += 'M';
    put_le(s, static_cast<std::uint64_t>(v), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    s += 'J';
    put_le(s, static_cast<std::uint32_t>(static_cast<std::int32_t>(v)), 4);
  } else {
    s += '\x8a';  // LONG1 of 8 bytes (two's complement; a leading byte more than needed is allowed)
    put_le(s, 8, 1);
    put_le(s, static_cast<std::uint64_t>(v), 8);
  }
}
void put_global(std::string& s, const char* module, const char* name) {
  put_text(s, module);
  put_text(s, name);
  s += '\x93';  // STACK_GLOBAL
}

/// numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), b'b'), then its state by BUILD.
void put_array(std::string& s, const npy::Array& a) {
  const std::size_t size = a.descr.size() >= 3 ? std::stoul(a.descr.substr(2)) : 0;
  if (a.descr.size() < 3 || (a.descr[0] != '<' && a.descr[0] != '|') || size == 0 || a.data.size() != a.count() * size)
    throw Error("pickle: cannot write an array of dtype '" + a.descr + "' with " + std::to_string(a.data.size()) +
                " bytes");
  put_global(s, "numpy.core.multiarray", "_reconstruct");
  put_global(s, "numpy", "ndarray");
  put_int(s, 0);
  s += '\x85';  // TUPLE1
  put_bytes(s, "b", 1);
  s += "\x87R(";  // TUPLE3, REDUCE; the state: MARK version shape dtype fortran raw TUPLE
  put_int(s, 1);
  s += '(';
  for (std::size_t d : a.shape) put_int(s, static_cast<std::int64_t>(d));
  s += 't';
  put_global(s, "numpy", "dtype");
  put_text(s, a.descr.substr(1));
  s += "\x89\x88\x87R(";  // NEWFALSE NEWTRUE TUPLE3 REDUCE; its state (3, '<', None, None, None, -1, -1, 0)
  put_int(s, 3);
  put_text(s, a.descr.substr(0, 1));
  s += "NNN";
  put_int(s, -1);
  put_int(s, -1);
  put_int(s, 0);
  s += "tb\x89";  // TUPLE BUILD; NEWFALSE (not Fortran)
  put_bytes(s, a.data.data(), a.data.size());
  s += "tb";
}

void put_value(std::string& s, const Value& v) {
  switch (v.kind) {
    case Value::Kind::none:
      s += 'N';
      return;
    case Value::Kind::boolean:
      s += v.integer ? '\x88' : '\x89';
      return;
    case Value::Kind::integer:
      put_int(s, v.integer);
      return;
    case Value::Kind::real: {
      s += 'G';
      char b[8];
      std::memcpy(b, &v.real, 8);
      for (int i = 7; i >= 0; --i) s += b[i];
      return;
    }
    case Value::Kind::text:
      put_text(s, v.text);
      return;
    case Value::Kind::bytes:
      put_bytes(s, v.text.data(), v.text.size());
      return;
    case Value::Kind::list:
      s += "](";
      for (const Value& i : v.items) put_value(s, i);
      s += 'e';  // APPENDS
      return;
    case Value::Kind::tuple:
      s += '(';
      for (const Value& i : v.items) put_value(s, i);
      s += 't';
      return;
    case Value::Kind::dict:
      s += "}(";
      for (const auto& [k, x] : v.dict) put_text(s, k), put_value(s, x);
      s += 'u';  // SETITEMS
      return;
    case Value::Kind::array:
      put_array(s, v.array);
      return;
  }
}

}  // namespace

std::string dump(const Value& v) {
  std::string s = "\x80\x04";  // PROTO 4
  put_value(s, v);
  return s + '.';
}

void save(const std::filesystem::path& path, const Value& v) { atomic_write(path, dump(v)); }

}  // namespace vecbench::pickle
