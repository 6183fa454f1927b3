// Credential files and variables, shared by every remote store's URL parser:
// one line, trimmed, bounded; messages name the file and never the secret.
#include "instance/credentials.hpp"

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

}  // namespace
}  // namespace instance::testing
