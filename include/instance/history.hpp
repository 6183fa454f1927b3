// Tenure history: who held the store, when, and how each tenure ended.
//
// Every granted claim, in every mode, writes one tenure document under
// `history/` (beside `instances/`, never inside it: original guards judge
// every file under `instances/` and never read `history/`). It is written
// once when the claim is granted and once when it ends:
//   stood_down  the holder gave the claim up;
//   lost        the holder lost it (the reason says why) and stopped;
//   crashed     a successor found the holder's record dead and closed the
//               tenure, ending it at the holder's last renewal (the holder
//               died at some point after that).
// A tenure still open is held now, or its holder died and no successor has
// closed it yet.
//
// Keys sort by time: history/<claimed at, UTC, 20261203T155700.123456789Z>-<id>,
// the time being the holder's record's started_at, so a successor that
// reads a dead record knows its tenure's key. The guard keeps the newest
// GuardOptions::history_keep tenures and removes older ones after a claim,
// off the claim path.
//
// analyse_history() answers what an operator asks after an incident: did two
// instances ever hold at once (an overlap), did a fencing epoch fail to grow,
// and how long each hand-over left the service without a holder (the gap
// before each tenure).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/key.hpp"
#include "instance/store.hpp"

namespace instance {

struct Tenure {
  std::string id;
  std::string host;
  std::optional<std::int64_t> pid;
  std::string mode;                    // the protocol in force: announce, verify, exclusive
  std::optional<std::uint64_t> epoch;  // exclusive: the fencing epoch
  // The holder's record's started_at: names the tenure's key.
  WallTime started_at{};
  // When the claim was granted on the holder's clock (after the protocol
  // finished): the tenure's start.
  WallTime claimed_at{};
  Duration max_skew{0};  // the holder's --max-skew: how far its clock may be off
  std::optional<WallTime> ended_at;
  std::string end;     // "stood_down", "lost", "crashed"; empty while open
  std::string reason;  // lost: why; crashed: who closed it
  friend bool operator==(const Tenure&, const Tenure&) = default;
};

// Compact JSON, one document per tenure.
INSTANCE_EXPORT std::string encode_tenure(const Tenure& tenure);
// Errc::malformed (with the reason) when the bytes are not a tenure.
INSTANCE_EXPORT Result<Tenure> decode_tenure(std::string_view bytes);

// "history".
INSTANCE_EXPORT const Key& history_prefix();
// history/<stamp of started_at>-<id>; Errc::invalid for an empty id.
INSTANCE_EXPORT Result<Key> tenure_key(std::string_view id, WallTime started_at);

struct HistoryEntry {
  Key key;
  std::optional<Tenure> tenure;  // absent when unreadable
  std::string problem;           // why it is unreadable
};

// Every tenure under history/, oldest first (by key). A tenure that cannot
// be read or decoded is listed with its problem, never skipped.
INSTANCE_EXPORT Result<std::vector<HistoryEntry>> read_history(Store& store);

struct HistoryReport {
  std::vector<Tenure> tenures;  // oldest first (by claimed_at)
  // Per tenure: when it ended or, while open, nullopt. An open tenure
  // followed by a later one ended (at the latest) when that one began, and
  // `inferred_end` says so; it also marks the last tenure, open, whose
  // holder's record is gone (`still_held` said no): it ended, nobody knows
  // when (`end` stays nullopt).
  std::vector<std::optional<WallTime>> end;
  std::vector<bool> inferred_end;
  // Per tenure: the time from the latest end of every earlier tenure to its
  // start (the hand-over or downtime); nullopt for the first and when it
  // overlaps an earlier one.
  std::vector<std::optional<Duration>> gap_before;
  struct Overlap {
    std::size_t first = 0, second = 0;  // indexes into tenures
    Duration amount{0};                 // how long both held
  };
  // Pairs that held at once for longer than their clocks can explain: 0 on
  // one host, the sum of both holders' max-skew across hosts.
  std::vector<Overlap> overlaps;
  struct EpochStep {
    std::size_t earlier = 0, later = 0;  // exclusive tenures, by claimed_at
  };
  // Consecutive exclusive tenures whose epoch did not increase.
  std::vector<EpochStep> epoch_regressions;
  bool clean() const { return overlaps.empty() && epoch_regressions.empty(); }
};

// Judges tenures (any order); `now` ends the open ones that nothing follows,
// for overlaps only. An open tenure that others followed is taken to have
// ended by the next one's start, unless `still_held` says its holder holds
// now (its record is live: it ran on beside its successors, an overlap);
// so is a tenure a successor closed as crashed: its holder was paused, not
// dead.
INSTANCE_EXPORT HistoryReport
analyse_history(std::vector<Tenure> tenures, WallTime now,
                const std::function<bool(const Tenure&)>& still_held = nullptr);

}  // namespace instance
