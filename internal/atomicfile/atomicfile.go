// SPDX-License-Identifier: GPL-2.0-only

// Package atomicfile writes a file so that readers see either the old
// content or the whole new one: a temporary file in the same folder,
// synced, then renamed over the target. A target that is not a regular
// file (/dev/null, /dev/stdout, a FIFO) is written in place, never
// replaced; a symbolic link's target is replaced, not the link.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Temps tracks the temporary files of the writes in progress, so that a
// process stopped by a signal can remove them (Cleanup) instead of
// leaving a ".out.tmp123" beside every output it was writing (a sync to
// a slow disk can take seconds). The zero value is ready; a nil *Temps
// tracks nothing.
type Temps struct {
	// Watch, when set, is called once, before the first temporary file
	// is made: where a process starts watching for the signals that
	// should call Cleanup, so that a run that writes no file watches
	// for nothing (signal.Notify starts a thread: most of a millisecond
	// of a short run on a slow VM).
	Watch func()
	// NoSync skips the sync before the rename: the write is still
	// atomic for readers (they see the old file or the new one whole),
	// but a crash of the machine soon after may leave the new name on an
	// empty or partial file. A sync costs milliseconds on most disks.
	NoSync bool
	once   sync.Once

	mu    sync.Mutex
	names map[string]bool
	done  bool // Cleanup ran: a temporary file made later is removed at once
}

// watch calls Watch, once; the callers of the first wait for it.
func (t *Temps) watch() {
	if t != nil && t.Watch != nil {
		t.once.Do(t.Watch)
	}
}

func (t *Temps) add(name string) bool {
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	if t.names == nil {
		t.names = map[string]bool{}
	}
	t.names[name] = true
	return true
}

func (t *Temps) remove(name string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	delete(t.names, name)
	t.mu.Unlock()
}

// Cleanup removes every temporary file of the writes in progress; the
// writes then fail, leaving their targets untouched. It is safe to call
// from another goroutine (a signal handler's) while they run.
func (t *Temps) Cleanup() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	for name := range t.names {
		os.Remove(name)
	}
	t.names = nil
}

// Write is the package's Write, its temporary file tracked by t.
func (t *Temps) Write(path string, fill func(io.Writer) error) error {
	return write(path, fill, t)
}

// WriteBytes is the package's WriteBytes, tracked by t.
func (t *Temps) WriteBytes(path string, b []byte) error {
	return t.Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// errStopped: the process is stopping (Temps.Cleanup ran).
var errStopped = errors.New("stopping: temporary file removed")

// Write calls fill with a temporary file beside path, then renames it over
// path. On any error the temporary file is removed and path is untouched.
func Write(path string, fill func(io.Writer) error) error {
	return write(path, fill, nil)
}

func write(path string, fill func(io.Writer) error, temps *Temps) (err error) {
	if st, err := os.Stat(path); err == nil {
		switch {
		case st.IsDir():
			return fmt.Errorf("write %s: is a folder", path)
		case !st.Mode().IsRegular():
			// A device, FIFO or socket: renaming over it would put a
			// regular file where /dev/null was (as root, for everyone).
			return writeInPlace(path, fill)
		}
		// A link to a regular file: the file is replaced, the link kept.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
	}
	temps.watch()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		// The error names the temporary file; say what was asked for.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write %s: folder %s does not exist", path, filepath.Dir(path))
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !temps.add(f.Name()) {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, errStopped)
	}
	defer func() {
		temps.remove(f.Name())
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if temps == nil || !temps.NoSync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// writeInPlace writes to path, which is not a regular file, as it is.
func writeInPlace(path string, fill func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteBytes writes b to path atomically.
func WriteBytes(path string, b []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
