// The restricted pickle reader and the writer (include/vecbench/fid/pickle.hpp). The opcodes are
// those of Python's pickle protocols 2 to 5 (Lib/pickletools.py documents each); the globals
// those NumPy's ndarray.__reduce_ex__ and dtype.__reduce__ name. The reader builds values of its
// own (shared, so that the memo sees a dict filled after it was memoized); a call (REDUCE) or a
// state (BUILD) is interpreted only for the globals below, by this code.
#include "vecbench/fid/pickle.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include "vecbench/core/error.hpp"
#include "vecbench/core/fs_util.hpp"

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

/// What the reader's stack holds: a value, or one of the few NumPy things being put together.
struct Node;
using P = std::shared_ptr<Node>;
struct Node {
  enum class K { value, list, tuple, dict, global, dtype, array_pending } k = K::value;
  Value v;                               ///< K::value (a scalar or string), K::array_pending's shape etc.
  std::vector<P> items;                  ///< list, tuple
  std::vector<std::pair<P, P>> entries;  ///< dict
  std::string name;                      ///< global: "module.name"; dtype: its type string ("f8")
  char byteorder = '\0';                 ///< dtype: '<', '>', '|' (set by its state)
  int height = 0;                        ///< containers: 1 + the highest child's (bounded: see Reader::holds)
};

/// The most a file may nest containers (EDM2's: 2), checked as they are built: a deeper chain is
/// refused before it exists, so that tearing the nodes down never recurses deeper either.
constexpr int kMaxHeight = 64;
/// What turning the nodes into values may produce: memo references (BINGET) let a small file name
/// one node many times (a list of two references to the list before it, 60 times over, is 2^60
/// nodes; a large array referenced 1,000 times is 1,000 copies), so the values are counted.
struct Budget {
  std::size_t nodes = 0, bytes = 0;
  std::size_t max_nodes = 1000000, max_bytes = 0;  ///< max_bytes: the file's size and 1 MiB
};

P scalar(Value v) {
  auto n = std::make_shared<Node>();
  n->v = std::move(v);
  return n;
}
P of_kind(Node::K k) {
  auto n = std::make_shared<Node>();
  n->k = k;
  return n;
}

/// The globals an array pickle names, and what the reader does for each.
enum class Global { reconstruct, ndarray, dtype, frombuffer, codecs_encode };
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

const char* opcode_name(unsigned char op) {
  static const std::map<unsigned char, const char*> names = {
      {0x81, "NEWOBJ"},      {0x92, "NEWOBJ_EX"},       {'i', "INST"},      {'o', "OBJ"},
      {'P', "PERSID"},       {'Q', "BINPERSID"},        {0x82, "EXT1"},     {0x83, "EXT2"},
      {0x84, "EXT4"},        {0x8f, "EMPTY_SET"},       {0x90, "ADDITEMS"}, {0x91, "FROZENSET"},
      {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"}, {'I', "INT"},       {'L', "LONG"},
      {'F', "FLOAT"},        {'S', "STRING"},           {'V', "UNICODE"},   {'p', "PUT"},
      {'g', "GET"}};
  const auto it = names.find(op);
  return it == names.end() ? "unknown" : it->second;
}

class Reader {
 public:
  Reader(const std::string& bytes, std::string where) : b_(bytes), where_(std::move(where)) {}

  Value run() {
    if (b_.size() < 2 || static_cast<unsigned char>(b_[0]) != 0x80)
      fail(
          "not a pickle of protocol 2 or later (it does not start with PROTO): vecbench reads pickles of "
          "protocols 2 to 5, as pickle.dump writes them");
    for (;;) {
      const std::size_t at = pos_;
      const auto op = static_cast<unsigned char>(take(1)[0]);
      if (op == '.') break;
      if (!data_op(op) && !container_op(op) && !memo_op(op) && !call_op(op, at))
        fail("refused: opcode " + std::string(opcode_name(op)) + " (0x" + hex(op) + ") at byte " + std::to_string(at) +
             ": vecbench reads pickles of NumPy arrays in dicts only");
    }
    if (stack_.size() != 1 || !meta_.empty())
      fail("malformed pickle (STOP with " + std::to_string(stack_.size()) + " values)");
    Budget budget;
    budget.max_bytes = b_.size() + (std::size_t{1} << 20);
    return to_value(stack_.back(), 0, budget);
  }

 private:
  [[noreturn]] void fail(const std::string& cause) const { throw IoError(where_, cause); }
  static std::string hex(unsigned v) {
    const char* d = "0123456789abcdef";
    return std::string{d[(v >> 4) & 15], d[v & 15]};
  }
  std::string take(std::uint64_t n) {
    if (n > b_.size() - pos_) fail("cut short (a pickle opcode runs past the end of the file)");
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint64_t le(int n) {
    const std::string s = take(n);
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s[i]);
    return v;
  }
  std::string line() {
    const auto e = b_.find('\n', pos_);
    if (e == std::string::npos) fail("cut short (a GLOBAL's name has no end)");
    std::string s = b_.substr(pos_, e - pos_);
    pos_ = e + 1;
    return s;
  }
  P pop() {
    if (stack_.empty()) fail("malformed pickle (pops an empty stack)");
    P p = stack_.back();
    stack_.pop_back();
    return p;
  }
  P& top() {
    if (stack_.empty()) fail("malformed pickle (an empty stack)");
    return stack_.back();
  }
  std::vector<P> pop_mark() {
    if (meta_.empty()) fail("malformed pickle (no MARK)");
    std::vector<P> items = std::move(stack_);
    stack_ = std::move(meta_.back());
    meta_.pop_back();
    return items;
  }
  void push(P p) { stack_.push_back(std::move(p)); }
  void push_text(std::string s) {
    Value v;
    v.kind = Value::Kind::text;
    v.text = std::move(s);
    push(scalar(std::move(v)));
  }
  void push_bytes(std::string s) {
    Value v;
    v.kind = Value::Kind::bytes;
    v.text = std::move(s);
    push(scalar(std::move(v)));
  }
  P tuple_of(std::vector<P> items) {
    P t = of_kind(Node::K::tuple);
    for (const P& i : items) holds(*t, i);
    t->items = std::move(items);
    return t;
  }

  bool data_op(unsigned char op);
  bool container_op(unsigned char op);
  bool memo_op(unsigned char op);
  bool call_op(unsigned char op, std::size_t at);
  void global(const std::string& module, const std::string& name);
  P reduce(const P& callable, const P& args);
  void build(const P& obj, const P& state);
  P from_buffer(const std::vector<P>& a);
  P latin1_bytes(const std::vector<P>& a);
  npy::Array make_array(const P& dtype, const P& shape, bool fortran, const P& raw);
  std::int64_t as_int(const P& p, const char* what) const;
  Value to_value(const P& p, int depth, Budget& budget) const;
  /// `parent` now holds `child`: its height grows past the child's, refused past kMaxHeight.
  void holds(Node& parent, const P& child) const {
    parent.height = std::max(parent.height, child->height + 1);
    if (parent.height > kMaxHeight)
      fail("refused: values nested more than " + std::to_string(kMaxHeight) + " deep (or a value that holds itself)");
  }

  const std::string& b_;
  std::string where_;
  std::size_t pos_ = 0;
  std::vector<P> stack_;
  std::vector<std::vector<P>> meta_;
  std::map<std::uint64_t, P> memo_;
};

bool Reader::data_op(unsigned char op) {
  Value v;
  switch (op) {
    case 0x80:
      take(1);
      return true;  // PROTO (checked at the start)
    case 0x95:
      le(8);
      return true;  // FRAME: the frame's length; its opcodes follow as usual
    case 'N':
      push(scalar(v));
      return true;
    case 0x88:
    case 0x89:  // NEWTRUE, NEWFALSE
      v.kind = Value::Kind::boolean, v.integer = op == 0x88;
      push(scalar(v));
      return true;
    case 'K':
      push(scalar(Value::of_int(static_cast<std::int64_t>(le(1)))));
      return true;
    case 'M':
      push(scalar(Value::of_int(static_cast<std::int64_t>(le(2)))));
      return true;
    case 'J':
      push(scalar(Value::of_int(static_cast<std::int32_t>(le(4)))));
      return true;
    case 0x8a:
    case 0x8b: {  // LONG1, LONG4: little-endian two's complement
      const std::uint64_t n = op == 0x8a ? le(1) : le(4);
      if (n > 8) fail("refused: an integer of " + std::to_string(n) + " bytes (more than 64 bits)");
      const std::string s = take(n);
      std::uint64_t u = 0;
      for (std::size_t i = n; i-- > 0;) u = u << 8 | static_cast<unsigned char>(s[i]);
      if (n > 0 && n < 8 && (static_cast<unsigned char>(s[n - 1]) & 0x80)) u |= ~std::uint64_t{0} << (8 * n);
      push(scalar(Value::of_int(static_cast<std::int64_t>(u))));
      return true;
    }
    case 'G': {  // BINFLOAT: big-endian IEEE double
      std::string s = take(8);
      std::reverse(s.begin(), s.end());
      v.kind = Value::Kind::real;
      std::memcpy(&v.real, s.data(), 8);
      push(scalar(v));
      return true;
    }
    case 0x8c:
      push_text(take(le(1)));
      return true;  // SHORT_BINUNICODE
    case 'X':
      push_text(take(le(4)));
      return true;  // BINUNICODE
    case 0x8d:
      push_text(take(le(8)));
      return true;  // BINUNICODE8
    case 'C':
    case 'U':
      push_bytes(take(le(1)));
      return true;  // SHORT_BINBYTES, SHORT_BINSTRING (Python 2's str)
    case 'B':
    case 'T':
      push_bytes(take(le(4)));
      return true;  // BINBYTES, BINSTRING
    case 0x8e:
    case 0x96:
      push_bytes(take(le(8)));
      return true;  // BINBYTES8, BYTEARRAY8 (protocol 5's buffers)
    default:
      return false;
  }
}

bool Reader::container_op(unsigned char op) {
  switch (op) {
    case '(':
      meta_.push_back(std::move(stack_)), stack_.clear();
      return true;  // MARK
    case '0':
      pop();
      return true;  // POP
    case '1':
      pop_mark();
      return true;  // POP_MARK
    case '2':
      push(top());
      return true;  // DUP
    case ')':
      push(tuple_of({}));
      return true;  // EMPTY_TUPLE
    case 't':
      push(tuple_of(pop_mark()));
      return true;  // TUPLE
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1..3
      std::vector<P> items(op - 0x84);
      for (std::size_t i = items.size(); i-- > 0;) items[i] = pop();
      push(tuple_of(std::move(items)));
      return true;
    }
    case ']':
      push(of_kind(Node::K::list));
      return true;  // EMPTY_LIST
    case '}':
      push(of_kind(Node::K::dict));
      return true;  // EMPTY_DICT
    case 'l':
    case 'a':
    case 'e': {  // LIST, APPEND, APPENDS
      std::vector<P> items = op == 'a' ? std::vector<P>{pop()} : pop_mark();
      if (op == 'l') push(of_kind(Node::K::list));
      if (top()->k != Node::K::list) fail("malformed pickle (APPEND to something not a list)");
      for (const P& i : items) holds(*top(), i);
      top()->items.insert(top()->items.end(), items.begin(), items.end());
      return true;
    }
    case 'd':
    case 's':
    case 'u': {  // DICT, SETITEM, SETITEMS
      std::vector<P> kv = op == 's' ? std::vector<P>{nullptr, pop()} : pop_mark();
      if (op == 's') kv[0] = pop();
      if (op == 'd') push(of_kind(Node::K::dict));
      if (top()->k != Node::K::dict || kv.size() % 2) fail("malformed pickle (SETITEM on something not a dict)");
      for (std::size_t i = 0; i < kv.size(); i += 2) {
        holds(*top(), kv[i + 1]);
        top()->entries.emplace_back(kv[i], kv[i + 1]);
      }
      return true;
    }
    default:
      return false;
  }
}

bool Reader::memo_op(unsigned char op) {
  switch (op) {
    case 0x94:
      memo_[memo_.size()] = top();
      return true;  // MEMOIZE
    case 'q':
      memo_[le(1)] = top();
      return true;  // BINPUT
    case 'r':
      memo_[le(4)] = top();
      return true;  // LONG_BINPUT
    case 'h':
    case 'j': {  // BINGET, LONG_BINGET
      const auto it = memo_.find(le(op == 'h' ? 1 : 4));
      if (it == memo_.end()) fail("malformed pickle (a memo entry that was never stored)");
      push(it->second);
      return true;
    }
    default:
      return false;
  }
}

bool Reader::call_op(unsigned char op, std::size_t at) {
  (void)at;
  switch (op) {
    case 'c': {  // GLOBAL: "module\nname\n"
      const std::string module = line();
      global(module, line());
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      const P name = pop(), module = pop();
      if (module->v.kind != Value::Kind::text || name->v.kind != Value::Kind::text)
        fail("malformed pickle (STACK_GLOBAL of something not a string)");
      global(module->v.text, name->v.text);
      return true;
    }
    case 'R': {  // REDUCE
      const P args = pop(), callable = pop();
      push(reduce(callable, args));
      return true;
    }
    case 'b': {  // BUILD
      const P state = pop();
      build(top(), state);
      return true;
    }
    default:
      return false;
  }
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

// The writer.
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

Value parse(const std::string& bytes, const std::string& where) { return Reader(bytes, where).run(); }

Value read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  return parse(bytes, path.string());
}

std::string dump(const Value& v) {
  std::string s = "\x80\x04";  // PROTO 4
  put_value(s, v);
  return s + '.';
}

void save(const std::filesystem::path& path, const Value& v) { atomic_write(path, dump(v)); }

}  // namespace vecbench::pickle
