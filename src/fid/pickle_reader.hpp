// The restricted pickle reader's machine (private to src/fid/): the nodes its stack holds, the
// globals it interprets, and the reader, whose opcodes are pickle.cpp's and whose NumPy meaning
// (the allowed globals' calls and states, the values made at the end) is pickle_numpy.cpp's.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/fid/pickle.hpp"

namespace vecbench::pickle::detail {

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

inline P scalar(Value v) {
  auto n = std::make_shared<Node>();
  n->v = std::move(v);
  return n;
}
inline P of_kind(Node::K k) {
  auto n = std::make_shared<Node>();
  n->k = k;
  return n;
}

/// The globals an array pickle names, and what the reader does for each.
enum class Global { reconstruct, ndarray, dtype, frombuffer, codecs_encode };
const std::map<std::string, Global>& allowed_globals();
/// An opcode's name for an error ("unknown" for one the table lacks).
const char* opcode_name(unsigned char op);

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

}  // namespace vecbench::pickle::detail
