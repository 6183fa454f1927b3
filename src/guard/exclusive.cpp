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
//   acquire  lock (Errc::locked -> refuse, unless the lease document names
//            a holder on this host whose process is gone: then unlock by the
//            token it names and lock once more), then take the lease document
//            whatever it says, epoch + 1, or the store's own number for the
//            lock (LockGrant::epoch: an etcd revision, a PostgreSQL
//            sequence, a Redis INCR) when that is larger. Before writing it,
//            scan instances/: a live record of another instance gives the
//            lock back and refuses. A lock proves only that its last holder
//            stopped refreshing it (a store may drop locks, or keep them for
//            less than asked), so that holder's record blocks until its own
//            expires_at; others' for max_skew longer.
//   renew    refresh the lock (refused -> lost), then the document.
//   release  remove our record, mark the document released, unlock.
//   The store's grant (LockGrant::granted, and what each refresh_lock()
//   returns) may differ from the ttl asked:
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

#include "instance/sdk/credentials.hpp"
#include "instance/time.hpp"
#include "lease.hpp"
#include "protocol.hpp"

namespace instance::detail {
namespace {

constexpr int kMaxRaces = 16;

bool lost_code(Errc code) {
  return code == Errc::conflict || code == Errc::not_found || code == Errc::locked;
}

constexpr std::string_view kNativeLine =
    "mutual exclusion by the store's own lock, expired on the store's clock, with a fencing "
    "epoch";

class Exclusive final : public Protocol {
 public:
  Mode mode() const noexcept override { return Mode::exclusive; }
  std::string_view guarantee() const noexcept override {
    if (!guarantee_.empty()) return guarantee_;
    if (native_) return kNativeLine;
    return "mutual exclusion by compare-and-set on the store, with a fencing epoch; a holder "
           "paused past its expiry is fenced by the epoch, not by the store";
  }

  std::expected<Holding, ClaimError> acquire(const Context& ctx, std::stop_token stop) override {
    const Capabilities caps = ctx.store.capabilities();
    native_ = caps.native_lease;
    ends_stale_ = native_ && caps.ends_stale_locks;
    agreement_ = native_ ? caps.agreement : std::string();
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
    Record next = held.record;
    next.renewed_at = now;
    if (native_) {
      // One renew_lease(): the lock refreshed and, where the store can, the
      // lease document and our record rewritten in the same request.
      Lease planned = ours(ctx, held, now);
      next.expires_at = planned.expires_at;
      auto renewed = ctx.store.renew_lease(LeaseRenewal{.lock = lock_key(),
                                                        .token = held.lock_token,
                                                        .ttl = ctx.options.ttl,
                                                        .lease = lease_key(),
                                                        .lease_data = encode_lease(planned),
                                                        .record = ctx.record_key,
                                                        .record_data = encode_record(next)});
      if (!renewed) {
        if (lost_code(renewed.error().code)) {
          return {Renewal::lost, Error{Errc::lost, "the store no longer holds our lock (" +
                                                       renewed.error().message + ")"}};
        }
        return {Renewal::failed, renewed.error()};
      }
      // The refresh may come back with a different grant: renew on it, or
      // give the claim up when it leaves no room to renew safely.
      const Duration granted = renewed->granted;
      if (auto usable = check_grant(ctx.options, granted, ctx.store.describe()); !usable) {
        return {Renewal::lost, Error{Errc::lost,
                                     "a lock refresh was granted too short to hold "
                                     "safely: " +
                                         usable.error().message}};
      }
      // What the store wrote says how long we hold under the grant we had;
      // a new grant has the steps below write them again.
      if (renewed->written && granted == held.granted) {
        held.lease_version = std::move(renewed->lease_version);
        held.record = std::move(next);
        return {};
      }
      if (renewed->written) held.lease_version = std::move(renewed->lease_version);
      held.granted = granted;
    }
    Lease lease = ours(ctx, held, now);
    if (native_) {
      if (auto version = write_lease(ctx, lease, held.lease_version); version) {
        held.lease_version = std::move(*version);
      } else if (ends_stale_) {
        // A successor judges our lock by this document: one that still shows
        // the last expiry would let it end our lock once that passes, so
        // the renewal counts only with the document rewritten.
        return {Renewal::failed,
                Error{version.error().code,
                      "the lock was refreshed, but the lease document that successors judge it "
                      "by could not be rewritten: " +
                          version.error().message}};
      } else {
        ctx.log.warn("lock refreshed, but the lease document could not be rewritten",
                     {{"error", version.error().message}});
      }
    } else {
      auto version = ctx.store.replace_if(lease_key(), encode_lease(lease), held.lease_version);
      if (!version) {
        if (lost_code(version.error().code)) {
          return {Renewal::lost, Error{Errc::lost, "the lease was taken by another instance (" +
                                                       version.error().message + ")"}};
        }
        return {Renewal::failed, version.error()};
      }
      held.lease_version = std::move(*version);
    }
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
    Lease lease = ours(ctx, held, ctx.clock.wall());
    lease.released = true;
    return end(ctx, held, lease);
  }

 private:
  // Ends our hold, leaving `lease` as the lease document: our record
  // removed, the document written, the lock given back. In one request
  // where the store can (end_lease), else one step after another.
  Result<void> end(const Context& ctx, const Holding& held, const Lease& lease) {
    if (native_ && !held.lock_token.empty()) {
      auto ended = ctx.store.end_lease(LeaseEnd{.lock = lock_key(),
                                                .token = held.lock_token,
                                                .lease = lease_key(),
                                                .lease_data = encode_lease(lease),
                                                .record = ctx.record_key});
      if (ended && *ended) return {};
      if (!ended) {
        ctx.log.info("ending the lease in one request failed; ending it step by step",
                     {{"error", ended.error().message}});
      }
    }
    // Our record goes first, while the lease is still ours: a successor that
    // takes the lease over must not find it live (it would refuse).
    Result<void> outcome = remove_our_record(ctx);
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

  // The lease document under our lock: compare-and-set where the store can,
  // a plain write otherwise (the lock already excludes other writers).
  Result<std::string> write_lease(const Context& ctx, const Lease& lease,
                                  const std::string& version) {
    if (!native_ || (ctx.store.capabilities().conditional_writes && !version.empty())) {
      return ctx.store.replace_if(lease_key(), encode_lease(lease), version);
    }
    return ctx.store.replace(lease_key(), encode_lease(lease));
  }

  std::expected<Holding, ClaimError> acquire_locked(const Context& ctx, std::stop_token stop) {
    // Our record as the claim writes it; with the lease document, the store
    // may write both in the same request as the lock (atomic_lease).
    const WallTime at = ctx.clock.wall();
    Record record = our_record(ctx, at, "");
    record.expires_at = at + expiry_window(ctx, Duration::zero());
    auto claimed = claim_lock(ctx, record);
    if (!claimed && claimed.error().code == Errc::locked && ends_stale_) {
      // The lock may have outlived a holder that stopped renewing: end it
      // when that holder is proven fenced, then ask once more.
      if (auto ended = end_stale_lock(ctx); !ended) return std::unexpected(ended.error());
      claimed = claim_lock(ctx, record);
    } else if (!claimed && claimed.error().code == Errc::locked && end_dead_holders_lock(ctx)) {
      claimed = claim_lock(ctx, record);
    }
    if (!claimed) {
      if (claimed.error().code != Errc::locked) {
        return std::unexpected(failure(claimed.error().code,
                                       "cannot take the store's lock: " + claimed.error().message));
      }
      // Name the holder from the lease document when it can be read.
      std::optional<Record> holder;
      if (auto doc = ctx.store.get(lease_key()); doc) {
        if (auto lease = decode_lease(doc->data); lease && !lease->released) {
          holder = lease->as_record();
        }
      }
      return std::unexpected(refusal(lock_key(), holder, "it holds the store's lock"));
    }
    const LockGrant& grant = claimed->grant;
    Holding held{.lock_token = grant.token};
    // The store may hold the lock for less (nginx's lock zone) or more than
    // the ttl asked: the guard renews on what was granted, and refuses a
    // grant too short to renew before it lapses.
    held.granted = grant.granted;
    // What the store wrote with the lock stands only for a grant of exactly
    // the ttl asked (the document says how long we hold); otherwise the
    // steps below write them again.
    const bool written = claimed->written && grant.granted == Duration::zero();
    if (claimed->written) {
      held.epoch = claimed->epoch;
      held.lease_version = claimed->lease_version;
      held.record = record;
    }
    std::uint64_t epoch = 1;
    std::string version;
    std::optional<Lease> before;            // the lease document before ours, when one of ours
    std::optional<std::string> unreadable;  // why it is not, when its epoch does not read either
    if (const auto& doc = claimed->previous; doc) {
      auto lease = decode_lease(doc->data);
      if (lease) {
        epoch = lease->epoch + 1;
        if (lease->locks_outlive_grant && !locks_outlive_grant_) {
          locks_outlive_grant_ = lease->locks_outlive_grant;
        }
        before = std::move(*lease);
      } else if (const auto carried = lease_epoch(doc->data); carried) {
        // Under the lock the document only carries the epoch and names the
        // holder: one whose epoch reads (Store::claim_lease's rule, so both
        // paths agree) is taken over with the next epoch; nothing else in
        // it could be read, so no earlier holder is excused.
        epoch = *carried + 1;
        ctx.log.warn("the lease document was not one of ours; its epoch is carried on",
                     {{"error", lease.error().message}});
      } else if (doc->from_earlier_boot && grant.epoch != 0) {
        // Cut short by a crash before this boot (Document::from_earlier_boot):
        // its holder died with that boot, and the store's own numbering is
        // above every epoch it gave, so nothing in it is needed.
        ctx.log.warn(
            "the lease document, written before this host's last boot, cannot be read; "
            "its holder died with that boot and the store numbers the epoch, so it is "
            "replaced",
            {{"error", lease.error().message}});
      } else {
        unreadable = lease.error().message;
      }
      version = doc->version;
    }
    // A refused claim gives the lock back. Where the store already wrote our
    // lease document and record, it also removes the record and puts the
    // last holder's document back under our epoch (spent, so it never
    // repeats), so the next claim still knows who held last.
    auto give_up = [&](ClaimError why) {
      if (claimed->written) {
        Lease back = before ? *before : ours(ctx, held, ctx.clock.wall());
        back.epoch = *held.epoch;
        if (!before) back.released = true;
        (void)end(ctx, held, back);
      } else {
        (void)ctx.store.unlock(lock_key(), held.lock_token);
      }
      return std::unexpected(std::move(why));
    };
    if (unreadable) return give_up(refusal(lease_key(), std::nullopt, *unreadable));
    if (!claimed->previous && claimed->previous.error().code != Errc::not_found) {
      const Error& error = claimed->previous.error();
      return give_up(failure(error.code, "cannot read the lease: " + error.message));
    }
    if (auto usable = check_grant(ctx.options, held.granted, ctx.store.describe()); !usable) {
      return give_up(failure(Errc::invalid, usable.error().message));
    }
    const std::string previous = before ? before->holder : "";  // its record no longer counts
    // Every other live record still keeps us out (an original guard's; the
    // last holder's, whose lock the store may have dropped while it runs):
    // the lock is given back and the claim refused. A store that wrote our
    // lease document with the lock read the records back in the same
    // request, after its writes.
    const ScanRules rules = rules_after_holder(ctx, previous);
    if (written) {
      if (auto clear = judge_others(ctx, std::move(claimed->scanned), rules); !clear) {
        return give_up(clear.error());
      }
      describe_guarantee();
      return held;
    }
    // A store that numbers its locks (etcd: the revision of the lock's put;
    // PostgreSQL: a sequence) gives an epoch judged by the store; never
    // below the document's count. A counter reset (a server without
    // persistence) leaves the document's count as the floor.
    const std::uint64_t numbered = grant.epoch;
    if (numbered != 0 && numbered < epoch) {
      ctx.log.warn(
          "the store's lock epoch is behind the lease document's; keeping the larger",
          {{"store_epoch", std::to_string(numbered)}, {"document_epoch", std::to_string(epoch)}});
    }
    epoch = std::max({epoch, numbered, claimed->epoch});
    if (auto clear = scan_others(ctx, stop, rules); !clear) return give_up(clear.error());

    held.epoch = epoch;
    const Lease lease = ours(ctx, held, ctx.clock.wall());
    const std::string current = claimed->written ? claimed->lease_version : version;
    auto written_now = current.empty() ? ctx.store.replace(lease_key(), encode_lease(lease))
                                       : write_lease(ctx, lease, current);
    if (!written_now) {
      return give_up(failure(written_now.error().code,
                             "cannot write the lease: " + written_now.error().message));
    }
    held.lease_version = std::move(*written_now);
    describe_guarantee();
    return finish(ctx, std::move(held));
  }

  // claim_lease() with our owner text, lease document and record: on a
  // store that may end stale locks, the owner says who we are, when we
  // asked and for how long (a successor judges a lock that no lease
  // document names by it); elsewhere it is our id.
  Result<LeaseClaimed> claim_lock(const Context& ctx, const Record& record) {
    std::string owner = ctx.options.id;
    if (ends_stale_) {
      owner = encode_lock_owner(LockOwner{.id = ctx.options.id,
                                          .locked_at = ctx.clock.wall(),
                                          .ttl = ctx.options.ttl,
                                          .host = ctx.self.host,
                                          .pid = ctx.self.pid,
                                          .boot_id = ctx.self.boot_id,
                                          .pid_ns = ctx.self.pid_ns});
    }
    return ctx.store.claim_lease(
        LeaseClaim{.lock = lock_key(),
                   .ttl = ctx.options.ttl,
                   .owner = std::move(owner),
                   .lease = lease_key(),
                   .document = lease_template(ours(ctx, Holding{}, *record.renewed_at)),
                   .record = ctx.record_key,
                   .record_data = encode_record(record),
                   .scan = records_prefix()});
  }

  // The store's lock is held. Ends it when its holder is proven fenced: its
  // lease (the document written under this very lock, or else the lock's own
  // owner text) and its record both expired more than max_skew ago on our
  // clock, or it stood down, or it was a process on this host that is gone
  // (docs/design/arguments.md, "Ending a stale lock"). Success means "ask
  // for the lock again" (also when someone else ended it first); otherwise
  // the refusal, naming the holder and why its lock stays.
  std::expected<void, ClaimError> end_stale_lock(const Context& ctx) {
    auto holder = ctx.store.lock_holder(lock_key());
    if (!holder) {
      // Gone since our lock(), or the server does not say (rclone lists no
      // lockdiscovery): ask again, and a lock still held is refused as
      // held, naming the lease document's holder.
      if (holder.error().code != Errc::not_found) {
        ctx.log.info("cannot tell who holds the store's lock, so it counts as held",
                     {{"error", holder.error().message}});
      }
      return {};
    }
    std::optional<Lease> lease;
    if (auto doc = ctx.store.get(lease_key()); doc) {
      auto decoded = decode_lease(doc->data);
      if (!decoded)
        return std::unexpected(refusal(lease_key(), std::nullopt, decoded.error().message));
      lease = std::move(*decoded);
    } else if (doc.error().code != Errc::not_found) {
      return std::unexpected(
          failure(doc.error().code, "cannot read the lease: " + doc.error().message));
    }
    const LockOfHolder lock = lock_of_holder(holder->token, holder->owner, lease);
    const bool named = lock.named;
    const auto& owner = lock.owner;
    // The holder as a record, live until the latest expiry anything shows.
    std::optional<Record> who;
    if (named) who = lease->as_record();
    if (owner) {
      if (!who) {
        who = owner->as_record();
      } else if (owner->id != who->id) {
        who->expires_at = std::max(who->expires_at, owner->as_record().expires_at);
      }
    }
    if (!who) {
      return std::unexpected(refusal(
          lock_key(), std::nullopt,
          "it holds the store's lock, taken by \"" + printable(holder->owner, 200) +
              "\", which no lease document names and which is not an instance-guard lock "
              "owner, so no guard ends it; it lasts until the server's own timeout: remove it "
              "on the server (an UNLOCK of its token) or restart the server"));
    }
    const bool stood_down = named && lease->released;
    if (!stood_down) {
      if (auto record = holder_record(ctx, who->id); !record) {
        return std::unexpected(record.error());
      } else if (*record && (*record)->expires_at > who->expires_at) {
        who->expires_at = (*record)->expires_at;  // it renewed its record later
      }
    }
    const WallTime now = ctx.clock.wall();
    const Duration margin = *ctx.options.max_skew;
    if (!stood_down && is_live(ctx, *who, now, margin)) {
      return std::unexpected(
          refusal(lock_key(), *who,
                  "it holds the store's lock; a holder that stops renewing counts as live until "
                  "its expiry plus max-skew (" +
                      format_rfc3339(who->expires_at + margin) +
                      "), after which the next claim ends its lock"));
    }
    if (named && lease->lock_expires_at && now > *lease->lock_expires_at + margin) {
      if (!locks_outlive_grant_) locks_outlive_grant_ = now;
      ctx.log.warn(
          "the store keeps locks past the timeout it granted: its locks do not expire on their "
          "own, so a crashed holder's lock is ended by its successor",
          {{"store", ctx.store.describe()},
           {"granted_until", format_rfc3339(*lease->lock_expires_at)}});
    }
    if (lock.token.empty()) {
      return std::unexpected(refusal(
          lock_key(), *who,
          "it holds the store's lock, which outlived it (its lease expired at " +
              format_rfc3339(who->expires_at) +
              "), but the server does not say the lock's token, so no guard can end it; it lasts "
              "until the server's own timeout: an operator ends it on the server or restarts "
              "the server"));
    }
    auto ended = ctx.store.unlock(lock_key(), lock.token);
    if (!ended && ended.error().code == Errc::not_found) {
      ctx.log.debug("the stale lock was ended by someone else first", {{"holder", who->id}});
      return {};
    }
    if (!ended) {
      std::string until = named && lease->lock_expires_at
                              ? "until " + format_rfc3339(*lease->lock_expires_at)
                              : std::string("until the server's own timeout, perhaps for ever");
      return std::unexpected(refusal(
          lock_key(), *who,
          "it holds the store's lock, which outlived it: its lease expired at " +
              format_rfc3339(who->expires_at) + ", but the server refused to end the lock (" +
              ended.error().message + "); the server keeps it " + until +
              ": an operator ends it with `instance-guard release --force --id " + who->id +
              "` using the account that took it, or by restarting the server"));
    }
    ctx.log.warn("ended the store's lock of a holder that stopped renewing",
                 {{"holder", who->id},
                  {"host", who->host},
                  {"expired_at", format_rfc3339(who->expires_at)},
                  {"reason", stood_down                       ? "it stood down"
                             : now < who->expires_at + margin ? "its process on this host is gone"
                                                              : "its lease and record expired"}});
    return {};
  }

  // The store's lock is held, on a store whose lock lasts its ttl whoever
  // holds it (etcd, Redis, PostgreSQL, CS3). When the lease document names
  // a holder on this host whose process is gone, with everything it started
  // (the liveness lock is free), that holder is dead: its lock is ended now
  // by its exact token, rather than waited out for up to a ttl. The unlock
  // ends only the lock granted under that token, so a successor that raced
  // us to it and holds the lock now keeps it, and of two successors at most
  // one gets the lock (docs/design/arguments.md, "A dead holder on this
  // host"). true: ask for the lock again.
  bool end_dead_holders_lock(const Context& ctx) {
    auto doc = ctx.store.get(lease_key());
    if (!doc) return false;
    auto lease = decode_lease(doc->data);
    if (!lease || lease->released || lease->lock_token.empty()) return false;
    const std::string_view why = why_dead_here(ctx, *lease);
    if (why.empty()) return false;
    auto ended = ctx.store.unlock(lock_key(), lease->lock_token);
    if (!ended && ended.error().code != Errc::not_found) {
      ctx.log.info("the lock of a holder " + std::string(why) + " could not be ended",
                   {{"holder", lease->holder}, {"error", ended.error().message}});
      return false;
    }
    if (ended) {
      ctx.log.warn("ended the store's lock of a holder " + std::string(why),
                   {{"holder", lease->holder},
                    {"pid", lease->pid ? std::to_string(*lease->pid) : ""},
                    {"lease_until", format_rfc3339(lease->expires_at)}});
    }
    return true;
  }

  // Why the lease's holder is dead on this host: its process is gone, or
  // its record (under the lease's boot) was left by an earlier boot of this
  // machine; "" when it is not proven dead.
  static std::string_view why_dead_here(const Context& ctx, const Lease& lease) {
    if (gone_from_this_host(ctx.self, lease.as_record()))
      return "whose process on this host is gone";
    if (lease.host != ctx.self.host || lease.boot_id.empty() || lease.boot_id == ctx.self.boot_id) {
      return "";
    }
    auto record = holder_record(ctx, lease.holder);
    const bool earlier = record && *record && (*record)->boot_id == lease.boot_id &&
                         of_earlier_boot(ctx.self, **record, ctx.clock.wall(),
                                         *ctx.options.max_skew) == EarlierBoot::dead;
    return earlier ? "that ran in an earlier boot of this host" : "";
  }

  // The record of `id`: nullopt when absent; a refusal when unreadable (it
  // counts as live) and a failure when it cannot be read at all.
  static std::expected<std::optional<Record>, ClaimError> holder_record(const Context& ctx,
                                                                        const std::string& id) {
    auto key = record_key(id);
    if (!key) return std::optional<Record>{};
    auto stored = read_record(ctx, *key);
    if (!stored) return std::unexpected(std::move(stored.error()));
    if (!*stored) return std::optional<Record>{};
    return std::optional<Record>{std::move((*stored)->record)};
  }

  // The guarantee line on a store whose locks a successor may end, or whose
  // servers must agree on a lock (the store's words appended).
  void describe_guarantee() {
    if (!ends_stale_) {
      if (!agreement_.empty()) {
        guarantee_ = std::string(kNativeLine) + "; " + agreement_;
      }
      return;
    }
    guarantee_ =
        "mutual exclusion by the store's own lock while its holder renews it, with a fencing "
        "epoch; a holder that stops renewing has its lock ended by the next claim once its lease "
        "expired by more than max-skew, judged on the guards' clocks";
    if (locks_outlive_grant_) {
      guarantee_ += "; this server keeps locks past the timeout it grants (seen " +
                    format_rfc3339(*locks_outlive_grant_) +
                    "), so that is the only way a crashed holder's lock ends";
    }
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

  // How long others must count our claim as held after a write: the ttl,
  // or the store's lock grant when longer (the store keeps the lock that
  // long: nobody may be told the lease expired before). Where a successor
  // ends a lock that outlived its holder, the ttl: that is when we fence.
  Duration expiry_window(const Context& ctx, Duration granted) const {
    return held_for(ctx.options, ends_stale_ ? Duration::zero() : granted);
  }

  // Our lease document for a write at `now`: under a lock a successor may
  // end, it names the lock's token and when the store's grant ends.
  Lease ours(const Context& ctx, const Holding& held, WallTime now) const {
    Lease lease{.holder = ctx.options.id,
                .epoch = held.epoch.value_or(1),
                .expires_at = now + expiry_window(ctx, held.granted),
                .host = ctx.self.host,
                .pid = ctx.self.pid,
                .boot_id = ctx.self.boot_id,
                .pid_ns = ctx.self.pid_ns,
                .machine_id = ctx.self.machine_id,
                .written_at = now};
    // Under a native lock, its token: what a successor on this host ends
    // the lock with once our process is gone (end_dead_holders_lock).
    if (native_) lease.lock_token = held.lock_token;
    if (ends_stale_) {
      if (held.granted != kForever) {
        lease.lock_expires_at =
            now + (held.granted > Duration::zero() ? held.granted : ctx.options.ttl);
      }
      lease.locks_outlive_grant = locks_outlive_grant_;
    }
    return lease;
  }

  // One read-decide-write round: the holding when we won, nullopt when a
  // compare-and-set lost (try again), a ClaimError when refused or failed.
  std::expected<std::optional<Holding>, ClaimError> try_acquire(const Context& ctx,
                                                                std::stop_token stop) {
    auto doc = ctx.store.get(lease_key());
    std::optional<Lease> current;
    if (doc) {
      auto lease = decode_lease(doc->data);
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
    const std::string bytes = encode_lease(ours(ctx, Holding{.epoch = epoch}, ctx.clock.wall()));
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

  bool native_ = false;                          // decided at acquire: a native lease is in use
  bool ends_stale_ = false;                      // and a lock that outlived its holder may be ended
  std::optional<WallTime> locks_outlive_grant_;  // carried in our lease document
  std::string guarantee_;                        // when it differs from the fixed lines
  std::string agreement_;                        // Capabilities::agreement, with a native lease

  std::expected<Holding, ClaimError> finish(const Context& ctx, Holding held) {
    const WallTime now = ctx.clock.wall();
    held.record = our_record(ctx, now, "");
    held.record.expires_at = now + expiry_window(ctx, held.granted);
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
