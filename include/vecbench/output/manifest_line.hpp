// One manifest line as its readers use it: the few fields a resume, a merge, verify and stats
// look at, read straight into a struct (no JSON object is built: a resume reads a million lines,
// and the DOM's parse and destruction were 31 % of its time): the plain lines vecbench writes by
// a quick scan, anything else by nlohmann's SAX parser, both feeding the same handler.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/output/input_identity.hpp"

namespace vecbench {

/// A manifest line's "status": the input's vector was written, or the input failed ("error").
enum class InputStatus { ok, error };
template <>
struct EnumNames<InputStatus> {
  static constexpr const char* what = "input status";
  static constexpr std::array<std::pair<InputStatus, const char*>, 2> names = {
      {{InputStatus::ok, "ok"}, {InputStatus::error, "error"}}};
};

/// The fields of one manifest line (see manifest.hpp for the format). A field that is missing or
/// of another JSON type than the format's reads as absent (nullopt, "" or -1).
struct ManifestLine {
  std::string input;                  ///< byte for byte: "input_hex" decoded when well formed, else "input"
  std::optional<InputStatus> status;  ///< "status", when one of the names
  std::string fp;                     ///< fingerprint id ("fp")
  std::optional<std::string> output;  ///< vector file, relative to the folder
  std::optional<std::string> shard;   ///< shard file, relative to the folder
  std::optional<long> row;            ///< the shard's row (an integer)
  std::string xxh3;                   ///< the vector's checksum ("" before checksums)
  bool names_data = false;            ///< an "output" or "shard" key is there, of any type (a vector may be)
  RecordedIdentity src;               ///< the input file's identity when it was read ("src")
  std::uint64_t offset = 0;           ///< where the line starts in its manifest (bytes)
  std::uint32_t length = 0;           ///< its bytes, '\n' not counted

  bool ok() const { return status == InputStatus::ok; }
  /// The file the line's vector is in: "output" when there, else "shard"; nullptr for neither.
  const std::string* data_file() const { return output ? &*output : shard ? &*shard : nullptr; }
};

namespace detail {

/// nlohmann SAX events -> ManifestLine: top-level keys at depth 1, "src"'s at depth 2; anything
/// else (other keys, nested values) is skipped.
class ManifestSax {
 public:
  explicit ManifestSax(ManifestLine& l) : l_(l) {}
  using json = nlohmann::json;
  bool null() { return scalar(Value{}); }
  bool boolean(bool) { return scalar(Value{}); }
  bool number_integer(json::number_integer_t v) {
    return scalar(Value{nullptr, true, static_cast<double>(v), v, static_cast<std::uint64_t>(v)});
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return scalar(Value{nullptr, true, static_cast<double>(v), static_cast<std::int64_t>(v), v});
  }
  bool number_float(json::number_float_t v, const json::string_t&) {  // cast where a field takes it, in range
    return scalar(Value{nullptr, false, v, 0, 0, true});
  }
  bool string(json::string_t& s) { return scalar(Value{&s}); }
  bool binary(json::binary_t&) { return scalar(Value{}); }
  bool start_object(std::size_t) {
    if (depth_ == 0) top_object_ = true;
    if (depth_ == 1 && key_ == Key::src) {
      l_.src = {};
      l_.src.present = true;
      in_src_ = true;
      src_ = {};
    } else if (depth_ == 1) {
      top_level(Value{});  // an object where the format has a string or number: absent
    } else if (depth_ == 2 && in_src_) {
      in_src(Value{});  // the same inside "src" (an "xxh3" there that matches no file)
    }
    ++depth_;
    return true;
  }
  bool end_object() {
    if (--depth_ == 1 && in_src_) {
      in_src_ = false;
      if (src_.size && src_.mtime_ns && src_.ino && src_.dev)
        l_.src.id = InputIdentity{*src_.size, *src_.mtime_ns, *src_.ino, *src_.dev};
    }
    if (depth_ == 1) key_ = Key::other;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth_ == 1) top_level(Value{});  // an array: absent ("src": malformed)
    if (depth_ == 2 && in_src_) in_src(Value{});
    ++depth_;
    return true;
  }
  bool end_array() {
    if (--depth_ == 1) key_ = Key::other;
    return true;
  }
  bool key(json::string_t& k);
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  bool top_object() const { return top_object_; }
  /// "input_hex" decoded when well formed (even length, lowercase hex digits), else "input".
  void finish();

 private:
  enum class Key { other, input, input_hex, status, fp, output, shard, row, xxh3, src, size, mtime_ns, ino, dev };
  struct Value {
    json::string_t* text = nullptr;
    bool integer = false;
    double real = 0;
    std::int64_t i64 = 0;
    std::uint64_t u64 = 0;
    bool number_float = false;
    /// An integer as it is, a float cast where it fits (nlohmann's get<> casts), else nothing.
    std::optional<std::int64_t> as_i64() const {
      if (integer) return i64;
      if (number_float && real >= -9.2e18 && real <= 9.2e18) return static_cast<std::int64_t>(real);
      return std::nullopt;
    }
    std::optional<std::uint64_t> as_u64() const {
      if (integer) return u64;
      if (number_float && real >= 0 && real <= 1.8e19) return static_cast<std::uint64_t>(real);
      return std::nullopt;
    }
  };
  struct Src {
    std::optional<std::int64_t> size, mtime_ns;
    std::optional<std::uint64_t> ino, dev;
  };
  bool scalar(const Value& v);
  void top_level(const Value& v);
  void in_src(const Value& v);

  ManifestLine& l_;
  int depth_ = 0;
  bool top_object_ = false, in_src_ = false;
  Key key_ = Key::other;
  std::string input_, input_hex_;
  bool has_input_hex_ = false;
  Src src_;
};

inline bool ManifestSax::key(json::string_t& k) {
  static constexpr std::pair<std::string_view, Key> top[] = {
      {"input", Key::input}, {"input_hex", Key::input_hex}, {"status", Key::status},
      {"fp", Key::fp},       {"output", Key::output},       {"shard", Key::shard},
      {"row", Key::row},     {"xxh3", Key::xxh3},           {"src", Key::src}};
  static constexpr std::pair<std::string_view, Key> src[] = {
      {"size", Key::size}, {"mtime_ns", Key::mtime_ns}, {"ino", Key::ino}, {"dev", Key::dev}, {"xxh3", Key::xxh3}};
  key_ = Key::other;
  if (depth_ == 1)
    for (const auto& [name, key] : top)
      if (std::string_view(k) == name) key_ = key;
  if (depth_ == 2 && in_src_)
    for (const auto& [name, key] : src)
      if (std::string_view(k) == name) key_ = key;
  return true;
}

inline bool ManifestSax::scalar(const Value& v) {
  if (depth_ == 1) top_level(v);
  if (depth_ == 2 && in_src_) in_src(v);
  return true;
}

inline void ManifestSax::top_level(const Value& v) {
  auto text = [&](std::string& to) { to = v.text ? std::move(*v.text) : std::string(); };
  auto opt_text = [&](std::optional<std::string>& to) {
    to.reset();
    if (v.text) to = std::move(*v.text);
  };
  switch (key_) {
    case Key::input:
      text(input_);
      break;
    case Key::input_hex:
      has_input_hex_ = v.text != nullptr;
      text(input_hex_);
      break;
    case Key::status:
      l_.status = v.text ? find_enum<InputStatus>(*v.text) : std::nullopt;
      break;
    case Key::fp:
      text(l_.fp);
      break;
    case Key::output:
      opt_text(l_.output);
      l_.names_data = true;
      break;
    case Key::shard:
      opt_text(l_.shard);
      l_.names_data = true;
      break;
    case Key::row:
      l_.row = v.integer ? std::optional<long>(static_cast<long>(v.i64)) : std::nullopt;
      break;
    case Key::xxh3:
      text(l_.xxh3);
      break;
    case Key::src:  // a scalar where an object belongs: malformed
      l_.src = {};
      l_.src.present = true;
      break;
    default:
      break;
  }
}

inline void ManifestSax::in_src(const Value& v) {
  switch (key_) {
    case Key::size:
      src_.size = v.as_i64();
      break;
    case Key::mtime_ns:
      src_.mtime_ns = v.as_i64();
      break;
    case Key::ino:
      src_.ino = v.as_u64();
      break;
    case Key::dev:
      src_.dev = v.as_u64();
      break;
    case Key::xxh3:  // a checksum that is not a string matches none
      l_.src.has_xxh3 = true;
      l_.src.xxh3 = v.text ? std::move(*v.text) : std::string();
      break;
    default:
      break;
  }
}

inline void ManifestSax::finish() {
  if (has_input_hex_ && input_hex_.size() % 2 == 0) {
    auto nib = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    std::string out;
    out.reserve(input_hex_.size() / 2);
    bool ok = true;
    for (std::size_t i = 0; i < input_hex_.size() && ok; i += 2) {
      const int a = nib(input_hex_[i]), b = nib(input_hex_[i + 1]);
      ok = a >= 0 && b >= 0;
      out += static_cast<char>(a * 16 + b);
    }
    if (ok) {
      l_.input = std::move(out);
      return;
    }
  }
  l_.input = std::move(input_);
}

/// The quick way through the lines vecbench writes: feeds `sax` the events of `text` when it is
/// a JSON object of ASCII strings without escapes, integers of at most 19 digits and such
/// objects, and returns true; anything else (an escape, a non-ASCII byte, an array, a float,
/// true/false/null, a syntax error) returns false with `sax` partly fed, and nlohmann's own
/// parser decides.
class PlainJsonScan {
 public:
  PlainJsonScan(std::string_view text, ManifestSax& sax) : s_(text), sax_(sax) {}
  bool line() {
    if (!object(0)) return false;
    space();
    return i_ == s_.size();
  }

 private:
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool take(char c) {
    space();
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool string(std::string& out) {
    if (!take('"')) return false;
    for (const std::size_t begin = i_; i_ < s_.size(); ++i_) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        out.assign(s_.data() + begin, i_++ - begin);
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
    }
    return false;
  }
  bool number() {
    const bool minus = i_ < s_.size() && s_[i_] == '-';
    const std::size_t first = i_ + minus;
    std::size_t j = first;
    std::uint64_t v = 0;
    while (j < s_.size() && s_[j] >= '0' && s_[j] <= '9') v = v * 10 + static_cast<std::uint64_t>(s_[j++] - '0');
    const std::size_t digits = j - first;
    if (digits == 0 || digits > (minus ? 18 : 19) || (digits > 1 && s_[first] == '0')) return false;
    if (j < s_.size() && (s_[j] == '.' || s_[j] == 'e' || s_[j] == 'E')) return false;
    i_ = j;
    return minus ? sax_.number_integer(-static_cast<std::int64_t>(v)) : sax_.number_unsigned(v);
  }
  bool value(int depth) {
    space();
    if (i_ >= s_.size()) return false;
    if (s_[i_] == '"') return string(text_) && sax_.string(text_);
    if (s_[i_] == '{') return object(depth + 1);
    return number();
  }
  bool object(int depth) {
    if (depth > 3 || !take('{') || !sax_.start_object(0)) return false;
    if (!take('}')) {
      do {
        if (!string(text_) || !sax_.key(text_) || !take(':') || !value(depth)) return false;
      } while (take(','));
      if (!take('}')) return false;
    }
    return sax_.end_object();
  }

  std::string_view s_;
  ManifestSax& sax_;
  std::size_t i_ = 0;
  std::string text_;
};

/// parse_manifest_line, with or without the quick scan first (tests read every line both ways).
inline bool parse_manifest_line_by(std::string_view text, ManifestLine& line, bool quick) {
  line = ManifestLine{};
  if (quick) {
    ManifestSax sax(line);
    if (PlainJsonScan(text, sax).line()) {
      sax.finish();
      return true;
    }
    line = ManifestLine{};
  }
  ManifestSax sax(line);
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &sax) || !sax.top_object()) return false;
  sax.finish();
  return true;
}
}  // namespace detail

/// Reads `text` (one line, no '\n') into `line` (cleared first); false when it is not a JSON object.
inline bool parse_manifest_line(std::string_view text, ManifestLine& line) {
  return detail::parse_manifest_line_by(text, line, true);
}

}  // namespace vecbench
