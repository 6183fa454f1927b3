// The WebDAV store: sending with retries, and the server clock check.
#include <algorithm>
#include <random>
#include <thread>

#include "http_date.hpp"
#include "instance/time.hpp"
#include "store.hpp"

namespace instance::webdav {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

WebDavStore::Sent WebDavStore::send(HttpRequest request) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  const auto start = steady_clock::now();
  const auto deadline = start + options_.retry_deadline;
  auto backoff = std::max(options_.initial_backoff, milliseconds(1));
  Sent sent;
  while (true) {
    const auto remaining = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
    request.timeout = sent.attempts == 0
                          ? options_.request_timeout
                          : std::clamp(remaining, milliseconds(1), options_.request_timeout);
    const auto attempt_start = steady_clock::now();
    sent.response = http_->perform(request);
    ++sent.attempts;
    if (options_.stats) {
      options_.stats->requests.fetch_add(1, std::memory_order_relaxed);
      options_.stats->new_connections.fetch_add(
          static_cast<std::uint64_t>(std::max(0L, sent.response.new_connections)),
          std::memory_order_relaxed);
      if (sent.attempts > 1) options_.stats->retries.fetch_add(1, std::memory_order_relaxed);
    }
    const auto ms = std::chrono::duration_cast<milliseconds>(steady_clock::now() - attempt_start);
    options_.logger->debug("webdav request",
                           {{"method", request.method},
                            {"url", redact_url(request.url)},
                            {"result", describe_result(sent.response)},
                            {"attempt", std::to_string(sent.attempts)},
                            {"new_connections", std::to_string(sent.response.new_connections)},
                            {"ms", std::to_string(ms.count())}});
    check_date(sent.response);
    if (!is_retryable(sent.response)) return sent;

    // Equal jitter: half the backoff fixed, half random.
    const auto half = backoff / 2;
    const auto delay = half + milliseconds(std::uniform_int_distribution<std::int64_t>(
                                  0, std::max<std::int64_t>(0, (backoff - half).count()))(random));
    backoff = std::min(backoff * 2, options_.max_backoff);
    if (steady_clock::now() + delay >= deadline) return sent;
    if (may_have_applied(sent.response)) sent.maybe_applied_before = true;
    options_.logger->debug("webdav retry", {{"method", request.method},
                                            {"url", redact_url(request.url)},
                                            {"delay_ms", std::to_string(delay.count())}});
    std::this_thread::sleep_for(delay);
  }
}

void WebDavStore::check_date(const HttpResponse& response) {
  if (response.date.empty() || skew_warned_.load(std::memory_order_relaxed)) return;
  const auto server = parse_http_date(response.date);
  if (!server) return;
  const auto local = options_.clock->wall();
  const auto skew = local > *server ? local - *server : *server - local;
  if (skew <= options_.max_clock_skew) return;
  if (skew_warned_.exchange(true)) return;
  options_.logger->warn(
      "the WebDAV server's clock and ours disagree by more than the allowed skew; lease expiry "
      "is judged on our clock: synchronise the clocks (NTP)",
      {{"store", where_},
       {"server_date", response.date},
       {"local_time", format_rfc3339(local)},
       {"skew", format_duration(std::chrono::duration_cast<Duration>(skew))},
       {"max_skew", format_duration(options_.max_clock_skew)}});
}

}  // namespace instance::webdav
