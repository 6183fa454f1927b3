// The network layer's own tests (src/net/): the one mapping of libcurl
// results and HTTP statuses, the retry policy on a fake clock, and the
// client against a loopback port nothing listens on.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "instance/sdk/concurrently.hpp"
#include "instance/sdk/retry.hpp"
#include "instance/sdk/startup_budget.hpp"
#include "instance/testing.hpp"
#include "net/errors.hpp"
#include "net/http.hpp"
#include "support/http_server.hpp"
#include "support/overlap.hpp"

namespace instance::net {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

Response answer(long status) {
  Response r;
  r.status = status;
  return r;
}

Response no_reply(CURLcode curl, std::string message = "Connection refused") {
  Response r;
  r.curl = curl;
  r.curl_message = std::move(message);
  return r;
}

TEST(NetErrors, OneMappingForStatusesAndTransport) {
  EXPECT_EQ(map_result(answer(404)), Errc::not_found);
  EXPECT_EQ(map_result(answer(410)), Errc::not_found);
  EXPECT_EQ(map_result(answer(409)), Errc::conflict);
  EXPECT_EQ(map_result(answer(412)), Errc::conflict);
  EXPECT_EQ(map_result(answer(423)), Errc::locked);
  EXPECT_EQ(map_result(answer(401)), Errc::permission);
  EXPECT_EQ(map_result(answer(403)), Errc::permission);
  EXPECT_EQ(map_result(answer(507)), Errc::no_space);
  EXPECT_EQ(map_result(answer(413)), Errc::invalid);
  EXPECT_EQ(map_result(answer(500)), Errc::unavailable);
  EXPECT_EQ(map_result(answer(503)), Errc::unavailable);
  EXPECT_EQ(map_result(answer(425)), Errc::unavailable);
  EXPECT_EQ(map_result(answer(429)), Errc::unavailable);
  EXPECT_EQ(map_result(answer(501)), Errc::unsupported);
  EXPECT_EQ(map_result(answer(505)), Errc::unsupported);
  EXPECT_EQ(map_result(answer(301)), Errc::invalid);
  EXPECT_EQ(map_result(answer(400)), Errc::invalid);
  EXPECT_EQ(map_result(answer(200)), Errc::internal);  // not a failure: a caller bug
  EXPECT_EQ(map_result(answer(0)), Errc::malformed);
  EXPECT_EQ(map_result(no_reply(CURLE_COULDNT_CONNECT)), Errc::unavailable);
  EXPECT_EQ(map_result(no_reply(CURLE_OPERATION_TIMEDOUT)), Errc::timeout);
  EXPECT_EQ(map_result(no_reply(CURLE_PEER_FAILED_VERIFICATION)), Errc::unavailable);
  EXPECT_EQ(map_result(no_reply(CURLE_WRITE_ERROR)), Errc::malformed);
  EXPECT_EQ(map_result(no_reply(CURLE_UNSUPPORTED_PROTOCOL)), Errc::invalid);
}

TEST(NetErrors, RetryableAndMayHaveAppliedKeepTransportApartFromStatus) {
  EXPECT_TRUE(is_retryable(answer(425)));
  EXPECT_FALSE(may_have_applied(answer(425)));
  EXPECT_TRUE(is_retryable(answer(500)));
  EXPECT_TRUE(may_have_applied(answer(500)));
  EXPECT_TRUE(is_retryable(answer(503)));
  EXPECT_FALSE(may_have_applied(answer(503)));
  for (long s : {501L, 505L, 507L, 508L, 511L, 412L, 404L, 401L}) {
    EXPECT_FALSE(is_retryable(answer(s))) << s;
  }
  // Nothing was sent: retry, and the server cannot have applied it.
  for (CURLcode c : {CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_SSL_CONNECT_ERROR}) {
    EXPECT_TRUE(is_retryable(no_reply(c))) << c;
    EXPECT_FALSE(may_have_applied(no_reply(c))) << c;
  }
  // Sent, answer lost: retry, but the server may have carried it out.
  for (CURLcode c : {CURLE_OPERATION_TIMEDOUT, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2,
                     CURLE_HTTP2_STREAM}) {
    EXPECT_TRUE(is_retryable(no_reply(c))) << c;
    EXPECT_TRUE(may_have_applied(no_reply(c))) << c;
  }
  EXPECT_FALSE(is_retryable(no_reply(CURLE_PEER_FAILED_VERIFICATION)));
  EXPECT_FALSE(is_retryable(no_reply(CURLE_WRITE_ERROR)));
}

TEST(NetErrors, MessagesNameTheContextTheResultAndAHint) {
  auto e = make_error("get a at https://dav.example/state", answer(404));
  EXPECT_EQ(e.code, Errc::not_found);
  EXPECT_EQ(e.message, "get a at https://dav.example/state: HTTP 404 Not Found");

  e = make_error("get a at h", answer(599));
  EXPECT_EQ(e.message, "get a at h: HTTP 599");

  e = make_error("get a at h", answer(302));
  EXPECT_NE(e.message.find("redirects are not followed"), std::string::npos) << e.message;

  e = make_error("put a at h", no_reply(CURLE_PEER_FAILED_VERIFICATION, "SSL certificate problem"));
  EXPECT_EQ(e.code, Errc::unavailable);
  EXPECT_NE(e.message.find("no reply (SSL certificate problem)"), std::string::npos);
  EXPECT_NE(e.message.find("--ca-file"), std::string::npos) << e.message;

  Response capped = no_reply(CURLE_WRITE_ERROR, "Failure writing output");
  capped.body_too_large = true;
  e = make_error("list at h", capped);
  EXPECT_EQ(e.code, Errc::malformed);
  EXPECT_EQ(e.message, "list at h: reply body exceeds the size cap");
}

TEST(NetResponse, HeadersAreFoundWhateverTheirCase) {
  Response r;
  r.headers = {{"etag", "\"v1\""}, {"Date", "Sun, 29 Nov 2026 11:35:08 GMT"}};
  EXPECT_EQ(r.header("ETag"), "\"v1\"");
  EXPECT_EQ(r.header("DATE"), "Sun, 29 Nov 2026 11:35:08 GMT");
  EXPECT_EQ(r.header("Lock-Token"), "");
}

// The pauses of a chain that keeps failing, until it gives up.
std::vector<Duration> pauses_until_give_up(FakeClock& clock, const RetryPolicy& policy,
                                           std::uint64_t seed, int* attempts = nullptr) {
  Retry retry(policy, clock, seed);
  std::vector<Duration> out;
  while (true) {
    (void)retry.begin_attempt(1s);
    auto pause = retry.next_pause();
    if (!pause) break;
    out.push_back(*pause);
    EXPECT_TRUE(retry.wait(*pause, "get a at h: no reply"));
  }
  if (attempts) *attempts = retry.attempts();
  return out;
}

TEST(NetRetry, ASeedReplaysTheSamePauses) {
  const RetryPolicy policy{.initial_backoff = 50ms, .max_backoff = 2s, .deadline = 20s};
  FakeClock a, b, c;
  const auto first = pauses_until_give_up(a, policy, 42);
  const auto again = pauses_until_give_up(b, policy, 42);
  const auto other = pauses_until_give_up(c, policy, 43);
  ASSERT_GT(first.size(), 5u);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
}

TEST(NetRetry, BackoffDoublesToItsCapWithEqualJitter) {
  const RetryPolicy policy{.initial_backoff = 100ms, .max_backoff = 1s, .deadline = 60s};
  FakeClock clock;
  const auto pauses = pauses_until_give_up(clock, policy, 7);
  ASSERT_GT(pauses.size(), 6u);
  Duration backoff = 100ms;
  for (const auto pause : pauses) {
    EXPECT_GE(pause, backoff / 2);
    EXPECT_LE(pause, backoff);
    backoff = std::min<Duration>(backoff * 2, 1s);
  }
}

TEST(NetRetry, GivesUpBeforeTheDeadlineOnTheInjectedClock) {
  const RetryPolicy policy{.initial_backoff = 50ms, .max_backoff = 2s, .deadline = 10s};
  FakeClock clock;
  const MonoTime start = clock.monotonic();
  int attempts = 0;
  const auto pauses = pauses_until_give_up(clock, policy, 1, &attempts);
  const Duration spent = clock.monotonic() - start;
  EXPECT_LT(spent, 10s);
  EXPECT_GT(spent, 10s - 2s);  // it stopped only when the next pause would cross the deadline
  EXPECT_EQ(attempts, static_cast<int>(pauses.size()) + 1);
}

TEST(NetRetry, LaterAttemptsGetTheTimeLeftBetweenFloorAndCap) {
  const RetryPolicy policy{.initial_backoff = 50ms, .max_backoff = 2s, .deadline = 3s};
  FakeClock clock;
  Retry retry(policy, clock, 5);
  EXPECT_EQ(retry.begin_attempt(10s), 10s);  // the first attempt: the whole request timeout
  clock.advance(1s);
  EXPECT_EQ(retry.begin_attempt(10s), 2s);
  EXPECT_EQ(retry.begin_attempt(500ms), 500ms);
  clock.advance(1900ms);
  EXPECT_EQ(retry.begin_attempt(10s, 200ms), 200ms);
  EXPECT_EQ(retry.remaining(), 100ms);
  clock.advance(1s);
  EXPECT_EQ(retry.remaining(), Duration::zero());
  EXPECT_EQ(retry.next_pause(), std::nullopt);
  EXPECT_EQ(retry.attempts(), 4);
}

// The guard's clock and a store's may differ (a test's fake clock beside
// the system clock): the budget lends its time left, not a point in time.
// Before, the store took the guard's deadline as a time on its own clock,
// long past there: no retry at all (a chezdav reset failed a CI run so).
TEST(NetRetry, AStartupBudgetOnAnotherClockLendsItsTimeLeft) {
  FakeClock guard_clock;
  FakeClock store_clock;
  store_clock.advance(240h);  // far ahead of the guard's, as the system clock is
  const StartupBudget budget(guard_clock, 5s, nullptr);
  guard_clock.advance(1s);
  EXPECT_EQ(budget.remaining(), 4s);
  Retry retry({.initial_backoff = 50ms, .max_backoff = 2s, .deadline = 20s}, store_clock, 3);
  EXPECT_EQ(retry.remaining(), 4s);
  (void)retry.begin_attempt(1s);
  EXPECT_TRUE(retry.next_pause().has_value());
  guard_clock.advance(10s);
  EXPECT_EQ(budget.remaining(), Duration::zero());
  Retry late({.initial_backoff = 50ms, .max_backoff = 2s, .deadline = 20s}, store_clock, 3);
  (void)late.begin_attempt(1s);
  EXPECT_EQ(late.next_pause(), std::nullopt);  // the budget ran out: one attempt only
}

TEST(NetClient, AClosedPortIsATransportErrorARetryMayCure) {
  // A bound socket that does not listen: connections to it are refused.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x";

  auto client = Client::create({}).value();
  const Response r = client->perform({.url = url, .max_body = 1024, .timeout = 2s});
  ::close(fd);
  EXPECT_EQ(r.curl, CURLE_COULDNT_CONNECT) << r.curl_message;
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.curl_message.empty());
  EXPECT_TRUE(is_retryable(r));
  EXPECT_FALSE(may_have_applied(r));
  const Error e = make_error("get x at " + url, r);
  EXPECT_EQ(e.code, Errc::unavailable);
  EXPECT_TRUE(e.message.starts_with("get x at " + url + ": no reply (")) << e.message;
}

// Request::on_data (etcd's watch): a 200 answer's body goes to the callback
// as it arrives, which may end the transfer; another answer is kept as ever.
TEST(NetClient, AStreamedAnswerGoesToItsCallbackWhichMayEndIt) {
  testing::HttpServer server("stream", [](const testing::HttpRequest& request) {
    testing::HttpReply reply;
    if (request.target == "/missing") reply.status = 404;
    reply.body = request.target == "/missing" ? "no such thing" : "one\ntwo\nthree\n";
    return reply;
  });
  auto client = Client::create({}).value();
  std::string seen;
  Request request{.url = server.url() + "/stream", .max_body = 1024, .timeout = 5s};
  request.on_data = [&](std::string_view chunk) {
    seen.append(chunk);
    return true;
  };
  Response r = client->perform(request);
  EXPECT_TRUE(r.success()) << r.curl_message;
  EXPECT_EQ(seen, "one\ntwo\nthree\n");
  EXPECT_TRUE(r.body.empty());
  EXPECT_FALSE(r.stopped);

  request.on_data = [&](std::string_view) { return false; };
  r = client->perform(request);
  EXPECT_EQ(r.curl, CURLE_WRITE_ERROR);
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.body_too_large);

  int calls = 0;
  request.url = server.url() + "/missing";
  request.on_data = [&](std::string_view) { return ++calls > 0; };
  r = client->perform(request);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "no such thing");
  EXPECT_EQ(calls, 0);
}

TEST(NetClient, RequestsFromSeveralThreadsGoOutTogetherUpToMaxConnections) {
  testing::Overlap overlap(3);
  testing::HttpServer server("overlap", [&](const testing::HttpRequest& request) {
    overlap.hold();
    return testing::HttpReply{.body = request.target};
  });
  auto client = Client::create({.max_connections = 3}).value();
  std::vector<Response> answers(9);
  // Six threads for three connections: three wait for a connection each time.
  for_each_concurrently(answers.size(), 6, [&](std::size_t i) {
    answers[i] = client->perform(
        {.url = server.url() + "/" + std::to_string(i), .max_body = 64, .timeout = 20s});
  });
  for (std::size_t i = 0; i < answers.size(); ++i) {
    EXPECT_TRUE(answers[i].success()) << i << ": " << answers[i].curl_message;
    EXPECT_EQ(answers[i].body, "/" + std::to_string(i));
  }
  EXPECT_EQ(overlap.most(), 3) << "three at once, never more";
  EXPECT_EQ(server.connections(), 3);
  // One after another, a request takes the connection used last.
  const Response again = client->perform({.url = server.url() + "/again", .max_body = 64});
  EXPECT_TRUE(again.success()) << again.curl_message;
  EXPECT_EQ(again.new_connections, 0);
  EXPECT_EQ(server.connections(), 3);
}

TEST(NetClient, ByDefaultOneConnectionCarriesOneRequestAtATime) {
  testing::Overlap overlap(2, 100ms);  // never met: each request waits 100 ms alone
  testing::HttpServer server("one", [&](const testing::HttpRequest&) {
    overlap.hold();
    return testing::HttpReply{.body = "ok"};
  });
  auto client = Client::create({}).value();
  std::vector<Response> answers(4);
  for_each_concurrently(answers.size(), 4, [&](std::size_t i) {
    answers[i] = client->perform({.url = server.url() + "/", .max_body = 64, .timeout = 20s});
  });
  for (const auto& r : answers) EXPECT_TRUE(r.success()) << r.curl_message;
  EXPECT_EQ(overlap.most(), 1);
  EXPECT_EQ(server.connections(), 1);
}

TEST(NetClient, RefusesSchemesOtherThanHttp) {
  auto client = Client::create({}).value();
  const Response r = client->perform({.url = "file:///etc/passwd", .max_body = 1 << 20});
  EXPECT_EQ(r.curl, CURLE_UNSUPPORTED_PROTOCOL);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(map_result(r), Errc::invalid);
}

}  // namespace
}  // namespace instance::net
