/* exclusive: compare-and-set on one lease document (src/guard/exclusive.cpp,
 * the path without a native lease; docs/design/modes.md, "exclusive").
 *
 * The lease document "instances.lease", one atomic register:
 *   holder    NOBODY (absent), or the id of the last acquirer
 *   released  the holder released it
 *   lexp      the lease is expired (set by the environment, only when stale)
 *   lstale    written by an incarnation of `holder` that has crashed since
 *   lcur      bitmask of processes whose version of the document is current
 *             (no successful write since they read or wrote it): a
 *             conditional create / replace_if succeeds exactly when the bit is
 *             set. Create-if-absent is the same check against the version
 *             "absent" (the document is never removed).
 *
 *   acquire  get the lease. Held by a live other (not released, not expired,
 *            another id) -> refuse and start over later. Else (absent,
 *            released, expired, or ours from before a restart) create /
 *            replace_if on the version read, epoch + 1; a lost compare-and-set
 *            means someone moved first: get again and decide again.
 *   hold     (the critical section), renewing any number of times:
 *            replace_if on the version we last wrote; a failure means the
 *            lease was taken: the claim is lost (leave the critical section).
 *   release  replace_if with released = true (the document stays).
 *
 * Left out: the epoch value (it only grows with every successful acquire;
 * fencing is for holders paused past expiry, which this model excludes, see
 * common.pml), the instances/<id> record the holder also writes (for original
 * guards and `status`; it takes no part in exclusion between exclusive
 * guards), the scan of instances/ before the compare-and-set (it only adds
 * refusals), and the native-lease path (the store's own lock decides there).
 *
 * Expected result: no assertion violation, full state space.
 */
#include "common.pml"

#define NOBODY 255

byte holder = NOBODY;
bool released;
bool lexp;
bool lstale;
byte lcur;

/* A conditional write of the lease by process i: succeeds (won = true) only
 * when no write happened since i's get or last write. */
inline cas_lease(new_holder, new_released, won) {
  atomic {
    if
    :: lcur & bit(i) ->
       holder = new_holder; released = new_released; lexp = false; lstale = false;
       lcur = bit(i); won = true
    :: else -> won = false
    fi
  }
}

active proctype env() {
  do
  :: atomic { lstale && holder != NOBODY && !released && !lexp -> lexp = true }
  od
}

active [N] proctype P() {
  byte i = _pid - 1;  /* env is pid 0 */
  byte h;
  bool rel, e, won;
start:
  won = false;
  /* acquire: read, decide, compare-and-set; again when the CAS lost */
  do
  :: atomic { h = holder; rel = released; e = lexp; lcur = lcur | bit(i) }
     if
     :: h != NOBODY && h != i && !rel && !e ->
        atomic { h = 0; rel = false; e = false; lcur = lcur & ~bit(i) };
        goto start  /* refused: try again later */
     :: else ->
        cas_lease(i, false, won);
        atomic { h = 0; rel = false; e = false };
        if
        :: won -> break
        :: else -> skip  /* someone moved first: read again */
        fi
     fi
  od;
  won = false;
  enter_cs();
  do
  :: cas_lease(i, false, won);  /* renew */
     if
     :: won -> won = false
     :: else -> leave_cs(); goto start  /* lost: stop the work */
     fi
  :: break
  :: leave_cs(); lstale = (holder == i); goto start  /* crash while holding */
  od;
  leave_cs();
  cas_lease(i, true, won);  /* release: keep the document, mark it released */
  won = false;
  goto start
}
