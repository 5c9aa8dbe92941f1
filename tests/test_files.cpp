// Loading and saving filter files: load errors name the path; a failed save leaves the
// existing file intact and no temporary behind; what save() replaces (symbolic links, not
// regular files), long paths, permissions, and the temporaries of dead builds (issue #14).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "file_helpers.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using ribbon_test::contains_text;
using ribbon_test::error_message;
using ribbon_test::read_bytes;
using ribbon_test::write_bytes;

TEST(Files, LoadErrorsNameThePath) {
  ribbon_test::temp_dir dir;
  const std::string missing = dir.file("missing.rbn");
  const std::string directory = dir.file("a-directory");
  const std::string empty = dir.file("empty.rbn");
  const std::string text = dir.file("text.rbn");
  fs::create_directory(directory);
  write_bytes(empty, nullptr, 0);
  const std::string words = "this is not a ribbon filter, just some text in a file\n";
  write_bytes(text, reinterpret_cast<const unsigned char*>(words.data()), words.size());
  for (bool use_mmap : {true, false}) {
    ribbon::load_options lo;
    lo.use_mmap = use_mmap;
    for (const std::string& path : {missing, directory, empty, text}) {
      const std::string message = error_message([&] { (void)ribbon::filter::load(path, lo); });
      EXPECT_FALSE(message.empty()) << path << " loaded";
      EXPECT_TRUE(contains_text(message, path)) << "'" << message << "' does not name " << path;
    }
  }
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"a-directory", "empty.rbn", "text.rbn"}));
}

ribbon::filter some_filter(std::uint64_t n) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(23, 0, n);
  return ribbon::filter::build(keys.data(), n);
}

TEST(Files, SaveToAMissingDirectoryFailsAndLeavesNothing) {
  ribbon_test::temp_dir dir;
  const ribbon::filter f = some_filter(1000);
  const std::string path = (dir.path() / "no-such-dir" / "f.rbn").string();
  const std::string message = error_message([&] { f.save(path); });
  EXPECT_TRUE(contains_text(message, path)) << "'" << message << "'";
  EXPECT_TRUE(dir.entries().empty());
  EXPECT_FALSE(fs::exists(path));
}

TEST(Files, SaveBelowARegularFileFails) {
  ribbon_test::temp_dir dir;
  write_bytes(dir.file("plain-file"), reinterpret_cast<const unsigned char*>("x"), 1);
  const ribbon::filter f = some_filter(1000);
  const std::string path = dir.file("plain-file") + "/f.rbn";
  const std::string message = error_message([&] { f.save(path); });
  EXPECT_TRUE(contains_text(message, path)) << "'" << message << "'";
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"plain-file"});
}

TEST(Files, SaveOverADirectoryFailsAndRemovesTheTemporaryFile) {
  // The temporary file is created and written, then the rename fails: it must be removed.
  ribbon_test::temp_dir dir;
  fs::create_directory(dir.path() / "target");
  const ribbon::filter f = some_filter(1000);
  const std::string path = dir.file("target");
  const std::string message = error_message([&] { f.save(path); });
  EXPECT_TRUE(contains_text(message, path)) << "'" << message << "'";
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target"}) << "temporary file left behind";
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_TRUE(fs::is_empty(path));
}

/// Lowers the file size limit (and ignores SIGXFSZ) for its lifetime, so writes beyond
/// `bytes` fail with EFBIG.
class file_size_limit {
 public:
  explicit file_size_limit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    previous_ = signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~file_size_limit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, previous_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  void (*previous_)(int) = nullptr;
  bool ok_ = false;
};

TEST(Files, FailedWriteKeepsTheExistingFileIntact) {
  ribbon_test::temp_dir dir;
  const std::string path = dir.file("existing.rbn");
  const ribbon::filter old_filter = some_filter(500);
  old_filter.save(path);
  const std::vector<unsigned char> old_bytes = read_bytes(path);
  ASSERT_EQ(old_bytes, old_filter.serialize());
  const ribbon::filter big = some_filter(20000);  // ~20 KB
  ASSERT_GT(big.size_bytes(), 8 * old_bytes.size());
  std::string message;
  {
    file_size_limit limit(old_bytes.size() * 2);
    ASSERT_TRUE(limit.ok());
    message = error_message([&] { big.save(path); });
  }
  EXPECT_TRUE(contains_text(message, path)) << "'" << message << "'";
  EXPECT_EQ(read_bytes(path), old_bytes) << "the existing file changed";
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"existing.rbn"}) << "temporary file left";
  EXPECT_EQ(ribbon::filter::load(path).serialize(), old_bytes);
  // Once writes work again the same save succeeds.
  big.save(path);
  EXPECT_EQ(read_bytes(path), big.serialize());
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"existing.rbn"});
}

TEST(Files, SavedFilesGetTheUsualPermissions) {
  ribbon_test::temp_dir dir;
  const mode_t saved = ::umask(022);
  some_filter(100).save(dir.file("f.rbn"));
  ::umask(027);
  some_filter(100).save(dir.file("g.rbn"));
  ::umask(saved);
  struct stat st;
  ASSERT_EQ(::stat(dir.file("f.rbn").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::stat(dir.file("g.rbn").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

// ---------------------------------------------------------------------------------------------
// What save() replaces, and the temporaries of builds that died (issue #14).

TEST(Files, SaveFollowsASymbolicLinkAndReplacesItsTarget) {
  ribbon_test::temp_dir dir;
  fs::create_directory(dir.path() / "real");
  const std::string target = dir.file("real/target.rbn");
  some_filter(100).save(target);
  fs::create_symlink("real/target.rbn", dir.path() / "link.rbn");
  const ribbon::filter f = some_filter(1000);
  f.save(dir.file("link.rbn"));
  EXPECT_TRUE(fs::is_symlink(dir.path() / "link.rbn")) << "the link was replaced";
  EXPECT_EQ(read_bytes(target), f.serialize());
  EXPECT_EQ(dir.entries(dir.path() / "real"), std::vector<std::string>{"target.rbn"});
}

TEST(Files, SaveRefusesWhatIsNotARegularFileAndLeavesIt) {
  ribbon_test::temp_dir dir;
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  fs::create_directory(dir.path() / "directory");
  fs::create_symlink("fifo", dir.path() / "link-to-fifo");
  const ribbon::filter f = some_filter(100);
  for (const std::string name : {"fifo", "directory", "link-to-fifo"}) {
    const std::string path = dir.file(name);
    for (const std::string& message : {error_message([&] { f.save(path); }),
                                       error_message([&] { ribbon::check_output_path(path); })}) {
      EXPECT_TRUE(contains_text(message, "cannot write " + path + ": it is a ")) << message;
    }
  }
  EXPECT_TRUE(fs::is_fifo(dir.path() / "fifo"));
  EXPECT_TRUE(fs::is_symlink(dir.path() / "link-to-fifo"));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"directory", "fifo", "link-to-fifo"}));
}

TEST(Files, SaveTakesPathsUpToPathMax) {
  ribbon_test::temp_dir dir;
  std::string deep = dir.path().string();
  while (deep.size() < PATH_MAX - 300) {
    deep += "/" + std::string(200, 'd');
    fs::create_directory(deep);
  }
  const std::string longest = deep + "/" + std::string(PATH_MAX - 2 - deep.size(), 'f');
  ASSERT_EQ(longest.size(), static_cast<std::size_t>(PATH_MAX - 1));
  const ribbon::filter f = some_filter(100);
  f.save(longest);
  EXPECT_EQ(read_bytes(longest), f.serialize());
  const std::string message = error_message([&] { f.save(longest + "x"); });
  EXPECT_TRUE(contains_text(message, "path too long")) << message;
}

TEST(Files, SaveReclaimsDeadBuildsTemporariesButNoLiveOnes) {
  ribbon_test::temp_dir dir;
  const std::vector<unsigned char> image = some_filter(100).serialize();
  // Unlocked: what a build killed while writing leaves.
  write_bytes(dir.file(".ribbon-tmp-dead01"), image.data(), image.size());
  // Locked by a live build (this process, through its own open file description).
  write_bytes(dir.file(".ribbon-tmp-live01"), image.data(), image.size());
  const int live = ::open(dir.file(".ribbon-tmp-live01").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(live, 0);
  ASSERT_EQ(::flock(live, LOCK_EX), 0);
  // Not ours: another name, or not a filter.
  write_bytes(dir.file(".ribbon-tmp-dead012"), image.data(), image.size());
  write_bytes(dir.file(".ribbon-tmp-text01"), reinterpret_cast<const unsigned char*>("text"), 4);
  some_filter(200).save(dir.file("f.rbn"));
  ::close(live);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{".ribbon-tmp-dead012", ".ribbon-tmp-live01",
                                                     ".ribbon-tmp-text01", "f.rbn"}));
}

}  // namespace
