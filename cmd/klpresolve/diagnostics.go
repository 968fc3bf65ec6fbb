// SPDX-License-Identifier: GPL-2.0-only

package main

import "github.com/klpresolve/klpresolve/diag"

// diagnosticJSON is one diag.Diagnostic as the JSON reports carry it
// (docs/json.md): offsets in hex, as everywhere else in them.
type diagnosticJSON struct {
	Kind     string       `json:"kind"`
	Severity string       `json:"severity"`
	Message  string       `json:"message"`
	Kernel   string       `json:"kernel,omitempty"`
	Help     string       `json:"help,omitempty"`
	Location locationJSON `json:"location"`
}

type locationJSON struct {
	File     string `json:"file,omitempty"`
	Section  string `json:"section,omitempty"`
	Offset   string `json:"offset,omitempty"` // with a section
	Symbol   string `json:"symbol,omitempty"`
	Object   string `json:"object,omitempty"`
	Function string `json:"function,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
}

// diagnosticsJSON is ds for the JSON reports ([] when empty).
func diagnosticsJSON(ds []diag.Diagnostic) []diagnosticJSON {
	out := make([]diagnosticJSON, 0, len(ds))
	for _, d := range ds {
		l := d.Location
		j := diagnosticJSON{Kind: string(d.Kind), Severity: d.Severity.String(), Message: d.Message, Kernel: d.Kernel, Help: d.Help,
			Location: locationJSON{File: l.File, Section: l.Section, Symbol: l.Symbol, Object: l.Object, Function: l.Function, Kernel: l.Kernel}}
		if l.Section != "" {
			j.Location.Offset = hex(l.Offset)
		}
		out = append(out, j)
	}
	return out
}

// hasError reports whether ds has an error (the verdict is FAILED).
func hasError(ds []diag.Diagnostic) bool {
	_, bad := diag.FirstError(ds)
	return bad
}
