/* Shared by the claim-protocol models (announce.pml, verify.pml,
 * exclusive.pml). See models/README.md for what is modelled and what is not.
 *
 * The store: one atomic register per record key instances/<id>, one per
 * process id 0..N-1 (process i always runs with id i, so a restart of i is a
 * restart of the same identity). Every get, replace, remove and
 * remove-if-unchanged is one atomic step; a listing is one atomic snapshot of
 * which keys exist. This is the "atomic registers" assumption of
 * docs/design/arguments.md, "verify", with settle = 0: an acknowledged write is
 * visible to every later read and listing.
 *
 * Time: there are no clocks. A record counts as live until it is marked
 * expired, and it can be marked expired only while it is stale, i.e. written
 * by an incarnation of its owner that has crashed since (the owner's next
 * write clears it). That is what ttl + renewal every ttl/3 + a skew margin
 * give when renewals are on time and clocks stay within max-skew; a holder
 * paused past its expiry (the time risk the fencing epoch answers:
 * docs/design/arguments.md) is outside the model.
 *
 * Crashes: a process may crash at every point where that leaves something
 * behind: right after each write of its record, and while it holds. (A crash
 * where it has written nothing yet, or only read, leaves the store as a
 * process that stalls and starts over, which the interleavings already
 * cover, except for an abandoned reap: fewer removals, fewer behaviours.)
 * The crashed process's record stays and becomes stale; the process leaves
 * the critical section (its child dies with it: PR_SET_PDEATHSIG), and starts
 * over from the top with the same id: a restart of the same identity.
 */

#ifndef N
#define N 3
#endif

#define bit(p) (1 << (p))

byte cs;         /* processes in the critical section (holding the claim) */

/* Entering and leaving the critical section. The safety property is the
 * assertion: never two holders at once. */
inline enter_cs() {
  atomic { cs++; assert(cs <= 1) }
}

inline leave_cs() {
  cs--
}

