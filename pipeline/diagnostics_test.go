// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
)

// TestDiagnostics: a patch with a symbol the kernel lacks and a
// relocation deferred to xfs gives one error, in the kernel's words and
// located, then a note for the deferral; strict makes
// the deferral an error after it. The first error is what a fleet's row
// says.
func TestDiagnostics(t *testing.T) {
	ix, err := kallsyms.Open(repoFile("kallsyms", "example.txt"), kallsyms.Options{})
	require.NoError(t, err)
	m, err := klp.Open(repoFile("klp", "err-not-found.ko"))
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{})
	require.NoError(t, err)

	ds := rep.Diagnostics(false)
	var errs []diag.Diagnostic
	for _, d := range ds {
		if d.Severity == diag.Error {
			errs = append(errs, d)
		}
	}
	require.Len(t, errs, 1)
	e := errs[0]
	assert.Equal(t, diag.Kind("not_found"), e.Kind)
	assert.Equal(t, "livepatch: symbol 'no_such_function' not found in symbol table", "livepatch: "+e.Kernel)
	assert.Equal(t, e.Kernel, e.Message)
	assert.Equal(t, diag.Location{File: m.Path, Section: ".klp.rela.vmlinux..text.livepatch_missing", Offset: 1, Symbol: ".klp.sym.vmlinux.no_such_function,0"}, e.Location)
	assert.ErrorIs(t, e.Err, kallsyms.ErrNotFound)
	first, ok := diag.FirstError(ds)
	require.True(t, ok)
	assert.Equal(t, e.Message, first.Message)
	assert.Equal(t, "error: not_found: symbol 'no_such_function' not found in symbol table", first.String())

	kinds := map[diag.Kind]diag.Severity{}
	for _, d := range ds {
		kinds[d.Kind] = d.Severity
	}
	assert.Equal(t, diag.Note, kinds[diag.KindDeferred])

	strict := rep.Diagnostics(true)
	var strictErrs []string
	for _, d := range strict {
		if d.Severity == diag.Error {
			strictErrs = append(strictErrs, string(d.Kind)+": "+d.Message)
		}
	}
	assert.Equal(t, []string{"not_found: symbol 'no_such_function' not found in symbol table", "deferred: deferred: module xfs is not loaded (--strict)"}, strictErrs)
	assert.Equal(t, rep.OK(true), len(strictErrs) == 0)
}

// The module loader resolves the module's ordinary symbols and applies its
// own relocations (load_module()) before the module's init enables the
// patch and livepatch applies its relocations: linked, the same module's
// first error is the loader's "Unknown symbol", not livepatch's.
func TestDiagnosticsLinkBeforeLivepatch(t *testing.T) {
	ix, err := kallsyms.Open(repoFile("kallsyms", "example.txt"), kallsyms.Options{})
	require.NoError(t, err)
	m, err := klp.Open(repoFile("klp", "err-not-found.ko"))
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{Link: true})
	require.NoError(t, err)
	var kinds []diag.Kind
	for _, d := range rep.Diagnostics(false) {
		if d.Severity == diag.Error {
			kinds = append(kinds, d.Kind)
		}
	}
	assert.Equal(t, []diag.Kind{diag.KindLink, "not_found"}, kinds)
	first, ok := diag.FirstError(rep.Diagnostics(false))
	require.True(t, ok)
	assert.ErrorIs(t, first.Err, modplt.ErrUnresolved)
	assert.False(t, rep.OK(false))
}
