// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/klpresolve/klpresolve/pipeline"
)

// writeDependencies says which modules were laid out before the module,
// as modprobe loads them (--modules), where, and whether each links.
func writeDependencies(w io.Writer, deps []pipeline.Dependency) {
	if len(deps) == 0 {
		return
	}
	fmt.Fprintf(w, "dependencies: %s the kernel's symbols lack, laid out first from --modules, as modprobe loads them:\n", count(len(deps), "module", "modules"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range deps {
		if d.Image == nil {
			fmt.Fprintf(tw, "  %s\t-\t\tno file in --modules: what it exports stays unresolved\n", d.Name)
			continue
		}
		state := "links"
		if !d.Image.Linked() {
			state = fmt.Sprintf("does not link (%d failed, %s): the loader refuses it, and modprobe with it", len(d.Image.Errors), count(len(d.Image.Unresolved), "unresolved symbol", "unresolved symbols"))
		}
		fmt.Fprintf(tw, "  %s\t%#x\t%s\t%s (%s)\n", d.Name, d.Base(), count(d.Exports, "export", "exports"), state, d.Path)
	}
	tw.Flush()
}

type dependencyJSON struct {
	Name       string   `json:"name"`
	Path       string   `json:"path"`
	Address    string   `json:"address,omitempty"`
	Exports    int      `json:"exports"`
	Linked     bool     `json:"linked"`
	Unresolved []string `json:"unresolved,omitempty"`
	Errors     int      `json:"errors,omitempty"`
}

func dependenciesJSON(deps []pipeline.Dependency) []dependencyJSON {
	var out []dependencyJSON
	for _, d := range deps {
		j := dependencyJSON{Name: d.Name, Path: d.Path, Exports: d.Exports}
		if img := d.Image; img != nil {
			j.Address, j.Linked, j.Unresolved, j.Errors = fmt.Sprintf("%#x", d.Base()), img.Linked(), img.Unresolved, len(img.Errors)
		}
		out = append(out, j)
	}
	return out
}
