// SPDX-License-Identifier: GPL-2.0-only

package diag

import "fmt"

// Severity says whether a diagnostic makes a check fail.
type Severity uint8

const (
	// Error: the kernel refuses the module, or a relocation or patched
	// function fails.
	Error Severity = iota + 1
	// Warning: the module loads, but something will not work as meant
	// (a relocation waiting for a module that looks built in).
	Warning
	// Note: what explains an answer (why a symbol is unresolved).
	Note
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	case Note:
		return "note"
	}
	return fmt.Sprintf("severity(%d)", uint8(s))
}

// MarshalText writes the severity's name ("error", "warning", "note").
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Kind is a diagnostic's stable name for programs ("not_found",
// "symbol_version", "link"): docs/json.md lists them. A new kernel rule
// adds a Kind and nothing else to the API.
type Kind string

// The kinds the pipeline itself gives; klp's, modplt's and symvers'
// errors bring their own (klp.RelocError.Kind).
const (
	KindUnreadable        Kind = "unreadable"         // a kernel's files could not be read
	KindUnusable          Kind = "unusable"           // the inputs do not fit together
	KindWrongArchitecture Kind = "wrong_architecture" // another architecture's kernel
	KindSymbolVersion     Kind = "symbol_version"     // check_version(): a CRC or namespace
	KindVermagic          Kind = "vermagic"           // check_modinfo(): the version magic
	KindDeferred          Kind = "deferred"           // waits for a module (a failure with strict)
	KindLink              Kind = "link"               // a relocation the module loader fails
	KindBuiltIn           Kind = "built_in"           // waits for a module that looks built in
	KindInitMemory        Kind = "init_memory"        // resolved into vmlinux's freed init memory
	KindLoaderMissing     Kind = "loader_missing"     // an ordinary symbol insmod would not find
)

// Location is where a diagnostic points; the fields that do not apply
// are empty.
type Location struct {
	File     string `json:"file,omitempty"`
	Section  string `json:"section,omitempty"`
	Offset   uint64 `json:"offset,omitempty"`
	Symbol   string `json:"symbol,omitempty"`
	Object   string `json:"object,omitempty"`   // vmlinux or a module, for a patched function
	Function string `json:"function,omitempty"` // a patched function
	Kernel   string `json:"kernel,omitempty"`   // the kernel's symbol file
}

// Diagnostic is one thing a check found, in the loader's words where it
// has them.
type Diagnostic struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	Location Location `json:"location"`
	// Message is the one line that says it: the kernel's message where
	// there is one, with what it refers to.
	Message string `json:"message"`
	// Kernel is the kernel's own message, where it prints one.
	Kernel string `json:"kernel,omitempty"`
	Help   string `json:"help,omitempty"`
	// Err is the error behind it (errors.Is and errors.As find its kind).
	Err error `json:"-"`
}

func (d Diagnostic) Error() string { return d.Message }

// String is "severity: kind: message".
func (d Diagnostic) String() string {
	return d.Severity.String() + ": " + string(d.Kind) + ": " + d.Message
}

// FirstError is the first diagnostic of Error severity, and whether there
// is one.
func FirstError(ds []Diagnostic) (Diagnostic, bool) {
	for _, d := range ds {
		if d.Severity == Error {
			return d, true
		}
	}
	return Diagnostic{}, false
}
