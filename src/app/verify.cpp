// `vecbench verify OUT`: every stored vector re-read against its manifest line (docs/vectorize.md "Output
// folder"): missing, truncated and corrupted data named by input and file; `--repair` moves the
// files that hold it aside so that the next run redoes their inputs.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <set>
#include <string>

#include "vecbench/app/commands.hpp"
#include "vecbench/core/files/checksum.hpp"
#include "vecbench/engine/encoder.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/output/output_lock.hpp"
#include "vecbench/output/store_reader.hpp"

namespace vecbench {
namespace {

int verify_store(const std::string& out, bool repair, double progress_s) {
  const fs::path dir(out);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw IoError(out, "not a directory");
  OutputLock lock(dir, -1);  // no writer may change OUT meanwhile (repair moves files)
  const Fingerprint fp = read_store_fingerprint(dir);
  const int dim = fp.empty() ? 0 : fp.fields.value("feature_dim", 0);
  const auto entries = newest_ok_entries(dir, fp.empty() ? "" : fp.id());
  std::size_t checked = 0, unchecked = 0, bad = 0;
  std::set<std::string> bad_files;
  auto last = std::chrono::steady_clock::now();
  for_each_stored_vector(dir, entries, dim, [&](const StoreEntry& e, const float* v, int d, std::string why) {
    const std::string sum = v && !e.xxh3.empty() ? vector_xxh3(v, d) : std::string();
    if (why.empty() && sum != e.xxh3) why = "corrupted (checksum " + sum + ", manifest says " + e.xxh3 + ")";
    ++checked;
    if (why.empty() && e.xxh3.empty()) ++unchecked;
    if (!why.empty()) {
      ++bad;
      bad_files.insert(e.file);
      std::cout << "BAD " << e.input << ": " << e.file << (e.row >= 0 ? " row " + std::to_string(e.row) : "") << ": "
                << why << "\n";
    }
    const auto now = std::chrono::steady_clock::now();
    if (progress_s > 0 && std::chrono::duration<double>(now - last).count() > progress_s) {
      last = now;
      std::cerr << "vecbench verify: " << checked << "/" << entries.size() << " checked, " << bad << " bad\n";
    }
  });
  std::cout << "verify " << out << ": " << checked << " vectors checked, " << bad << " bad";
  if (unchecked) std::cout << ", " << unchecked << " complete but written before checksums (size checked only)";
  std::cout << "\n";
  if (repair && !bad_files.empty()) {
    const fs::path aside = dir / ("corrupt-" + utc_stamp());
    for (const auto& f : bad_files) {
      const fs::path rel = fs::path(f).lexically_normal();
      if (rel.empty() || rel.is_absolute() || *rel.begin() == ".." || !fs::exists(dir / rel, ec)) continue;
      fs::create_directories((aside / rel).parent_path());
      fs::rename(dir / rel, aside / rel, ec);
      if (ec) throw IoError((dir / rel).string(), "cannot move it aside: " + ec.message());
    }
    sync_directory(dir);
    std::cout << "repair: " << bad_files.size() << " files moved to " << aside.string() << "; the next vectorize into "
              << out << " redoes their inputs\n";
  }
  return bad > 0 ? kExitSomeInputsFailed : 0;
}

}  // namespace

int cmd_verify(const std::string& out, bool repair, double progress_s) {
  // a store of several encoders (vectorize --encoders): one store per encoder, OUT/ENC, each checked
  const fs::path dir(out);
  std::error_code ec;
  if (fs::is_directory(dir, ec) && !fs::exists(dir / "vecbench.json", ec) && manifest_files(dir).empty()) {
    int status = -1;
    for (const auto& e : encoder_registry())
      if (fs::exists(dir / e.name / "vecbench.json", ec))
        status = std::max(status, verify_store((dir / e.name).string(), repair, progress_s));
    if (status >= 0) return status;
  }
  return verify_store(out, repair, progress_s);
}

}  // namespace vecbench
