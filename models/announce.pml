/* announce: the original Go guard's protocol (src/guard/announce.cpp,
 * docs/design/modes.md, "announce"). Check, then write: not a lock.
 *
 *   acquire  scan instances/: refuse at a live record of another id, reap
 *            expired ones; then replace our record.
 *   hold     (the critical section)
 *   release  remove our record; start over.
 * Renewal rewrites the same record and is left out (see common.pml: a live
 * holder's record never expires).
 *
 * Expected result: spin FINDS an assertion violation: two processes both
 * scan an empty instances/, both write, both hold. The trail is kept in
 * models/announce-counterexample.txt. N = 2 is enough and keeps the trail
 * short.
 */
#ifndef N
#define N 2
#endif
#include "common.pml"
#include "records.pml"

active [N] proctype P() {
  byte i = _pid - 1;  /* env is pid 0 */
  byte k, listed, seen;
  bool seen_exp, ok;
start:
  ok = false;
  scan(true, ok);
  if
  :: ok -> skip
  :: else -> goto start  /* refused: try again later */
  fi;
  write_own(PRESENT);
  enter_cs();
  if
  :: leave_cs(); remove_own(); goto start  /* release */
  :: leave_cs(); stale[i] = true; goto start  /* crash while holding */
  fi
}
