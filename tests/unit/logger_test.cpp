#include "instance/logger.hpp"

#include <gtest/gtest.h>

namespace instance {
namespace {

TEST(RedactUrl, RemovesUserInfo) {
  EXPECT_EQ(redact_url("webdavs://alice:s3cret@dav.example.org/state"),
            "webdavs://REDACTED@dav.example.org/state");
  EXPECT_EQ(redact_url("redis://:pw@127.0.0.1:6379/0"), "redis://REDACTED@127.0.0.1:6379/0");
  EXPECT_EQ(redact_url("webdav://h/p@q"), "webdav://h/p@q");  // '@' in the path is not user info
}

TEST(RedactUrl, RemovesSensitiveQueryParameters) {
  EXPECT_EQ(redact_url("https://h/p?access_token=abc&prefix=x&Password=y#f"),
            "https://h/p?access_token=REDACTED&prefix=x&Password=REDACTED#f");
}

TEST(RedactUrl, LeavesPlainUrlsAlone) {
  EXPECT_EQ(redact_url("file:///var/lib/x"), "file:///var/lib/x");
  EXPECT_EQ(redact_url("/plain/path"), "/plain/path");
}

TEST(NullLogger, AcceptsEverything) {
  auto log = null_logger();
  log->error("nothing happens", {{"k", "v"}});
  EXPECT_EQ(log, null_logger());
}

}  // namespace
}  // namespace instance
