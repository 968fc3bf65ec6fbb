// SPDX-License-Identifier: GPL-2.0-only

package cfi

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const page = 4096

func newSet(t *testing.T, o Options) *Set {
	t.Helper()
	s, err := New(o)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func lookup(t *testing.T, s *Set, addr uint64) (uint64, Source) {
	t.Helper()
	r := s.NewReader()
	defer r.Close()
	return r.Lookup(addr)
}

func TestDefaults(t *testing.T) {
	s := newSet(t, Options{})
	assert.Equal(t, 32764, s.opts.Slots) // kernel/cfi.c with 4 KiB pages
	assert.Equal(t, 64<<10, s.ShadowBytes())
	_, err := New(Options{Slots: 70000})
	assert.ErrorIs(t, err, ErrBadOptions)
	_, err = New(Options{PageShift: 11})
	assert.ErrorIs(t, err, ErrBadOptions)
}

func TestAddLookupRemove(t *testing.T) {
	for _, mode := range []Reclaim{Deferred, Synchronous} {
		for _, lazy := range []bool{false, true} {
			name := mode.String()
			if lazy {
				name += "/lazy"
			}
			t.Run(name, func(t *testing.T) { addLookupRemove(t, Options{Reclaim: mode, Lazy: lazy}) })
		}
	}
}

func addLookupRemove(t *testing.T, o Options) {
	s := newSet(t, o)
	const a = 0xffffffffc0000000
	res, err := s.Add(Module{Name: "a", TextStart: a, TextEnd: a + 3*page, CheckFn: a + page})
	require.NoError(t, err)
	assert.Equal(t, AddResult{Shadowed: true, Pages: 3}, res)
	res, err = s.Add(Module{Name: "b", TextStart: a + 3*page, TextEnd: a + 5*page + 10, CheckFn: a + 5*page})
	require.NoError(t, err)
	assert.Equal(t, 3, res.Pages) // [a+3p, a+5p+10): pages 3, 4, 5

	for _, tc := range []struct {
		addr uint64
		fn   uint64
		src  Source
	}{
		{a, a + page, InShadow},
		{a + 3*page - 1, a + page, InShadow},
		{a + 3*page, a + 5*page, InShadow}, // adjacent modules: the end is exclusive
		{a + 5*page + 9, a + 5*page, InShadow},
		{a + 5*page + 10, a + 5*page, InShadow}, // same page as b's last byte: still b's page
		{a + 6*page, 0, Miss},
		{a - 1, 0, Miss},
	} {
		fn, src := lookup(t, s, tc.addr)
		assert.Equal(t, tc.src, src, "%#x", tc.addr)
		assert.Equal(t, tc.fn, fn, "%#x", tc.addr)
	}

	require.NoError(t, s.Remove("a"))
	fn, src := lookup(t, s, a+page)
	assert.Equal(t, Miss, src)
	assert.Zero(t, fn)
	fn, src = lookup(t, s, a+4*page)
	assert.Equal(t, InShadow, src)
	assert.Equal(t, uint64(a+5*page), fn)
	assert.ErrorIs(t, s.Remove("a"), ErrNoModule)
	s.Barrier()
	st := s.Stats()
	assert.Equal(t, int64(3), st.Updates)
	assert.Zero(t, st.PendingBytes)
	if o.Lazy {
		// Nothing made ahead: every update mapped its own shadow.
		assert.Nil(t, s.spares)
		assert.Equal(t, int64(3), st.SpareMisses)
		assert.Equal(t, DefaultMaxPending+3, s.m.capacity()) // no room for spares
	}
}

func TestInvariants(t *testing.T) {
	s := newSet(t, Options{})
	const a = 0x100000000
	_, err := s.Add(Module{Name: "a", TextStart: a, TextEnd: a + 2*page, CheckFn: a})
	require.NoError(t, err)
	// One page, one module: b's first page is a's last.
	_, err = s.Add(Module{Name: "b", TextStart: a + 2*page - 8, TextEnd: a + 4*page, CheckFn: a + 3*page})
	require.ErrorIs(t, err, ErrOverlap)
	assert.Contains(t, err.Error(), "b [0x100001ff8, 0x100004000) and a [0x100000000, 0x100002000) share a page")
	_, err = s.Add(Module{Name: "a", TextStart: a + 8*page, TextEnd: a + 9*page, CheckFn: a + 8*page})
	require.ErrorIs(t, err, ErrDuplicate)
	_, err = s.Add(Module{Name: "e", TextStart: a + 9*page, TextEnd: a + 9*page})
	require.ErrorIs(t, err, ErrBadRange)

	// A check function that is not page aligned: the slow path only.
	res, err := s.Add(Module{Name: "u", TextStart: a + 4*page, TextEnd: a + 6*page, CheckFn: a + 4*page + 16})
	require.NoError(t, err)
	assert.False(t, res.Shadowed)
	assert.Contains(t, res.Reason, "not page aligned")
	fn, src := lookup(t, s, a+5*page)
	assert.Equal(t, SlowPath, src)
	assert.Equal(t, uint64(a+4*page+16), fn)
	// Outside the module: the slow path only.
	res, err = s.Add(Module{Name: "o", TextStart: a + 6*page, TextEnd: a + 7*page, CheckFn: a})
	require.NoError(t, err)
	assert.Contains(t, res.Reason, "outside the module's text")
	assert.Len(t, s.Modules(), 3)
}

// TestKernelUpperBound: kernel/cfi.c maps up to and including the page of
// start+size, one page too many when the size is page-multiple.
func TestKernelUpperBound(t *testing.T) {
	const a = 0x200000000
	for _, tc := range []struct {
		kernel bool
		pages  int
		next   Source
	}{{false, 2, Miss}, {true, 3, InShadow}} {
		s := newSet(t, Options{KernelUpperBound: tc.kernel})
		res, err := s.Add(Module{Name: "a", TextStart: a, TextEnd: a + 2*page, CheckFn: a})
		require.NoError(t, err)
		assert.Equal(t, tc.pages, res.Pages)
		_, src := lookup(t, s, a+2*page)
		assert.Equal(t, tc.next, src)
	}
}

// TestRebase: a module below the base moves the base down; the modules
// that no longer fit in the slots are dropped from the shadow and found by
// the slow path.
func TestRebase(t *testing.T) {
	s := newSet(t, Options{Slots: 16})
	const a = 0x300000000
	_, err := s.Add(Module{Name: "high", TextStart: a + 10*page, TextEnd: a + 14*page, CheckFn: a + 12*page})
	require.NoError(t, err)
	assert.Equal(t, uint64(a/page+10), s.cur.Load().base)
	fn, src := lookup(t, s, a+13*page)
	require.Equal(t, InShadow, src)
	assert.Equal(t, uint64(a+12*page), fn)

	// base moves to a: slots cover pages a..a+15: high's pages 10-13 still fit.
	_, err = s.Add(Module{Name: "low", TextStart: a, TextEnd: a + page, CheckFn: a})
	require.NoError(t, err)
	sh := s.cur.Load()
	assert.Equal(t, uint64(a/page), sh.base)
	assert.Equal(t, uint16(12), sh.slots[13]) // re-based: high's check page is now slot 12
	fn, src = lookup(t, s, a+13*page)
	assert.Equal(t, InShadow, src)
	assert.Equal(t, uint64(a+12*page), fn)

	// base moves 8 pages lower: high's pages 10-13 become slots 18-21,
	// past the 16 slots: dropped, found by the slow path.
	res, err := s.Add(Module{Name: "lower", TextStart: a - 8*page, TextEnd: a - 7*page, CheckFn: a - 8*page})
	require.NoError(t, err)
	assert.True(t, res.Shadowed)
	fn, src = lookup(t, s, a+13*page)
	assert.Equal(t, SlowPath, src)
	assert.Equal(t, uint64(a+12*page), fn)
	fn, src = lookup(t, s, a)
	assert.Equal(t, InShadow, src)
	assert.Equal(t, uint64(a), fn)

	// A module past the shadow's end is recorded, slow path only.
	res, err = s.Add(Module{Name: "far", TextStart: a + 100*page, TextEnd: a + 101*page, CheckFn: a + 100*page})
	require.NoError(t, err)
	assert.Equal(t, "check function's page is outside the shadow", res.Reason)
	_, src = lookup(t, s, a+100*page)
	assert.Equal(t, SlowPath, src)
}

// failMapper fails every allocation while fail is set; otherwise it is
// the system's mapper (made at the first allocation, for its size).
type failMapper struct {
	m    mapper
	fail bool
}

func (f *failMapper) alloc(n, k int) ([][]byte, error) {
	if f.fail {
		return nil, errors.New("out of memory")
	}
	if f.m == nil {
		m, err := newSystemMapper(n, DefaultMaxPending+4, true)
		if err != nil {
			return nil, err
		}
		f.m = m
	}
	return f.m.alloc(n, k)
}

func (f *failMapper) writable(mem []byte) ([]byte, error) { return f.m.writable(mem) }
func (f *failMapper) free(mem []byte) error               { return f.m.free(mem) }
func (f *failMapper) freeAll(mems [][]byte) error         { return f.m.freeAll(mems) }
func (f *failMapper) capacity() int {
	if f.m == nil {
		return 0
	}
	return f.m.capacity()
}
func (f *failMapper) close() error {
	if f.m == nil {
		return nil
	}
	return f.m.close()
}

// TestNoShadow: when a shadow cannot be mapped the Set publishes none and
// every lookup takes the slow path; the next update that can map one
// rebuilds it from all loaded modules.
func TestNoShadow(t *testing.T) {
	fm := &failMapper{}
	s := newSet(t, Options{mapper: fm})
	const a = 0x400000000
	_, err := s.Add(Module{Name: "a", TextStart: a, TextEnd: a + page, CheckFn: a})
	require.NoError(t, err)
	fm.fail = true
	res, err := s.Add(Module{Name: "b", TextStart: a + page, TextEnd: a + 2*page, CheckFn: a + page})
	require.NoError(t, err)
	assert.Equal(t, "no shadow: out of memory", res.Reason)
	assert.Nil(t, s.cur.Load())
	for _, addr := range []uint64{a, a + page} {
		fn, src := lookup(t, s, addr)
		assert.Equal(t, SlowPath, src)
		assert.Equal(t, addr, fn)
	}
	fm.fail = false
	_, err = s.Add(Module{Name: "c", TextStart: a + 2*page, TextEnd: a + 3*page, CheckFn: a + 2*page})
	require.NoError(t, err)
	for _, addr := range []uint64{a, a + page, a + 2*page} {
		fn, src := lookup(t, s, addr)
		assert.Equal(t, InShadow, src, "%#x", addr)
		assert.Equal(t, addr, fn)
	}
	assert.Equal(t, int64(1), s.Stats().NoShadow)
}

func TestClosed(t *testing.T) {
	s, err := New(Options{})
	require.NoError(t, err)
	s.Close()
	s.Close()
	_, err = s.Add(Module{Name: "a", TextStart: page, TextEnd: 2 * page, CheckFn: page})
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, s.Remove("a"), ErrClosed)
}

// Inside a read-side section, LookupShadow answers from the shadow only,
// and Lookup (nested) gives what it gives outside one.
func TestLookupInsideSection(t *testing.T) {
	s := newSet(t, Options{})
	const a = 0xffffffffc0000000
	_, err := s.Add(Module{Name: "a", TextStart: a, TextEnd: a + 2*page, CheckFn: a + page})
	require.NoError(t, err)
	r := s.NewReader()
	defer r.Close()
	r.Enter()
	fn, ok := r.LookupShadow(a + page + 5)
	assert.True(t, ok)
	assert.Equal(t, uint64(a+page), fn)
	fn, ok = r.LookupShadow(a + 2*page)
	assert.False(t, ok)
	assert.Zero(t, fn)
	fn, src := r.Lookup(a)
	assert.Equal(t, InShadow, src)
	assert.Equal(t, uint64(a+page), fn)
	r.Exit()
}

// slotlessMapper reports every slot in use for its first busy calls,
// then hands out heap regions.
type slotlessMapper struct {
	mu    sync.Mutex
	busy  int
	calls int
}

func (m *slotlessMapper) alloc(n, k int) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.calls <= m.busy {
		return nil, errNoSlot
	}
	out := make([][]byte, max(k, 1))
	for i := range out {
		out[i] = make([]byte, n)
	}
	return out, nil
}
func (m *slotlessMapper) writable(mem []byte) ([]byte, error) { return mem, nil }
func (m *slotlessMapper) free([]byte) error                   { return nil }
func (m *slotlessMapper) freeAll([][]byte) error              { return nil }
func (m *slotlessMapper) capacity() int                       { return 64 }
func (m *slotlessMapper) close() error                        { return nil }

// TestSparesRetryWhenSlotsReturn: the spare filler waits out a mapper
// with no free slot (writers mapped their own, reclaim gives them back)
// instead of stopping for good; another error still stops it.
func TestSparesRetryWhenSlotsReturn(t *testing.T) {
	m := &slotlessMapper{busy: 2}
	p := newSpares(m, 4096, 4)
	defer p.close()
	require.Eventually(t, func() bool {
		mem, err := p.get()
		return err == nil && len(mem) == 4096
	}, 5*time.Second, time.Millisecond, "no spare after the slots came back")
	m.mu.Lock()
	assert.Greater(t, m.calls, 2)
	m.mu.Unlock()
}
