package size

import "testing"

// TestParseDecimal moved from regcache (TestParseSize), assertions kept.
func TestParseDecimal(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		err  bool
	}{
		{name: "gibibytes", in: "50GiB", want: 50 << 30},
		{name: "mebibytes", in: "512MiB", want: 512 << 20},
		{name: "fraction", in: "1.5TiB", want: 3 << 39},
		{name: "decimal unit", in: "100GB", want: 100e9},
		{name: "kilobytes", in: "4KB", want: 4000},
		{name: "bytes suffix", in: "1024B", want: 1024},
		{name: "plain bytes", in: "1048576", want: 1 << 20},
		{name: "space before unit", in: "2 GiB", want: 2 << 30},
		{name: "surrounding space", in: " 1KiB ", want: 1024},
		{name: "big exact", in: "9007199254740993", want: 9007199254740993},
		{name: "empty", in: "", err: true},
		{name: "unit only", in: "GiB", err: true},
		{name: "zero", in: "0", err: true},
		{name: "negative", in: "-1GiB", err: true},
		{name: "plus sign", in: "+1GiB", err: true},
		{name: "exponent", in: "1e9", err: true},
		{name: "hex", in: "0x10", err: true},
		{name: "lower case unit", in: "50gib", err: true},
		{name: "unknown unit", in: "50 gigs", err: true},
		{name: "two points", in: "1.2.3MiB", err: true},
		{name: "overflow", in: "9EiB", err: true},
		{name: "overflow whole", in: "9000PiB", err: true},
		{name: "below a byte", in: "0.5B", err: true},
		{name: "lone point", in: ".KiB", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDecimal(tt.in)
			if tt.err {
				if err == nil {
					t.Fatalf("ParseDecimal(%q) = %d, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDecimal(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestFormat moved from regcache (TestFormatSize), assertions kept.
func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		in   int64
		want string
	}{
		{name: "bytes", in: 512, want: "512B"},
		{name: "zero", in: 0, want: "0B"},
		{name: "kibibyte", in: 1024, want: "1KiB"},
		{name: "fraction", in: 3 << 19, want: "1.5MiB"},
		{name: "gibibytes", in: 50 << 30, want: "50GiB"},
		{name: "tebibyte", in: 1 << 40, want: "1TiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Format(tt.in)
			if got != tt.want {
				t.Fatalf("Format(%d) = %q, want %q", tt.in, got, tt.want)
			}
			if tt.in > 0 {
				back, err := ParseDecimal(got)
				if err != nil || back != tt.in {
					t.Fatalf("ParseDecimal(Format(%d)) = %d, %v", tt.in, back, err)
				}
			}
		})
	}
}
