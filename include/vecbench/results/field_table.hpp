// Field tables: each record of the result model lists its JSON fields once (key, member, required
// or not, when it is written, unit, which way is better), and the writer, the reader, the schema
// test and `vecbench compare --metric` all walk that list. A new metric is its member and its line
// in the table (results/result_types.hpp); tests/core/test_result.cpp then fails until the schema
// (schema/result.schema.json) has the same key. No JSON here: results/result.hpp does the I/O.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "vecbench/core/base/enum_names.hpp"

namespace vecbench {

/// Whether a reader needs the key.
enum class Need { required, optional };

/// When the writer writes the key: always, or only when it holds something (a non-empty map or
/// vector or string, an engaged optional, an integer >= 0; -1 then means absent).
enum class Emit { always, when_set };

/// Which way a metric improves; `none`: not a metric that can be compared (a name, a count).
enum class Better { higher, lower, none };

/// A field's unit; `none`: a count or a name.
enum class Unit { none, seconds, milliseconds, bytes, images, images_per_s, fraction };
template <>
struct EnumNames<Unit> {
  static constexpr const char* what = "unit";
  static constexpr std::array<std::pair<Unit, const char*>, 7> names = {{{Unit::none, ""},
                                                                         {Unit::seconds, "s"},
                                                                         {Unit::milliseconds, "ms"},
                                                                         {Unit::bytes, "bytes"},
                                                                         {Unit::images, "images"},
                                                                         {Unit::images_per_s, "images/s"},
                                                                         {Unit::fraction, "fraction"}}};
};

/// One field of record `S`: its JSON key, the member that holds it and how it is treated.
template <class S, class T>
struct FieldSpec {
  const char* key;  ///< JSON key
  T S::*member;     ///< where the value lives
  Need need;        ///< required by the reader?
  Emit emit;        ///< written always or only when set
  Unit unit;        ///< its unit (none: a count or a name)
  Better better;    ///< direction, for comparisons
  using Record = S;
  using Value = T;
};

template <class S, class T>
constexpr FieldSpec<S, T> field(const char* key, T S::*member, Need need = Need::required, Emit emit = Emit::always,
                                Unit unit = Unit::none, Better better = Better::none) {
  return {key, member, need, emit, unit, better};
}

/// Whether a value counts as set for Emit::when_set (any other type always is).
template <class T>
bool is_set(const T&) {
  return true;
}
template <class T>
bool is_set(const std::vector<T>& v) {
  return !v.empty();
}
template <class K, class V>
bool is_set(const std::map<K, V>& m) {
  return !m.empty();
}
template <class T>
bool is_set(const std::optional<T>& o) {
  return o.has_value();
}
inline bool is_set(std::int64_t v) { return v >= 0; }
inline bool is_set(const std::string& s) { return !s.empty(); }

/// Calls `f(spec)` for every field of a table (a tuple of FieldSpec).
template <class Table, class F>
void for_each_field(const Table& table, F&& f) {
  std::apply([&](const auto&... spec) { (f(spec), ...); }, table);
}

}  // namespace vecbench
