// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/ftrace"
	"github.com/klpresolve/klpresolve/internal/kconfig"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/symvers"
)

// schemaVersion is the version of klpresolve's JSON documents
// (docs/json.md). It changes when a field is removed or changes meaning;
// new fields do not change it.
const schemaVersion = 1

// ownOK is a document whose object has an "ok" of its own (link's, the
// same verdict): writeDoc adds none.
type ownOK interface{ hasOK() }

func (linkJSON) hasOK() {}

// writeDoc writes v, which marshals to a JSON object, as a JSON document:
// the object with schema_version, command and ok (the verdict: exit
// status 0) first, indented.
func writeDoc(w io.Writer, command string, ok bool, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(body) < 2 || body[0] != '{' {
		return errors.New("a JSON document must be an object")
	}
	type envelope struct {
		SchemaVersion int    `json:"schema_version"`
		Command       string `json:"command"`
	}
	var head []byte
	if _, has := v.(ownOK); has {
		head, err = json.Marshal(envelope{schemaVersion, command})
	} else {
		head, err = json.Marshal(struct {
			envelope
			OK bool `json:"ok"`
		}{envelope{schemaVersion, command}, ok})
	}
	if err != nil {
		return err
	}
	doc := head[:len(head)-1]
	if rest := body[1:]; !bytes.Equal(rest, []byte("}")) {
		doc = append(append(doc, ','), rest...)
	} else {
		doc = append(doc, '}')
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// errorDoc is the document a command writes in JSON when it stops with
// no verdict: unusable input or usage (exit 2), or --max-time (exit 3).
type errorDoc struct {
	Error struct {
		Kind       string `json:"kind"`
		Message    string `json:"message"`
		ExitStatus int    `json:"exit_status"`
		// File and Line are where the input is wrong, where known.
		File string `json:"file,omitempty"`
		Line int    `json:"line,omitempty"`
	} `json:"error"`
}

// writeErrorDoc writes e as an errorDoc.
func writeErrorDoc(w io.Writer, command string, e *exitError) error {
	var d errorDoc
	d.Error.Kind, d.Error.Message, d.Error.ExitStatus = "unusable", e.err.Error(), e.code
	d.Error.File, d.Error.Line = errLocation(e.err)
	if e.code == exitTooSlow {
		d.Error.Kind = "deadline"
	}
	return writeDoc(w, command, false, d)
}

// commandName is the command as JSON documents name it: its path without
// "klpresolve", and "resolve" for the main job.
func commandName(cmd *cobra.Command) string {
	if cmd == nil || !cmd.HasParent() {
		return "resolve"
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// wantsJSON reports whether the command line asks for JSON: its --format
// flag as parsed, or, where parsing stopped before it, as written.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("format"); f != nil && f.Changed {
			return f.Value.String() == "json"
		}
	}
	if i := slices.Index(args, "--format"); i >= 0 && i+1 < len(args) {
		return args[i+1] == "json"
	}
	return slices.Contains(args, "--format=json")
}

// errLocation is the file, and the line, an error names, where it names
// them: the packages' located errors, and the operating system's.
func errLocation(err error) (file string, line int) {
	var (
		pe  *kallsyms.ParseError
		ie  *kallsyms.ImageError
		sle *symvers.LineError
		cle *kconfig.LineError
		fe  *ftrace.Error
		ee  *diag.FormatError
		ose *fs.PathError
	)
	switch {
	case errors.As(err, &pe):
		return pe.File, pe.Line
	case errors.As(err, &sle):
		return sle.File, sle.Line
	case errors.As(err, &cle):
		return cle.File, cle.Line
	case errors.As(err, &fe):
		return fe.File, fe.Line
	case errors.As(err, &ie):
		return ie.File, 0
	case errors.As(err, &ee):
		return ee.File, 0
	case errors.As(err, &ose):
		return ose.Path, 0
	}
	return "", 0
}
