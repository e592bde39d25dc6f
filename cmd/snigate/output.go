package main

import (
	"encoding/json"
	"io"
)

// writeJSON prints v as indented JSON, for -o json.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
