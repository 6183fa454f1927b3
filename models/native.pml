/* exclusive on a store's own lock, with a dead holder on this host ended by
 * its token (src/guard/exclusive.cpp, acquire_locked and
 * end_dead_holders_lock; docs/design/arguments.md, "A dead holder's lock on
 * a server store").
 *
 * The store's lock "instances.lock", one atomic register:
 *   lk      NOBODY (free) or the process that was granted it
 *   lkdead  the incarnation that holds it has crashed
 *   lcur    bitmask of processes whose remembered token (read from the lease
 *           document) is the token of the lock granted now: an unlock by a
 *           remembered token ends the lock exactly when the bit is set. Every
 *           grant clears it: a token is granted once.
 * The lease document "instances.lease", one atomic register:
 *   dh      NOBODY (absent) or the holder it names
 *   drel    released
 *   ddead   written by an incarnation that has crashed since ("its process on
 *           this host is gone": pid gone, liveness lock free; or it ran in an
 *           earlier boot of this host, whose reboot crashed every process)
 *   dtok    its token is the token of the lock granted now
 *
 *   acquire  lock; refused -> read the lease document, and when it names a
 *            dead holder, not released, unlock by its token and lock once
 *            more; refused again -> start over. Granted -> write the lease
 *            document (our token), hold.
 *   hold     renewing any number of times: the lock must still be ours,
 *            else the claim is lost.
 *   release  mark the document released, unlock.
 *   crash    after the lock is taken, before the document is written (the
 *            document still names the predecessor), and while holding.
 *   env      the server ends a lock when its ttl runs out: only a dead
 *            holder's (a live one renews on time; common.pml).
 *
 * Left out: the epoch (it grows with every grant, as in exclusive.pml), the
 * scan of instances/ (only adds refusals), the records, and a pid reused by
 * another process (it only makes a dead holder look alive).
 *
 * Expected result: no assertion violation, full state space.
 */
#include "common.pml"

#define NOBODY 255

byte lk = NOBODY;
bool lkdead;
byte lcur;
byte dh = NOBODY;
bool drel;
bool ddead;
bool dtok;

inline take_lock(got) {
  atomic {
    if
    :: lk == NOBODY -> lk = i; lkdead = false; lcur = 0; dtok = false; got = true
    :: else -> got = false
    fi
  }
}

active proctype env() {
  do
  :: atomic { lk != NOBODY && lkdead -> lk = NOBODY; lcur = 0; dtok = false }
  od
}

active [N] proctype P() {
  byte i = _pid - 1;  /* env is pid 0 */
  bool got, wrote, judged;
start:
  got = false; wrote = false; judged = false;
  take_lock(got);
  if
  :: got -> skip
  :: else ->
     /* read the lease document: remember its token, judge its holder */
     atomic {
       judged = dh != NOBODY && !drel && ddead;
       if
       :: dtok -> lcur = lcur | bit(i)
       :: else -> lcur = lcur & ~bit(i)
       fi
     }
     if
     :: judged ->
        atomic {  /* unlock by the remembered token: ends only that grant */
          if
          :: lcur & bit(i) -> lk = NOBODY; lcur = 0; dtok = false
          :: else -> skip
          fi
        }
        judged = false;
        take_lock(got);
        if
        :: got -> skip
        :: else -> goto start
        fi
     :: else -> goto start  /* held: refused, try again later */
     fi
  fi;
  /* the lock is ours */
  if
  :: atomic { lkdead = (lk == i); goto start }  /* crash before the document */
  :: skip
  fi;
  atomic { dh = i; drel = false; ddead = false; dtok = (lk == i); wrote = true };
  enter_cs();
  do
  :: if  /* renew */
     :: lk == i -> skip
     :: else -> leave_cs(); goto start  /* lost: stop the work */
     fi
  :: break
  :: atomic {  /* crash while holding */
       leave_cs(); lkdead = (lk == i); ddead = (dh == i && wrote); goto start
     }
  od;
  leave_cs();
  atomic { dh = i; drel = true; ddead = false; dtok = (lk == i) };
  atomic {
    if
    :: lk == i -> lk = NOBODY; lcur = 0; dtok = false
    :: else -> skip
    fi
  };
  goto start
}
