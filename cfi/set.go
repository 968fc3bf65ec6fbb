// SPDX-License-Identifier: GPL-2.0-only

package cfi

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Reclaim selects how old shadows are freed.
type Reclaim uint8

const (
	// Deferred: the writer queues the old shadow and returns; a reclaimer
	// unmaps it after a grace period (call_rcu()). The default.
	Deferred Reclaim = iota
	// Synchronous: the writer waits for a grace period, then unmaps the
	// old shadow before returning (synchronize_rcu(), kernel/cfi.c).
	Synchronous
)

func (r Reclaim) String() string {
	if r == Synchronous {
		return "synchronous"
	}
	return "deferred"
}

// Defaults, as kernel/cfi.c with 4 KiB pages: a 64 KiB shadow whose
// header is the 8-byte base, so (65536-8)/2 = 32,764 slots, just under
// 128 MiB of module text.
const (
	DefaultPageShift  = 12
	DefaultSlots      = (64<<10 - headerBytes) / 2
	DefaultMaxPending = 256 // deferred backlog: 256 shadows, 16 MiB with the defaults

	// spareMappings read-only mappings are kept ready for the next shadows.
	spareMappings = 16
)

// Options configure a Set. The zero value is the defaults.
type Options struct {
	// PageShift is log2 of the page size (12 to 16: 4 to 64 KiB).
	PageShift uint
	// Slots is the number of pages a shadow covers (1 to 65,535: a slot
	// holds a 16-bit page index and 0xFFFF means none).
	Slots int
	// Reclaim selects synchronous or deferred reclamation.
	Reclaim Reclaim
	// MaxPending bounds the deferred backlog: at most this many old
	// shadows (MaxPending x ShadowBytes of memory) wait for reclamation;
	// a writer that would queue one more waits for the reclaimer. All the
	// shadow memory of a Set is a memfd of (MaxPending + 27) x ShadowBytes:
	// the backlog, the current shadow, one being built, 16 spare mappings
	// kept ready, a batch of 8 being mapped, and one more (MaxPending + 3
	// with Lazy, which keeps no spares).
	MaxPending int
	// Lazy prepares nothing ahead, for a Set that records a module or two
	// and is closed (klpresolve's pipeline, once per kernel): no spare
	// mappings are kept ready; the memfd, of (MaxPending + 3) x
	// ShadowBytes, is faulted in as shadows use it rather than all at New.
	// New and Close then take microseconds instead of milliseconds; each update
	// maps its own shadow (Stats.SpareMisses counts them). Figures:
	// docs/benchmarks.md.
	Lazy bool
	// KernelUpperBound covers the text range as kernel/cfi.c does, up to
	// and including the page of start+size (one page too many when the
	// size is a multiple of the page size). By default the range is
	// [start, end), end exclusive.
	KernelUpperBound bool

	mapper mapper // tests substitute a failing one
	hooks  *hooks // tests observe grace periods and retirements
}

// hooks let tests watch the reclamation pipeline.
type hooks struct {
	passed  func(target uint64)
	retired func(sh *shadow, target uint64)
}

// Module is a loaded module as the shadow sees it.
type Module struct {
	Name string
	// TextStart and TextEnd bound the module's text, [TextStart, TextEnd).
	TextStart, TextEnd uint64
	// CheckFn is the module's __cfi_check. The shadow records the module
	// only when it is page aligned and inside the text (else the module is
	// found by the slow path only, as kernel/cfi.c's "not using shadow").
	CheckFn uint64
}

// Source says where a lookup found its answer.
type Source uint8

const (
	Miss     Source = iota // no loaded module holds the address
	InShadow               // the shadow had the page
	SlowPath               // the sorted module table had it (a shadow miss)
)

func (s Source) String() string {
	return [...]string{"miss", "shadow", "slow path"}[s]
}

// table is the slow path: the loaded modules sorted by TextStart. It is
// immutable and garbage collected, so it needs no grace period.
type table struct {
	mods []Module
}

func (t *table) find(addr uint64) *Module {
	if t == nil {
		return nil
	}
	i := sort.Search(len(t.mods), func(i int) bool { return t.mods[i].TextEnd > addr })
	if i < len(t.mods) && t.mods[i].TextStart <= addr {
		return &t.mods[i]
	}
	return nil
}

// Set is the CFI shadow of a set of loaded modules, with its slow path.
// Writers (Add, Remove) are serialised; readers (Reader.Lookup) run
// concurrently with them and with each other without locking. Several
// Sets may live in one process.
type Set struct {
	opts  Options
	shift uint
	m     mapper

	mu     sync.Mutex // the writer lock (shadow_update_lock)
	cur    atomic.Pointer[shadow]
	tab    atomic.Pointer[table]
	closed bool

	g      grace
	rec    *reclaimer // deferred mode
	spares *spares    // ready mappings (nil with a test mapper)

	updates     atomic.Int64
	noShadow    atomic.Int64 // updates that could not map a shadow
	spareMisses atomic.Int64 // updates that found no spare mapping ready
}

// New makes an empty Set. Close it to stop its reclaimer and free its
// shadows.
func New(opts Options) (*Set, error) {
	if opts.PageShift == 0 {
		opts.PageShift = DefaultPageShift
	}
	if opts.Slots == 0 {
		opts.Slots = DefaultSlots
	}
	if opts.MaxPending == 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.PageShift < 12 || opts.PageShift > 16 || opts.Slots < 1 || opts.Slots > invalid || opts.MaxPending < 1 {
		return nil, fmt.Errorf("%w: page shift %d (12..16), slots %d (1..65535), max pending %d (>= 1)", ErrBadOptions, opts.PageShift, opts.Slots, opts.MaxPending)
	}
	s := &Set{opts: opts, shift: opts.PageShift, m: opts.mapper}
	if s.m == nil {
		slots := opts.MaxPending + 3
		if !opts.Lazy {
			slots += spareMappings + spareBatch
		}
		mm, err := newSystemMapper(mapBytes(opts.Slots), slots, !opts.Lazy)
		if err != nil {
			return nil, fmt.Errorf("cfi: shadow memory: %w", err)
		}
		s.m = mm
	}

	s.g.gp.Store(1) // a reader's slot holds gp, and 0 means "outside"
	s.g.wake = make(chan struct{}, 1)
	if opts.hooks != nil {
		s.g.passedHook = opts.hooks.passed
	}
	if opts.Reclaim == Deferred {
		s.rec = newReclaimer(&s.g, s.m, opts.MaxPending)
	}
	if opts.mapper == nil && !opts.Lazy {
		s.spares = newSpares(s.m, s.ShadowBytes(), spareMappings)
	}
	return s, nil
}

// ShadowBytes is the mapped size of one shadow.
func (s *Set) ShadowBytes() int { return mapBytes(s.opts.Slots) }

// pages returns the first and last page a module's text covers.
func (s *Set) pages(m *Module) (uint64, uint64) {
	first := m.TextStart >> s.shift
	if s.opts.KernelUpperBound {
		// update_shadow(): max = (base + text_size) & PAGE_MASK, inclusive.
		return first, m.TextEnd >> s.shift
	}
	return first, (m.TextEnd - 1) >> s.shift
}

// AddResult says how a module was recorded.
type AddResult struct {
	// Shadowed is set when the module's pages are in the shadow (some may
	// still fall outside it); otherwise it is found by the slow path only.
	Shadowed bool
	// Pages is how many of its pages the shadow covers.
	Pages int
	// Reason says why the module is not (wholly) in the shadow.
	Reason string
}

// Add records a loaded module: cfi_module_add().
func (s *Set) Add(m Module) (AddResult, error) {
	if m.TextEnd <= m.TextStart {
		return AddResult{}, fmt.Errorf("%w: module %s: [%#x, %#x)", ErrBadRange, m.Name, m.TextStart, m.TextEnd)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return AddResult{}, ErrClosed
	}
	old := s.tab.Load()
	var mods []Module
	if old != nil {
		mods = old.mods
	}
	first, last := s.pages(&m)
	for i := range mods {
		o := &mods[i]
		if o.Name == m.Name {
			s.mu.Unlock()
			return AddResult{}, fmt.Errorf("%w: %s", ErrDuplicate, m.Name)
		}
		of, ol := s.pages(o)
		if first <= ol && of <= last {
			s.mu.Unlock()
			return AddResult{}, fmt.Errorf("%w: %s [%#x, %#x) and %s [%#x, %#x) share a page", ErrOverlap, m.Name, m.TextStart, m.TextEnd, o.Name, o.TextStart, o.TextEnd)
		}
	}
	nt := &table{mods: slices.Insert(slices.Clone(mods), sort.Search(len(mods), func(i int) bool { return mods[i].TextStart > m.TextStart }), m)}

	// The base is the lowest module page, as update_shadow()'s base_addr
	// (module_addr_min): it only ever moves down.
	prev := s.cur.Load()
	base := first
	if prev != nil {
		base = min(base, prev.base)
	} else if old != nil {
		for _, o := range old.mods {
			base = min(base, o.TextStart>>s.shift)
		}
	}
	res := AddResult{}
	next, err := s.build(prev, base, old, func(sh *shadow) {
		res = s.record(sh, &m, first, last)
	})
	if err != nil {
		res.Reason = "no shadow: " + err.Error()
	}
	s.publish(nt, next, prev)
	return res, nil
}

// record writes m into sh: add_module_to_shadow().
func (s *Set) record(sh *shadow, m *Module, first, last uint64) AddResult {
	mask := uint64(1)<<s.shift - 1
	if m.CheckFn&mask != 0 {
		return AddResult{Reason: fmt.Sprintf("check function %#x is not page aligned (kernel: \"cfi: not using shadow for module %s\")", m.CheckFn, m.Name)}
	}
	if m.CheckFn < m.TextStart || m.CheckFn >= m.TextEnd {
		return AddResult{Reason: fmt.Sprintf("check function %#x is outside the module's text [%#x, %#x)", m.CheckFn, m.TextStart, m.TextEnd)}
	}
	check := sh.index(m.CheckFn >> s.shift)
	if check < 0 {
		return AddResult{Reason: "check function's page is outside the shadow"}
	}
	r := AddResult{Shadowed: true, Pages: sh.set(first, last, check)}
	if total := int(last - first + 1); r.Pages < total {
		r.Reason = fmt.Sprintf("%d of %d pages fall outside the shadow", total-r.Pages, total)
	}
	return r
}

// build maps a new shadow at base, fills it from prev (or, when there is
// no previous shadow, from every module of t), applies change and makes
// it read-only. On a mapping failure it returns nil: "no shadow".
func (s *Set) build(prev *shadow, base uint64, t *table, change func(*shadow)) (*shadow, error) {
	s.updates.Add(1)
	mem, err := s.spares.get()
	if err != nil {
		// No spare ready: map a batch, keep one, offer the rest.
		s.spareMisses.Add(1)
		var mems [][]byte
		k := 1
		if s.spares != nil {
			k = spareBatch
		}
		if mems, err = s.m.alloc(s.ShadowBytes(), k); err == nil {
			mem = mems[0]
			if s.spares != nil {
				s.spares.put(mems[1:])
			}
		}
	}
	if err != nil {
		s.noShadow.Add(1)
		return nil, err
	}
	w, err := s.m.writable(mem)
	if err != nil {
		_ = s.m.free(mem)
		s.noShadow.Add(1)
		return nil, err
	}
	next := newShadow(w, s.opts.Slots, base, prev)
	if prev == nil && t != nil {
		// Better than the kernel, whose prepare_next_shadow() starts empty
		// when there was no shadow: rebuild from the authoritative table.
		for i := range t.mods {
			m := &t.mods[i]
			first, last := s.pages(m)
			s.record(next, m, first, last)
		}
	}
	change(next)
	// Readers get the read-only mapping of what was written: nothing can
	// write the shadow through their view.
	next.retarget(mem)
	return next, nil
}

// publish installs t and sh (which may be nil: no shadow), releases the
// writer lock and reclaims prev in the Set's mode.
func (s *Set) publish(t *table, sh, prev *shadow) {
	s.tab.Store(t)
	s.cur.Store(sh)
	s.mu.Unlock()
	if prev == nil {
		return
	}
	target := s.g.start()
	if h := s.opts.hooks; h != nil && h.retired != nil {
		h.retired(prev, target)
	}
	if s.rec != nil {
		s.rec.retire(prev, target)
		return
	}
	s.g.wait(target)
	_ = s.m.free(prev.mem)
}

// Remove forgets a module: cfi_module_remove(). Its pages become invalid;
// the base does not move.
func (s *Set) Remove(name string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	old := s.tab.Load()
	i := -1
	if old != nil {
		i = slices.IndexFunc(old.mods, func(m Module) bool { return m.Name == name })
	}
	if i < 0 {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNoModule, name)
	}
	m := old.mods[i]
	nt := &table{mods: slices.Delete(slices.Clone(old.mods), i, i+1)}
	prev := s.cur.Load()
	var next *shadow
	if prev != nil {
		first, last := s.pages(&m)
		next, _ = s.build(prev, prev.base, nil, func(sh *shadow) { sh.set(first, last, -1) })
	} else if len(nt.mods) > 0 {
		base := ^uint64(0)
		for _, o := range nt.mods {
			base = min(base, o.TextStart>>s.shift)
		}
		next, _ = s.build(nil, base, nt, func(*shadow) {})
	}
	s.publish(nt, next, prev)
	return nil
}

// Modules returns the loaded modules sorted by address.
func (s *Set) Modules() []Module {
	if t := s.tab.Load(); t != nil {
		return slices.Clone(t.mods)
	}
	return nil
}

// Barrier waits until every old shadow queued so far has been unmapped:
// rcu_barrier(). In synchronous mode there is never anything queued.
func (s *Set) Barrier() {
	if s.rec != nil {
		s.rec.barrier()
	}
}

// Close reclaims everything queued, stops the reclaimer and unmaps the
// current shadow once its readers have left. Readers must not be used
// after Close.
func (s *Set) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	cur := s.cur.Swap(nil)
	s.mu.Unlock()
	if s.rec != nil {
		s.rec.close()
	}
	if s.spares != nil {
		s.spares.close()
	}
	if cur != nil {
		s.g.wait(s.g.start())
		_ = s.m.free(cur.mem)
	}
	_ = s.m.close()
}

// Stats are counters for reports and tests.
type Stats struct {
	Updates         int64 // shadows built (or attempted)
	NoShadow        int64 // updates that could not map one
	PendingBytes    int64 // mapped bytes of old shadows awaiting reclamation
	MaxPendingBytes int64 // their high-water mark
	PendingLimit    int64 // the documented bound: MaxPending shadows
	SpareMisses     int64 // updates that mapped their shadow themselves
	WriterReaps     int64 // old shadows the writer unmapped itself (backlog past half the bound)
}

// Stats returns the Set's counters.
func (s *Set) Stats() Stats {
	st := Stats{Updates: s.updates.Load(), NoShadow: s.noShadow.Load(),
		PendingLimit: int64(s.opts.MaxPending * s.ShadowBytes())}
	st.SpareMisses = s.spareMisses.Load()
	if s.rec != nil {
		st.PendingBytes, st.MaxPendingBytes = s.rec.bytes.Load(), s.rec.maxSeen.Load()
		st.WriterReaps = s.rec.writerReaps.Load()
	}
	return st
}

// Reader looks addresses up. Each goroutine uses its own Reader (its
// read-side state is its own cache line); a Reader is not safe for
// concurrent use.
type Reader struct {
	s     *Set
	slot  *readerSlot
	depth int
}

// NewReader registers a reader. Close it when done.
func (s *Set) NewReader() *Reader { return &Reader{s: s, slot: s.g.register()} }

// Close unregisters the reader; it must not be inside a section.
func (r *Reader) Close() { r.s.g.unregister(r.slot) }

// Enter begins a read-side section (rcu_read_lock()); sections nest. The
// shadow the reader sees stays mapped until the matching Exit.
func (r *Reader) Enter() {
	if r.depth == 0 {
		r.s.g.set(r.slot, r.s.g.gp.Load())
	}
	r.depth++
}

// Exit ends a read-side section (rcu_read_unlock()).
func (r *Reader) Exit() {
	r.depth--
	if r.depth == 0 {
		r.s.g.exit(r.slot)
	}
}

// LookupShadow looks addr up in the shadow only. The reader must be
// inside a section.
func (r *Reader) LookupShadow(addr uint64) (uint64, bool) {
	sh := r.s.cur.Load()
	if sh == nil {
		return 0, false
	}
	return sh.lookup(addr, r.s.shift)
}

// Lookup returns the check function guarding addr and where it was found:
// the shadow, or on a miss the slow path, find_check_fn()'s order. A miss
// in both is not an error: no loaded module holds addr.
func (r *Reader) Lookup(addr uint64) (uint64, Source) {
	s := r.s
	var fn uint64
	var ok bool
	if r.depth == 0 { // Enter, LookupShadow, Exit, in one piece
		s.g.set(r.slot, s.g.gp.Load())
		if sh := s.cur.Load(); sh != nil {
			fn, ok = sh.lookup(addr, s.shift)
		}
		s.g.exit(r.slot)
	} else {
		fn, ok = r.LookupShadow(addr)
	}
	if ok {
		return fn, InShadow
	}
	if m := s.tab.Load().find(addr); m != nil {
		return m.CheckFn, SlowPath
	}
	return 0, Miss
}
