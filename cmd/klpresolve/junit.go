// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/pipeline"
)

// JUnit XML, as CI systems read test reports (Jenkins, GitLab's
// artifacts:reports:junit, GitHub actions that publish them): check's
// --format junit makes each kernel a test case of one suite, the patch, so
// that a pipeline shows which kernels a patch fails on beside its other
// tests. A kernel whose relocations fail is a <failure>; one whose symbols
// could not be read is an <error>; the loader note goes to <system-out>.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string `xml:"name,attr"`
	ClassName string `xml:"classname,attr"`
	Time      string `xml:"time,attr"`
	// Properties: kernel_rules, the generation whose rules judged the
	// kernel.
	Properties *junitProperties `xml:"properties,omitempty"`
	Failure    *junitProblem    `xml:"failure,omitempty"`
	Error      *junitProblem    `xml:"error,omitempty"`
	SystemOut  *junitText       `xml:"system-out,omitempty"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// junitText is a CDATA section: line ends stay line ends.
type junitText struct {
	Text string `xml:",cdata"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// checkJUnit is check's report as JUnit XML: one suite named after the
// module, one case per kernel in the order checked.
func checkJUnit(m *klp.Module, rows []pipeline.KernelResult, elapsed time.Duration) *junitSuites {
	suite := junitSuite{Name: fmt.Sprintf("klpresolve check %s (%s)", m.KernelName(), m.Path), Tests: len(rows), Time: seconds(elapsed)}
	for _, r := range rows {
		c := junitCase{Name: r.Kernel, ClassName: "klpresolve.check." + m.KernelName(), Time: seconds(r.Time)}
		if r.Generation.Generation != kgen.Unknown {
			c.Properties = &junitProperties{[]junitProperty{{"kernel_rules", r.Generation.String()}}}
		}
		counts := fmt.Sprintf("%d resolved, %d deferred, %s", r.Resolved, r.Deferred, count(r.Errors, "error", "errors"))
		switch {
		case r.Err != nil:
			suite.Errors++
			c.Error = &junitProblem{Message: r.FirstError, Type: string(r.FirstErrorKind), Text: r.Err.Error()}
		case !r.OK:
			suite.Failures++
			kind := string(r.FirstErrorKind)
			if kind == "" {
				kind = "unresolved"
			}
			// Every error, the first first (the failure's message).
			text := counts
			if errs := errorLines(r.Diagnostics); len(errs) > 0 {
				text += "\n" + strings.Join(errs, "\n")
			} else {
				text += "\nerror: " + r.FirstError
			}
			c.Failure = &junitProblem{Message: r.FirstError, Type: kind, Text: text}
		}
		var out []string
		if c.Failure == nil && c.Error == nil {
			out = append(out, counts)
		}
		for _, b := range r.BuiltIn {
			out = append(out, "warning: "+builtInNote(b))
		}
		if r.InitRefs > 0 {
			out = append(out, fmt.Sprintf("warning: %s to vmlinux's init memory, which the kernel frees after boot", count(r.InitRefs, "relocation refers", "relocations refer")))
		}
		if len(r.LoaderMissing) > 0 {
			out = append(out, loaderNote(r.LoaderMissing, nil))
		}
		if len(r.UnloadedDepends) > 0 {
			out = append(out, dependsNote(r.UnloadedDepends, r.Kernel, r.NoModules))
		}
		if len(out) > 0 {
			c.SystemOut = &junitText{strings.Join(out, "\n")}
		}
		suite.Cases = append(suite.Cases, c)
	}
	return &junitSuites{Name: "klpresolve", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}}
}

// junitErrors is how many of a kernel's errors its JUnit failure lists.
const junitErrors = 20

// errorLines are the errors among ds (a fleet row's diagnostics, in the
// loader's order), "error: kind: section+offset: message", at most
// junitErrors of them.
func errorLines(ds []diag.Diagnostic) []string {
	var out []string
	n := 0
	for _, d := range ds {
		if d.Severity != diag.Error {
			continue
		}
		if n++; n <= junitErrors {
			if l := d.Location; l.Section != "" {
				at := l.Section // a section's own refusal
				if l.Offset != 0 {
					at = fmt.Sprintf("%s+%#x", l.Section, l.Offset)
				}
				if !strings.Contains(d.Message, at) {
					d.Message = at + ": " + d.Message
				}
			}
			out = append(out, d.String())
		}
	}
	if n > junitErrors {
		out = append(out, fmt.Sprintf("... and %d more (--format json lists them)", n-junitErrors))
	}
	return out
}

func writeJUnit(w io.Writer, v *junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
