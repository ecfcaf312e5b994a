// NumPy .npz files (a zip of .npy members): what pytorch-fid's `--save-stats`, TTUR and clean-fid
// write their statistics to, and what `vecbench stats` writes; ADM's reference batches and dgm-eval's
// saved representations too. Members stored or deflated (zlib); zip64 read (NumPy writes it).
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "vecbench/core/files/npy.hpp"

namespace vecbench::npz {

/// Every member of `path`, by name without ".npy". Throws IoError naming the file and the cause.
std::map<std::string, npy::Array> load(const std::filesystem::path& path);
/// The members of `path` named in `only` (names without ".npy"), each read alone by seeking to it:
/// the others' bytes are never read (an ADM reference batch's `arr_0` of 10,000 images stays on
/// disk while its `mu` and `sigma` load). A name the file lacks is absent from the result.
std::map<std::string, npy::Array> load(const std::filesystem::path& path, const std::vector<std::string>& only);
/// The names of `path`'s members (without ".npy"), from the zip directory alone.
std::vector<std::string> members(const std::filesystem::path& path);

/// Writes `members` (name without ".npy" -> the member's .npy bytes, npy::to_bytes) as an
/// uncompressed .npz, atomically.
void save(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::string>>& members);

/// Bytes per element of an .npy dtype ("<f8": 8, "<U16": 64); throws for one it cannot size.
std::size_t dtype_size(const std::string& descr, const std::string& where);

/// The values of a float64 or float32 member as doubles.
std::vector<double> as_f64(const npy::Array& a, const std::string& where);

}  // namespace vecbench::npz
