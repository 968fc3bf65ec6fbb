// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"errors"
	"fmt"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/symvers"
)

// Diagnostics lists what the check found, once each: first the errors in
// the order the kernel meets them, so that the first is the one insmod
// reports, then the warnings and notes. With strict, a relocation that
// waits for a module not loaded is an error (Report.OK(strict) agrees).
//
// The loader's order (load_module(), then the module's init): the file's
// own sections (klp.StageSetup), module_layout's version
// (check_modstruct_version()), the vermagic (check_modinfo()), the
// loader's refusals of the layout (klp.StageLayout), the other symbols'
// versions and the ordinary symbols not found (simplify_symbols()), the
// loader's own relocations (apply_relocations(): the link), its refusals
// after them (klp.StageFinalize); then livepatch, from the module's init:
// its refusal (klp.StageInit), its relocations and its patched functions.
func (r *Report) Diagnostics(strict bool) []diag.Diagnostic {
	var out []diag.Diagnostic
	res := r.Resolution
	var problems []symvers.Problem
	if r.Versions != nil {
		problems = r.Versions.Problems
	}
	loadErr := func(stage klp.LoadStage) {
		if e := res.LoadErr; e != nil && res.LoadErrStage == stage {
			out = append(out, e.Diagnostic())
		}
	}
	loadErr(klp.StageSetup)
	if len(problems) > 0 && problems[0].Symbol == "module_layout" {
		out = append(out, problems[0].Diagnostic())
		problems = problems[1:]
	}
	if g := r.Vermagic; g != nil && g.Problem != nil {
		out = append(out, g.Problem.Diagnostic())
	}
	loadErr(klp.StageLayout)
	for i := range problems {
		out = append(out, problems[i].Diagnostic())
	}
	if img := r.Image; img != nil {
		// A name the kernel has but does not export says so.
		note := func(name string) string {
			if h, ok := r.NotExported[name]; ok {
				return " (" + h.Why() + ")"
			}
			return ""
		}
		named := map[string]bool{}
		for i := range img.Errors {
			e := img.Errors[i]
			d := e.Diagnostic(img.Module.Path)
			if errors.Is(e, modplt.ErrUnresolved) {
				d.Message += note(e.Symbol)
				named[e.Symbol] = true
			}
			out = append(out, d)
		}
		for _, name := range img.Unresolved {
			if !named[name] {
				out = append(out, diag.Diagnostic{Kind: diag.KindLink, Severity: diag.Error, Message: "link: unresolved symbol " + name + note(name),
					Location: diag.Location{File: img.Module.Path, Symbol: name}})
			}
		}
	}
	loadErr(klp.StageFinalize)
	loadErr(klp.StageInit)
	for _, x := range res.Results {
		if x.Err != nil {
			out = append(out, x.Err.Diagnostic())
		}
	}
	for i := range res.Funcs {
		if d, ok := res.Funcs[i].Diagnostic(); ok {
			out = append(out, d)
		}
	}
	deferred := res.Deferred + res.FuncDeferred
	if strict && deferred > 0 && len(res.DeferredObjects) == 0 && len(res.Unanswered) == 0 {
		out = append(out, diag.Diagnostic{Kind: diag.KindDeferred, Severity: diag.Error,
			Message: fmt.Sprintf("deferred: %d relocations or patched functions wait for a module (--strict)", deferred)})
	}
	if strict && deferred > 0 && len(res.DeferredObjects) > 0 {
		obj := res.DeferredObjects[0]
		msg := "deferred: module " + obj + " is not loaded (--strict)"
		if len(res.BuiltIn) > 0 && res.BuiltIn[0].Object == obj {
			msg = "deferred: module " + obj + " looks built in, and would never load (--strict)"
		}
		out = append(out, diag.Diagnostic{Kind: diag.KindDeferred, Severity: diag.Error, Location: diag.Location{Object: obj}, Message: msg})
	}
	if strict && len(res.Unanswered) > 0 {
		out = append(out, diag.Diagnostic{Kind: diag.KindDeferred, Severity: diag.Error, Location: diag.Location{Object: res.Unanswered[0]},
			Message: "unanswered: the symbol list lists no module, and relocations applied at the patch's load use module " + res.Unanswered[0] + "'s symbols (--strict)"})
	}
	// Warnings and notes.
	for _, b := range res.BuiltIn {
		out = append(out, diag.Diagnostic{Kind: diag.KindBuiltIn, Severity: diag.Warning, Location: diag.Location{Object: b.Object},
			Message: fmt.Sprintf("module %s looks built in (vmlinux has %s): its relocations would wait for a load that never comes", b.Object, b.Names)})
	}
	if n := len(res.InitRefs); n > 0 {
		out = append(out, diag.Diagnostic{Kind: diag.KindInitMemory, Severity: diag.Warning,
			Message: fmt.Sprintf("%d relocations resolve into vmlinux's init memory, freed after boot", n)})
	}
	for _, name := range r.LoaderMissing {
		out = append(out, diag.Diagnostic{Kind: diag.KindLoaderMissing, Severity: diag.Note, Location: diag.Location{Symbol: name},
			Message: "the module loader would not find " + name})
	}
	if !strict && deferred > 0 && len(res.DeferredObjects) > 0 {
		for _, obj := range res.DeferredObjects {
			out = append(out, diag.Diagnostic{Kind: diag.KindDeferred, Severity: diag.Note, Location: diag.Location{Object: obj},
				Message: "deferred: module " + obj + " is not loaded: its relocations apply when it loads"})
		}
	}
	return out
}
