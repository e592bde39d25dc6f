package names

import (
	"errors"
	"net/netip"
	"strings"
)

// CheckBucket reports whether s is an S3 bucket name as AWS's rules for
// general purpose buckets state them (and every S3-compatible store
// accepts): 3..63 lower-case letters, digits, dots and hyphens, starting
// and ending with a letter or digit, no two adjacent dots, not an IPv4
// address, not starting with "xn--" or "sthree-", not ending with
// "-s3alias" or "--ol-s3". The error says what to change.
func CheckBucket(s string) error {
	switch {
	case len(s) < 3 || len(s) > 63:
		return errors.New("a bucket name is 3 to 63 characters")
	case strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "":
		return errors.New("a bucket name has only lower-case letters, digits, dots and hyphens")
	case !alnum(s[0]) || !alnum(s[len(s)-1]):
		return errors.New("a bucket name starts and ends with a letter or digit")
	case strings.Contains(s, ".."):
		return errors.New("a bucket name has no two adjacent dots")
	case isIPv4(s):
		return errors.New("a bucket name is not an IP address")
	case strings.HasPrefix(s, "xn--") || strings.HasPrefix(s, "sthree-") ||
		strings.HasSuffix(s, "-s3alias") || strings.HasSuffix(s, "--ol-s3"):
		return errors.New("a bucket name does not start with xn-- or sthree- nor end with -s3alias or --ol-s3")
	}
	return nil
}

func alnum(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}
