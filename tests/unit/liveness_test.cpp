// Liveness locks: held while the holder (or a descendant) keeps the
// descriptor, gone with it; a symlink planted as the folder is refused.
#include "instance/liveness.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "support/temp_dir.hpp"

namespace instance::testing {
namespace {

class LivenessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() / "live";
    ::setenv("INSTANCE_GUARD_LIVENESS_DIR", dir_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("INSTANCE_GUARD_LIVENESS_DIR"); }
  TempDir tmp_;
  std::filesystem::path dir_;
};

TEST_F(LivenessTest, HeldWhileTheLockLivesAndGoneAfter) {
  EXPECT_FALSE(liveness_lock_held(::getpid())) << "no lock taken yet";
  {
    auto lock = LivenessLock::hold();
    ASSERT_TRUE(lock) << lock.error().message;
    EXPECT_EQ(lock->path().parent_path(), dir_);
    EXPECT_TRUE(liveness_lock_held(::getpid()));
    LivenessLock moved = std::move(*lock);
    EXPECT_TRUE(liveness_lock_held(::getpid())) << "moving the lock keeps it";
  }
  EXPECT_FALSE(liveness_lock_held(::getpid()));
  EXPECT_FALSE(std::filesystem::exists(dir_ / ("pid-" + std::to_string(::getpid()))))
      << "the file is removed with the lock";
}

TEST_F(LivenessTest, ADescendantKeepsItHeldAfterTheHolderDied) {
  // The holder's orphans come back to us, so we can reap the grandchild.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    auto lock = LivenessLock::hold();
    if (!lock) ::_exit(1);
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::pause();  // keeps the inherited descriptor until killed
      ::_exit(0);
    }
    (void)!::write(report[1], &grandchild, sizeof grandchild);
    ::_exit(0);  // no destructors run: the file stays, as after a SIGKILL
  }
  ::close(report[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(::read(report[0], &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  ::close(report[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the holder could not lock";

  EXPECT_TRUE(liveness_lock_held(holder)) << "the holder is gone but its grandchild runs";
  ::kill(grandchild, SIGKILL);
  ASSERT_EQ(::waitpid(grandchild, &status, 0), grandchild);
  EXPECT_FALSE(liveness_lock_held(holder)) << "the last descendant is gone";
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST_F(LivenessTest, NoLockForAPidNobodyHolds) {
  EXPECT_FALSE(liveness_lock_held(0));
  EXPECT_FALSE(liveness_lock_held(-5));
  EXPECT_FALSE(liveness_lock_held(std::int64_t{1} << 40));
}

TEST_F(LivenessTest, ASymlinkInPlaceOfTheFolderIsRefused) {
  std::filesystem::create_directory(tmp_.path() / "elsewhere");
  std::filesystem::create_directory_symlink(tmp_.path() / "elsewhere", dir_);
  auto lock = LivenessLock::hold();
  ASSERT_FALSE(lock);
  EXPECT_NE(lock.error().message.find("not a folder"), std::string::npos) << lock.error().message;
}

}  // namespace
}  // namespace instance::testing
