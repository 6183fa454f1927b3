#include "instance/record.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "instance/time.hpp"

namespace instance {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

WallTime t0() { return parse_rfc3339("2026-11-29T11:47:21.858966496Z").value(); }

TEST(Record, EncodesTheOriginalShapeFirst) {
  const Record r{.id = "go-1", .started_at = t0(), .expires_at = t0() + 5s};
  EXPECT_EQ(encode_record(r), R"({"id":"go-1","started_at":"2026-11-29T11:47:21.858966496Z",)"
                              R"("expires_at":"2026-11-29T11:47:26.858966496Z"})");
}

TEST(Record, EncodesExtraFieldsAfterTheOriginalOnes) {
  const Record r{.id = "a",
                 .started_at = t0(),
                 .expires_at = t0() + 2min,
                 .host = "h1",
                 .pid = 42,
                 .renewed_at = t0() + 1s,
                 .boot_id = "b1",
                 .machine_id = "m1",
                 .pid_ns = "pid:[4026531836]"};
  const auto j = nlohmann::json::parse(encode_record(r));
  EXPECT_EQ(j.at("machine_id"), "m1");
  EXPECT_EQ(j.at("host"), "h1");
  EXPECT_EQ(j.at("pid"), 42);
  EXPECT_EQ(j.at("renewed_at"), "2026-11-29T11:47:22.858966496Z");
  EXPECT_EQ(decode_record(encode_record(r)).value(), r);
}

TEST(Record, DecodesWhatTheOriginalWrites) {
  const auto r = decode_record(R"({"id":"go-1","started_at":"2026-03-01T12:00:00Z",)"
                               R"("expires_at":"2026-03-01T12:00:00.123456789+02:00"})")
                     .value();
  EXPECT_EQ(r.id, "go-1");
  EXPECT_EQ(format_rfc3339(r.started_at), "2026-03-01T12:00:00Z");
  EXPECT_EQ(format_rfc3339(r.expires_at), "2026-03-01T10:00:00.123456789Z");
  EXPECT_TRUE(r.host.empty());
  EXPECT_FALSE(r.pid.has_value());
}

TEST(Record, MatchesKeysCaseInsensitivelyAndIgnoresUnknownFields) {
  const auto r = decode_record(R"({"ID":"x","Expires_At":"2026-03-01T12:00:00Z",)"
                               R"("future":{"nested":[1,2]},"HOST":"h"})")
                     .value();
  EXPECT_EQ(r.id, "x");
  EXPECT_EQ(r.host, "h");
  EXPECT_EQ(format_rfc3339(r.expires_at), "2026-03-01T12:00:00Z");
}

TEST(Record, TheLastMatchingKeyWinsAsInGo) {
  EXPECT_EQ(decode_record(R"({"ID":"upper","id":"exact","expires_at":"2026-03-01T12:00:00Z"})")
                .value()
                .id,
            "exact");
  EXPECT_EQ(decode_record(R"({"id":"exact","ID":"upper","expires_at":"2026-03-01T12:00:00Z"})")
                .value()
                .id,
            "upper");
}

TEST(Record, RefusesWhatIsNotARecord) {
  for (const char* bad :
       {"", "null", "[]", "\"x\"", "{", "{\"id\":\"x\"}",  // no expires_at
        R"({"expires_at":"2026-03-01T12:00:00Z"})",        // no id
        R"({"id":"","expires_at":"2026-03-01T12:00:00Z"})",
        R"({"id":5,"expires_at":"2026-03-01T12:00:00Z"})", R"({"id":"x","expires_at":"tomorrow"})",
        R"({"id":"x","expires_at":null})",
        R"({"id":"x","expires_at":"2026-03-01T12:00:00Z","pid":"12"})",
        R"({"id":"x","expires_at":"2026-03-01T12:00:00Z","host":7})", "\xff\xfe"}) {
    auto r = decode_record(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code, Errc::malformed);
    }
  }
}

TEST(Record, RefusesDeepNestingWithoutCrashing) {
  const std::string deep = R"({"id":"x","expires_at":"2026-03-01T12:00:00Z","x":)" +
                           std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(decode_record(deep).error().code, Errc::malformed);
}

TEST(RecordKey, EscapesTheId) {
  EXPECT_EQ(record_key("pod/1").value().str(), "instances/pod%2F1");
  EXPECT_EQ(record_key("..").value().str(), "instances/%2E%2E");
  EXPECT_EQ(record_key("").error().code, Errc::invalid);
}

}  // namespace
}  // namespace instance
