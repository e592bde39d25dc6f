package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/snigate/snigate/images"
	"github.com/snigate/snigate/oci"
)

// imagesAPI is what /api/cache/warm, status, export and import need from
// the gateway: whole images in the http routes' caches.
type imagesAPI interface {
	WarmImages(ctx context.Context, refs, platforms []string, progress func(images.Progress)) ([]images.Status, error)
	ImageStatus(ctx context.Context, refs []string) ([]images.Status, error)
	ExportImages(ctx context.Context, refs []string, dir string, force bool) (images.LayoutResult, error)
	ImportImages(ctx context.Context, dir, repository string) (images.LayoutResult, error)
}

// MaxImages is the most images one warm, status or export request names
// (their references fit in the admin API's MaxBodyBytes).
const MaxImages = 64

// ImagesRequest is the body of POST /api/cache/warm, /status and
// /export: full image references (host/repository:tag or @digest),
// and for warm the platforms (empty: all), for export the directory (on
// the gateway's host, absolute) and whether to write over a directory
// that is not empty.
type ImagesRequest struct {
	Images    []string `json:"images"`
	Platforms []string `json:"platforms,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Force     bool     `json:"force,omitempty"`
}

// ImportRequest is the body of POST /api/cache/import: the layout's
// directory (absolute, on the gateway's host) and the repository
// (host/repository) of images named by a tag alone.
type ImportRequest struct {
	Dir        string `json:"dir"`
	Repository string `json:"repository,omitempty"`
}

// WarmLine is one line of POST /api/cache/warm's answer (JSON lines):
// progress while the images are fetched, then the result.
type WarmLine struct {
	Progress *images.Progress `json:"progress,omitempty"`
	Result   []images.Status  `json:"result,omitempty"`
	Error    string           `json:"error,omitempty"`
}

const imagesBody = `{"images": ["registry.example.com/team/app:v1"]}`

// readImages reads an ImagesRequest, checking every reference.
func readImages(w http.ResponseWriter, r *http.Request, need bool) (ImagesRequest, int, error) {
	var req ImagesRequest
	data, code, err := readBody(w, r, imagesBody)
	if err != nil {
		return req, code, err
	}
	if err := decodeStrict(data, &req); err != nil {
		return req, http.StatusBadRequest, fmt.Errorf("bad request body: %v; want %s", err, imagesBody)
	}
	if need && len(req.Images) == 0 || len(req.Images) > MaxImages {
		return req, http.StatusBadRequest, fmt.Errorf("want 1 to %d images, got %d; such as %s", MaxImages, len(req.Images), imagesBody)
	}
	for _, s := range req.Images {
		if _, err := oci.ParseImageReference(s); err != nil {
			return req, http.StatusBadRequest, fmt.Errorf("image %q: %v", s, err)
		}
	}
	return req, 0, nil
}

// longRequest lifts the write deadline of a request that takes as long
// as its images do.
func longRequest(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}

// warmImages handles POST /api/cache/warm: JSON lines of progress, then
// the result.
func (s *Server) warmImages(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Images == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	req, code, err := readImages(w, r, true)
	if err != nil {
		writeError(w, code, err.Error())
		return
	}
	longRequest(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	st, err := s.cfg.Images.WarmImages(r.Context(), req.Images, req.Platforms, func(p images.Progress) {
		_ = enc.Encode(WarmLine{Progress: &p})
		_ = rc.Flush()
	})
	line := WarmLine{Result: st}
	if err != nil {
		line.Error = err.Error()
	}
	_ = enc.Encode(line)
	s.log.Info("images warmed through the admin API", "images", len(req.Images), "client", r.RemoteAddr)
}

// imageStatus handles POST /api/cache/status ({} or no images: the
// pinned images).
func (s *Server) imageStatus(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Images == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	req, code, err := readImages(w, r, false)
	if err != nil {
		writeError(w, code, err.Error())
		return
	}
	longRequest(w)
	st, err := s.cfg.Images.ImageStatus(r.Context(), req.Images)
	if err != nil {
		writeError(w, http.StatusBadRequest, "status: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// exportImages handles POST /api/cache/export.
func (s *Server) exportImages(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Images == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	req, code, err := readImages(w, r, true)
	if err == nil && req.Dir == "" {
		code, err = http.StatusBadRequest, fmt.Errorf(`want "dir": the directory to write the layout into`)
	}
	if err != nil {
		writeError(w, code, err.Error())
		return
	}
	longRequest(w)
	res, err := s.cfg.Images.ExportImages(r.Context(), req.Images, req.Dir, req.Force)
	if err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
}

const importBody = `{"dir": "/mnt/disk/images"}`

// importImages handles POST /api/cache/import.
func (s *Server) importImages(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Images == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	var req ImportRequest
	data, code, err := readBody(w, r, importBody)
	if err == nil {
		if err = decodeStrict(data, &req); err != nil || req.Dir == "" {
			code, err = http.StatusBadRequest, fmt.Errorf("bad request body: %v; want %s", err, importBody)
		}
	}
	if err != nil {
		writeError(w, code, err.Error())
		return
	}
	longRequest(w)
	res, err := s.cfg.Images.ImportImages(r.Context(), req.Dir, req.Repository)
	if err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	s.log.Info("images imported through the admin API", "dir", req.Dir, "images", len(res.Images), "client", r.RemoteAddr)
	writeJSON(w, http.StatusOK, res)
}

// longClient is c's HTTP client without the request timeout: a warm,
// an export or an import lasts as long as its images take (ctx bounds
// it).
func (c *Client) longClient() *http.Client {
	hc := *c.httpClient()
	if c.HTTPClient == nil {
		hc.Timeout = 0
	}
	return &hc
}

// WarmImages asks the gateway to fetch refs into its caches; progress is
// called for each progress line. It returns the images' statuses.
func (c *Client) WarmImages(ctx context.Context, refs, platforms []string, progress func(images.Progress)) ([]images.Status, error) {
	body, err := json.Marshal(ImagesRequest{Images: refs, Platforms: platforms})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL()+"/api/cache/warm", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.longClient().Do(req)
	if err != nil {
		return nil, c.reachError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := readLimited(resp)
		return nil, c.apiError(resp, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxResponseBytes)
	for sc.Scan() {
		var line WarmLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("admin API at %s: decode the warm's answer: %w", c.addr(), err)
		}
		switch {
		case line.Progress != nil:
			if progress != nil {
				progress(*line.Progress)
			}
		case line.Error != "":
			return line.Result, fmt.Errorf("warm: %s", line.Error)
		default:
			return line.Result, nil
		}
	}
	return nil, fmt.Errorf("admin API at %s: the warm's answer ended before its result: %v", c.addr(), sc.Err())
}

// ImageStatus says whether the caches hold all of each of refs (none:
// the pinned images).
func (c *Client) ImageStatus(ctx context.Context, refs []string) ([]images.Status, error) {
	var st []images.Status
	err := c.post(ctx, "/api/cache/status", ImagesRequest{Images: refs}, &st)
	return st, err
}

// ExportImages writes an OCI image layout of refs into dir on the
// gateway's host.
func (c *Client) ExportImages(ctx context.Context, refs []string, dir string, force bool) (images.LayoutResult, error) {
	var res images.LayoutResult
	err := c.post(ctx, "/api/cache/export", ImagesRequest{Images: refs, Dir: dir, Force: force}, &res)
	return res, err
}

// ImportImages loads the OCI image layout in dir on the gateway's host.
func (c *Client) ImportImages(ctx context.Context, dir, repository string) (images.LayoutResult, error) {
	var res images.LayoutResult
	err := c.post(ctx, "/api/cache/import", ImportRequest{Dir: dir, Repository: repository}, &res)
	return res, err
}

// post sends body as JSON with the long client and decodes a 200 into
// out.
func (c *Client) post(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	long := &Client{Addr: c.Addr, HTTPClient: c.longClient()}
	return long.do(ctx, http.MethodPost, path, bytes.NewReader(data), out)
}

func readLimited(resp *http.Response) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(nil, resp.Body, 64<<10))
	return buf.Bytes(), err
}
