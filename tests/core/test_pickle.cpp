// The restricted pickle reader and writer (include/vecbench/fid/pickle.hpp) on bytes written here
// opcode by opcode: what an EDM2 reference holds reads back, a round trip through the writer gives
// the same values, and anything else (another global, an object's state, an object array, a
// truncated file) is refused naming what it found. tests/py/reference_stats.py checks files that
// Python's pickle itself wrote, and the other way round.
#ifdef VECBENCH_TEST_FID
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "vecbench/core/base/error.hpp"
#include "vecbench/fid/pickle.hpp"

namespace vecbench {
namespace {

npy::Array f64(std::vector<std::size_t> shape, const std::vector<double>& v) {
  npy::Array a{"<f8", std::move(shape), {}};
  a.data.resize(v.size() * 8);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

pickle::Value edm2_like() {
  pickle::Value st, root;
  st.set("mu", pickle::Value::of_array(f64({2}, {1.5, -2.25})));
  st.set("sigma", pickle::Value::of_array(f64({2, 2}, {1, 0.5, 0.25, 2})));
  root.set("num_images", pickle::Value::of_int(50000));
  root.set("fid", st);
  return root;
}

/// A string literal's bytes, NULs included.
template <std::size_t N>
std::string B(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string refusal(const std::string& bytes) {
  try {
    pickle::parse(bytes, "t.pkl");
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(Pickle, RoundTripOfAnEdm2Reference) {
  const pickle::Value back = pickle::parse(pickle::dump(edm2_like()), "t.pkl");
  ASSERT_EQ(back.kind, pickle::Value::Kind::dict);
  ASSERT_EQ(back.dict.size(), 2u);
  EXPECT_EQ(back.dict[0].first, "num_images");
  EXPECT_EQ(back.find("num_images")->integer, 50000);
  const pickle::Value* sigma = back.find("fid")->find("sigma");
  ASSERT_NE(sigma, nullptr);
  EXPECT_EQ(sigma->array.descr, "<f8");
  EXPECT_EQ(sigma->array.shape, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(sigma->array.data, edm2_like().find("fid")->find("sigma")->array.data);
  EXPECT_EQ(pickle::dump(back), pickle::dump(edm2_like()));
}

TEST(Pickle, ScalarsListsAndLargeIntegers) {
  pickle::Value v;
  v.set("big", pickle::Value::of_int(-5000000000LL));
  v.set("neg", pickle::Value::of_int(-1));
  v.set("mid", pickle::Value::of_int(40000));
  pickle::Value t;
  t.kind = pickle::Value::Kind::text;
  t.text = std::string(300, 'x');  // BINUNICODE
  v.set("text", t);
  pickle::Value l;
  l.kind = pickle::Value::Kind::list;
  l.items = {pickle::Value::of_int(1), pickle::Value()};
  v.set("list", l);
  const pickle::Value back = pickle::parse(pickle::dump(v), "t.pkl");
  EXPECT_EQ(back.find("big")->integer, -5000000000LL);
  EXPECT_EQ(back.find("neg")->integer, -1);
  EXPECT_EQ(back.find("mid")->integer, 40000);
  EXPECT_EQ(back.find("text")->text, std::string(300, 'x'));
  ASSERT_EQ(back.find("list")->items.size(), 2u);
  EXPECT_EQ(back.find("list")->items[1].kind, pickle::Value::Kind::none);
}

TEST(Pickle, MemoizedDictFilledLater) {
  // protocol 4 as Python writes a dict: EMPTY_DICT MEMOIZE MARK key value SETITEMS, then BINGET of it
  const std::string s = B("\x80\x04}\x94(\x8c\x01k\x94K\x07u.");
  const std::string b = B("\x80\x04]\x94}\x94(\x8c\x01k\x94K\x07ua\x8c\x01x\x94h\x01s.");
  const pickle::Value v = pickle::parse(s, "t.pkl");
  EXPECT_EQ(v.find("k")->integer, 7);
  // a list holding a dict (memo 1), then the dict again by BINGET 1: the same, filled dict
  EXPECT_NE(refusal(b).find("malformed"), std::string::npos);  // SETITEM on the list: refused
  const std::string d =
      B("\x80\x04}\x94(\x8c\x01"
        "a\x94}\x94(\x8c\x01k\x94K\x07u\x8c\x01"
        "b\x94h\x02u.");
  const pickle::Value v2 = pickle::parse(d, "t.pkl");
  EXPECT_EQ(v2.find("a")->find("k")->integer, 7);
  EXPECT_EQ(v2.find("b")->find("k")->integer, 7);
}

TEST(Pickle, ForeignGlobalsAndObjectsRefusedByName) {
  // cos\nsystem\n(S'touch x'\ntR. in protocol 2: GLOBAL os.system, REDUCE
  const std::string os_system =
      B("\x80\x02"
        "cposix\nsystem\nq\x00X\x07\x00\x00\x00touch xq\x01\x85q\x02Rq\x03.");
  EXPECT_NE(refusal(os_system).find("t.pkl: refused: the pickle names the global 'posix.system'"), std::string::npos);
  const std::string eval = std::string(
      "\x80\x04\x8c\x08"
      "builtins\x8c\x04"
      "eval\x93\x8c\x01"
      "1\x85R.");
  EXPECT_NE(refusal(eval).find("'builtins.eval'"), std::string::npos);
  // an object of the writer's class: __main__.Mine, EMPTY_TUPLE, NEWOBJ
  const std::string mine = std::string("\x80\x04\x8c\x08__main__\x8c\x04Mine\x93)\x81.");
  EXPECT_NE(refusal(mine).find("'__main__.Mine'"), std::string::npos);
  // NEWOBJ on an allowed global: refused by opcode
  const std::string newobj = std::string("\x80\x04\x8c\x05numpy\x8c\x07ndarray\x93)\x81.");
  EXPECT_NE(refusal(newobj).find("NEWOBJ"), std::string::npos);
  // protocol 0 (no PROTO): refused
  EXPECT_NE(refusal("(dp0\n.").find("protocol 2"), std::string::npos);
}

TEST(Pickle, ObjectArraysStructuredDtypesAndTruncationRefused) {
  std::string s = pickle::dump(edm2_like());
  const std::string f8 = std::string(
      "\x8c\x02"
      "f8",
      4);
  const auto at = s.find(f8);
  ASSERT_NE(at, std::string::npos);
  std::string obj = s;
  obj.replace(at, 4, std::string("\x8c\x02O8", 4));
  EXPECT_NE(refusal(obj).find("dtype 'O8'"), std::string::npos);
  std::string str = s;
  str.replace(at, 4, std::string("\x8c\x02U8", 4));
  EXPECT_NE(refusal(str).find("dtype 'U8'"), std::string::npos);
  for (std::size_t cut : {std::size_t{3}, s.size() / 2, s.size() - 1})
    EXPECT_NE(refusal(s.substr(0, cut)), "") << "cut at " << cut;
  EXPECT_NE(refusal(s.substr(0, s.size() / 2)).find("t.pkl"), std::string::npos);
}

TEST(Pickle, DeepNestingAndRepeatedReferencesAreRefusedWithoutBlowingUp) {
  // 100,000 lists each appended into the one before: refused as it is built (no deep teardown)
  std::string deep = B("\x80\x02");
  deep += std::string(100000, ']');
  deep += std::string(99999, 'a');
  deep += '.';
  EXPECT_NE(refusal(deep).find("nested more than 64 deep"), std::string::npos) << refusal(deep);
  // L(i) = [L(i-1), L(i-1)] by memo references, 60 times: 2^60 values from ~600 bytes
  std::string dag =
      B("\x80\x02]q\x00"
        "0");
  for (int i = 1; i <= 60; ++i) {
    dag += B("](h");
    dag += static_cast<char>(i - 1);
    dag += 'h';
    dag += static_cast<char>(i - 1);
    dag += B("eq");
    dag += static_cast<char>(i);
    if (i < 60) dag += '0';  // POP: the stack keeps the last only
  }
  dag += '.';
  EXPECT_NE(refusal(dag).find("larger than the file"), std::string::npos) << refusal(dag);
  // the same text referenced twice is fine (pickle memoizes repeated keys)
  EXPECT_EQ(refusal(B("\x80\x02](\x8c\x02muq\x00h\x00"
                      "e.")),
            "");
}

TEST(Pickle, BigEndianAndFortranArraysToCOrder) {
  // the writer's bytes with the dtype's state '<' made '>' and the Fortran flag set, by hand
  pickle::Value v;
  v.set("a", pickle::Value::of_array(f64({2, 3}, {1, 2, 3, 4, 5, 6})));
  std::string s = pickle::dump(v);
  const auto bo = s.find(std::string("\x8c\x01<", 3));
  ASSERT_NE(bo, std::string::npos);
  std::string be = s;
  be[bo + 2] = '>';
  const pickle::Value big = pickle::parse(be, "t.pkl");
  double first;
  std::memcpy(&first, big.find("a")->array.data.data(), 8);
  double swapped = 1.0;
  auto* p = reinterpret_cast<unsigned char*>(&swapped);
  std::reverse(p, p + 8);
  EXPECT_EQ(first, swapped);  // the little-endian 1.0 read as big-endian bytes, swapped
  // Fortran: the flag before the data (NEWFALSE, then SHORT_BINBYTES of 48 bytes) made NEWTRUE
  const auto flag =
      s.find(B("\x89"
               "C0"));
  ASSERT_NE(flag, std::string::npos);
  std::string f = s;
  f[flag] = '\x88';
  const pickle::Value fo = pickle::parse(f, "t.pkl");
  std::vector<double> c(6);
  std::memcpy(c.data(), fo.find("a")->array.data.data(), 48);
  EXPECT_EQ(c, (std::vector<double>{1, 3, 5, 2, 4, 6}));  // column-major 1..6 as rows of 3
}

}  // namespace
}  // namespace vecbench
#endif
