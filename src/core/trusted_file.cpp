// Files read only when no one but you or root can have put them there, through the descriptor
// that was checked (include/vecbench/core/files/trusted_file.hpp).
#include "vecbench/core/files/trusted_file.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/sha256.hpp"

namespace vecbench {

namespace fs = std::filesystem;

namespace {

// A folder on the way is opened for searching only where the system can (O_PATH: a folder of
// mode 0711 is walked as the kernel walks it), never through a link (O_NOFOLLOW).
#ifdef O_PATH
constexpr int kFolderFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
#else
constexpr int kFolderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
#endif
constexpr int kMaxLinks = 40;  // the kernel's own limit before ELOOP
constexpr std::size_t kChunk = 1 << 20;

/// A descriptor, closed when it goes.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd = std::exchange(o.fd, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int release() { return std::exchange(fd, -1); }
};

std::string error_text(int err) { return std::strerror(err); }

/// "user 65534 (nobody)", or "user 65534" where the name is unknown.
std::string user_name(uid_t uid) {
  std::string s = "user " + std::to_string(uid);
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && pw.pw_name)
    s += std::string(" (") + pw.pw_name + ")";
  return s;
}

bool trusted_owner(uid_t uid) { return uid == ::geteuid() || uid == 0; }

bool others_may_write(mode_t m) { return (m & (S_IWGRP | S_IWOTH)) != 0; }

/// "its group (mode 0775)" / "every user (mode 0666)": who besides the owner may write it.
std::string writers(mode_t m) {
  char octal[8];
  std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(m & 07777));
  return std::string((m & S_IWOTH) ? "every user" : "its group") + " (mode " + octal + ")";
}

/// Why the folder `where` (`st`, from its own descriptor) may not be on the way ("" when it may).
std::string folder_refusal(const struct stat& st, const fs::path& where) {
  if (!S_ISDIR(st.st_mode)) return where.string() + " is not a folder";
  if (!trusted_owner(st.st_uid))
    return "the folder " + where.string() + " belongs to " + user_name(st.st_uid) + ", who is neither you nor root";
  if (others_may_write(st.st_mode) && (st.st_mode & S_ISVTX) == 0)
    return "the folder " + where.string() + " may be written by " + writers(st.st_mode) +
           " without the sticky bit: they could replace what it holds";
  return "";
}

/// Why the open file (`st`, from its descriptor) in the folder `folder` (`fst`) may not be used.
std::string file_refusal(const struct stat& st, const struct stat& fst, const fs::path& folder) {
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (!trusted_owner(st.st_uid)) return "it belongs to " + user_name(st.st_uid) + ", who is neither you nor root";
  if (others_may_write(st.st_mode)) return "it may be written by " + writers(st.st_mode);
  if (others_may_write(fst.st_mode) && st.st_nlink != 1)
    return "it has " + std::to_string(st.st_nlink) + " names (hard links) and its folder " + folder.string() +
           " may be written by others: one of them may be another user's";
  return "";
}

/// The names of `p`'s steps ("/" and "." left out; ".." kept: the walk opens it and checks it).
std::deque<std::string> steps_of(const fs::path& p) {
  std::deque<std::string> out;
  for (const auto& part : p.relative_path()) {
    const std::string s = part.string();
    if (!s.empty() && s != ".") out.push_back(s);
  }
  return out;
}

/// The walk from "/" down to a file: the folder reached so far, open and checked.
class Walk {
 public:
  explicit Walk(fs::path asked) : asked_(std::move(asked)) {}

  /// The walk to `abs`; when the verdict is ok, take_file() holds the file open.
  TrustedOpen run(const fs::path& abs) {
    if (!restart_at_root()) return std::move(done_);
    rest_ = steps_of(abs);
    while (!rest_.empty()) {
      const std::string name = rest_.front();
      rest_.pop_front();
      const fs::path here = name == ".." ? where_.parent_path() : where_ / name;
      struct stat ls {};
      if (::fstatat(dir_.fd, name.c_str(), &ls, AT_SYMLINK_NOFOLLOW) != 0) {
        const int err = errno;
        if (err != ENOENT) refused("cannot look at " + here.string() + ": " + error_text(err));
        return std::move(done_);
      }
      if (rest_.empty() && !S_ISLNK(ls.st_mode)) return open_file(name);
      if (!(S_ISLNK(ls.st_mode) ? follow(name, here, ls) : enter(name, here))) return std::move(done_);
    }
    refused("it is a folder");  // the path ended on a folder ("DIR/.", "/")
    return std::move(done_);
  }
  /// The open file, once run() said ok (the descriptor is the caller's from then on).
  int take_file() { return file_.release(); }

 private:
  /// Makes the result a refusal for `cause`; false, for the steps that return this way.
  bool refused(const std::string& cause) {
    done_.verdict = Trust::refused;
    done_.why = asked_.string() + ": " + cause + "; not used";
    return false;
  }

  bool restart_at_root() {
    dir_ = Fd(::open("/", kFolderFlags));
    where_ = "/";
    if (dir_.fd < 0 || ::fstat(dir_.fd, &dir_st_) != 0) return refused("cannot open /: " + error_text(errno));
    const std::string why = folder_refusal(dir_st_, where_);
    return why.empty() || refused(why);
  }

  /// A link of you or root is followed: its target's steps come next, from "/" for an absolute one.
  bool follow(const std::string& name, const fs::path& here, const struct stat& ls) {
    if (!trusted_owner(ls.st_uid))
      return refused("the link " + here.string() + " belongs to " + user_name(ls.st_uid) +
                     ", who is neither you nor root: not followed");
    if (++links_ > kMaxLinks) return refused("more than " + std::to_string(kMaxLinks) + " links on the way (a loop?)");
    std::vector<char> buf(static_cast<std::size_t>(ls.st_size > 0 ? ls.st_size : 4095) + 2);
    const ssize_t n = ::readlinkat(dir_.fd, name.c_str(), buf.data(), buf.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= buf.size())
      return refused("cannot read the link " + here.string() + (n < 0 ? ": " + error_text(errno) : ""));
    const fs::path target(std::string(buf.data(), static_cast<std::size_t>(n)));
    const std::deque<std::string> steps = steps_of(target);
    rest_.insert(rest_.begin(), steps.begin(), steps.end());
    return !target.is_absolute() || restart_at_root();
  }

  /// The next folder, opened from this one's descriptor and checked on its own.
  bool enter(const std::string& name, const fs::path& here) {
    Fd next(::openat(dir_.fd, name.c_str(), kFolderFlags));
    if (next.fd < 0) {
      const int err = errno;
      return err == ENOENT ? false : refused("cannot open the folder " + here.string() + ": " + error_text(err));
    }
    struct stat st {};
    if (::fstat(next.fd, &st) != 0)
      return refused("cannot look at the folder " + here.string() + ": " + error_text(errno));
    if (const std::string why = folder_refusal(st, here); !why.empty()) return refused(why);
    dir_ = std::move(next);
    dir_st_ = st;
    where_ = here;
    return true;
  }

  /// The file itself: opened once, without following a link, and checked on that descriptor.
  TrustedOpen open_file(const std::string& name) {
    Fd f(::openat(dir_.fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    struct stat st {};
    if (f.fd < 0) {
      const int err = errno;
      if (err != ENOENT)
        refused(err == ELOOP ? "it became a link while it was checked" : "cannot open it: " + error_text(err));
    } else if (::fstat(f.fd, &st) != 0) {
      refused("cannot look at it: " + error_text(errno));
    } else if (const std::string why = file_refusal(st, dir_st_, where_); !why.empty()) {
      refused(why);
    } else {
      done_.verdict = Trust::ok;
      file_ = std::move(f);
    }
    return std::move(done_);
  }

  fs::path asked_;
  Fd dir_;
  struct stat dir_st_ {};
  fs::path where_;
  std::deque<std::string> rest_;
  int links_ = 0;
  TrustedOpen done_;
  Fd file_;
};

/// write(2) of all `n` bytes (false on an error, errno set).
bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

/// Reads the whole file from `fd` (pread from 0) in chunks, handing each to `take`.
template <class Take>
void read_all(int fd, const fs::path& path, const char* doing, Take take) {
  std::vector<char> buf(kChunk);
  off_t off = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError(path.string(), std::string("read error while ") + doing + ": " + error_text(errno));
    if (n == 0) return;
    take(buf.data(), static_cast<std::size_t>(n));
    off += n;
  }
}

}  // namespace

PrivateCopy& PrivateCopy::operator=(PrivateCopy&& o) noexcept {
  if (this != &o) {
    remove();
    path_ = std::exchange(o.path_, fs::path());
    sha256_ = std::move(o.sha256_);
  }
  return *this;
}

void PrivateCopy::remove() {
  if (path_.empty()) return;
  ::unlink(path_.c_str());
  ::rmdir(path_.parent_path().c_str());
  path_.clear();
}

TrustedFile& TrustedFile::operator=(TrustedFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::exchange(o.path_, fs::path());
  }
  return *this;
}

TrustedFile::~TrustedFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TrustedFile::sha256() const {
  Sha256 h;
  read_all(fd_, path_, "computing its sha256", [&](const char* p, std::size_t n) { h.update(p, n); });
  return h.hex();
}

PrivateCopy TrustedFile::copy_into(const fs::path& parent) const {
  std::string folder = (parent / ".weights-XXXXXX").string();
  if (!::mkdtemp(folder.data()))
    throw IoError(path_.string(), "cannot make a private folder in " + parent.string() + ": " + error_text(errno));
  PrivateCopy c;
  c.path_ = fs::path(folder) / path_.filename();  // from here on, c removes what was made
  Fd out(::open(c.path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (out.fd < 0)
    throw IoError(path_.string(), "cannot make its private copy " + c.path_.string() + ": " + error_text(errno));
  Sha256 h;
  read_all(fd_, path_, "copying it", [&](const char* p, std::size_t n) {
    h.update(p, n);
    if (!write_all(out.fd, p, n))
      throw IoError(path_.string(), "cannot write its private copy " + c.path_.string() + ": " + error_text(errno));
  });
  if (::close(out.release()) != 0)
    throw IoError(path_.string(), "cannot write its private copy " + c.path_.string() + ": " + error_text(errno));
  c.sha256_ = h.hex();
  return c;
}

TrustedOpen open_trusted(const fs::path& path) {
  std::error_code ec;
  const fs::path abs = path.is_absolute() ? path : fs::absolute(path, ec);
  struct stat st {};
  // nothing there (by the path, links followed): not a refusal, and no folder on the way is judged
  if (!ec && ::lstat(abs.c_str(), &st) != 0 && errno == ENOENT) return {};
  Walk walk(path);
  if (ec) {
    TrustedOpen r;
    r.verdict = Trust::refused;
    r.why = path.string() + ": cannot make it absolute: " + ec.message() + "; not used";
    return r;
  }
  TrustedOpen r = walk.run(abs);
  if (r.verdict == Trust::ok) r.file = TrustedFile(walk.take_file(), path);
  return r;
}

}  // namespace vecbench
