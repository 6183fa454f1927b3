/* Instance records under instances/, and the scan both announce and verify
 * run (src/guard/records.cpp: scan_others / examine). Included after
 * common.pml.
 *
 * rec[j]    NONE, or the record of id j: PRESENT (announce), CLAIMING or
 *           HELD (verify). Other fields of a record play no part here.
 * exp[j]    the record is expired (set by the environment, only when stale)
 * stale[j]  the record was written by an incarnation of j that has crashed
 * cur[j]    bitmask of processes that got rec[j] as expired, are about to
 *           reap it, and whose get is still current (no write or remove
 *           since): what a version check compares, so remove_if(version
 *           read) succeeds exactly when the bit is set. Kept only from that
 *           get to the reap (the version is a local of the scan).
 *
 * Unreadable records (a get that fails, bytes that do not decode) are not
 * modelled: under atomic registers every record decodes. The code refuses on
 * them, which only adds refusals.
 */

#define NONE 0
#define PRESENT 1
#define CLAIMING 1
#define HELD 2

byte rec[N];
bool exp[N];
bool stale[N];
byte cur[N];

/* replace(instances/<i>, ...) by the owner: a fresh, unexpired record. */
inline write_own(v) {
  atomic { rec[i] = v; exp[i] = false; stale[i] = false; cur[i] = 0 }
}

/* remove(instances/<i>) by the owner (release, withdraw). */
inline remove_own() {
  atomic { rec[i] = NONE; exp[i] = false; cur[i] = 0 }
}

/* Reaping record k judged expired. REAP_CONDITIONAL: remove_if on the version
 * read (what examine() does where the store has conditional writes);
 * REAP_NONE: expired records are skipped, never removed (a candidate fix for
 * plain stores); otherwise a plain remove (a store with plain operations
 * only). */
inline reap(k) {
#ifdef REAP_NONE
  skip
#elif defined(REAP_CONDITIONAL)
  atomic {
    if
    :: cur[k] & bit(i) -> rec[k] = NONE; exp[k] = false; cur[k] = 0
    :: else -> cur[k] = cur[k] & ~bit(i)  /* rewritten since we read it: leave it */
    fi
  }
#else
  atomic { rec[k] = NONE; exp[k] = false; cur[k] = 0 }  /* cur unused here */
#endif
}

/* scan_others: list instances/ (one atomic snapshot), then get every listed
 * record of another id, one atomic get each. A record gone since the
 * listing is skipped; a live one refuses (ok = false); an expired one is
 * reaped when do_reap. Our own id is skipped whatever its state. */
inline scan(do_reap, ok) {
  d_step {
    listed = 0;
    k = 0;
    do
    :: k < N -> if :: rec[k] != NONE -> listed = listed | bit(k) :: else -> skip fi; k++
    :: k == N -> break
    od;
    k = 0
  }
  ok = true;
  do
  :: k == N -> break
  :: k < N && (k == i || (listed & bit(k)) == 0) -> k++
  :: k < N && k != i && (listed & bit(k)) != 0 ->
     atomic {
       seen = rec[k]; seen_exp = exp[k];
       /* remember the version read only where it is used: for a reap */
       if :: do_reap && seen != NONE && seen_exp -> cur[k] = cur[k] | bit(i) :: else -> skip fi
     }
     if
     :: seen == NONE -> k++                   /* gone since listed */
     :: seen != NONE && !seen_exp -> ok = false; break  /* live: refuse */
     :: seen != NONE && seen_exp && do_reap -> reap(k); k++
     :: seen != NONE && seen_exp && !do_reap -> k++
     fi
  od;
  atomic { k = 0; listed = 0; seen = 0; seen_exp = false }  /* dead locals: fewer states */
}

/* The environment lets a stale record expire (and it stays expired until
 * its owner writes it again). */
active proctype env() {
  do
  :: atomic { stale[0] && rec[0] != NONE && !exp[0] -> exp[0] = true }
  :: atomic { stale[1] && rec[1] != NONE && !exp[1] -> exp[1] = true }
#if N > 2
  :: atomic { stale[2] && rec[2] != NONE && !exp[2] -> exp[2] = true }
#endif
#if N > 3
#error "env() handles N <= 3"
#endif
  od
}
