// The restricted pickle reader's NumPy meaning (see pickle_reader.hpp): the globals it allows,
// their calls (REDUCE) and states (BUILD) as NumPy's ndarray.__reduce_ex__ and dtype.__reduce__
// name them, and the values made from the nodes at the end, within their budget.
#include <cstring>
#include <map>
#include <string>

#include "pickle_reader.hpp"

namespace vecbench::pickle::detail {

const std::map<std::string, Global>& allowed_globals() {
  static const std::map<std::string, Global> g = {{"numpy.core.multiarray._reconstruct", Global::reconstruct},
                                                  {"numpy._core.multiarray._reconstruct", Global::reconstruct},
                                                  {"numpy.ndarray", Global::ndarray},
                                                  {"numpy.dtype", Global::dtype},
                                                  {"numpy.core.numeric._frombuffer", Global::frombuffer},
                                                  {"numpy._core.numeric._frombuffer", Global::frombuffer},
                                                  {"_codecs.encode", Global::codecs_encode}};
  return g;
}

void Reader::global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  if (!allowed_globals().count(full))
    fail("refused: the pickle names the global '" + full +
         "' (vecbench reads pickles of NumPy arrays in dicts only, and never runs anything in one)");
  P g = of_kind(Node::K::global);
  g->name = full;
  push(g);
}

std::int64_t Reader::as_int(const P& p, const char* what) const {
  if (p->k != Node::K::value || (p->v.kind != Value::Kind::integer && p->v.kind != Value::Kind::boolean))
    fail(std::string("malformed NumPy pickle (") + what + " is not an integer)");
  return p->v.integer;
}

P Reader::reduce(const P& callable, const P& args) {
  if (callable->k != Node::K::global || args->k != Node::K::tuple)
    fail("refused: a call of something not a known global (vecbench reads pickles of NumPy arrays in dicts only)");
  const Global g = allowed_globals().at(callable->name);
  const std::vector<P>& a = args->items;
  if (g == Global::reconstruct) {  // (numpy.ndarray, (0,), b'b'): an empty array whose state BUILD sets
    if (a.size() != 3 || a[0]->k != Node::K::global || a[0]->name != "numpy.ndarray")
      fail("refused: " + callable->name + " of something other than numpy.ndarray");
    return of_kind(Node::K::array_pending);
  }
  if (g == Global::dtype) {  // ('f8', False, True): the byte order comes with its state
    if (a.empty() || a[0]->k != Node::K::value || a[0]->v.kind != Value::Kind::text)
      fail("malformed NumPy pickle (numpy.dtype of something not a string)");
    P d = of_kind(Node::K::dtype);
    d->name = a[0]->v.text;
    return d;
  }
  if (g == Global::frombuffer) return from_buffer(a);
  if (g == Global::codecs_encode) return latin1_bytes(a);
  fail("refused: a call of " + callable->name);
}

/// Protocol 5's array: _frombuffer(buffer, dtype, shape, order).
P Reader::from_buffer(const std::vector<P>& a) {
  if (a.size() != 4 || a[3]->k != Node::K::value || a[3]->v.kind != Value::Kind::text)
    fail("malformed NumPy pickle (_frombuffer's arguments)");
  P arr = of_kind(Node::K::value);
  arr->v = Value::of_array(make_array(a[1], a[2], a[3]->v.text == "F", a[0]));
  return arr;
}

/// Protocol 2's bytes under Python 3: _codecs.encode(text, 'latin1'), the text's code points as bytes.
P Reader::latin1_bytes(const std::vector<P>& a) {
  if (a.size() != 2 || a[0]->v.kind != Value::Kind::text || a[1]->v.kind != Value::Kind::text ||
      (a[1]->v.text != "latin1" && a[1]->v.text != "latin-1"))
    fail("refused: _codecs.encode other than of a string to latin1 (protocol 2's bytes)");
  const std::string& s = a[0]->v.text;
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((c & 0xe0) == 0xc0 && i + 1 < s.size() && c <= 0xc3) {
      out += static_cast<char>(((c & 0x1f) << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f));
    } else {
      fail("malformed NumPy pickle (latin1 bytes with a code point above 255)");
    }
  }
  P p = scalar({});
  p->v.kind = Value::Kind::bytes;
  p->v.text = std::move(out);
  return p;
}

void Reader::build(const P& obj, const P& state) {
  if (state->k != Node::K::tuple) fail("refused: a BUILD whose state is not a tuple (an object's __dict__)");
  const std::vector<P>& s = state->items;
  if (obj->k == Node::K::dtype) {  // (version, byteorder, subarray, names, fields, elsize, alignment, flags[, meta])
    if (s.size() < 5 || s[1]->v.kind != Value::Kind::text || s[1]->v.text.size() != 1)
      fail("malformed NumPy pickle (a dtype's state)");
    for (std::size_t i = 2; i < 5; ++i)
      if (s[i]->k != Node::K::value || s[i]->v.kind != Value::Kind::none)
        fail("refused: a structured or sub-array dtype (vecbench reads arrays of numbers only)");
    obj->byteorder = s[1]->v.text[0];
    return;
  }
  if (obj->k != Node::K::array_pending) fail("refused: a BUILD of something other than a NumPy array or dtype");
  const std::size_t o = s.size() == 5 ? 1 : 0;  // (version, shape, dtype, is_fortran, raw) or without version
  if (s.size() != 4 + o) fail("malformed NumPy pickle (an array's state)");
  obj->v = Value::of_array(make_array(s[o + 1], s[o], as_int(s[o + 2], "the Fortran flag") != 0, s[o + 3]));
  obj->k = Node::K::value;
}

npy::Array Reader::make_array(const P& dtype, const P& shape, bool fortran, const P& raw) {
  if (dtype->k != Node::K::dtype) fail("malformed NumPy pickle (an array without a dtype)");
  const std::string& t = dtype->name;  // "f8", "i4", "u1", "b1"; "O8" (objects), "U16", "V8", ... refused
  const char kind = t.empty() ? '?' : t[0];
  const bool digits = t.size() >= 2 && t.find_first_not_of("0123456789", 1) == std::string::npos;
  const std::size_t size = digits && t.size() <= 3 ? std::stoul(t.substr(1)) : 0;
  const bool ok = (kind == 'f' && (size == 2 || size == 4 || size == 8)) ||
                  ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
                  (kind == 'b' && size == 1);
  if (!ok)
    fail("refused: an array of dtype '" + t +
         "' (vecbench reads arrays of numbers only; no objects, strings or records)");
  if (shape->k != Node::K::tuple) fail("malformed NumPy pickle (an array's shape is not a tuple)");
  npy::Array a;
  a.descr = std::string(size == 1 ? "|" : "<") + kind + std::to_string(size);
  for (const P& d : shape->items) {
    const std::int64_t n = as_int(d, "a dimension");
    if (n < 0) fail("malformed NumPy pickle (a negative dimension)");
    a.shape.push_back(static_cast<std::size_t>(n));
  }
  if (raw->k == Node::K::list) fail("refused: an array of Python objects");
  if (raw->k != Node::K::value || raw->v.kind != Value::Kind::bytes)
    fail("malformed NumPy pickle (an array's data is not bytes)");
  const std::string& bytes = raw->v.text;
  if (bytes.size() / size != a.count() || bytes.size() % size)
    fail("malformed NumPy pickle (an array of " + std::to_string(a.count()) + " values of " + std::to_string(size) +
         " bytes holds " + std::to_string(bytes.size()) + " bytes)");
  a.data.assign(bytes.begin(), bytes.end());
  if (dtype->byteorder == '>' && size > 1)
    for (std::size_t i = 0; i < a.data.size(); i += size) std::reverse(a.data.begin() + i, a.data.begin() + i + size);
  if (fortran && a.shape.size() > 1) {  // to C order: element (i0, i1, ...) is at i0 + n0 * (i1 + n1 * ...)
    std::vector<std::uint8_t> c(a.data.size());
    std::vector<std::size_t> idx(a.shape.size(), 0);
    for (std::size_t k = 0; k < a.count(); ++k) {
      std::size_t f = 0;
      for (std::size_t d = a.shape.size(); d-- > 0;) f = f * a.shape[d] + idx[d];
      std::memcpy(c.data() + k * size, a.data.data() + f * size, size);
      for (std::size_t d = a.shape.size(); d-- > 0 && ++idx[d] == a.shape[d];) idx[d] = 0;
    }
    a.data = std::move(c);
  }
  return a;
}

Value Reader::to_value(const P& p, int depth, Budget& budget) const {
  if (depth > kMaxHeight) fail("refused: values nested more than 64 deep (or a value that holds itself)");
  budget.bytes += p->v.text.size() + p->v.array.data.size();
  if (++budget.nodes > budget.max_nodes || budget.bytes > budget.max_bytes)
    fail("refused: its values would be larger than the file (the same value referenced over and over)");
  Value v;
  switch (p->k) {
    case Node::K::value:
      return p->v;
    case Node::K::list:
    case Node::K::tuple:
      v.kind = p->k == Node::K::list ? Value::Kind::list : Value::Kind::tuple;
      for (const P& i : p->items) v.items.push_back(to_value(i, depth + 1, budget));
      return v;
    case Node::K::dict:
      v.kind = Value::Kind::dict;
      for (const auto& [k, x] : p->entries) {
        if (k->k != Node::K::value || k->v.kind != Value::Kind::text) fail("refused: a dict key that is not a string");
        v.set(k->v.text, to_value(x, depth + 1, budget));
      }
      return v;
    case Node::K::global:
      fail("refused: the global '" + p->name + "' itself as a value");
    case Node::K::dtype:
      fail("refused: a NumPy dtype as a value (not an array)");
    case Node::K::array_pending:
      break;
  }
  fail("malformed NumPy pickle (an array without its state)");
}

}  // namespace vecbench::pickle::detail
