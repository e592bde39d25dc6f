// Command snigate is the SNI gateway: see `snigate help` and
// docs/configuration.md.
//
// The command line is built with spf13/cobra. Each command is one file,
// cmd_<name>.go, holding its definition (use, description, examples,
// flags) and listed by its constructor in commands (root.go), caVerbs
// (`snigate ca`) or ctlVerbs (`snigate ctl`); the work is done by
// the internal packages it calls. Errors are returned, never printed by a
// command: exitStatus prints them and picks the exit status.
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns its exit status (0 success,
// 1 runtime failure, 2 bad usage or invalid configuration).
func run(args []string, stdout, stderr io.Writer) int {
	return runWithStdin(args, os.Stdin, stdout, stderr)
}

// runWithStdin is run reading standard input from stdin (check -c -).
func runWithStdin(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	root := newRoot(a)
	if len(args) == 0 {
		return exitStatus(stderr, root, usageError("a command is required", root))
	}
	root.SetArgs(compatArgs(root, args))
	cmd, err := root.ExecuteC()
	return exitStatus(stderr, cmd, err)
}
