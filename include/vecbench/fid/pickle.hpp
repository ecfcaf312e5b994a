// Python pickles of NumPy arrays in dicts: EDM2's reference statistics (`calculate_metrics.py ref`
// writes {'num_images': N, 'fid': {'mu': ..., 'sigma': ...}, 'fd_dinov2': {...}} with
// pickle.dump). The reader is not an unpickler: it interprets the opcodes such a file uses
// (protocols 2 to 5: frames, memo, strings, numbers, tuples, lists, dicts) and knows exactly the
// globals NumPy 1.x and 2.x pickle an array with (numpy.core / numpy._core multiarray._reconstruct,
// numpy.ndarray, numpy.dtype, numeric._frombuffer for protocol 5, _codecs.encode for protocol 2's
// bytes), whose effect it reproduces itself. Any other global (os.system, builtins.eval, a class
// of the writer's), an object array, a structured dtype or an opcode outside that set is refused
// with an IoError naming the file and what it found; nothing in the file is ever run.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/files/npy.hpp"

namespace vecbench::pickle {

/// A value the reader accepts (and the writer writes).
struct Value {
  enum class Kind { none, boolean, integer, real, text, bytes, list, tuple, dict, array };
  Kind kind = Kind::none;
  std::int64_t integer = 0;  ///< boolean (0/1), integer
  double real = 0.0;
  std::string text;                                 ///< text (UTF-8), bytes
  std::vector<Value> items;                         ///< list, tuple
  std::vector<std::pair<std::string, Value>> dict;  ///< dict, keys in the file's order (string keys only)
  /// array: C order, little-endian; descr "<f8", "<f4", "<i8", "|u1", "|b1", ... (numbers only)
  npy::Array array;

  /// The dict member `key`, or nullptr (also when this is not a dict).
  const Value* find(const std::string& key) const;
  /// Sets the dict member `key` (replaced in place when present, else appended).
  void set(const std::string& key, Value v);
  static Value of_int(std::int64_t v);
  static Value of_array(npy::Array a);
};

/// Reads the pickle in `bytes`; `where` names it in errors (IoError "where: cause").
Value parse(const std::string& bytes, const std::string& where);
/// Reads the pickle file `path` (parse of its bytes).
Value read(const std::filesystem::path& path);

/// A protocol 4 pickle of `v` (no frames, no memo), as Python writes it: arrays through
/// numpy.core.multiarray._reconstruct (what NumPy 1.x writes and 2.x reads), little-endian.
std::string dump(const Value& v);
/// Writes dump(v) to `path` atomically.
void save(const std::filesystem::path& path, const Value& v);

}  // namespace vecbench::pickle
