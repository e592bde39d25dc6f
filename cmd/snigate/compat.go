package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// compatArgs rewrites the flag spellings that Go's flag package accepted,
// which snigate's command line used before cobra, into pflag's, so that
// existing scripts keep working: "-probe" and "-admin=ADDR" become
// "--probe" and "--admin=ADDR", and "--c" becomes "-c". Only names of the
// flags the command has are rewritten; arguments after "--" are left alone.
func compatArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return args
	}
	out := make([]string, 0, len(args))
	for i, arg := range args {
		if arg == "--" {
			return append(out, args[i:]...)
		}
		out = append(out, compatFlag(cmd, arg))
	}
	return out
}

// compatFlag returns arg in pflag's spelling.
func compatFlag(cmd *cobra.Command, arg string) string {
	if !strings.HasPrefix(arg, "-") || arg == "-" {
		return arg
	}
	double := strings.HasPrefix(arg, "--")
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	switch {
	case double && len(name) == 1 && lookupShort(cmd, name) != nil:
		return arg[1:]
	case !double && len(name) > 1 && lookupLong(cmd, name) != nil:
		return "-" + arg
	}
	return arg
}

func lookupLong(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}

func lookupShort(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().ShorthandLookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().ShorthandLookup(name)
}
