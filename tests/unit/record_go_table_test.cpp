// The original Go guard's verdict on hand-written records, one row each, and
// ours. The original decodes a record with Go's encoding/json into a struct
// {ID string `json:"id"`; StartedAt, ExpiresAt time.Time} and judges it live
// while now < expires_at; a record Go cannot decode counts as live
// (unreadable). docs/record-format.md states the rules these rows come from.
//
// The safety rule checked on every row: where we do not reach Go's verdict we
// say "unreadable" (which refuses, as live does), never "expired".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "instance/record.hpp"
#include "instance/time.hpp"

namespace instance {
namespace {

enum class Verdict { live, expired, unreadable };

const char* name(Verdict v) {
  switch (v) {
    case Verdict::live:
      return "live";
    case Verdict::expired:
      return "expired";
    case Verdict::unreadable:
      return "unreadable";
  }
  return "?";
}

const WallTime kNow = parse_rfc3339("2026-06-01T00:00:00Z").value();

Verdict judge(std::string_view bytes) {
  auto record = decode_record(bytes);
  if (!record) return Verdict::unreadable;
  return record->live_at(kNow) ? Verdict::live : Verdict::expired;
}

struct Row {
  std::string json;  // %P% is a past time, %F% a future one (quotes included)
  Verdict go;        // the original's verdict
  Verdict ours;
  const char* source;  // where Go's verdict comes from
};

std::string expand(std::string text) {
  for (auto [token, value] :
       {std::pair{"%P%", "\"2026-01-01T00:00:00Z\""}, {"%F%", "\"2026-12-31T00:00:00Z\""}}) {
    for (std::size_t at; (at = text.find(token)) != std::string::npos;) {
      text.replace(at, 3, value);
    }
  }
  return text;
}

// A record whose expires_at is the given JSON string body (no quotes).
std::string expiring(std::string_view time) {
  return R"({"id":"a","expires_at":")" + std::string(time) + "\"}";
}

std::string nested(std::size_t depth) {
  return R"({"id":"a","expires_at":%P%,"x":)" + std::string(depth - 1, '[') +
         std::string(depth - 1, ']') + "}";
}

constexpr auto L = Verdict::live;
constexpr auto E = Verdict::expired;
constexpr auto U = Verdict::unreadable;

const char* const kDecode =
    "encoding/json decode.go object(): keys in document order, each into "
    "the field it selects, so the last one wins";
const char* const kFold =
    "encoding/json: exact name, else foldName (Unicode simple folding; "
    "U+017F folds to S, U+212A to K)";
const char* const kNull = "Time.UnmarshalJSON and string fields: null is a no-op";
const char* const kRaw =
    "Time.UnmarshalJSON passes the raw bytes between the quotes to the "
    "parser, escapes not decoded (go.dev/issue/47353)";
const char* const kScanner =
    "encoding/json scanner.go: RFC 8259 syntax (checkValid before "
    "decoding)";
const char* const kParse = "time.Parse(RFC3339) / parseRFC3339: layout 2006-01-02T15:04:05Z07:00";
const char* const kStricter =
    "ours is stricter on purpose (no id or expires_at is unreadable, "
    "hence live)";
const char* const kUncertain =
    "Go releases differ (strict RFC 3339 checks, comma since 1.17): "
    "uncertain: erring to unreadable";
const char* const kRange =
    "Go holds years 0000-9999; beyond int64 nanoseconds (1677-2262) ours "
    "is unreadable, hence live";
const char* const kOwnFields = "Go ignores this field; ours decodes it and refuses a bad value";

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      // The original's own shape and the live/expired boundary.
      {R"({"id":"a","started_at":%P%,"expires_at":%P%})", E, E, "the original's own records"},
      {R"({"id":"a","started_at":%P%,"expires_at":%F%})", L, L, "the original's own records"},
      {R"({"id":"a","expires_at":%F%})", L, L, "started_at absent: zero time, unused"},
      {expiring("2026-06-01T00:00:00Z"), E, E, "live while now.Before(expires_at); equal is not"},
      {expiring("2026-06-01T00:00:00.000000001Z"), L, L, "one nanosecond later is live"},
      {expiring("2026-06-01T00:00:00.0000000009Z"), E, E,
       "parseNanoseconds keeps nine digits and truncates the rest"},
      {expiring("2026-06-01T00:00:00.000000001999Z"), L, L,
       "parseNanoseconds keeps nine digits and truncates the rest"},
      {expiring("2026-06-01T01:00:00+02:00"), E, E, "parseRFC3339: the offset is subtracted"},
      {expiring("2026-05-31T23:30:00-01:00"), L, L, "parseRFC3339: the offset is subtracted"},
      {expiring("2026-01-01T00:00:00-00:00"), E, E, "parseRFC3339: -00:00 is offset zero"},
      {R"({"id":"a","expires_at":%P%} )"
       "\n",
       E, E, kScanner},
      // Keys: case folding, duplicates, null.
      {R"({"ID":"a","EXPIRES_AT":%P%})", E, E, kFold},
      {R"({"Id":"a","Expires_At":%F%})", L, L, kFold},
      {R"({"id":"a","expires_at":%P%,"EXPIRES_AT":%F%})", L, L, kDecode},
      {R"({"id":"a","EXPIRES_AT":%P%,"expires_at":%F%})", L, L, kDecode},
      {R"({"id":"a","expires_at":%F%,"EXPIRES_AT":%P%})", E, E, kDecode},
      {R"({"id":"a","expires_at":%P%,"expires_at":%F%})", L, L, kDecode},
      {R"({"id":"a","expires_at":%F%,"expires_at":%P%})", E, E, kDecode},
      {R"({"id":"a","expires_at":%F%,"expires_at":null})", L, L, kNull},
      {R"({"id":"a","expires_at":%P%,"Expires_At":null})", E, E, kNull},
      {"{\"id\":\"a\",\"expire\xC5\xBF_at\":%F%}", L, L, kFold},
      {"{\"id\":\"a\",\"expires_at\":%P%,\"EXPIRE\xC5\xBF_AT\":%F%}", L, L, kFold},
      {R"({"id":"a","expires_at":%F%,"\u0065xpires_at":%P%})", E, E,
       "keys are unquoted before they are matched"},
      {R"({"id":"a","expires_at":%P%,"expires_at ":%F%})", E, E, kFold},
      {"{\"id\":\"a\",\"expires_at\":%P%,\"exp\xC4\xB1res_at\":%F%}", E, E,
       "U+0131 (dotless i) does not fold to i"},
      {"{\"id\":\"a\",\"expires_at\":%P%,\"exp\xC4\xB0res_at\":%F%}", E, E,
       "U+0130 (dotted capital I) is not in the fold set of i: no match"},
      {R"({"id":"a","expires_at":%P%,"expiresat":%F%})", E, E, kFold},
      // A bad value anywhere fails the whole document, whatever comes later.
      {R"({"id":"a","expires_at":%P%,"expires_at":"garbage"})", U, U,
       "an UnmarshalJSON error aborts decoding"},
      {R"({"id":"a","expires_at":"garbage","expires_at":%P%})", U, U,
       "an UnmarshalJSON error aborts decoding"},
      {R"({"id":"a","expires_at":%P%,"EXPIRES_AT":5})", U, U,
       "Time.UnmarshalJSON: input is not a JSON string"},
      {R"({"id":"a","expires_at":%P%,"expires_at":{}})", U, U,
       "Time.UnmarshalJSON: input is not a JSON string"},
      {R"({"id":5,"expires_at":%P%})", U, U, "UnmarshalTypeError for a number into a string"},
      {R"({"id":["a"],"expires_at":%P%})", U, U, "UnmarshalTypeError for an array into a string"},
      {R"({"id":"a","started_at":"garbage","expires_at":%F%})", U, U,
       "every field that is present must decode"},
      // Unknown fields are skipped whatever they hold, if the JSON is valid.
      {R"({"id":"a","expires_at":%P%,"x":{"deep":[1,-2.5e+3,{"y":null}],"t":true}})", E, E,
       "unknown fields are skipped"},
      {R"({"id":"a","expires_at":%P%,"n":1e400})", E, E, "a skipped number is never converted"},
      {R"({"id":"a","expires_at":%P%,"x":"\ud800"})", E, E,
       "unquote replaces a lone surrogate by U+FFFD"},
      {"{\"id\":\"a\xFF\",\"expires_at\":%P%}", E, E, "unquote replaces invalid UTF-8 by U+FFFD"},
      {R"({"id":"\u0061","expires_at":%P%})", E, E, "escapes in a string field are decoded"},
      {nested(10000), E, E, "scanner.go: nesting up to 10000 levels"},
      {nested(10001), U, U, "scanner.go: exceeded max depth"},
      // Syntax Go's scanner refuses.
      {"\xEF\xBB\xBF{\"id\":\"a\",\"expires_at\":%P%}", U, U, "scanner.go: no byte order mark"},
      {R"({"id":"a","expires_at":%P%,})", U, U, kScanner},
      {R"({"id":"a","expires_at":%P%}x)", U, U, "scanner.go: text after the top-level value"},
      {R"({"id":"a","expires_at":%P%}{})", U, U, "scanner.go: text after the top-level value"},
      {R"(/*c*/{"id":"a","expires_at":%P%})", U, U, "scanner.go: no comments"},
      {R"({'id':'a','expires_at':%P%})", U, U, kScanner},
      {R"({"id":"a","expires_at":%P%,"x":01})", U, U, "scanner.go: no leading zeros"},
      {R"({"id":"a","expires_at":%P%,"x":tru})", U, U, kScanner},
      {"{\"id\":\"a\x01\",\"expires_at\":%P%}", U, U, "scanner.go: control byte in a string"},
      {R"({"id":"a","expires_at":%P%,"x":"\q"})", U, U, "scanner.go: unknown escape"},
      {R"([{"id":"a","expires_at":%P%}])", U, U, "UnmarshalTypeError: array into a struct"},
      {"\"x\"", U, U, "UnmarshalTypeError: string into a struct"},
      {"", U, U, "unexpected end of JSON input"},
      // What the original reads as expired and we refuse.
      {"null", E, U, kStricter},
      {"{}", E, U, kStricter},
      {R"({"id":"a"})", E, U, kStricter},
      {R"({"id":"a","expires_at":null})", E, U, kStricter},
      {R"({"expires_at":%P%})", E, U, kStricter},
      {R"({"id":"","expires_at":%P%})", E, U, kStricter},
      {R"({"id":"a","expires_at":%P%,"pid":"12"})", E, U, kOwnFields},
      {R"({"id":"a","expires_at":%P%,"host":7})", E, U, kOwnFields},
      {R"({"id":"a","expires_at":%P%,"renewed_at":"soon"})", E, U, kOwnFields},
      // Time spellings (expired if read, so a wrong acceptance shows).
      {expiring("2026-01-01T00:00:00\\u005a"), U, U, kRaw},
      {expiring("\\u0032026-01-01T00:00:00Z"), U, U, kRaw},
      {expiring("2026-01-01t00:00:00Z"), U, U, "time.Parse: the layout's 'T' matches only 'T'"},
      {expiring("2026-01-01T00:00:00z"), U, U, "time.Parse: Z07:00 takes 'Z' or a sign only"},
      {expiring("2025-12-31T23:59:60Z"), U, U, "time.Parse: second out of range (no leap second)"},
      {expiring("2026-01-01T24:00:00Z"), U, U, "time.Parse: hour out of range"},
      {expiring("2026-01-01T00:60:00Z"), U, U, "time.Parse: minute out of range"},
      {expiring("2025-02-29T00:00:00Z"), U, U, "time.Parse: day out of range"},
      {expiring("2024-02-29T00:00:00Z"), E, E, "time.Parse: 2024 is a leap year"},
      {expiring("2026-04-31T00:00:00Z"), U, U, "time.Parse: day out of range"},
      {expiring("2026-13-01T00:00:00Z"), U, U, "time.Parse: month out of range"},
      {expiring("2026-00-01T00:00:00Z"), U, U, "time.Parse: month out of range"},
      {expiring("2026-01-00T00:00:00Z"), U, U, "time.Parse: day out of range"},
      {expiring("2026-01-01T00:00:00+25:00"), U, U, "time.Parse: offset hour out of range"},
      {expiring("2026-01-01T00:00:00+0200"), U, U, "time.Parse: Z07:00 needs hh:mm"},
      {expiring("2026-01-01T00:00:00+02"), U, U, "time.Parse: Z07:00 needs hh:mm"},
      {expiring("2026-01-01T00:00:00"), U, U, "time.Parse: no zone"},
      {expiring("2026-01-01 00:00:00Z"), U, U, "time.Parse: the layout's 'T' matches only 'T'"},
      {expiring("2026-01-01T00:00:00.Z"), U, U, "time.Parse: '.' without a digit is no fraction"},
      {expiring("2026-01-01T00:00:00+00:00.5"), U, U, "time.Parse: extra text"},
      {expiring("2026-01-01T00:00:00ZZ"), U, U, "time.Parse: extra text"},
      {expiring(" 2026-01-01T00:00:00Z"), U, U, kParse},
      {expiring("12026-01-01T00:00:00Z"), U, U, "time.Parse: a year is four digits"},
      {expiring("\xEF\xBC\x92\xEF\xBC\x90\xEF\xBC\x92\xEF\xBC\x96-01-01T00:00:00Z"), U, U,
       "time.Parse: ASCII digits only"},
      {expiring("2026-01-01T00:00:00,5Z"), E, U, kUncertain},
      {expiring("2026-01-01T1:00:00Z"), E, U, kUncertain},
      {expiring("2026-01-01T00:00:00+24:00"), E, U, kUncertain},
      {expiring("2026-01-01T00:00:00+00:60"), E, U, kUncertain},
      {expiring("9999-12-31T23:59:59Z"), L, U, kRange},
      {expiring("1000-01-01T00:00:00Z"), E, U, kRange},
      {expiring("0000-01-01T00:00:00Z"), E, U, kRange},
      {R"({"id":"a","started_at":"1000-01-01T00:00:00Z","expires_at":%F%})", L, U, kRange},
  };
  return table;
}

TEST(RecordGoTable, HasAtLeastFiftyRows) { EXPECT_GE(rows().size(), 50u); }

TEST(RecordGoTable, EveryRowGetsItsVerdict) {
  for (const Row& row : rows()) {
    const std::string json = expand(row.json);
    EXPECT_EQ(name(judge(json)), std::string(name(row.ours)))
        << json.substr(0, 200) << "\n  source: " << row.source;
  }
}

TEST(RecordGoTable, WhereWeDisagreeWithGoWeSayUnreadable) {
  for (const Row& row : rows()) {
    EXPECT_TRUE(row.ours == row.go || row.ours == Verdict::unreadable)
        << expand(row.json).substr(0, 200) << ": Go " << name(row.go) << ", ours "
        << name(row.ours);
  }
}

TEST(RecordGoTable, TheLastIdKeyWinsAsInGo) {
  // The original skips the record whose id is its own: it must see the id Go sees.
  EXPECT_EQ(decode_record(expand(R"({"id":"me","ID":"other","expires_at":%F%})"))->id, "other");
  EXPECT_EQ(decode_record(expand(R"({"ID":"other","id":"me","expires_at":%F%})"))->id, "me");
  EXPECT_EQ(decode_record(expand(R"({"id":"me","Id":null,"expires_at":%F%})"))->id, "me");
  EXPECT_EQ(decode_record(expand("{\"id\":\"a\xFF\",\"expires_at\":%F%}"))->id, "a\xEF\xBF\xBD");
  EXPECT_EQ(decode_record(expand(R"({"id":"\ud83d\ude00\udc00","expires_at":%F%})"))->id,
            "\xF0\x9F\x98\x80\xEF\xBF\xBD");
}

}  // namespace
}  // namespace instance
