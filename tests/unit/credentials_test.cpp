// Credential files and variables, shared by every remote store's URL parser:
// one line, trimmed, bounded; messages name the file and never the secret.
#include "instance/sdk/credentials.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.hpp"

namespace instance::testing {
namespace {

class SecretFile : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& bytes) {
    const auto path = dir_.path() / "secret";
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  TempDir dir_;
};

TEST_F(SecretFile, OneLineWithTheEditorsNewlineTrimmed) {
  auto secret = read_secret_file(write("s3cr3t-value\n"), "password");
  ASSERT_TRUE(secret) << secret.error().message;
  EXPECT_EQ(*secret, "s3cr3t-value");
}

TEST_F(SecretFile, RefusalsNameTheFileAndNeverTheContent) {
  const std::string big(kMaxSecretFileSize + 1, 'x');
  for (const std::string& bytes : {std::string("s3cr3t-one\ns3cr3t-two\n"), std::string(" \n"),
                                   std::string("s3cr3t\0tail", 11), big}) {
    const auto path = write(bytes);
    auto secret = read_secret_file(path, "token");
    ASSERT_FALSE(secret) << "accepted " << bytes.size() << " bytes";
    EXPECT_EQ(secret.error().code, Errc::invalid);
    EXPECT_NE(secret.error().message.find("the token file " + path.string()), std::string::npos)
        << secret.error().message;
    EXPECT_EQ(secret.error().message.find("s3cr3t"), std::string::npos) << secret.error().message;
  }
  auto missing = read_secret_file(dir_.path() / "absent", "password");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot read the password file"), std::string::npos);
}

TEST_F(SecretFile, ReadCredentialsFilesWinOverTheEnvironmentThenTheUrlUser) {
  OpenOptions options;
  options.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == kTokenEnv) return "env-token";
    if (name == kPasswordEnv) return "env-password";
    if (name == kUserEnv) return "env-user";
    return std::nullopt;
  };
  // No file: both secrets and the user from the environment.
  auto given = read_credentials(options, "url-user");
  ASSERT_TRUE(given) << given.error().message;
  EXPECT_EQ(given->token, std::optional<std::string>("env-token"));
  EXPECT_EQ(given->password, std::optional<std::string>("env-password"));
  EXPECT_EQ(given->user, "env-user");
  // A password file: the environment's token is not looked at.
  options.password_file = write("file-password\n");
  given = read_credentials(options, "url-user");
  ASSERT_TRUE(given) << given.error().message;
  EXPECT_EQ(given->token, std::nullopt);
  EXPECT_EQ(given->password, std::optional<std::string>("file-password"));
  // The user: the options', else the environment's, else the URL's.
  options.user = "option-user";
  EXPECT_EQ(read_credentials(options, "url-user")->user, "option-user");
  options.user.clear();
  options.getenv = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_EQ(read_credentials(options, "url-user")->user, "url-user");
  EXPECT_EQ(read_credentials(options)->user, "");
  // An unreadable file is the read_secret_file refusal, the token's first.
  options.token_file = dir_.path() / "absent";
  options.password_file = dir_.path() / "absent-too";
  given = read_credentials(options);
  ASSERT_FALSE(given);
  EXPECT_NE(given.error().message.find("cannot read the token file"), std::string::npos)
      << given.error().message;
}

TEST(PercentEncode, LettersDigitsAndTheUnreservedStayTheRestIsUppercaseHex) {
  EXPECT_EQ(percent_encode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(percent_encode("a b/c%d:e"), "a%20b%2Fc%25d%3Ae");
  EXPECT_EQ(percent_encode(std::string_view("\0\xC3\xA9", 3)), "%00%C3%A9");
  EXPECT_EQ(percent_encode("a~b:c", "-._"), "a%7Eb%3Ac");
  EXPECT_EQ(percent_encode("a~b:c", "-._~:"), "a~b:c");
  EXPECT_EQ(percent_encode(""), "");
  for (const std::string raw : {"x y", "\x01\xFF%", "../a"}) {
    EXPECT_EQ(percent_decode(percent_encode(raw)), std::optional<std::string>(raw));
  }
}

TEST(CredentialEnv, ComesFromTheOptionsLookupAndAnEmptyValueIsUnset) {
  OpenOptions options;
  options.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "SET") return "value";
    if (name == "EMPTY") return "";
    return std::nullopt;
  };
  EXPECT_EQ(credential_env(options, "SET"), std::optional<std::string>("value"));
  EXPECT_EQ(credential_env(options, "EMPTY"), std::nullopt);
  EXPECT_EQ(credential_env(options, "UNSET"), std::nullopt);
}

TEST(PasswordInUrl, OneRuleForEveryStoreUrl) {
  constexpr std::string_view advice = "give it with --password-file";
  EXPECT_EQ(password_in_url("etcd://host:2379/p", advice), std::nullopt);
  EXPECT_EQ(password_in_url("etcd://alice@host:2379/p", advice), std::nullopt);
  EXPECT_EQ(password_in_url("/a/plain/path", advice), std::nullopt);

  auto why = password_in_url("redis://alice:Pw-7c1e@host/0", advice);
  ASSERT_TRUE(why);
  EXPECT_TRUE(why->starts_with("a password in the URL is refused")) << *why;
  EXPECT_TRUE(why->ends_with(advice)) << *why;
  EXPECT_EQ(why->find("Pw-7c1e"), std::string::npos) << *why;

  // A password holding an unescaped '/' leaves its '@' after the "path".
  why = password_in_url("webdav://alice:Pw/7c1e@host/dav", advice);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("must be escaped as %40"), std::string::npos) << *why;
  EXPECT_EQ(why->find("7c1e"), std::string::npos) << *why;
}

TEST(TakeUrlUser, SplitsAndDecodesTheUserName) {
  std::string_view authority = "al%40ice@host:2379";
  auto user = take_url_user("etcd://al%40ice@host:2379", authority);
  ASSERT_TRUE(user) << user.error().message;
  EXPECT_EQ(*user, "al@ice");
  EXPECT_EQ(authority, "host:2379");

  authority = "host:2379";
  EXPECT_EQ(take_url_user("etcd://host:2379", authority).value(), "");
  EXPECT_EQ(authority, "host:2379");

  authority = "al%4@host";
  auto bad = take_url_user("etcd://al%4@host", authority);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::invalid);
  EXPECT_NE(bad.error().message.find("bad percent escape in the user name"), std::string::npos);
}

TEST(SplitStoreUrl, OneSplitForEveryParserInOneOrderOfRules) {
  auto split = [](std::string_view url, bool query = false) {
    return split_store_url(url, url.substr(url.find("://") + 3), "use a file", query);
  };
  auto parts = split("x://bob%40home@h:1/a/b");
  ASSERT_TRUE(parts) << parts.error().message;
  EXPECT_EQ(parts->user, "bob@home");
  EXPECT_EQ(parts->authority, "h:1");
  EXPECT_EQ(parts->path, "/a/b");
  EXPECT_EQ(parts->query, "");
  EXPECT_EQ(split("x://h")->path, "");
  auto queried = split("x://h/0?k=v", true);
  ASSERT_TRUE(queried) << queried.error().message;
  EXPECT_EQ(queried->path, "/0");
  EXPECT_EQ(queried->query, "k=v");
  // Each rule, and the password rule first: its message never echoes it.
  auto secret = split("x://u:pa ss?@h/");
  ASSERT_FALSE(secret);
  EXPECT_EQ(secret.error().message.find("pa ss"), std::string::npos) << secret.error().message;
  EXPECT_NE(secret.error().message.find("use a file"), std::string::npos);
  EXPECT_NE(split("x://h/a b").error().message.find("spaces or control characters"),
            std::string::npos);
  EXPECT_NE(split("x://h/?q").error().message.find("a query or fragment is not allowed"),
            std::string::npos);
  EXPECT_NE(split("x://h/#f", true).error().message.find("a fragment is not allowed"),
            std::string::npos);
  EXPECT_NE(split("x://u@/p").error().message.find("no host"), std::string::npos);
  EXPECT_NE(split("x://:1/p").error().message.find("no host"), std::string::npos);
  EXPECT_NE(split("x://%zz@h/").error().message.find("bad percent escape"), std::string::npos);
}

TEST(Printable, EscapesControlNonAsciiAndBackslashAndCuts) {
  EXPECT_EQ(printable("plain text"), "plain text");
  EXPECT_EQ(printable(std::string_view("a\0b\n\\\xC3\xA9", 7)), "a\\x00b\\x0A\\x5C\\xC3\\xA9");
  EXPECT_EQ(printable("abcdef", 3), "abc...");
  EXPECT_EQ(shown_store_url("webdav://u:secret@host/a\tb"), "webdav://REDACTED@host/a\\x09b");
}

}  // namespace
}  // namespace instance::testing
