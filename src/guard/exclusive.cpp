// exclusive: a lease document changed only by compare-and-set, with a
// fencing epoch (docs/design/modes.md and arguments.md, "exclusive").
//
// The lease lives at "instances.lease", beside instances/ and outside the
// records' id space. It holds the holder's id, host, pid, expiry, an epoch
// and a released flag.
//
// On a store with a native lease (a WebDAV LOCK, an OFD lock, ...), the lock
// on "instances.lock" decides who holds; the lease document then only
// carries the epoch and names the holder:
//   acquire  lock (Errc::locked -> refuse), then take the lease document
//            whatever it says, epoch + 1, or the store's own number for the
//            lock (Store::lock_epoch: an etcd revision, a PostgreSQL
//            sequence, a Redis INCR) when that is larger. Before writing it,
//            scan instances/: a live record of another instance gives the
//            lock back and refuses. A lock proves only that its last holder
//            stopped refreshing it (a store may drop locks, or keep them for
//            less than asked), so that holder's record blocks until its own
//            expires_at; others' for max_skew longer.
//   renew    refresh the lock (refused -> lost), then the document.
//   release  remove our record, mark the document released, unlock.
//   The store's grant (Store::lock_granted) may differ from the ttl asked:
//   renewals and self-fencing follow the shorter of the two (guard.cpp), a
//   grant too short to renew safely refuses the claim (or loses it on a
//   refresh), and the lease and record carry the longer as their expiry.
// Without a native lease, compare-and-set on the document decides:
//   acquire  read the lease. Held by a live other (expiry + max_skew not yet
//            passed, and not a dead process on this host) -> refuse. Else
//            scan instances/ so a live original (announce) guard also keeps
//            us out. Then absent -> conditional create with epoch 1; present
//            -> conditional replace on the version read, epoch + 1. Losing
//            the compare-and-set means someone moved first: read again.
//            Finally write our record, for original guards and `status`.
//   renew    conditional replace on the version we last wrote. A conflict
//            means the lease was taken: the claim is lost. Then our record.
//   release  delete our record, then conditional replace with released =
//            true (the document stays, so the epoch never goes back).
#include <algorithm>

#include <nlohmann/json.hpp>

#include "instance/time.hpp"
#include "protocol.hpp"

namespace instance::detail {
namespace {

constexpr int kMaxRaces = 16;

const Key& lease_key() {
  static const Key key = *Key::parse("instances.lease");
  return key;
}

const Key& lock_key() {
  static const Key key = *Key::parse("instances.lock");
  return key;
}

bool lost_code(Errc code) {
  return code == Errc::conflict || code == Errc::not_found || code == Errc::locked;
}

struct Lease {
  std::string holder;
  std::uint64_t epoch = 0;
  WallTime expires_at{};
  std::string host;
  std::optional<std::int64_t> pid;
  std::string boot_id;
  std::string pid_ns;
  bool released = false;

  // The lease as a record, for liveness and for naming the holder.
  Record as_record() const {
    return Record{.id = holder,
                  .expires_at = expires_at,
                  .host = host,
                  .pid = pid,
                  .boot_id = boot_id,
                  .pid_ns = pid_ns};
  }
};

std::string encode(const Lease& lease) {
  nlohmann::ordered_json j;
  j["holder"] = lease.holder;
  j["epoch"] = lease.epoch;
  j["expires_at"] = format_rfc3339(lease.expires_at);
  j["host"] = lease.host;
  if (lease.pid) j["pid"] = *lease.pid;
  j["boot_id"] = lease.boot_id;
  j["pid_ns"] = lease.pid_ns;
  j["released"] = lease.released;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Lease> decode(std::string_view bytes) {
  auto bad = [](std::string_view why) {
    return fail(Errc::malformed, "not a lease document: " + std::string(why));
  };
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  Lease lease;
  try {
    lease.holder = j.at("holder").get<std::string>();
    lease.epoch = j.at("epoch").get<std::uint64_t>();
    auto expires = parse_rfc3339(j.at("expires_at").get<std::string>());
    if (!expires) return bad(expires.error().message);
    lease.expires_at = *expires;
    lease.host = j.value("host", "");
    if (j.contains("pid")) lease.pid = j.at("pid").get<std::int64_t>();
    lease.boot_id = j.value("boot_id", "");
    lease.pid_ns = j.value("pid_ns", "");
    lease.released = j.value("released", false);
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  if (lease.holder.empty() || lease.epoch == 0) return bad("no holder or epoch");
  return lease;
}

class Exclusive final : public Protocol {
 public:
  Mode mode() const noexcept override { return Mode::exclusive; }
  std::string_view guarantee() const noexcept override {
    if (native_) {
      return "mutual exclusion by the store's own lock, expired on the store's clock, with a "
             "fencing epoch";
    }
    return "mutual exclusion by compare-and-set on the store, with a fencing epoch; a holder "
           "paused past its expiry is fenced by the epoch, not by the store";
  }

  std::expected<Holding, ClaimError> acquire(const Context& ctx, std::stop_token stop) override {
    native_ = ctx.store.capabilities().native_lease;
    if (native_) return acquire_locked(ctx, stop);
    for (int race = 0; race < kMaxRaces; ++race) {
      if (stop.stop_requested()) {
        return std::unexpected(failure(Errc::cancelled, "claim cancelled"));
      }
      auto won = try_acquire(ctx, stop);
      if (!won) return std::unexpected(std::move(won.error()));
      if (*won) return finish(ctx, std::move(**won));
      ctx.log.debug("lost a compare-and-set on the lease; reading it again");
    }
    return std::unexpected(failure(Errc::unavailable, "the lease on " + ctx.store.describe() +
                                                          " changed under us " +
                                                          std::to_string(kMaxRaces) + " times"));
  }

  Renewal renew(const Context& ctx, Holding& held) override {
    const WallTime now = ctx.clock.wall();
    if (native_) {
      if (auto refreshed = ctx.store.refresh_lock(lock_key(), held.lock_token, ctx.options.ttl);
          !refreshed) {
        if (lost_code(refreshed.error().code)) {
          return {Renewal::lost, Error{Errc::lost, "the store no longer holds our lock (" +
                                                       refreshed.error().message + ")"}};
        }
        return {Renewal::failed, refreshed.error()};
      }
      // The refresh may come back with a different grant: renew on it, or
      // give the claim up when it leaves no room to renew safely.
      const Duration granted = ctx.store.lock_granted(lock_key(), held.lock_token);
      if (auto usable = check_grant(ctx.options, granted, ctx.store.describe()); !usable) {
        return {Renewal::lost, Error{Errc::lost,
                                     "a lock refresh was granted too short to hold "
                                     "safely: " +
                                         usable.error().message}};
      }
      held.granted = granted;
    }
    Lease lease = ours(ctx, *held.epoch, now, held.granted);
    if (native_) {
      if (auto version = write_lease(ctx, lease, held.lease_version); version) {
        held.lease_version = std::move(*version);
      } else {
        ctx.log.warn("lock refreshed, but the lease document could not be rewritten",
                     {{"error", version.error().message}});
      }
    } else {
      auto version = ctx.store.replace_if(lease_key(), encode(lease), held.lease_version);
      if (!version) {
        if (lost_code(version.error().code)) {
          return {Renewal::lost, Error{Errc::lost, "the lease was taken by another instance (" +
                                                       version.error().message + ")"}};
        }
        return {Renewal::failed, version.error()};
      }
      held.lease_version = std::move(*version);
    }
    Record next = held.record;
    next.renewed_at = now;
    next.expires_at = lease.expires_at;
    if (auto written = ctx.store.replace(ctx.record_key, encode_record(next)); written) {
      held.record = std::move(next);
    } else {
      ctx.log.warn("lease renewed, but our record could not be rewritten",
                   {{"error", written.error().message}});
    }
    return {};
  }

  Result<void> release(const Context& ctx, Holding& held) override {
    // Our record goes first, while the lease is still ours: a successor that
    // takes the lease over must not find it live (it would refuse).
    Result<void> outcome = remove_our_record(ctx);
    Lease lease = ours(ctx, *held.epoch, ctx.clock.wall(), held.granted);
    lease.released = true;
    auto version = write_lease(ctx, lease, held.lease_version);
    if (!version && !lost_code(version.error().code) && outcome) {
      outcome = std::unexpected(version.error());
    }
    if (native_ && !held.lock_token.empty()) {
      if (auto unlocked = ctx.store.unlock(lock_key(), held.lock_token);
          !unlocked && unlocked.error().code != Errc::not_found && outcome) {
        outcome = std::unexpected(unlocked.error());
      }
    }
    return outcome;
  }

 private:
  // The lease document under our lock: compare-and-set where the store can,
  // a plain write otherwise (the lock already excludes other writers).
  Result<std::string> write_lease(const Context& ctx, const Lease& lease,
                                  const std::string& version) {
    if (!native_ || (ctx.store.capabilities().conditional_writes && !version.empty())) {
      return ctx.store.replace_if(lease_key(), encode(lease), version);
    }
    return ctx.store.replace(lease_key(), encode(lease));
  }

  std::expected<Holding, ClaimError> acquire_locked(const Context& ctx, std::stop_token stop) {
    auto token = ctx.store.lock(lock_key(), ctx.options.ttl, ctx.options.id);
    if (!token) {
      if (token.error().code != Errc::locked) {
        return std::unexpected(
            failure(token.error().code, "cannot take the store's lock: " + token.error().message));
      }
      // Name the holder from the lease document when it can be read.
      std::optional<Record> holder;
      if (auto doc = ctx.store.get(lease_key()); doc) {
        if (auto lease = decode(doc->data); lease && !lease->released) {
          holder = lease->as_record();
        }
      }
      return std::unexpected(refusal(lock_key(), holder, "it holds the store's lock"));
    }
    Holding held{.lock_token = std::move(*token)};
    auto give_up = [&](ClaimError why) {
      (void)ctx.store.unlock(lock_key(), held.lock_token);
      return std::unexpected(std::move(why));
    };
    // The store may hold the lock for less (nginx's lock zone) or more than
    // the ttl asked: the guard renews on what was granted, and refuses a
    // grant too short to renew before it lapses.
    held.granted = ctx.store.lock_granted(lock_key(), held.lock_token);
    if (auto usable = check_grant(ctx.options, held.granted, ctx.store.describe()); !usable) {
      return give_up(failure(Errc::invalid, usable.error().message));
    }
    std::uint64_t epoch = 1;
    std::string version;
    std::string previous;  // the last holder: its lock is gone, so its record no longer counts
    if (auto doc = ctx.store.get(lease_key()); doc) {
      auto lease = decode(doc->data);
      if (!lease) return give_up(refusal(lease_key(), std::nullopt, lease.error().message));
      epoch = lease->epoch + 1;
      version = doc->version;
      previous = lease->holder;
    } else if (doc.error().code != Errc::not_found) {
      return give_up(failure(doc.error().code, "cannot read the lease: " + doc.error().message));
    }
    // A store that numbers its locks (etcd: the revision of the lock's put;
    // PostgreSQL: a sequence)
    // gives an epoch judged by the store; never below the document's count.
    // A counter reset (a server without persistence) leaves the document's
    // count as the floor.
    const std::uint64_t numbered = ctx.store.lock_epoch(lock_key(), held.lock_token);
    if (numbered != 0 && numbered < epoch) {
      ctx.log.warn(
          "the store's lock epoch is behind the lease document's; keeping the larger",
          {{"store_epoch", std::to_string(numbered)}, {"document_epoch", std::to_string(epoch)}});
    }
    epoch = std::max(epoch, numbered);
    // Every other live record still keeps us out (an original guard's; the
    // last holder's, whose lock the store may have dropped while it runs):
    // the lock is given back and the claim refused.
    if (auto clear = scan_others(ctx, stop, rules_after_holder(ctx, previous)); !clear) {
      return give_up(clear.error());
    }

    const Lease lease = ours(ctx, epoch, ctx.clock.wall(), held.granted);
    auto written = version.empty() ? ctx.store.replace(lease_key(), encode(lease))
                                   : write_lease(ctx, lease, version);
    if (!written) {
      return give_up(
          failure(written.error().code, "cannot write the lease: " + written.error().message));
    }
    held.lease_version = std::move(*written);
    held.epoch = epoch;
    return finish(ctx, std::move(held));
  }

  // The scan once the lease (or lock) is ours to take: every other live
  // record blocks. Records count as live for max_skew past their expiry,
  // except the last holder's (`previous`), whose lease already lapsed on the
  // clock that judges it: its record blocks only until its own expires_at.
  // A dead process on this host never blocks (is_live).
  static ScanRules rules_after_holder(const Context& ctx, std::string previous) {
    return ScanRules{
        .reap = true,
        .margin = *ctx.options.max_skew,
        .blocks = [&clock = ctx.clock, previous = std::move(previous)](const Record& r) {
          return r.id != previous || clock.wall() < r.expires_at;
        }};
  }

  // Our lease document; its expiry is the ttl, or the store's lock grant
  // when longer (the store keeps the lock that long: nobody may be told the
  // lease expired before).
  static Lease ours(const Context& ctx, std::uint64_t epoch, WallTime now,
                    Duration granted = Duration::zero()) {
    return Lease{.holder = ctx.options.id,
                 .epoch = epoch,
                 .expires_at = now + held_for(ctx.options, granted),
                 .host = ctx.self.host,
                 .pid = ctx.self.pid,
                 .boot_id = ctx.self.boot_id,
                 .pid_ns = ctx.self.pid_ns};
  }

  // One read-decide-write round: the holding when we won, nullopt when a
  // compare-and-set lost (try again), a ClaimError when refused or failed.
  static std::expected<std::optional<Holding>, ClaimError> try_acquire(const Context& ctx,
                                                                       std::stop_token stop) {
    auto doc = ctx.store.get(lease_key());
    std::optional<Lease> current;
    if (doc) {
      auto lease = decode(doc->data);
      if (!lease) {
        // Unreadable counts as held; never overwrite what we cannot read.
        return std::unexpected(refusal(lease_key(), std::nullopt, lease.error().message));
      }
      current = std::move(*lease);
      if (current->holder != ctx.options.id && !current->released &&
          is_live(ctx, current->as_record(), ctx.clock.wall(), *ctx.options.max_skew)) {
        return std::unexpected(refusal(lease_key(), current->as_record(), "it holds the lease"));
      }
    } else if (doc.error().code != Errc::not_found) {
      return std::unexpected(
          failure(doc.error().code, "cannot read the lease: " + doc.error().message));
    }

    // The lease is ours to take; an original guard's live record still keeps
    // us out (and stale records are cleaned up on the way).
    const std::string previous = current ? current->holder : "";
    if (auto clear = scan_others(ctx, stop, rules_after_holder(ctx, previous)); !clear) {
      return std::unexpected(std::move(clear.error()));
    }

    const std::uint64_t epoch = current ? current->epoch + 1 : 1;
    const std::string bytes = encode(ours(ctx, epoch, ctx.clock.wall()));
    auto version = current ? ctx.store.replace_if(lease_key(), bytes, doc->version)
                           : ctx.store.create(lease_key(), bytes);
    if (!version) {
      const Errc code = version.error().code;
      if (code == Errc::conflict || code == Errc::already_exists || code == Errc::not_found) {
        return std::optional<Holding>{};  // someone moved first
      }
      return std::unexpected(failure(code, "cannot write the lease: " + version.error().message));
    }
    return Holding{.lease_version = std::move(*version), .epoch = epoch};
  }

  bool native_ = false;  // decided at acquire: a native lease is in use

  std::expected<Holding, ClaimError> finish(const Context& ctx, Holding held) {
    const WallTime now = ctx.clock.wall();
    held.record = our_record(ctx, now, "");
    held.record.expires_at = now + held_for(ctx.options, held.granted);
    if (auto written = ctx.store.replace(ctx.record_key, encode_record(held.record)); !written) {
      const Error error = written.error();
      (void)release(ctx, held);
      return std::unexpected(failure(error.code, "cannot write our record: " + error.message));
    }
    return held;
  }
};

}  // namespace

std::unique_ptr<Protocol> make_exclusive_protocol() { return std::make_unique<Exclusive>(); }

}  // namespace instance::detail
