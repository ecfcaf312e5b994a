// One mechanism for the names of every closed set of settings and outcomes (engine, precision,
// output format, run status, validity verdict, ...): each enum lists its (value, name) pairs
// once, in an EnumNames specialization beside it, and its name, its parsing (an error that
// lists the names) and its JSON all walk that list. Values are compared as enums everywhere
// else; names appear only where a setting enters (CLI, experiment file, result file) or leaves.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "vecbench/core/base/error.hpp"

namespace vecbench {

/// Specialized for each enum E beside it:
///   static constexpr const char* what = "engine";  // the set's name in messages
///   static constexpr std::array<std::pair<E, const char*>, N> names = {...};
template <class E>
struct EnumNames;

/// Whether E has a table (the result file's reader and writer take any such enum by its names).
template <class E, class = void>
struct has_enum_names : std::false_type {};
template <class E>
struct has_enum_names<E, std::void_t<decltype(EnumNames<E>::names)>> : std::true_type {};

/// The name of `v` (every value has one: the table lists them all).
template <class E>
const char* enum_name(E v) {
  for (const auto& n : EnumNames<E>::names)
    if (n.first == v) return n.second;
  return "?";
}

/// The value named `s`, nullopt for none.
template <class E>
std::optional<E> find_enum(const std::string& s) {
  for (const auto& n : EnumNames<E>::names)
    if (s == n.second) return n.first;
  return std::nullopt;
}

/// The names, "a, b or c" (for messages and help texts).
template <class E>
std::string enum_list() {
  const auto& names = EnumNames<E>::names;
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i].second);
  return s;
}

/// The value named `s`; ConfigError naming `key` and listing the names otherwise.
template <class E>
E parse_enum(const std::string& s, const std::string& key) {
  if (const auto v = find_enum<E>(s)) return *v;
  throw ConfigError(key, "unknown " + std::string(EnumNames<E>::what) + " '" + s + "' (use " + enum_list<E>() + ")");
}

}  // namespace vecbench
