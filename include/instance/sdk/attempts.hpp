// Store SDK. The one attempt loop of every network store (WebDAV, CS3, etcd, Redis,
// PostgreSQL): an operation is tried, and tried again while its failure is
// one a later attempt may cure, under a RetryPolicy on the store's clock
// (net::Retry: backoff with equal jitter, one deadline per operation, the
// start-up budget's time left). A store writes one attempt; the loop owns
// the counting, the timeouts, the pauses, what the start-up budget hears,
// and whether an earlier attempt may have taken effect. It is the place a
// store's "try another endpoint" goes: an attempt learns its number.
//
// Two forms:
//   - run_attempts(): an attempt returns Tried<T>, any outcome T (an HTTP
//     response, a libpq result) and whether to try again. The last outcome
//     is returned, whether it succeeded, failed for good or gave up, so a
//     store that reads the answer itself (a status) still can.
//   - run_until_done(): an attempt returns Attempt<T>, a value or an
//     AttemptError (an Error, whether a retry may cure it, whether it may
//     have applied). The one failure type of the stores.
//
// An attempt is told whether an earlier one may have taken effect
// (may_have_applied_before), so a write can recognise its own earlier,
// unanswered success (a 412 that our own first PUT explains). Only the
// attempts followed by another count: the last one's effect is the
// caller's to judge from its outcome.
//
// Not thread-safe: one loop per operation, on one thread.
#pragma once

#include <chrono>
#include <expected>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/sdk/retry.hpp"

namespace instance::net {

// How an operation's attempts are made.
struct Attempts {
  RetryPolicy retry;
  std::chrono::milliseconds request_timeout{15000};  // each attempt's cap
  bool once = false;                                 // one attempt, never a retry
  std::uint64_t seed = random_seed();                // the jitter's (tests pass their own)
};

// What an attempt is told.
struct AttemptInfo {
  int number = 1;                        // 1 for the first
  std::chrono::milliseconds timeout{};   // its I/O budget (Retry::begin_attempt)
  bool may_have_applied_before = false;  // an earlier attempt may have taken effect
};

// What one attempt came to, for run_attempts().
template <class T>
struct Tried {
  T outcome;
  bool retry = false;             // a later attempt may cure it
  bool may_have_applied = false;  // it may have reached the server and taken effect
  std::string why;                // when retry: the failure, redacted (logs, the start-up budget)
};

// What an operation came to, for run_attempts().
template <class T>
struct Attempted {
  T outcome;                             // the last attempt's
  int attempts = 0;                      // made in all
  bool may_have_applied_before = false;  // an attempt before the last may have taken effect
  bool gave_up = false;  // the last still wanted a retry: the deadline (or `once`) ended it
};

// Called before each pause: the failed attempt, its failure and the pause.
using OnRetry = std::function<void(const AttemptInfo&, std::string_view why, Duration pause)>;

template <class F>
auto run_attempts(const Attempts& how, Clock& clock, F&& attempt, const OnRetry& on_retry = {})
    -> Attempted<decltype(attempt(std::declval<const AttemptInfo&>()).outcome)> {
  using T = decltype(attempt(std::declval<const AttemptInfo&>()).outcome);
  Retry retry(how.retry, clock, how.seed);
  AttemptInfo info;
  while (true) {
    info.timeout = retry.begin_attempt(how.request_timeout);
    info.number = retry.attempts();
    Tried<T> tried = attempt(std::as_const(info));
    if (!tried.retry) {
      return {std::move(tried.outcome), info.number, info.may_have_applied_before, false};
    }
    const auto pause = how.once ? std::nullopt : retry.next_pause();
    if (!pause) return {std::move(tried.outcome), info.number, info.may_have_applied_before, true};
    if (on_retry) on_retry(info, tried.why, *pause);
    info.may_have_applied_before = info.may_have_applied_before || tried.may_have_applied;
    retry.wait(*pause, tried.why);
  }
}

// The one failure of a store's attempt.
struct AttemptError {
  Error error;
  bool retryable = false;         // a later attempt may cure it
  bool may_have_applied = false;  // it may have reached the server and taken effect
};

template <class T>
using Attempt = std::expected<T, AttemptError>;

// The words for an attempt that timed out, the same in every store: how long
// it waited. No answer in time is not "no server": a message for
// Errc::timeout never suggests the server is down.
inline std::string no_answer_within(std::chrono::milliseconds waited) {
  return "no answer within " + std::to_string(waited.count()) + " ms (timed out)";
}

inline std::unexpected<AttemptError> attempt_error(Errc code, std::string message,
                                                   bool retryable = false,
                                                   bool may_have_applied = false) {
  return std::unexpected(
      AttemptError{Error{code, std::move(message)}, retryable, may_have_applied});
}

// What an operation came to, for run_until_done(): the value, or the last
// failure with the count of attempts.
template <class T>
struct Done {
  Attempt<T> result;
  int attempts = 0;
  bool may_have_applied_before = false;
  bool gave_up = false;  // the last failure was retryable: the deadline ended the chain
};

template <class F>
auto run_until_done(const Attempts& how, Clock& clock, F&& attempt, const OnRetry& on_retry = {})
    -> Done<typename decltype(attempt(std::declval<const AttemptInfo&>()))::value_type> {
  using T = typename decltype(attempt(std::declval<const AttemptInfo&>()))::value_type;
  auto done = run_attempts(
      how, clock,
      [&](const AttemptInfo& info) {
        Attempt<T> r = attempt(info);
        const bool retry = !r && r.error().retryable;
        const bool applied = !r && r.error().may_have_applied;
        std::string why = retry ? r.error().error.message : std::string();
        return Tried<Attempt<T>>{std::move(r), retry, applied, std::move(why)};
      },
      on_retry);
  return {std::move(done.outcome), done.attempts, done.may_have_applied_before, done.gave_up};
}

}  // namespace instance::net
