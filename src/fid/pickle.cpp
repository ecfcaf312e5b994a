// The restricted pickle reader (include/vecbench/fid/pickle.hpp): its opcodes, those of Python's pickle protocols 2 to
// 5 (Lib/pickletools.py documents each); the globals those NumPy's ndarray.__reduce_ex__ and dtype.__reduce__ name. The
// reader builds values of its own (shared, so that the memo sees a dict filled after it was memoized); a call (REDUCE)
// or a state (BUILD) is interpreted only for the globals pickle_numpy.cpp allows, by that code. The writer:
// pickle_write.cpp.
#include "pickle_reader.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"

namespace vecbench::pickle {
namespace detail {

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

}  // namespace detail

Value parse(const std::string& bytes, const std::string& where) { return detail::Reader(bytes, where).run(); }

Value read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  return parse(bytes, path.string());
}

}  // namespace vecbench::pickle
