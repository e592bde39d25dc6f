package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// verbArgs is the Args of a command that only groups verbs (ca, ctl): an
// argument that is no verb is bad usage that names the verbs, with the
// closest one when there is one.
func verbArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var verbs []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			verbs = append(verbs, fmt.Sprintf("%q", c.Name()))
		}
	}
	hint := ""
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageErrorf("unknown command %q for %q%s; want one of %s", args[0], cmd.CommandPath(), hint, strings.Join(verbs, ", "))
}
