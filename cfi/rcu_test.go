// SPDX-License-Identifier: GPL-2.0-only

//go:build linux

package cfi

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// faults runs f and reports whether it faulted on a memory access.
func faults(f func()) (faulted bool) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			var re interface{ Addr() uintptr }
			faulted = errors.As(r.(error), &re)
		}
	}()
	f()
	return false
}

// mapped asks the kernel whether b is mapped: msync fails with ENOMEM on
// an unmapped range.
func mapped(b []byte) bool {
	return unix.Msync(b, unix.MS_ASYNC) == nil
}

// realMemory skips a test whose assertions are the kernel's page
// protection and unmapping, where those are not a kernel's: qemu-user
// running a 32-bit program (make ports, on a kernel that runs no 32-bit
// x86) keeps an unmapped range reserved and lets a write to a read-only
// page through. Measured on a page of the test's own.
func realMemory(t *testing.T) {
	t.Helper()
	b, err := unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	require.NoError(t, unix.Mprotect(b, unix.PROT_READ))
	writeFaults := faults(func() { b[0] = 1 })
	require.NoError(t, unix.Munmap(b))
	if !writeFaults || mapped(b) {
		t.Skipf("page protection is not a kernel's here (write to a read-only page faults: %v; an unmapped page still mapped: %v): an emulator", writeFaults, mapped(b))
	}
}

// TestShadowMemoryProtection: a published shadow is read-only (a stray
// write faults), and a reclaimed one is unmapped (a stale read faults).
func TestShadowMemoryProtection(t *testing.T) {
	realMemory(t)
	// No spare mappings (a test mapper): a spare mapped after the unmap
	// could take the freed addresses and hide it.
	s := newSet(t, Options{mapper: &failMapper{}})
	const a = 0x500000000
	_, err := s.Add(Module{Name: "a", TextStart: a, TextEnd: a + page, CheckFn: a})
	require.NoError(t, err)
	sh := s.cur.Load()
	assert.True(t, faults(func() { sh.slots[1] = 7 }), "a write to a published shadow must fault")
	assert.Equal(t, uint16(0), sh.slots[0])

	require.NoError(t, s.Remove("a"))
	s.Barrier()
	assert.False(t, mapped(sh.mem), "a reclaimed shadow must be unmapped")
	var sink atomic.Uint32
	assert.True(t, faults(func() { sink.Store(uint32(sh.slots[0])) }), "a read of a reclaimed shadow must fault")
}

// TestReaderHoldsAcrossUpdates: a reader inside its section keeps the
// shadow it loaded mapped and unchanged across many updates (deferred
// mode); once it leaves, the old shadows are reclaimed.
func TestReaderHoldsAcrossUpdates(t *testing.T) {
	realMemory(t)
	s := newSet(t, Options{MaxPending: 128, mapper: &failMapper{}}) // no spares: see TestShadowMemoryProtection
	const a = 0x600000000
	_, err := s.Add(Module{Name: "m0", TextStart: a, TextEnd: a + page, CheckFn: a})
	require.NoError(t, err)
	r := s.NewReader()
	defer r.Close()
	r.Enter()
	held := s.cur.Load()
	done := make(chan error)
	go func() {
		for i := 1; i <= 100; i++ {
			base := a + uint64(2*i*page)
			if _, err := s.Add(Module{Name: fmt.Sprint("m", i), TextStart: base, TextEnd: base + page, CheckFn: base}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	require.NoError(t, <-done) // deferred: the writer never waits for the reader
	assert.Greater(t, s.Stats().PendingBytes, int64(0))
	assert.False(t, faults(func() {
		for i := range held.slots {
			if (i == 0) != (held.slots[i] == 0) && held.slots[i] != invalid {
				t.Errorf("slot %d changed to %d", i, held.slots[i])
			}
		}
	}))
	fn, ok := held.lookup(a, s.shift)
	assert.True(t, ok)
	assert.Equal(t, uint64(a), fn)
	r.Exit()
	s.Barrier()
	assert.Zero(t, s.Stats().PendingBytes)
	assert.False(t, mapped(held.mem))
	assert.LessOrEqual(t, s.Stats().MaxPendingBytes, s.Stats().PendingLimit)
}

// TestSynchronousWaitsForReaders: in synchronous mode an update returns
// only after the readers that could see the old shadow have left.
func TestSynchronousWaitsForReaders(t *testing.T) {
	realMemory(t)
	s := newSet(t, Options{Reclaim: Synchronous})
	const a = 0x700000000
	_, err := s.Add(Module{Name: "a", TextStart: a, TextEnd: a + page, CheckFn: a})
	require.NoError(t, err)
	r := s.NewReader()
	defer r.Close()
	r.Enter()
	held := s.cur.Load()
	returned := make(chan struct{})
	go func() {
		_, _ = s.Add(Module{Name: "b", TextStart: a + page, TextEnd: a + 2*page, CheckFn: a + page})
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("a synchronous update returned while a reader held the old shadow")
	case <-time.After(50 * time.Millisecond):
	}
	assert.True(t, mapped(held.mem))
	r.Exit()
	<-returned
	assert.False(t, mapped(held.mem))
}

// TestTorture is rcutorture's pipeline test: the writer replaces the
// shadow again and again; each old shadow's pipeline count is the number
// of grace periods that have completed since it was retired. Readers
// record the count of the shadow they hold, while they hold it, and read
// its memory. A count of 2 or more means a reader used a shadow that had
// outlived its grace period: the bug this machinery exists to prevent.
// Run with GOMAXPROCS above the core count and random yields; under -race
// the detector watches the same slot accesses that run without it.
func TestTorture(t *testing.T) {
	for _, mode := range []Reclaim{Deferred, Synchronous} {
		t.Run(mode.String(), func(t *testing.T) { torture(t, Options{Reclaim: mode}) })
		// Lazy: no spares, the memfd faulted in as it goes.
		t.Run(mode.String()+"/lazy", func(t *testing.T) { torture(t, Options{Reclaim: mode, Lazy: true}) })
	}
}

func torture(t *testing.T, o Options) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4 * runtime.NumCPU()))
	type info struct {
		target atomic.Uint64 // its grace period's target; 0 while current
		pipe   atomic.Int64
	}
	var infos sync.Map // *shadow -> *info
	var mu sync.Mutex
	var retired []*info
	h := &hooks{
		retired: func(sh *shadow, target uint64) {
			v, _ := infos.LoadOrStore(sh, &info{})
			in := v.(*info)
			in.target.Store(target)
			mu.Lock()
			retired = append(retired, in)
			mu.Unlock()
		},
		passed: func(target uint64) {
			mu.Lock()
			for _, in := range retired {
				if tg := in.target.Load(); tg != 0 && tg <= target {
					in.pipe.Add(1)
				}
			}
			mu.Unlock()
		},
	}
	o.Slots, o.hooks = 256, h
	s := newSet(t, o)
	const a = 0x800000000
	const nreaders = 8
	var hist [10]atomic.Int64
	var stop atomic.Bool
	var faultsSeen atomic.Int64
	var wg sync.WaitGroup
	for k := range nreaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.NewReader()
			defer r.Close()
			rng := rand.New(rand.NewPCG(uint64(k), 1))
			for !stop.Load() {
				r.Enter()
				sh := s.cur.Load()
				if sh != nil {
					v, _ := infos.LoadOrStore(sh, &info{})
					if rng.IntN(4) == 0 {
						runtime.Gosched()
					}
					if faults(func() {
						sum := 0
						for _, x := range sh.slots {
							sum += int(x)
						}
						_ = sum
					}) {
						faultsSeen.Add(1)
					}
					hist[min(v.(*info).pipe.Load(), 9)].Add(1)
				}
				r.Exit()
			}
		}()
	}
	// At least adds rounds, and on until the readers have held shadows
	// adds times: a deferred writer can finish 150 rounds in one time
	// slice, before a reader thread is scheduled at all.
	const adds = 150
	seen := func() int64 {
		n := int64(0)
		for i := range hist {
			n += hist[i].Load()
		}
		return n
	}
	rounds := 0
	for ; rounds < adds || (seen() <= adds && rounds < 1000*adds); rounds++ {
		i := rounds
		name := fmt.Sprint("m", i%16)
		base := a + uint64((i%16)*page)
		_ = s.Remove(name)
		_, err := s.Add(Module{Name: name, TextStart: base, TextEnd: base + page, CheckFn: base})
		require.NoError(t, err)
		if i%8 == 0 {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	s.Barrier()
	var counts []int64
	for i := range hist {
		counts = append(counts, hist[i].Load())
	}
	t.Logf("%s: pipeline histogram %v, %d updates", o.Reclaim, counts, s.Stats().Updates)
	assert.Greater(t, seen(), int64(adds), "readers must have run")
	for i := 2; i < len(counts); i++ {
		assert.Zero(t, counts[i], "a reader held a shadow %d grace periods after it was retired", i)
	}
	assert.Zero(t, faultsSeen.Load())
	// Each round removes (from the 17th on) and adds: a new shadow each.
	assert.Equal(t, int64(2*rounds-16), s.Stats().Updates)
}

// TestFreeAllUnmaps: freeing several regions at once (one munmap per run
// of adjacent mappings) unmaps every one of them and frees their slots.
func TestFreeAllUnmaps(t *testing.T) {
	realMemory(t)
	m, err := newMemfdMapper(mapBytes(DefaultSlots), 8, true)
	require.NoError(t, err)
	defer m.close()
	mems, err := m.alloc(mapBytes(DefaultSlots), 4) // one mapping cut in four
	require.NoError(t, err)
	require.Len(t, mems, 4)
	for range 2 {
		b, err := m.alloc(mapBytes(DefaultSlots), 1)
		require.NoError(t, err)
		mems = append(mems, b[0])
	}
	w, err := m.writable(mems[2])
	require.NoError(t, err)
	w[100] = 42 // the writer's view and the readers' share the memory
	assert.Equal(t, byte(42), mems[2][100])
	require.NoError(t, m.freeAll(mems[:5]))
	for i, b := range mems[:5] {
		assert.False(t, mapped(b), "region %d still mapped", i)
	}
	assert.True(t, mapped(mems[5]))
	free := 0
	for _, f := range m.isFree {
		if f {
			free++
		}
	}
	assert.Equal(t, 7, free)
	_, err = m.writable(mems[0])
	assert.Error(t, err)
}

// TestFreeReusedAddress: a region freed while another goroutine maps a new
// one may give its address to the new region (mmap reuses the hole just
// unmapped); the new region must stay known to writable. Two goroutines
// map, look up and free regions in turn; the old free, which unmapped
// before it forgot the address, lost the other's entry within a few
// thousand rounds (CI saw it on 386 in TestCorpusLayouts).
func TestFreeReusedAddress(t *testing.T) {
	size := mapBytes(DefaultSlots)
	m, err := newMemfdMapper(size, 4, false)
	require.NoError(t, err)
	defer m.close()
	const rounds = 3000
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				mems, err := m.alloc(size, 1)
				if errors.Is(err, errNoSlot) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if _, err := m.writable(mems[0]); err != nil {
					errs <- fmt.Errorf("goroutine %d, round %d: %w", g, i, err)
					return
				}
				if err := m.free(mems[0]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Empty(t, m.used)
	for i, f := range m.isFree {
		assert.True(t, f, "slot %d", i)
	}
}
