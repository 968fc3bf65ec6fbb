// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"errors"
	"io"
	"slices"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/input"
)

// The files a command reads (modules) and writes (snapshots, converted and
// linked modules), standard input and output included.

// writeOutput writes a command's output file atomically, or for "-" to
// standard output, which must not be a terminal (the bytes are binary):
// a snapshot made on the machine whose kernel it holds can go straight
// down an ssh pipe. It returns where the command's "wrote" line goes:
// standard error when standard output carries the data.
func (a *app) writeOutput(path string, fill func(io.Writer) error) (io.Writer, error) {
	if path != "-" {
		if err := a.temps.Write(path, fill); err != nil {
			return nil, &exitError{exitUsage, err}
		}
		return a.stdout, nil
	}
	if isTerminal(a.stdout) {
		return nil, &exitError{exitUsage, errors.New("-o -: standard output is a terminal; redirect it, or give a file")}
	}
	if err := fill(a.stdout); err != nil {
		return nil, &exitError{exitUsage, err}
	}
	return a.stderr, nil
}

// imageToFile refuses -o - where the command's report is standard output
// (link, and the main job with --link).
func imageToFile(out string) error {
	if out == "-" {
		return &exitError{exitUsage, errors.New("-o -: the report goes to standard output; give a file for the linked image")}
	}
	return nil
}

// readModule reads the module a command was given: a file, or "-" for
// standard input (a patch fetched by an earlier pipeline step), which
// cannot also carry the kernel's symbols. The name is for messages.
func (a *app) readModule(path string) (name string, data []byte, err error) {
	if err := a.oneStdin(path); err != nil {
		return "", nil, err
	}
	// A stream (standard input, a pipe, a device) that does not start
	// as a module does is refused there, not read up to the limit.
	if path != "-" {
		data, err = input.ReadFileChecked(path, input.DefaultMaxSize, elfobj.CheckHead)
	} else {
		path = "<stdin>"
		data, err = input.ReadAllChecked(path, a.stdin, input.DefaultMaxSize, elfobj.CheckHead)
	}
	if err != nil {
		return "", nil, &exitError{exitUsage, err}
	}
	return path, data, nil
}

// oneStdin refuses a module and symbols both read from standard input;
// commands that read the symbols first call it before they do.
func (a *app) oneStdin(module string) error {
	if module == "-" && slices.Contains(a.kallsymsPaths, "-") {
		return &exitError{exitUsage, errors.New("standard input cannot hold both the module (-) and the kernel's symbols (--kallsyms -)")}
	}
	return nil
}

// openModule reads the module at path (readModule) and describes it with
// parse: klp.Parse for a livepatch module, modplt.Parse for any module to
// count or link.
func openModule[M any](a *app, path string, parse func(name string, data []byte) (M, error)) (M, error) {
	var zero M
	name, data, err := a.readModule(path)
	if err != nil {
		return zero, err
	}
	m, err := parse(name, data)
	if err != nil {
		return zero, &exitError{exitUsage, err}
	}
	return m, nil
}
