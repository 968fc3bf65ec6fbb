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
)

// Write calls fill with a temporary file beside path, then renames it over
// path. On any error the temporary file is removed and path is untouched.
func Write(path string, fill func(io.Writer) error) (err error) {
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
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
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
