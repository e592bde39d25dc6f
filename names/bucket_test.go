package names

import "testing"

func TestCheckBucket(t *testing.T) {
	tests := []struct {
		name, bucket string
		ok           bool
	}{
		{name: "plain", bucket: "snigate-cache", ok: true},
		{name: "dots", bucket: "cache.site-a.example", ok: true},
		{name: "too short", bucket: "ab"},
		{name: "too long", bucket: "a234567890123456789012345678901234567890123456789012345678901234"},
		{name: "upper case", bucket: "Snigate"},
		{name: "underscore", bucket: "snigate_cache"},
		{name: "leading hyphen", bucket: "-cache"},
		{name: "trailing dot", bucket: "cache."},
		{name: "adjacent dots", bucket: "a..b"},
		{name: "ip address", bucket: "192.168.1.10"},
		{name: "xn prefix", bucket: "xn--cache"},
		{name: "alias suffix", bucket: "cache-s3alias"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckBucket(tt.bucket); (err == nil) != tt.ok {
				t.Fatalf("CheckBucket(%q) = %v, want ok=%v", tt.bucket, err, tt.ok)
			}
		})
	}
}
