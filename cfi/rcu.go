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
// Go's atomics are sequentially consistent (the Go memory model, "Atomic
// Values"), which makes this sound: a reader whose slot the writer saw as
// 0 stored its slot later, so it loaded the pointer after the new one was
// published; a reader whose slot was >= target read gp after the advance,
// so also after the publication; any other reader is waited for. A reader
// that read gp just before an advance only makes the writer wait longer,
// never too little.
//
// Every access to a slot is a sync/atomic one, readers' included: the
// scheme rests on the memory model alone, and the race detector checks
// the code that runs without it. (An earlier scheme stored the readers'
// slots with plain stores and ordered them with membarrier(2) from the
// writer, as liburcu's urcu-memb does; it saved a few nanoseconds a
// section, but the Go memory model does not bless it.)

// cacheLine pads per-reader state so that two readers' slots never share
// a cache line (128 bytes covers adjacent-line prefetching).
const cacheLine = 128

type readerSlot struct {
	state atomic.Uint64 // gp at entry, 0 outside a section
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
}

// set stores a reader's slot.
func (g *grace) set(rs *readerSlot, v uint64) { rs.state.Store(v) }

// exit ends a reader's section: the slot goes back to 0, then a waiting
// writer, if any, is woken. Either the waiter's passed() sees the 0, or
// this load sees the waiter (sequential consistency).
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

// start begins a grace period and returns its target.
func (g *grace) start() uint64 { return g.gp.Add(1) }

// passed reports whether every reader that might hold a pointer read
// before target's grace period began has left its section.
func (g *grace) passed(target uint64) bool {
	p := g.readers.Load()
	if p == nil {
		return true
	}
	for _, rs := range *p {
		if v := rs.state.Load(); v != 0 && v < target {
			return false
		}
	}
	return true
}

// wait blocks until target's grace period has passed: synchronize_rcu().
// It spins briefly (a reader's section is usually short), then yields,
// then sleeps until a reader leaving its section wakes it (with a
// millisecond's timeout, as several waiters share one wake-up).
func (g *grace) wait(target uint64) {
	var timer *time.Timer
	for i := 0; !g.passed(target); i++ {
		switch {
		case i < 16:
		case i < 64:
			runtime.Gosched()
		case i == 64:
			g.waiters.Add(1)
			defer g.waiters.Add(-1)
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
	for n < len(r.pending) && n < limit && r.g.passed(r.pending[n].target) {
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
