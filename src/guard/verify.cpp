// verify: exclusion without compare-and-set: write, settle, scan
// (docs/design/modes.md and arguments.md, "verify").
//
//   acquire  1. scan: refuse beside any live held or unreadable record of
//               another id (and reap stale ones); a live "claiming" one is a
//               collision (below);
//            2. write our record in state "claiming";
//            3. wait `settle`, the store's longest visibility lag;
//            4. scan again: another live held record -> remove ours and
//               refuse; another claiming one -> remove ours: a collision
//               (never "lowest id wins": a contender that already passed its
//               scan without seeing us would run beside us);
//            5. rewrite ours as held.
//            After a collision, back off a random time and start again at 1,
//            until options.startup_timeout has passed since the first try;
//            then refuse, naming the contender seen last. Contenders that
//            collided spread out, so one of them gets through; each attempt
//            is a full write-settle-scan, so the proof below holds for every
//            grant.
//   renew    rewrite ours, then scan: another live held record is a collision
//            the protocol could not prevent (a partition, a lag beyond
//            settle); the later claimant by (started_at, id) has lost.
//   release  delete ours.
//
// Why two contenders cannot both pass step 4: let wA, wB be the moments
// their step-2 writes are acknowledged. A's second scan starts at
// sA >= wA + settle; if it misses B's record then sA < wB + settle, so
// wA < wB. If B's also misses A's, wB < wA. Both cannot hold.
#include <algorithm>
#include <functional>
#include <random>
#include <string>

#include "instance/time.hpp"
#include "protocol.hpp"

namespace instance::detail {
namespace {

constexpr std::string_view kClaiming = "claiming";

class Verify final : public Protocol {
 public:
  Mode mode() const noexcept override { return Mode::verify; }
  std::string_view guarantee() const noexcept override {
    return "mutual exclusion while the store shows every acknowledged write within the settle "
           "time and clocks stay within max-skew";
  }

  std::expected<Holding, ClaimError> acquire(const Context& ctx, std::stop_token stop) override {
    const MonoTime first_try = ctx.clock.monotonic();
    const MonoTime deadline = first_try + ctx.options.startup_timeout;
    // Seeded from what tells contenders apart (their ids, their clocks), not
    // from a device: the simulator replays a seed exactly.
    std::mt19937_64 rng(std::hash<std::string>{}(ctx.options.id) ^
                        static_cast<std::uint64_t>(first_try.time_since_epoch().count()) ^
                        (static_cast<std::uint64_t>(ctx.self.pid) << 32));
    for (int collisions = 0;; ++collisions) {
      const MonoTime began = ctx.clock.monotonic();
      auto attempt = attempt_once(ctx, stop);
      if (attempt || !attempt.error().collided) {
        if (attempt) return std::move(*attempt);
        return std::unexpected(std::move(attempt.error().error));
      }
      const MonoTime now = ctx.clock.monotonic();
      if (now >= deadline) return std::unexpected(std::move(attempt.error().error));
      // Random backoff, growing with each collision, in units of how long
      // one attempt took here (at least 10 ms).
      const Duration unit = std::max<Duration>(now - began, std::chrono::milliseconds(10));
      const Duration::rep span = unit.count() << std::min(collisions, 3);
      const Duration nap = std::min(
          Duration{std::uniform_int_distribution<Duration::rep>(0, span)(rng)}, deadline - now);
      ctx.log.debug("collided with another claimer; trying again",
                    {{"contender", attempt.error().error.holder->record->id},  // is_claimer
                     {"retry_in", format_duration(nap)}});
      if (!ctx.clock.sleep_for(nap, stop)) {
        return std::unexpected(failure(Errc::cancelled, "claim cancelled"));
      }
    }
  }

  Renewal renew(const Context& ctx, Holding& held) override {
    if (auto renewed = renew_record(ctx, held); !renewed) return {Renewal::failed, renewed.error()};

    // Contenders still claiming will see us and withdraw; only a held record
    // is a collision.
    const ScanRules rules{.reap = false,
                          .margin = *ctx.options.max_skew,
                          .blocks = [](const Record& r) { return r.state != kClaiming; }};
    auto others = live_others(ctx, rules);
    if (!others) return {Renewal::failed, others.error()};
    for (const Seen& other : *others) {
      const bool we_are_later = std::tie(held.record.started_at, held.record.id) >
                                std::tie(other.record.started_at, other.record.id);
      if (we_are_later) {
        return {Renewal::lost,
                Error{Errc::lost, "collision: " + other.record.id + " (" + other.key.str() +
                                      ") claimed before us and is still live"}};
      }
      ctx.log.warn("collision: a later instance holds too; it should stand down",
                   {{"other", other.record.id}, {"key", other.key.str()}});
    }
    return {};
  }

  Result<void> release(const Context& ctx, Holding&) override { return remove_our_record(ctx); }

 private:
  // Why one attempt did not get the claim; `collided` when only another
  // claimer (a record still "claiming") was in the way.
  struct Missed {
    ClaimError error;
    bool collided = false;
  };

  static bool is_claimer(const ClaimError& refused) {
    return refused.error.code == Errc::another_instance && refused.holder &&
           refused.holder->record && refused.holder->record->state == kClaiming;
  }

  // One write-settle-scan (steps 1 to 5 above).
  static std::expected<Holding, Missed> attempt_once(const Context& ctx, std::stop_token stop) {
    auto missed = [](ClaimError e) {
      const bool collided = is_claimer(e);
      return std::unexpected(Missed{std::move(e), collided});
    };
    const ScanRules first{.reap = true, .margin = *ctx.options.max_skew};
    if (auto clear = scan_others(ctx, stop, first); !clear) return missed(std::move(clear.error()));
    Holding held{.record = our_record(ctx, ctx.clock.wall(), kClaiming)};
    if (auto written = ctx.store.replace(ctx.record_key, encode_record(held.record)); !written) {
      return missed(
          failure(written.error().code, "cannot write our record: " + written.error().message));
    }
    if (!ctx.clock.sleep_for(ctx.options.settle, stop)) {
      withdraw(ctx);
      return missed(failure(Errc::cancelled, "claim cancelled"));
    }
    // Second scan: every other live record blocks, claiming or held. Nothing
    // is reaped here; the first scan did that.
    const ScanRules second{.reap = false, .margin = *ctx.options.max_skew};
    if (auto clear = scan_others(ctx, stop, second); !clear) {
      withdraw(ctx);
      return missed(std::move(clear.error()));
    }
    held.record.state.clear();  // held
    const WallTime now = ctx.clock.wall();
    held.record.renewed_at = now;
    held.record.expires_at = now + ctx.options.ttl;
    if (auto written = ctx.store.replace(ctx.record_key, encode_record(held.record)); !written) {
      withdraw(ctx);
      return missed(
          failure(written.error().code, "cannot mark our record held: " + written.error().message));
    }
    return held;
  }

  static void withdraw(const Context& ctx) {
    if (auto removed = remove_our_record(ctx); !removed) {
      ctx.log.warn("could not withdraw our claiming record; it expires on its own",
                   {{"key", ctx.record_key.str()}, {"error", removed.error().message}});
    }
  }
};

}  // namespace

std::unique_ptr<Protocol> make_verify_protocol() { return std::make_unique<Verify>(); }

Result<Duration> check_visibility_lag(const Context& ctx, std::stop_token stop) {
  static const Key folder = *Key::parse("instances.probe");
  const Key probe = *folder.child(ctx.options.id);
  const std::string token = "probe " + ctx.options.id + " " + format_rfc3339(ctx.clock.wall());
  if (auto written = ctx.store.replace(probe, token); !written) {
    return fail(written.error().code,
                written.error().message + " (writing verify's visibility probe)");
  }
  const MonoTime acked = ctx.clock.monotonic();
  // Past this we stop waiting: the lag is already too long to be useful.
  const Duration limit = std::max(ctx.options.settle * 4, Duration{std::chrono::seconds(1)});
  const Duration step = std::max(ctx.options.settle / 4, Duration{std::chrono::milliseconds(5)});
  // The lag is 0 when the first look sees the probe (whatever our own delay
  // before looking), else the time from the write's acknowledgment to the
  // start of the first look that saw it.
  std::optional<Duration> lag;
  for (bool first = true; !lag && !stop.stop_requested(); first = false) {
    const Duration since = first ? Duration{0} : ctx.clock.monotonic() - acked;
    auto listed = ctx.store.list(folder);
    auto read = ctx.store.get(probe);
    const bool listed_ok = listed && std::ranges::find(*listed, probe) != listed->end();
    if (listed_ok && read && read->data == token) {
      lag = since;
    } else if (since > limit) {
      break;
    } else {
      if (!ctx.clock.sleep_for(step, stop)) break;
    }
  }
  if (auto removed = ctx.store.remove(probe); !removed && removed.error().code != Errc::not_found) {
    ctx.log.warn("could not remove the visibility probe",
                 {{"key", probe.str()}, {"error", removed.error().message}});
  }
  if (stop.stop_requested()) return fail(Errc::cancelled, "claim cancelled");
  if (!lag || *lag > ctx.options.settle) {
    const std::string seen = lag ? format_duration(*lag) : "more than " + format_duration(limit);
    return fail(Errc::invalid,
                "verify mode needs every acknowledged write visible within the settle time, but " +
                    ctx.store.describe() + " showed one only after " + seen + " (settle " +
                    format_duration(ctx.options.settle) +
                    "); raise --settle above the lag, or "
                    "use a store with conditional writes");
  }
  ctx.log.debug("visibility self-test passed", {{"lag", format_duration(*lag)}});
  return *lag;
}

}  // namespace instance::detail
