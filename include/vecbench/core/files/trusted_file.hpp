// A file read from where other users may write (issue #63: clean-fid's /tmp, the TF tutorial's
// /tmp/imagenet, a $TORCH_HOME on a shared server): used only when no one but you or root can
// have put it there or can change it, and read afterwards through the one descriptor that was
// checked, never by its path again, so that what was checked is what is read.
//
// The rules (open_trusted), on every step from "/" down to the file:
//   - each folder belongs to you (the effective user) or root; others may write it only when it
//     is sticky (as /tmp: then no one may rename or remove what is not theirs in it);
//   - a link is followed only when it belongs to you or root, and its target is walked by the
//     same rules (the folders of the target, from "/" again for an absolute one);
//   - the file is opened without following a link (O_NOFOLLOW), and on that descriptor it is a
//     regular file of yours or root's that no one else may write, with one name only when it
//     lies in a folder others may write (a hard link there may be another user's).
// A folder is thus "shared" by what it is (another owner, others' write permission), wherever
// it is, not by its place in a list. Every folder is opened (O_NOFOLLOW, O_DIRECTORY) from the
// descriptor of the one above it and checked on its own descriptor: renaming a folder on the path
// after it was checked changes nothing that is read.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

namespace vecbench {

struct TrustedOpen;
TrustedOpen open_trusted(const std::filesystem::path& path);

/// A private copy of a trusted file (TrustedFile::copy_into): the file (mode 0600) under its own
/// name in a new folder of this user (0700, mkdtemp); both are removed when the copy goes.
class PrivateCopy {
 public:
  PrivateCopy() = default;
  PrivateCopy(PrivateCopy&& o) noexcept { *this = std::move(o); }
  PrivateCopy& operator=(PrivateCopy&& o) noexcept;
  PrivateCopy(const PrivateCopy&) = delete;
  PrivateCopy& operator=(const PrivateCopy&) = delete;
  ~PrivateCopy() { remove(); }
  const std::filesystem::path& path() const { return path_; }
  /// SHA-256 (hex) of the bytes written into it, computed as they were read from the descriptor.
  const std::string& sha256() const { return sha256_; }

 private:
  friend class TrustedFile;
  void remove();
  std::filesystem::path path_;
  std::string sha256_;
};

/// An open regular file that passed open_trusted's rules. Every read goes through its descriptor
/// (pread from offset 0: reads do not depend on each other).
class TrustedFile {
 public:
  TrustedFile() = default;
  TrustedFile(TrustedFile&& o) noexcept { *this = std::move(o); }
  TrustedFile& operator=(TrustedFile&& o) noexcept;
  TrustedFile(const TrustedFile&) = delete;
  TrustedFile& operator=(const TrustedFile&) = delete;
  ~TrustedFile();
  bool is_open() const { return fd_ >= 0; }
  /// The path it was opened by (as named: a link on the way is not resolved in it): for messages.
  const std::filesystem::path& path() const { return path_; }
  int fd() const { return fd_; }
  /// SHA-256 (hex) of its bytes, read from the descriptor. IoError naming path() on a read error.
  std::string sha256() const;
  /// Copies its bytes from the descriptor into `parent`/.weights-XXXXXX/NAME (NAME: path()'s file
  /// name; a new folder of mode 0700, the file 0600), hashing them as they go. IoError naming
  /// path() when it cannot (`parent` must exist).
  PrivateCopy copy_into(const std::filesystem::path& parent) const;

 private:
  friend TrustedOpen open_trusted(const std::filesystem::path& path);
  TrustedFile(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

/// What open_trusted found.
enum class Trust {
  ok,       ///< `file` is open
  absent,   ///< nothing there (ENOENT on the way): not a refusal
  refused,  ///< there, but not to be used: `why` says which rule or which error (a failed stat is a refusal)
};

struct TrustedOpen {
  Trust verdict = Trust::absent;
  TrustedFile file;
  std::string why;  ///< refused: "PATH: the cause; not used"
};

/// Opens `path` (made absolute from the current folder) for reading by the rules above. Never
/// throws for what it finds on the disk: an error on the way (a folder it may not search, a name
/// too long, a link loop) is a refusal naming the path, the step and the error.
TrustedOpen open_trusted(const std::filesystem::path& path);

}  // namespace vecbench
