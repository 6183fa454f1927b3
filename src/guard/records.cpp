// Internal: what the claim protocols share about instance records: building
// ours, judging others' liveness, and scanning instances/.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <span>

#include "instance/liveness.hpp"
#include "instance/time.hpp"
#include "protocol.hpp"

namespace instance::detail {
namespace {

bool same_host(const HostIdentity& self, const Record& record) {
  return !record.host.empty() && record.host == self.host && !record.boot_id.empty() &&
         record.boot_id == self.boot_id && !record.pid_ns.empty() && record.pid_ns == self.pid_ns;
}

// The process is gone and so is everything it started that still holds its
// liveness lock (instance/liveness.hpp): `run`'s grandchildren outlive it.
bool process_gone(std::int64_t pid) {
  if (pid <= 0 || pid > INT32_MAX) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) return false;
  return !liveness_lock_held(pid);
}

// One record of another instance: nullopt when it does not concern us (gone,
// ours, or no longer live and so reaped), the record when live, a ClaimError
// when it cannot be judged.
std::expected<std::optional<Record>, ClaimError> examine(const Context& ctx, const Key& key,
                                                         Result<Document> doc,
                                                         const ScanRules& rules) {
  const bool earlier_boot = doc && doc->from_earlier_boot;
  auto stored = as_record(key, std::move(doc));
  if (!stored) return std::unexpected(std::move(stored.error()));
  if (!*stored) {
    if (earlier_boot) {
      ctx.log.warn(
          "a record written before this host's last boot cannot be read; its writer "
          "died with that boot, so it keeps nobody out; left in place (remove it "
          "with `instance-guard release --force`)",
          {{"key", key.str()}});
    }
    return std::nullopt;  // gone since listed, or cut short by a crash
  }
  const Record* record = &(*stored)->record;
  const std::string& version = (*stored)->version;
  // A record the store proves was written before this host's boot, on a
  // store only this host writes: its writer died with that boot, whatever
  // the record's expiry says (docs/design/arguments.md, "A light claim on a
  // local folder").
  const bool live = !earlier_boot && is_live(ctx, *record, ctx.clock.wall(), rules.margin);
  if (record->id == ctx.options.id) {
    // Our own, whatever its file name; when dead, a record an earlier
    // process under our id left (its tenure is closed once we hold).
    if (ctx.dead && !live) ctx.dead->push_back({*record, false});
    return std::nullopt;
  }
  if (live) return *record;
  if (ctx.dead) ctx.dead->push_back({*record, false});
  if (!rules.reap) return std::nullopt;

  // Not live: delete it, where the store can only if it is still the bytes we
  // judged, so a record rewritten meanwhile by a restarted instance stays.
  const bool conditional = ctx.store.capabilities().conditional_writes && !version.empty();
  if (!conditional && !rules.blind_reap) return std::nullopt;  // dead: skipped, not deleted
  if (ctx.stale) {
    ctx.stale->push_back({key, conditional ? version : std::string(), *record, !conditional});
    return std::nullopt;
  }
  auto removed = conditional ? ctx.store.remove_if(key, version) : ctx.store.remove(key);
  if (removed) {
    if (ctx.dead) ctx.dead->back().removed = true;
    ctx.log.info("removed a stale record",
                 {{"key", key.str()}, {"expired_at", format_rfc3339(record->expires_at)}});
  } else if (removed.error().code != Errc::not_found) {
    ctx.log.warn("could not remove a stale record",
                 {{"key", key.str()}, {"error", removed.error().message}});
  }
  return std::nullopt;
}

// One record a claim reads: a refusal when it is unreadable or live and
// `rules.blocks` it; stale ones are reaped or deferred as examine() does.
std::expected<void, ClaimError> judge_other(const Context& ctx, const Key& key,
                                            Result<Document> doc, const ScanRules& rules) {
  auto live = examine(ctx, key, std::move(doc), rules);
  if (!live) return std::unexpected(std::move(live.error()));
  if (*live && (!rules.blocks || rules.blocks(**live))) {
    return std::unexpected(refusal(key, std::move(**live), ""));
  }
  return {};
}

// judge_other() as a judge for read_each() and judge_each(): each record in
// turn, until one refuses.
auto judging_by(const Context& ctx, const ScanRules& rules) {
  return [&ctx, &rules](const Key& key, Result<Document> doc) -> std::expected<bool, ClaimError> {
    if (auto judged = judge_other(ctx, key, std::move(doc), rules); !judged) {
      return std::unexpected(std::move(judged.error()));
    }
    return true;
  };
}

std::string describe_holder(const Key& key, const std::optional<Record>& record) {
  if (!record) return "the record " + key.str() + " cannot be read, so it counts as live";
  std::string out = "holder id=" + record->id;
  if (!record->host.empty()) out += " host=" + record->host;
  if (record->pid) out += " pid=" + std::to_string(*record->pid);
  return out + ", its record expires at " + format_rfc3339(record->expires_at);
}

// How many records one get_many() reads: a refusal at the first live
// record reads at most this many more than it needs, and a batch stays well
// inside every server's request limits (etcd's 128 operations per Txn).
constexpr std::size_t kReadBatch = 64;

// Reads `keys` in order, in batches where the store reads several in one
// request, and hands each key with what its read gave to `judge` until it
// answers false (stop) or an error (the scan ends with it).
template <class Judge>
std::expected<void, ClaimError> read_each(const Context& ctx, std::span<const Key> keys,
                                          std::stop_token stop, Judge&& judge) {
  const bool batched = ctx.store.capabilities().batch_reads;
  for (std::size_t at = 0; at < keys.size();) {
    if (stop.stop_requested()) {
      return std::unexpected(failure(Errc::cancelled, "claim cancelled"));
    }
    const std::size_t n = batched ? std::min(kReadBatch, keys.size() - at) : 1;
    const auto batch = keys.subspan(at, n);
    std::vector<Result<Document>> docs;
    if (!batched) {
      docs.push_back(ctx.store.get(batch.front()));
    } else if (auto many = ctx.store.get_many(batch); !many) {
      docs.assign(n, std::unexpected(many.error()));  // nothing learnt of any of them
    } else if (many->size() != n) {
      docs.assign(n, fail(Errc::malformed, ctx.store.describe() + " answered " +
                                               std::to_string(many->size()) + " documents for " +
                                               std::to_string(n) + " keys"));
    } else {
      docs = std::move(*many);
    }
    for (std::size_t i = 0; i < n; ++i) {
      auto go_on = judge(batch[i], std::move(docs[i]));
      if (!go_on) return std::unexpected(std::move(go_on.error()));
      if (!*go_on) return {};
    }
    at += n;
  }
  return {};
}

// Hands each read record to `judge` in turn, as read_each() does.
template <class Judge>
std::expected<void, ClaimError> judge_each(std::vector<std::pair<Key, Result<Document>>>& read,
                                           Judge&& judge) {
  for (auto& [key, doc] : read) {
    auto go_on = judge(key, std::move(doc));
    if (!go_on) return std::unexpected(std::move(go_on.error()));
    if (!*go_on) return {};
  }
  return {};
}

// Reads the records under instances/ and hands each key with what its read
// gave to `judge`, as read_each() does: one get_all() where the store reads
// a prefix in one request (prefix_reads), else a listing and read_each(). A
// failed listing (or get_all) ends it with that failure.
template <class Judge>
std::expected<void, ClaimError> each_record(const Context& ctx, std::stop_token stop,
                                            Judge&& judge) {
  if (ctx.store.capabilities().prefix_reads) {
    if (stop.stop_requested()) {
      return std::unexpected(failure(Errc::cancelled, "claim cancelled"));
    }
    auto read = ctx.store.get_all(records_prefix());
    if (!read) {
      return std::unexpected(
          failure(read.error().code, "cannot read the instance records: " + read.error().message));
    }
    return judge_each(*read, judge);
  }
  auto keys = ctx.store.list(records_prefix());
  if (!keys) {
    return std::unexpected(
        failure(keys.error().code, "cannot list the instance records: " + keys.error().message));
  }
  return read_each(ctx, *keys, stop, judge);
}

}  // namespace

std::expected<std::optional<StoredRecord>, ClaimError> as_record(const Key& key,
                                                                 Result<Document> doc) {
  if (!doc && doc.error().code == Errc::not_found) return std::nullopt;
  if (!doc && doc.error().code != Errc::malformed) {
    return std::unexpected(
        failure(doc.error().code,
                "cannot read " + key.str() + ", so it counts as live: " + doc.error().message));
  }
  auto record = doc ? decode_record(doc->data) : std::unexpected(doc.error());
  if (!record && doc && doc->from_earlier_boot) {
    // Written before this host's boot on a store only this host writes: a
    // write the crash cut short, whose writer died with that boot. It keeps
    // nobody out, and it stays (nothing that cannot be read is deleted).
    return std::nullopt;
  }
  if (!record) return std::unexpected(refusal(key, std::nullopt, record.error().message));
  return StoredRecord{.record = std::move(*record), .version = std::move(doc->version)};
}

std::expected<std::optional<StoredRecord>, ClaimError> read_record(const Context& ctx,
                                                                   const Key& key) {
  return as_record(key, ctx.store.get(key));
}

Record our_record(const Context& ctx, WallTime now, std::string_view state) {
  return Record{.id = ctx.options.id,
                .started_at = now,
                .expires_at = now + ctx.options.ttl,
                .host = ctx.self.host,
                .pid = ctx.self.pid,
                .renewed_at = now,
                .boot_id = ctx.self.boot_id,
                .machine_id = ctx.self.machine_id,
                .pid_ns = ctx.self.pid_ns,
                .mode = std::string(to_string(ctx.mode)),
                .state = std::string(state)};
}

Result<void> renew_record(const Context& ctx, Holding& held) {
  Record next = held.record;
  const WallTime now = ctx.clock.wall();
  next.renewed_at = now;
  next.expires_at = now + ctx.options.ttl;
  if (auto written = ctx.store.replace(ctx.record_key, encode_record(next)); !written) {
    return std::unexpected(written.error());
  }
  held.record = std::move(next);
  return {};
}

Result<void> remove_our_record(const Context& ctx) {
  auto removed = ctx.store.remove(ctx.record_key);
  if (!removed && removed.error().code == Errc::not_found) return {};
  return removed;
}

HostIdentity this_process() {
  HostIdentity here{.pid = static_cast<std::int64_t>(::getpid()),
                    .machine_id = this_machine_id(),
                    .booted_at = this_boot_began()};
  std::array<char, HOST_NAME_MAX + 1> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0) here.host = name.data();
  here.boot_id = this_boot_id();
  std::array<char, 128> ns{};
  const ssize_t n = ::readlink("/proc/self/ns/pid", ns.data(), ns.size() - 1);
  if (n > 0) here.pid_ns.assign(ns.data(), static_cast<std::size_t>(n));
  return here;
}

bool gone_from_this_host(const HostIdentity& self, const Record& record) {
  if (!same_host(self, record) || !record.pid || *record.pid == self.pid) return false;
  return self.process_gone ? self.process_gone(*record.pid) : process_gone(*record.pid);
}

EarlierBoot of_earlier_boot(const HostIdentity& self, const Record& record, WallTime now,
                            Duration max_skew) {
  if (self.machine_id.empty() || record.machine_id != self.machine_id || record.host.empty() ||
      record.host != self.host || self.boot_id.empty() || record.boot_id.empty() ||
      record.boot_id == self.boot_id || self.booted_at == WallTime{}) {
    return EarlierBoot::no;
  }
  const WallTime last = record.renewed_at.value_or(record.started_at);
  // A boot of this machine that ended before ours wrote nothing after ours
  // began: a record written since is another host's, under the same id.
  if (last > self.booted_at + max_skew) return EarlierBoot::other_machine;
  if (last + max_skew >= self.booted_at) return EarlierBoot::no;  // too close to tell
  // Its writer renews every third of the window: were it alive on a clone
  // of this machine, it would have rewritten the record by now.
  const Duration window = record.expires_at - last;
  if (window <= Duration::zero() || now < last + window / 3 + max_skew) return EarlierBoot::no;
  return EarlierBoot::dead;
}

namespace {

// gone_from_this_host, or dead with an earlier boot (a shared machine id is
// warned of).
bool dead_on_this_host(const Context& ctx, const Record& record, WallTime now) {
  if (gone_from_this_host(ctx.self, record)) return true;
  switch (of_earlier_boot(ctx.self, record, now, *ctx.options.max_skew)) {
    case EarlierBoot::dead:
      return true;
    case EarlierBoot::other_machine:
      ctx.log.warn(
          "a record names this host and its machine id but was written by another boot after "
          "this one began: another host shares this machine id (give each clone its own "
          "/etc/machine-id); judged by its expiry",
          {{"holder", record.id}, {"boot_id", record.boot_id}});
      return false;
    case EarlierBoot::no:
      return false;
  }
  return false;
}

}  // namespace

bool is_live(const Context& ctx, const Record& record, WallTime now, Duration margin) {
  if (dead_on_this_host(ctx, record, now)) {
    return false;  // its process died on this host, or with an earlier boot of it
  }
  return now < record.expires_at + margin;
}

ClaimError refusal(const Key& key, std::optional<Record> record, std::string_view detail) {
  std::string message = std::string(kAnotherInstanceMessage) + " (" + describe_holder(key, record);
  if (!detail.empty()) message += ": " + std::string(detail);
  message += ")";
  return ClaimError{Error{Errc::another_instance, std::move(message)},
                    ClaimError::Holder{key, std::move(record)}};
}

ClaimError failure(Errc code, std::string message) {
  return ClaimError{Error{code, std::move(message)}, std::nullopt};
}

Result<void> remove_stale(Store& store, const StaleRecord& stale) {
  if (!stale.blind) return store.remove_if(stale.key, stale.version);
  auto again = as_record(stale.key, store.get(stale.key));
  if (!again) return std::unexpected(std::move(again.error().error));
  if (!*again) return fail(Errc::not_found, stale.key.str() + " is gone");
  if ((*again)->record != stale.record) {
    return fail(Errc::conflict, stale.key.str() + " was rewritten since it was judged stale");
  }
  return store.remove(stale.key);
}

std::expected<void, ClaimError> scan_others(const Context& ctx, std::stop_token stop,
                                            const ScanRules& rules) {
  return each_record(ctx, stop, judging_by(ctx, rules));
}

std::expected<void, ClaimError> judge_others(const Context& ctx,
                                             std::vector<std::pair<Key, Result<Document>>> read,
                                             const ScanRules& rules) {
  return judge_each(read, judging_by(ctx, rules));
}

Result<std::vector<Seen>> live_others(const Context& ctx, const ScanRules& rules) {
  std::vector<Seen> out;
  auto seen = each_record(
      ctx, {}, [&](const Key& key, Result<Document> doc) -> std::expected<bool, ClaimError> {
        auto live = examine(ctx, key, std::move(doc), rules);
        if (!live) {
          ctx.log.warn("a record could not be judged",
                       {{"key", key.str()}, {"error", live.error().error.message}});
        } else if (*live && (!rules.blocks || rules.blocks(**live))) {
          out.push_back({key, std::move(**live)});
        }
        return true;  // never refuses: only the listing can fail
      });
  if (!seen) return std::unexpected(std::move(seen.error().error));
  return out;
}

}  // namespace instance::detail
