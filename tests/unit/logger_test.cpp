#include "instance/logger.hpp"

#include <gtest/gtest.h>

namespace instance {
namespace {

TEST(RedactUrl, RemovesUserInfo) {
  EXPECT_EQ(redact_url("webdavs://alice:s3cret@dav.example.org/state"),
            "webdavs://REDACTED@dav.example.org/state");
  EXPECT_EQ(redact_url("redis://:pw@127.0.0.1:6379/0"), "redis://REDACTED@127.0.0.1:6379/0");
  // Unescaped '#', '/' or '?' in a password: still nothing of it survives.
  EXPECT_EQ(redact_url("webdav://guard:pw#x/y?z@127.0.0.1:1/state"),
            "webdav://REDACTED@127.0.0.1:1/state");
  // An '@' in the path costs the host in the message, never a secret.
  EXPECT_EQ(redact_url("webdav://h/p@q"), "webdav://REDACTED@q");
}

TEST(RedactUrl, RemovesSensitiveQueryParameters) {
  EXPECT_EQ(redact_url("https://h/p?access_token=abc&prefix=x&Password=y#f"),
            "https://h/p?access_token=REDACTED&prefix=x&Password=REDACTED#f");
  EXPECT_EQ(redact_url("https://u:p@h/p?token=abc"), "https://REDACTED@h/p?token=REDACTED");
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
