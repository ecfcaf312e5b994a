// Files read from where other users may write (core/files/trusted_file.hpp, issue #63): a file is used
// only when every folder from "/" to it and the file itself are yours or root's and no one else
// may write them (a sticky folder such as /tmp excepted), another user's link is not followed,
// and what is read afterwards is the open file that was checked. The cases of another user need
// root (CI runs the tests as root), who gives folders and links away to uid 65534 (nobody);
// without root they are skipped, and say so.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "vecbench/core/files/sha256.hpp"
#include "vecbench/core/files/trusted_file.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
namespace fs = std::filesystem;

namespace {

constexpr uid_t kNobody = 65534;

#define VECBENCH_NEEDS_ROOT()                                                                       \
  if (::geteuid() != 0)                                                                             \
  GTEST_SKIP() << "needs root, to give a folder or a link to another user (uid 65534, nobody); CI " \
                  "runs the tests as root"

/// A scratch folder of this user that no one else may write (whatever the umask).
struct Scratch : vecbench::testing::ScopedTempDir {
  explicit Scratch(const std::string& tag) : ScopedTempDir("trusted_" + tag) { ::chmod(path.c_str(), 0755); }
  fs::path dir(const std::string& name, mode_t mode = 0755) const {
    const fs::path d = path / name;
    fs::create_directories(d);
    ::chmod(d.c_str(), mode);
    return d;
  }
};

void put(const fs::path& p, const std::string& bytes, mode_t mode = 0644) {
  std::ofstream(p, std::ios::binary) << bytes;
  ::chmod(p.c_str(), mode);
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// open_trusted(p)'s refusal, checked to be one (nothing open, the path named, "not used").
std::string refusal(const fs::path& p) {
  TrustedOpen r = open_trusted(p);
  EXPECT_EQ(r.verdict, Trust::refused) << p << ": " << r.why;
  EXPECT_FALSE(r.file.is_open()) << p;
  EXPECT_EQ(r.why.rfind(p.string() + ": ", 0), 0u) << r.why;
  EXPECT_TRUE(has(r.why, "; not used")) << r.why;
  return r.why;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

}  // namespace

// Case 4: a file of yours in a folder of yours is opened, and read through its descriptor; in a
// sticky folder every user may write (as /tmp) too; a link of yours to it is followed.
TEST(TrustedFile, AFileOfYoursInAFolderOfYoursIsOpened) {
  Scratch s("private");
  const fs::path f = s.dir("models") / "inception-2015-12-05.pt";
  put(f, "weights A");
  TrustedOpen r = open_trusted(f);
  ASSERT_EQ(r.verdict, Trust::ok) << r.why;
  EXPECT_EQ(r.file.path(), f);
  EXPECT_EQ(r.file.sha256(), sha256_hex("weights A"));
  EXPECT_EQ(r.file.sha256(), sha256_hex("weights A"));  // each read from the start: the same bytes

  const fs::path tmp = s.dir("tmp", 01777);  // as /tmp: sticky, every user may write it
  put(tmp / "classify_image_graph_def.pb", "graph");
  EXPECT_EQ(open_trusted(tmp / "classify_image_graph_def.pb").verdict, Trust::ok);
  ASSERT_EQ(::symlink(f.c_str(), (tmp / "link.pt").c_str()), 0);  // this user's link: followed
  r = open_trusted(tmp / "link.pt");
  ASSERT_EQ(r.verdict, Trust::ok) << r.why;
  EXPECT_EQ(r.file.path(), tmp / "link.pt");  // named as asked
  EXPECT_EQ(r.file.sha256(), sha256_hex("weights A"));
  const fs::path rel = s.dir("sub") / "rel";
  ASSERT_EQ(::symlink("../models", rel.c_str()), 0);  // a relative link, with ".." in it
  r = open_trusted(rel / "inception-2015-12-05.pt");
  ASSERT_EQ(r.verdict, Trust::ok) << r.why;
  EXPECT_EQ(r.file.sha256(), sha256_hex("weights A"));
}

// Case 1: another user's folder holding a file of root's: they can rename or remove what it holds
// and put their own file in its place, so it is refused, naming the file and the folder.
TEST(TrustedFile, AFolderOfAnotherUserIsRefusedByName) {
  VECBENCH_NEEDS_ROOT();
  Scratch s("other_folder");
  const fs::path other = s.dir("imagenet");
  const fs::path f = other / "classify_image_graph_def.pb";
  put(f, "graph");
  ASSERT_EQ(open_trusted(f).verdict, Trust::ok);  // while the folder is root's
  ASSERT_EQ(::chown(other.c_str(), kNobody, kNobody), 0);
  const std::string why = refusal(f);
  EXPECT_TRUE(has(why, "the folder " + other.string() + " belongs to user 65534")) << why;
  EXPECT_TRUE(has(why, "who is neither you nor root")) << why;
  // anywhere on the way: a folder of root's inside it is no better
  const fs::path inner = other / "root-owned";
  fs::create_directories(inner);
  put(inner / "w.pt", "w");
  EXPECT_TRUE(has(refusal(inner / "w.pt"), "the folder " + other.string() + " belongs to user 65534"));
}

// Case 2: another user's link in a sticky folder every user may write (as /tmp), pointing to a
// file of root's: not followed (the same link of root's is).
TEST(TrustedFile, AnotherUsersLinkInAStickyFolderIsNotFollowed) {
  VECBENCH_NEEDS_ROOT();
  Scratch s("other_link");
  const fs::path tmp = s.dir("tmp", 01777);
  const fs::path target = s.dir("root") / "real.pt";
  put(target, "root's weights");
  const fs::path link = tmp / "inception-2015-12-05.pt";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_EQ(open_trusted(link).verdict, Trust::ok);  // root's own link is followed
  ASSERT_EQ(::lchown(link.c_str(), kNobody, kNobody), 0);
  const std::string why = refusal(link);
  EXPECT_TRUE(has(why, "the link " + link.string() + " belongs to user 65534")) << why;
  EXPECT_TRUE(has(why, "not followed")) << why;
  // root's link to a file in another user's folder: the target is walked by the same rules
  const fs::path theirs = s.dir("theirs");
  put(theirs / "w.pt", "w");
  ASSERT_EQ(::chown(theirs.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(::symlink((theirs / "w.pt").c_str(), (tmp / "to-theirs.pt").c_str()), 0);
  EXPECT_TRUE(has(refusal(tmp / "to-theirs.pt"), "the folder " + theirs.string() + " belongs to user 65534"));
  // and a file of another user's in a sticky folder is refused (they may rewrite it)
  put(tmp / "theirs.pt", "x");
  ASSERT_EQ(::chown((tmp / "theirs.pt").c_str(), kNobody, kNobody), 0);
  EXPECT_TRUE(has(refusal(tmp / "theirs.pt"), "it belongs to user 65534"));
}

// Case 3: a swap between the check and the reads (the file renamed over, as another process
// would do right after open_trusted returned): the hash and the private copy are of the bytes
// that were checked, never of the file the path names now.
TEST(TrustedFile, ASwapAfterTheCheckChangesNothingThatIsRead) {
  Scratch s("swap");
  const fs::path f = s.dir("hub") / "dinov2_vits14_pretrain.pth";
  put(f, "checked bytes");
  TrustedOpen r = open_trusted(f);
  ASSERT_EQ(r.verdict, Trust::ok) << r.why;
  put(s.path / "other", "swapped in");  // the fault: another file renamed over the checked one
  ASSERT_EQ(::rename((s.path / "other").c_str(), f.c_str()), 0);
  ASSERT_EQ(slurp(f), "swapped in");  // the path names the new file now
  EXPECT_EQ(r.file.sha256(), sha256_hex("checked bytes"));
  fs::path folder;
  {
    const PrivateCopy c = r.file.copy_into(s.dir("models"));
    EXPECT_EQ(slurp(c.path()), "checked bytes");
    EXPECT_EQ(c.sha256(), sha256_hex("checked bytes"));
    EXPECT_EQ(c.path().filename(), f.filename());  // the import names the weights by the file's name
    folder = c.path().parent_path();
    EXPECT_EQ(folder.parent_path(), s.path / "models");
    EXPECT_EQ(mode_of(folder), 0700u);  // this user's alone
    EXPECT_EQ(mode_of(c.path()), 0600u);
  }
  EXPECT_FALSE(fs::exists(folder));  // removed with the copy
}

// A file or a folder others may write is refused (a sticky folder excepted: others may add to it
// but not rename or remove what is not theirs), and so is a file with a second name in a folder
// others may write (the name may be another user's hard link).
TEST(TrustedFile, WhatOthersMayWriteIsRefused) {
  Scratch s("writable");
  const fs::path d = s.dir("d");
  put(d / "w.pt", "w", 0666);
  EXPECT_TRUE(has(refusal(d / "w.pt"), "it may be written by every user (mode 0666)"));
  ::chmod((d / "w.pt").c_str(), 0664);
  EXPECT_TRUE(has(refusal(d / "w.pt"), "it may be written by its group (mode 0664)"));
  ::chmod((d / "w.pt").c_str(), 0644);
  ASSERT_EQ(open_trusted(d / "w.pt").verdict, Trust::ok);
  ::chmod(d.c_str(), 0775);
  EXPECT_TRUE(has(refusal(d / "w.pt"), "the folder " + d.string() + " may be written by its group (mode 0775)"));
  ::chmod(d.c_str(), 0777);
  EXPECT_TRUE(has(refusal(d / "w.pt"), "may be written by every user (mode 0777) without the sticky bit"));
  ::chmod(d.c_str(), 01777);
  ASSERT_EQ(open_trusted(d / "w.pt").verdict, Trust::ok);
  ASSERT_EQ(::link((d / "w.pt").c_str(), (d / "second.pt").c_str()), 0);
  EXPECT_TRUE(has(refusal(d / "w.pt"), "it has 2 names (hard links)"));
  ::chmod(d.c_str(), 0755);  // in a folder no one else may write, a second name is yours or root's
  EXPECT_EQ(open_trusted(d / "w.pt").verdict, Trust::ok);
}

// Nothing there is "absent" (not a refusal); what cannot be looked at, opened or read is refused,
// never accepted: a name too long, a link loop, a file in place of a folder, a FIFO, a folder, and
// (not as root, who may search any folder) a folder this user may not search.
TEST(TrustedFile, WhatCannotBeLookedAtIsRefusedNeverAccepted) {
  Scratch s("stat_fails");
  TrustedOpen r = open_trusted(s.path / "none.pt");
  EXPECT_EQ(r.verdict, Trust::absent);
  EXPECT_EQ(r.why, "");
  EXPECT_EQ(open_trusted(s.path / "none" / "w.pt").verdict, Trust::absent);
  EXPECT_TRUE(has(refusal(s.path / std::string(300, 'x')), "cannot look at")) << "ENAMETOOLONG";
  ASSERT_EQ(::symlink("loop.pt", (s.path / "loop.pt").c_str()), 0);
  EXPECT_TRUE(has(refusal(s.path / "loop.pt"), "more than 40 links on the way"));
  put(s.path / "file", "x");
  EXPECT_TRUE(has(refusal(s.path / "file" / "w.pt"), "cannot open the folder " + (s.path / "file").string()));
  ASSERT_EQ(::mkfifo((s.path / "fifo.pt").c_str(), 0644), 0);
  EXPECT_TRUE(has(refusal(s.path / "fifo.pt"), "it is not a regular file"));
  EXPECT_TRUE(has(refusal(s.dir("folder.pt")), "it is not a regular file"));
  if (::geteuid() != 0) {
    const fs::path closed = s.dir("closed");
    put(closed / "w.pt", "w");
    ::chmod(closed.c_str(), 0600);  // no search permission
    EXPECT_TRUE(has(refusal(closed / "w.pt"), "Permission denied"));
    ::chmod(closed.c_str(), 0755);
  }
}
