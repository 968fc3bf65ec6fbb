// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"fmt"

	"github.com/klpresolve/klpresolve/ftrace"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/pipeline"
)

// ftraceJSON is the ftrace call sites a report's patched functions were
// checked against; Error, why the --root kernel's could not be read (they
// were then not checked).
type ftraceJSON struct {
	Source    string `json:"source"`
	CallSites int    `json:"call_sites"`
	// Addresses: the sites have addresses (a vmlinux,
	// available_filter_functions_addrs); a names-only list cannot tell
	// one of several functions of a name from another.
	Addresses bool   `json:"addresses"`
	Error     string `json:"error,omitempty"`
}

// openFtrace reads the kernel's ftrace call sites: --ftrace's (an error
// is exit 2), else the --root kernel's (an error is a note: its patched
// functions are then not checked against them).
func openFtrace(a *app, given string, k *pipeline.Kernel, ix *kallsyms.Index) (*ftrace.Sites, *ftraceJSON, error) {
	path := given
	if path == "" && k != nil {
		path = k.Ftrace
	}
	if path == "" {
		return nil, nil, nil
	}
	s, err := ftrace.Open(path, ix)
	if err != nil {
		if given != "" {
			return nil, nil, &exitError{exitUsage, fmt.Errorf("--ftrace: %w", err)}
		}
		return nil, &ftraceJSON{Source: path, Error: err.Error()}, nil
	}
	return s, &ftraceJSON{Source: path, CallSites: s.Len(), Addresses: s.Addresses()}, nil
}

// line is the report's line for the call sites ("" without).
func (f *ftraceJSON) line() string {
	switch {
	case f == nil:
		return ""
	case f.Error != "":
		return "ftrace call sites: not read, so patched functions not checked for them: " + f.Error
	case !f.Addresses:
		return fmt.Sprintf("ftrace call sites: %s (%s, names only)", f.Source, count(f.CallSites, "function", "functions"))
	}
	return fmt.Sprintf("ftrace call sites: %s (%s)", f.Source, count(f.CallSites, "site", "sites"))
}
