// SPDX-License-Identifier: GPL-2.0-only

package cfi

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The read side is a grace-period scheme in the manner of userspace RCU:
//
//   - gp is a counter the writer advances to start a grace period.
//   - A reader entering its section stores the gp value it read into its
//     own slot (0 means "not in a section"), then loads the shadow
//     pointer; leaving, it stores 0.
//   - After publishing a new shadow, the writer advances gp to target and
//     may free the old shadow once every slot is 0 or >= target.
//
// Go's atomics are sequentially consistent, which makes this sound: a
// reader whose slot the writer saw as 0 stored its slot later, so it
// loaded the pointer after the new one was published; a reader whose slot
// was >= target read gp after the advance, so also after the publication;
// any other reader is waited for. A reader that read gp just before an
// advance only makes the writer wait longer, never too little.
//
// Fenced readers (the default where membarrier(2) is available): a
// sequentially consistent store is an XCHG on amd64, and two of them were
// most of a one-shot Lookup's 18-21 ns. With membarrier, readers store
// their slot with plain stores (ordered by the compiler, not by the CPU),
// and the writer makes up for it as liburcu's urcu-memb flavour does: it
// calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) after publishing and
// advancing gp and before it reads the slots, which runs a full barrier
// on every CPU running a thread of the process. A reader whose slot store
// came before that barrier is seen by the scan; one whose store came
// after it loads the pointer after the barrier, so it sees the new one.
// On CPUs that may reorder a load after a later store (not amd64), the
// writer fences once more after a scan that finds every reader gone,
// before anything is unmapped, so that a reader's loads from the old
// shadow are complete before its "0" is trusted.

// cacheLine pads per-reader state so that two readers' slots never share
// a cache line (128 bytes covers adjacent-line prefetching).
const cacheLine = 128

type readerSlot struct {
	state uint64 // atomic, except the fenced readers' own stores
	_     [cacheLine - 8]byte
}

// grace is the state of the grace-period machinery of one Set.
type grace struct {
	gp      atomic.Uint64
	readers atomic.Pointer[[]*readerSlot] // copy-on-write under regMu
	regMu   sync.Mutex
	// passedHook, when set (tests), is called each time a wait for target
	// returns.
	passedHook func(target uint64)

	// waiters counts goroutines waiting for a grace period; a reader that
	// leaves its section while there are any wakes one (as liburcu's
	// readers wake a synchronize_rcu() waiting on a futex), so that waits
	// end when the last old reader leaves, not at the next poll.
	waiters atomic.Int32
	wake    chan struct{} // capacity 1

	// fenced: readers store their slots with plain stores and the writer
	// issues membarrier(2) (see above). barrierGP is the gp value that the
	// last barrier covers: slots can be trusted for targets up to it.
	fenced    bool
	barrierGP atomic.Uint64
}

// set stores a reader's slot.
func (g *grace) set(rs *readerSlot, v uint64) {
	if g.fenced && !raceEnabled {
		rs.state = v // plain: the writer's membarrier orders it
	} else {
		atomic.StoreUint64(&rs.state, v)
	}
}

// exit ends a reader's section: the slot goes back to 0, then a waiting
// writer, if any, is woken. Either the waiter's passed() sees the 0, or
// this load sees the waiter (sequential consistency, or the barrier the
// waiter issues after announcing itself).
func (g *grace) exit(rs *readerSlot) {
	g.set(rs, 0)
	if g.waiters.Load() != 0 {
		g.wakeOne()
	}
}

// wakeOne wakes a waiting writer (kept out of exit so that exit inlines).
func (g *grace) wakeOne() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *grace) register() *readerSlot {
	g.regMu.Lock()
	defer g.regMu.Unlock()
	rs := &readerSlot{}
	var list []*readerSlot
	if p := g.readers.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, rs)
	g.readers.Store(&list)
	return rs
}

func (g *grace) unregister(rs *readerSlot) {
	g.regMu.Lock()
	defer g.regMu.Unlock()
	var list []*readerSlot
	for _, x := range *g.readers.Load() {
		if x != rs {
			list = append(list, x)
		}
	}
	g.readers.Store(&list)
}

// barrier issues membarrier(2) for fenced readers and records the gp
// value it covers. If the call fails (it should not once registered), the
// readers' stores are not known to be visible: the caller treats the
// slots as unreadable for now.
func (g *grace) barrier() bool {
	cur := g.gp.Load()
	if !membarrier() {
		return false
	}
	for {
		old := g.barrierGP.Load()
		if old >= cur || g.barrierGP.CompareAndSwap(old, cur) {
			return true
		}
	}
}

// weakStores: the CPU may make a store visible before earlier loads are
// done (every supported architecture but amd64).
const weakStores = runtime.GOARCH != "amd64" && runtime.GOARCH != "386"

// start begins a grace period and returns its target.
func (g *grace) start() uint64 { return g.gp.Add(1) }

// passed reports whether every reader that might hold a pointer read
// before target's grace period began has left its section.
//
// With fenced readers, the slots can be trusted for target only after a
// barrier issued since target's grace period began: passed issues one if
// fence is set, else it reports false (a reap under the reclaimer's lock
// never waits for the IPIs; the reclaimer's wait fences).
func (g *grace) passed(target uint64, fence bool) bool {
	p := g.readers.Load()
	if p == nil {
		return true
	}
	if g.fenced && !raceEnabled && g.barrierGP.Load() < target && (!fence || !g.barrier()) {
		return false
	}
	for _, rs := range *p {
		if v := atomic.LoadUint64(&rs.state); v != 0 && v < target {
			return false
		}
	}
	if g.fenced && !raceEnabled && weakStores && !membarrier() {
		return false
	}
	return true
}

// wait blocks until target's grace period has passed: synchronize_rcu().
// It spins briefly (a reader's section is usually short), then yields,
// then sleeps until a reader leaving its section wakes it (with a
// millisecond's timeout, as several waiters share one wake-up).
func (g *grace) wait(target uint64) {
	var timer *time.Timer
	for i := 0; !g.passed(target, true); i++ {
		switch {
		case i < 16:
		case i < 64:
			runtime.Gosched()
		case i == 64:
			g.waiters.Add(1)
			defer g.waiters.Add(-1)
			if g.fenced && !raceEnabled {
				// A reader that left with a plain store and then missed
				// the count: the barrier makes its 0 visible to the
				// next scan (or it saw the count).
				g.barrier()
			}
			timer = time.NewTimer(time.Millisecond)
			defer timer.Stop()
		default:
			select {
			case <-g.wake:
			case <-timer.C:
			}
			timer.Reset(time.Millisecond)
		}
	}
	if g.passedHook != nil {
		g.passedHook(target)
	}
}

// retired is a shadow waiting for its grace period.
type retired struct {
	sh     *shadow
	target uint64
}

// reclaimer is the deferred mode's call_rcu(): the writer queues retired
// shadows and returns; they are unmapped, oldest first, once their grace
// periods have passed. A reclaimer goroutine does that on a timer tick
// (every reclaimTick) rather than being woken by each writer: a goroutine
// a writer wakes waits in that writer's own run queue slot until the
// writer blocks, so on a busy machine it would starve while the backlog
// grew; a timer wakes it wherever a processor is free. At most max
// shadows are pending at once: a writer that would queue one more waits,
// which bounds the memory held by old shadows to max mappings. Past half
// the bound (the reclaimer is falling behind) the writer also unmaps up to
// two expired shadows itself.
type reclaimer struct {
	g   *grace
	m   mapper
	max int

	mu      sync.Mutex
	cond    *sync.Cond // pending shrank
	pending []retired  // oldest first
	queued  uint64     // shadows ever queued
	done    uint64     // shadows unmapped (in queue order)
	reaping bool       // a reap is unmapping outside mu
	kick    chan struct{}
	stop    chan struct{}
	exited  chan struct{}

	bytes       atomic.Int64 // mapped bytes of pending shadows
	maxSeen     atomic.Int64 // their high-water mark
	writerReaps atomic.Int64 // shadows the writer unmapped itself
}

// reclaimTick is how often the reclaimer looks at the backlog.
const reclaimTick = time.Millisecond

func newReclaimer(g *grace, m mapper, max int) *reclaimer {
	r := &reclaimer{g: g, m: m, max: max, kick: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	go r.run()
	return r
}

func (r *reclaimer) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// retire queues sh, whose grace period is target. It waits only when max
// shadows are already pending.
func (r *reclaimer) retire(sh *shadow, target uint64) {
	r.mu.Lock()
	if len(r.pending) > r.max/2 {
		before := r.done
		r.reap(2)
		r.writerReaps.Add(int64(r.done - before))
		r.poke()
	}
	for len(r.pending) >= r.max {
		r.cond.Wait()
	}
	r.pending = append(r.pending, retired{sh, target})
	r.queued++
	n := r.bytes.Add(int64(len(sh.mem)))
	if n > r.maxSeen.Load() {
		r.maxSeen.Store(n) // under mu: no lost update
	}
	r.mu.Unlock()
}

// reap unmaps, oldest first, up to limit pending shadows whose grace
// periods have passed. It is called with r.mu held and returns with it
// held, but unmaps without it, so that a writer queueing a shadow never
// waits behind a batch of munmaps. One reaper at a time, so shadows are
// unmapped in queue order and done counts them in that order.
func (r *reclaimer) reap(limit int) {
	if r.reaping {
		return
	}
	n := 0
	for n < len(r.pending) && n < limit && r.g.passed(r.pending[n].target, false) {
		n++
	}
	if n == 0 {
		return
	}
	batch := slices.Clone(r.pending[:n])
	clear(r.pending[:n])
	r.pending = r.pending[n:]
	r.reaping = true
	r.mu.Unlock()
	mems := make([][]byte, len(batch))
	for i, x := range batch {
		mems[i] = x.sh.mem
	}
	_ = r.m.freeAll(mems)
	for _, x := range batch {
		r.bytes.Add(-int64(len(x.sh.mem)))
	}
	r.mu.Lock()
	r.reaping = false
	r.done += uint64(n)
	r.cond.Broadcast()
}

// barrier waits until every shadow queued before it is unmapped:
// rcu_barrier().
func (r *reclaimer) barrier() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for want := r.queued; r.done < want; {
		r.poke()
		r.cond.Wait()
	}
}

// close unmaps everything pending and stops the goroutine.
func (r *reclaimer) close() {
	r.barrier()
	close(r.stop)
	<-r.exited
}

func (r *reclaimer) run() {
	defer close(r.exited)
	tick := time.NewTicker(reclaimTick)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
		case <-tick.C:
		}
		r.mu.Lock()
		if len(r.pending) > 0 && !r.reaping {
			// One grace period covers everything queued so far: wait for
			// the newest's, without the lock, then reap.
			target := r.pending[len(r.pending)-1].target
			r.mu.Unlock()
			r.g.wait(target)
			r.mu.Lock()
			r.reap(len(r.pending))
		}
		r.mu.Unlock()
	}
}
