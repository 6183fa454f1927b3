// The WebDAV store: sending with retries (instance/sdk/attempts.hpp), and the server
// clock check.
#include <algorithm>

#include "instance/sdk/attempts.hpp"
#include "instance/sdk/timeouts.hpp"
#include "instance/time.hpp"
#include "store.hpp"

namespace instance::webdav {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

WebDavStore::Sent WebDavStore::send(net::Request request, const Settle& settle) {
  const StoreTimeouts timeouts = timeouts_.get();
  const net::Attempts how{.retry = {.initial_backoff = options_.initial_backoff,
                                    .max_backoff = options_.max_backoff,
                                    .deadline = timeouts.retry_deadline},
                          .request_timeout = timeouts.request_timeout};
  auto attempt = [&](const net::AttemptInfo& info) {
    request.timeout = info.timeout;
    const auto attempt_start = steady_clock::now();
    const WallTime sent_at = options_.clock->wall();
    net::Response response = http_->perform(request);
    if (options_.stats) {
      // An authentication challenge answered within the attempt is a
      // request too.
      options_.stats->requests.fetch_add(static_cast<std::uint64_t>(std::max(1, response.replies)),
                                         std::memory_order_relaxed);
      options_.stats->new_connections.fetch_add(
          static_cast<std::uint64_t>(std::max(0L, response.new_connections)),
          std::memory_order_relaxed);
      if (info.number > 1) options_.stats->retries.fetch_add(1, std::memory_order_relaxed);
    }
    const auto ms = std::chrono::duration_cast<milliseconds>(steady_clock::now() - attempt_start);
    options_.logger->debug("webdav request",
                           {{"method", request.method},
                            {"url", redact_url(request.url)},
                            {"result", net::describe(response)},
                            {"attempt", std::to_string(info.number)},
                            {"new_connections", std::to_string(response.new_connections)},
                            {"ms", std::to_string(ms.count())}});
    check_date(response, sent_at);
    const bool retry = net::is_retryable(response) && !(settle && settle(response));
    const bool applied = net::may_have_applied(response);
    std::string why =
        retry ? request.method + " " + redact_url(request.url) + ": " + net::describe(response)
              : std::string();
    return net::Tried<net::Response>{std::move(response), retry, applied, std::move(why)};
  };
  auto on_retry = [&](const net::AttemptInfo&, std::string_view, Duration pause) {
    options_.logger->debug(
        "webdav retry",
        {{"method", request.method},
         {"url", redact_url(request.url)},
         {"delay_ms", std::to_string(std::chrono::duration_cast<milliseconds>(pause).count())}});
  };
  auto done = net::run_attempts(how, *options_.clock, attempt, on_retry);
  return Sent{.response = std::move(done.outcome),
              .maybe_applied_before = done.may_have_applied_before,
              .attempts = done.attempts};
}

void WebDavStore::check_date(const net::Response& response, WallTime sent_at) {
  date_check_.check(
      response.header("Date"), sent_at, *options_.clock, timeouts_, *options_.logger,
      "the WebDAV server's clock and ours disagree by more than the allowed skew; lease expiry "
      "is judged on our clock: synchronise the clocks (NTP)",
      where_);
}

}  // namespace instance::webdav
