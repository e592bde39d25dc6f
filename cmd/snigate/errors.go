package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/config"
)

// Exit statuses (snigate help: 0 success, 1 runtime failure, 2 bad usage or invalid configuration).
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// exitError is an error a command returns with the exit status it calls
// for. usage, when set, is printed after the message; silent prints
// nothing (the command's output already said it); noHint leaves out the
// "--help" hint of exit status 2 (the file was wrong, not the command).
type exitError struct {
	status int
	err    error
	usage  *cobra.Command
	silent bool
	noHint bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is bad usage: exit status 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{status: exitUsage, err: fmt.Errorf(format, args...)}
}

// usageError is bad usage that prints cmd's usage after msg.
func usageError(msg string, cmd *cobra.Command) error {
	return &exitError{status: exitUsage, err: errors.New(msg), usage: cmd}
}

// failed marks err, met while a command did its work: exit status 2 for
// an invalid configuration (config.ErrorList), 1 for anything else.
func failed(err error) error {
	if err == nil {
		return nil
	}
	var cerr config.ErrorList
	if errors.As(err, &cerr) {
		return &exitError{status: exitUsage, err: err}
	}
	return &exitError{status: exitRuntime, err: err}
}

// exitStatus prints err, which cmd returned, and returns the exit status.
// An error that is not an *exitError comes from cobra itself (an unknown
// command or flag, a wrong number of arguments): bad usage.
func exitStatus(stderr io.Writer, cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	name := "snigate"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{status: exitUsage, err: err}
	}
	if ee.silent {
		return ee.status
	}
	var cerr config.ErrorList
	if errors.As(err, &cerr) {
		fmt.Fprintf(stderr, "%s: %s:\n%v\n", name, invalidConfiguration(len(cerr)), cerr)
		return ee.status
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, ee.err)
	switch {
	case ee.usage != nil:
		fmt.Fprint(stderr, ee.usage.UsageString())
	case ee.status == exitUsage && !ee.noHint:
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", name)
	}
	return ee.status
}

// invalidConfiguration is "invalid configuration (1 error)", "(2 errors)".
func invalidConfiguration(n int) string {
	if n == 1 {
		return "invalid configuration (1 error)"
	}
	return fmt.Sprintf("invalid configuration (%d errors)", n)
}
