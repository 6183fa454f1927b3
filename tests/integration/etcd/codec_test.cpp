// The etcd store's pure helpers: base64, range ends, int64 fields, errors.
#include <gtest/gtest.h>

#include "codec.hpp"

namespace instance::etcd {
namespace {

TEST(EtcdCodec, Base64RoundTripsEveryByte) {
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  for (std::size_t n = 0; n <= bytes.size(); n += 37) {
    const auto part = bytes.substr(0, n);
    EXPECT_EQ(base64_decode(base64_encode(part)), part) << n;
  }
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("/p/a"), "L3AvYQ==");  // as etcd's gateway writes it
}

TEST(EtcdCodec, Base64DecodeIsStrict) {
  for (const char* bad : {"Zg=", "Zg", "Z===", "Zm9v\n", "Zm 9", "Zh==", "Zm9=", "=Zm9",
                          "Zg==Zg==", "Zm-v", "Zm_v"}) {
    EXPECT_EQ(base64_decode(bad), std::nullopt) << bad;
  }
}

TEST(EtcdCodec, PrefixRangeEndCoversExactlyThePrefix) {
  EXPECT_EQ(prefix_range_end("/p/"), "/p0");
  EXPECT_EQ(prefix_range_end("a"), "b");
  EXPECT_EQ(prefix_range_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_range_end(std::string("a\xfe\xff\xff", 4)), std::string("a\xff", 2));
  EXPECT_EQ(prefix_range_end(std::string("\xff\xff", 2)), std::string(1, '\0'));
  EXPECT_EQ(prefix_range_end(""), std::string(1, '\0'));
  // Every key with the prefix sorts below the end; the next prefix does not.
  const std::string prefix = "/x/instances/";
  const std::string end = prefix_range_end(prefix);
  EXPECT_LT(prefix + std::string(8, '\xff'), end);
  EXPECT_GE(std::string("/x/instances0"), end);
  EXPECT_LT(std::string("/x/instances.lease"), prefix);  // a sibling stays outside
}

TEST(EtcdCodec, Int64FieldsAreStringsOrNumbersAndZeroWhenAbsent) {
  const auto j = nlohmann::json::parse(R"({"a":"42","b":7,"c":"-3","d":"x","e":"","f":1.5})");
  EXPECT_EQ(int64_field(j, "a"), 42);
  EXPECT_EQ(int64_field(j, "b"), 7);
  EXPECT_EQ(int64_field(j, "c"), -3);
  EXPECT_EQ(int64_field(j, "d"), std::nullopt);
  EXPECT_EQ(int64_field(j, "e"), std::nullopt);
  EXPECT_EQ(int64_field(j, "f"), std::nullopt);
  EXPECT_EQ(int64_field(j, "absent"), 0);
  EXPECT_EQ(int64_field(nlohmann::json::array(), "a"), std::nullopt);
}

TEST(EtcdCodec, OnlyPositiveDecimalsAreRevisions) {
  EXPECT_EQ(parse_revision("17"), 17);
  for (const char* bad : {"0", "-1", "+1", "", "1x", " 1", "abc", "99999999999999999999"}) {
    EXPECT_EQ(parse_revision(bad), std::nullopt) << bad;
  }
}

TEST(EtcdCodec, GatewayErrorsMapOntoCodes) {
  auto parse = [](const char* body) { return parse_gateway_error(body).value(); };
  EXPECT_EQ(map_grpc(parse(R"({"error":"etcdserver: requested lease not found","code":5})")),
            Errc::not_found);
  EXPECT_EQ(
      map_grpc(parse(
          R"({"message":"etcdserver: authentication failed, invalid user ID or password","code":3})")),
      Errc::permission);
  EXPECT_EQ(map_grpc(parse(R"({"message":"etcdserver: user name is empty","code":3})")),
            Errc::permission);
  EXPECT_EQ(map_grpc(parse(R"({"message":"etcdserver: invalid auth token","code":16})")),
            Errc::permission);
  EXPECT_EQ(map_grpc(parse(R"({"message":"etcdserver: mvcc: database space exceeded","code":8})")),
            Errc::no_space);
  EXPECT_EQ(map_grpc(parse(R"({"message":"etcdserver: request is too large","code":3})")),
            Errc::invalid);
  const auto unavailable = parse(R"({"message":"etcdserver: request timed out","code":14})");
  EXPECT_EQ(map_grpc(unavailable), Errc::unavailable);
  EXPECT_TRUE(is_retryable(unavailable));
  EXPECT_FALSE(is_retryable(parse(R"({"message":"x","code":5})")));
  // A member that stopped being the leader: another member may answer.
  const auto not_leader = parse(R"({"message":"etcdserver: not leader","code":9})");
  EXPECT_EQ(map_grpc(not_leader), Errc::unavailable);
  EXPECT_TRUE(is_retryable(not_leader));
  EXPECT_FALSE(is_retryable(parse(R"({"message":"other precondition","code":9})")));
  EXPECT_TRUE(is_retryable(parse(R"({"message":"etcdserver: leader changed","code":14})")));
  EXPECT_EQ(parse(R"({"error":"only error","code":5})").message, "only error");
  EXPECT_EQ(parse_gateway_error("not json"), std::nullopt);
  EXPECT_EQ(parse_gateway_error(R"({"code":"5"})"), std::nullopt);
}

}  // namespace
}  // namespace instance::etcd
