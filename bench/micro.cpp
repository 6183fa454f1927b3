// Micro-benchmarks (Google Benchmark) of the guard's pure hot paths: record
// encoding and decoding, key escaping and parsing, and WebDAV listing
// (PROPFIND 207 reply) parsing, the work a claim does per record listed.
//
//   build/bench/instance-guard-micro                      full run
//   build/bench/instance-guard-micro --benchmark_min_time=0.01s   quick check
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "instance/key.hpp"
#include "instance/record.hpp"
#include "instance/time.hpp"
#ifdef INSTANCE_BENCH_WEBDAV
#include "listing.hpp"
#endif

namespace instance {
namespace {

using namespace std::chrono_literals;

Record sample_record() {
  const WallTime now = *parse_rfc3339("2026-11-29T11:47:21.858966496Z");
  return Record{.id = "3f9a0c2be17d4a55",
                .started_at = now,
                .expires_at = now + 2min,
                .host = "web-7c9d8f-x2k4p",
                .pid = 4242,
                .renewed_at = now,
                .boot_id = "0b5e1c36-8f0e-4d8e-9c1a-2f4d7e9b1a33",
                .pid_ns = "pid:[4026531836]",
                .mode = "exclusive"};
}

void BM_EncodeRecord(benchmark::State& state) {
  const Record r = sample_record();
  for (auto _ : state) benchmark::DoNotOptimize(encode_record(r));
}
BENCHMARK(BM_EncodeRecord);

void BM_DecodeRecord(benchmark::State& state) {
  const std::string bytes = encode_record(sample_record());
  for (auto _ : state) benchmark::DoNotOptimize(decode_record(bytes));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_DecodeRecord);

// The original Go guard's record: three fields, nanosecond times.
void BM_DecodeOriginalRecord(benchmark::State& state) {
  const std::string bytes =
      R"({"id":"go-1","started_at":"2026-11-29T11:47:21.858966496Z","expires_at":"2026-11-29T11:47:26.858966496Z"})";
  for (auto _ : state) benchmark::DoNotOptimize(decode_record(bytes));
}
BENCHMARK(BM_DecodeOriginalRecord);

void BM_EscapeSegment(benchmark::State& state) {
  // A plain id (nothing to escape) and one with bytes that need %XX.
  const std::string raw = state.range(0) == 0 ? "3f9a0c2be17d4a55" : "web/7c9d 8f:x2k4p@host";
  for (auto _ : state) benchmark::DoNotOptimize(escape_segment(raw));
}
BENCHMARK(BM_EscapeSegment)->Arg(0)->Arg(1)->ArgName("needs_escaping");

void BM_UnescapeSegment(benchmark::State& state) {
  const std::string escaped = *escape_segment("web/7c9d 8f:x2k4p@host");
  for (auto _ : state) benchmark::DoNotOptimize(unescape_segment(escaped));
}
BENCHMARK(BM_UnescapeSegment);

void BM_RecordKey(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(record_key("3f9a0c2be17d4a55"));
}
BENCHMARK(BM_RecordKey);

void BM_ParseKey(benchmark::State& state) {
  const std::string text = "instances/web%2F7c9d%208f%3Ax2k4p%40host";
  for (auto _ : state) benchmark::DoNotOptimize(Key::parse(text));
}
BENCHMARK(BM_ParseKey);

#ifdef INSTANCE_BENCH_WEBDAV
// A PROPFIND Depth 1 reply of `instances/` with N records, as Apache sends it.
std::string multistatus(int n) {
  std::string body =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n"
      "<D:response><D:href>/bench/instances/</D:href><D:propstat><D:prop><D:resourcetype>"
      "<D:collection/></D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status>"
      "</D:propstat></D:response>\n";
  for (int i = 0; i < n; ++i) {
    body += "<D:response><D:href>/bench/instances/bench-stale-" + std::to_string(i) +
            "</D:href><D:propstat><D:prop><D:resourcetype/><D:getetag>\"a3c-5f1e" +
            std::to_string(i) +
            "\"</D:getetag></D:prop><D:status>HTTP/1.1 200 OK</D:status>"
            "</D:propstat></D:response>\n";
  }
  return body + "</D:multistatus>\n";
}

void BM_ParseListing(benchmark::State& state) {
  const std::string body = multistatus(static_cast<int>(state.range(0)));
  const std::vector<std::string> base{"bench", "instances"};
  for (auto _ : state) {
    auto entries = webdav::parse_multistatus(body, base);
    if (!entries) state.SkipWithError(entries.error().message.c_str());
    benchmark::DoNotOptimize(entries);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ParseListing)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->ArgName("records");
#endif

}  // namespace
}  // namespace instance

BENCHMARK_MAIN();
