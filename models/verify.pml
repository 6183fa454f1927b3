/* verify: write, settle, scan (src/guard/verify.cpp; docs/design/arguments.md,
 * "verify"), on atomic registers (settle = 0: the write is visible at once).
 *
 *   acquire  1. scan: refuse at a live record of another id; reap expired
 *               ones;
 *            2. replace our record as CLAIMING;
 *            3. settle (nothing to wait for on atomic registers);
 *            4. scan again, reaping nothing: any other live record, claiming
 *               or held -> withdraw (remove ours) and start over;
 *            5. replace ours as HELD.
 *   hold     (the critical section)
 *   release  remove our record; start over.
 * Renewal rewrites the same record and is left out (its collision check can
 * only end a claim, never start one; see common.pml for why a live holder's
 * record never expires).
 *
 * Reaping in step 1: with REAP_CONDITIONAL (the default here) a stale record
 * is removed with remove_if on the version read, as examine() does on stores
 * with conditional writes (the directory store). With -DREAP_PLAIN it is a
 * plain remove, as on a store with plain operations only; spin then finds a
 * violation: a restarted process with the SAME id rewrites its record between
 * another's get (expired) and remove, the remove deletes the fresh record,
 * and neither second scan sees the other. With -DREAP_NONE (expired records
 * skipped, never removed) spin again finds no violation. See models/README.md.
 *
 * Expected result (default): no assertion violation, full state space.
 */
#if !defined(REAP_PLAIN) && !defined(REAP_NONE)
#define REAP_CONDITIONAL
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
  write_own(CLAIMING);
  if
  :: skip
  :: goto crash  /* crash, leaving a claiming record */
  fi;
  /* settle: 0 on atomic registers */
  scan(false, ok);
  if
  :: ok -> skip
  :: else -> remove_own(); goto start  /* withdraw; back off and start over */
  fi;
  if
  :: skip
  :: goto crash  /* crash after the second scan, record still claiming */
  fi;
  write_own(HELD);
  enter_cs();
  if
  :: leave_cs(); remove_own(); goto start  /* release */
  :: leave_cs(); goto crash  /* crash while holding */
  fi;
crash:
  stale[i] = true;
  goto start
}
