// The WebDAV store: sending with retries, and the server clock check.
#include <algorithm>

#include "instance/time.hpp"
#include "net/retry.hpp"
#include "store.hpp"

namespace instance::webdav {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

WebDavStore::Sent WebDavStore::send(net::Request request, const Settle& settle) {
  const StoreTimeouts timeouts = timeouts_.get();
  net::Retry retry({.initial_backoff = options_.initial_backoff,
                    .max_backoff = options_.max_backoff,
                    .deadline = timeouts.retry_deadline},
                   *options_.clock, net::random_seed());
  Sent sent;
  while (true) {
    request.timeout = retry.begin_attempt(timeouts.request_timeout);
    const auto attempt_start = steady_clock::now();
    const WallTime sent_at = options_.clock->wall();
    sent.response = http_->perform(request);
    sent.attempts = retry.attempts();
    if (options_.stats) {
      // An authentication challenge answered within the attempt is a
      // request too.
      options_.stats->requests.fetch_add(
          static_cast<std::uint64_t>(std::max(1, sent.response.replies)),
          std::memory_order_relaxed);
      options_.stats->new_connections.fetch_add(
          static_cast<std::uint64_t>(std::max(0L, sent.response.new_connections)),
          std::memory_order_relaxed);
      if (sent.attempts > 1) options_.stats->retries.fetch_add(1, std::memory_order_relaxed);
    }
    const auto ms = std::chrono::duration_cast<milliseconds>(steady_clock::now() - attempt_start);
    options_.logger->debug("webdav request",
                           {{"method", request.method},
                            {"url", redact_url(request.url)},
                            {"result", net::describe(sent.response)},
                            {"attempt", std::to_string(sent.attempts)},
                            {"new_connections", std::to_string(sent.response.new_connections)},
                            {"ms", std::to_string(ms.count())}});
    check_date(sent.response, sent_at);
    if (!net::is_retryable(sent.response)) return sent;
    if (settle && settle(sent.response)) return sent;
    const auto pause = retry.next_pause();
    if (!pause) return sent;
    if (net::may_have_applied(sent.response)) sent.maybe_applied_before = true;
    options_.logger->debug(
        "webdav retry",
        {{"method", request.method},
         {"url", redact_url(request.url)},
         {"delay_ms", std::to_string(std::chrono::duration_cast<milliseconds>(*pause).count())}});
    retry.wait(*pause, request.method + " " + redact_url(request.url) + ": " +
                           net::describe(sent.response));
  }
}

void WebDavStore::check_date(const net::Response& response, WallTime sent_at) {
  date_check_.check(
      response.header("Date"), sent_at, *options_.clock, timeouts_, *options_.logger,
      "the WebDAV server's clock and ours disagree by more than the allowed skew; lease expiry "
      "is judged on our clock: synchronise the clocks (NTP)",
      where_);
}

}  // namespace instance::webdav
