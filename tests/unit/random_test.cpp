// Random names and nonces come from the operating system's source
// (instance/sdk/random.hpp).
#include "instance/sdk/random.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>

namespace instance::testing {
namespace {

TEST(RandomHex, TwoLowercaseHexDigitsPerByte) {
  for (std::size_t bytes : {0, 1, 8, 16, 33}) {
    const std::string hex = random_hex(bytes);
    EXPECT_EQ(hex.size(), 2 * bytes);
    EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << hex;
  }
}

TEST(RandomHex, NeverTheSameTwice) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(random_hex(8)).second);
}

TEST(RandomBytes, FillsALargeBufferAndNotWithZeros) {
  std::array<unsigned char, 4096> bytes{};
  random_bytes(bytes);
  int zeros = 0;
  for (unsigned char b : bytes) zeros += b == 0 ? 1 : 0;
  EXPECT_LT(zeros, 100);  // about 16 expected
}

}  // namespace
}  // namespace instance::testing
