package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem found in a configuration file. It prints as
// "file:line: key: message", for example
//
//	snigate.yaml:14: routes[0].health.interval: want a duration such as "3s", got "3"
//
// Line is 0 when the problem has no position (the file could not be read);
// Key is "" when it concerns the file as a whole (it is not YAML, it is
// empty). Both parts are then left out of the printed form.
type Error struct {
	File string // the file name as given to Parse or Load
	Line int    // 1-based line, 0 if unknown
	Key  string // dotted key path such as "routes[0].health.interval"
	Msg  string // what is wrong and what is expected
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in one configuration file, in line
// order. Parse and Load return it as their error; use errors.As to get it
// back (or to get its first *Error).
type ErrorList []*Error

// Error prints one error per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors of the list, so that errors.As finds an *Error.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// sortByLine orders the list by line, keeping the order of discovery for
// errors on the same line.
func (l ErrorList) sortByLine() {
	slices.SortStableFunc(l, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
}
