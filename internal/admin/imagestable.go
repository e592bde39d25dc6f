package admin

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snigate/snigate/images"
	"github.com/snigate/snigate/regcache"
)

// imageHeader is the first line of WriteImageTable.
var imageHeader = []string{"IMAGE", "ROUTE", "STATUS", "DIGEST", "BLOBS", "SIZE"}

// WriteImageTable writes st as an aligned table, one image a line, each
// incomplete image followed by its missing digests, for `snigate ctl
// cache warm` and `status`.
func WriteImageTable(w io.Writer, st []images.Status) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(imageHeader, "\t"))
	for _, s := range st {
		state := "complete"
		switch {
		case s.Error != "":
			state = "error"
		case !s.Complete:
			state = "incomplete"
		}
		if s.Pinned {
			state += " (pinned)"
		}
		if s.Fetching != nil {
			state += fmt.Sprintf(" fetching %d/%d", s.Fetching.LayersDone, s.Fetching.Layers)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Image, s.Route, state, orDash(s.Digest), s.Blobs, regcache.FormatSize(s.Bytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range st {
		if s.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", s.Image, s.Error)
		}
		for _, d := range s.Missing {
			fmt.Fprintf(w, "%s: missing %s\n", s.Image, d)
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ProgressWriter shows a warm's progress: on a terminal one bar per
// image, redrawn in place (bytes, layers, rate); otherwise a plain line
// when an image's manifests are read and as each blob arrives.
type ProgressWriter struct {
	W        io.Writer
	Terminal bool
	// NowFunc is the clock of the rate. Nil: time.Now.
	NowFunc func() time.Time

	image string    // the image the bar shows
	start time.Time // when its first report came
	drawn bool      // a bar is on the line
}

// barWidth is the width of the bar's gauge.
const barWidth = 30

// Report shows p.
func (pw *ProgressWriter) Report(p images.Progress) {
	now := time.Now
	if pw.NowFunc != nil {
		now = pw.NowFunc
	}
	if p.Image != pw.image {
		pw.End()
		pw.image, pw.start = p.Image, now()
		if !pw.Terminal {
			fmt.Fprintf(pw.W, "%s: %s, %d layers, %s\n", p.Image, orDash(p.Digest), p.Layers, regcache.FormatSize(p.Bytes))
		}
	}
	if !pw.Terminal {
		if p.Blob != "" {
			fmt.Fprintf(pw.W, "%s: layer %d/%d %s (%s/%s)\n", p.Image, p.LayersDone, p.Layers, p.Blob,
				regcache.FormatSize(p.BytesDone), regcache.FormatSize(p.Bytes))
		}
		return
	}
	fmt.Fprintf(pw.W, "\r\x1b[K%s", bar(p, now().Sub(pw.start)))
	pw.drawn = true
}

// End ends the bar's line.
func (pw *ProgressWriter) End() {
	if pw.drawn {
		fmt.Fprintln(pw.W)
		pw.drawn = false
	}
}

// bar is p as one line: name, gauge, layers, bytes and rate.
func bar(p images.Progress, elapsed time.Duration) string {
	filled := barWidth
	if p.Bytes > 0 {
		filled = int(int64(barWidth) * min(p.BytesDone, p.Bytes) / p.Bytes)
	}
	rate := "-"
	if s := elapsed.Seconds(); s > 0 {
		rate = regcache.FormatSize(int64(float64(p.BytesDone)/s)) + "/s"
	}
	return fmt.Sprintf("%s [%s%s] %d/%d layers %s/%s %s", p.Image, strings.Repeat("#", filled),
		strings.Repeat("-", barWidth-filled), p.LayersDone, p.Layers,
		regcache.FormatSize(p.BytesDone), regcache.FormatSize(p.Bytes), rate)
}
