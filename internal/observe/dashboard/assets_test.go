package dashboard_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/observe/dashboard"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/api"
	"github.com/skulk/skulk/internal/serving/request"
)

// maxGzipBytes is the budget of the page's gzipped assets.
const maxGzipBytes = 300 << 10

// TestBundleSize: the built page, every asset gzipped, stays under 300 KB.
func TestBundleSize(t *testing.T) {
	total := 0
	err := filepath.WalkDir("dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		w.Write(b)
		w.Close()
		total += buf.Len()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gzipped assets: %d bytes", total)
	if total > maxGzipBytes {
		t.Fatalf("the dashboard's assets gzip to %d bytes, over the %d budget", total, maxGzipBytes)
	}
}

// TestPageServed: through the API, the page and its assets are served
// without a key even when the API needs one, with a strict CSP and no
// reference to anything off the node; the event stream needs the key; a
// directory is not listed.
func TestPageServed(t *testing.T) {
	events := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("stream")) })
	h := api.New(api.Config{APIKey: "k-123", Dashboard: dashboard.Assets(), DashboardEvents: events},
		api.Backends{Inference: noBackend{}, Cluster: noBackend{}, Placement: noBackend{}, Tracing: noBackend{}, Diagnostics: noBackend{}}, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path, key string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, page := get("/", "")
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || !strings.Contains(page, `<div id="app">`) || !strings.Contains(csp, "default-src 'none'") ||
		!strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("GET /: %d, CSP %q:\n%s", resp.StatusCode, csp, page)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 2 {
		t.Fatalf("the page names %d assets", len(refs))
	}
	for _, m := range refs {
		if !strings.HasPrefix(m[1], "/") || strings.HasPrefix(m[1], "//") {
			t.Errorf("the page loads %s from off the node", m[1])
			continue
		}
		if r, body := get(m[1], ""); r.StatusCode != 200 || len(body) == 0 {
			t.Errorf("GET %s: %d", m[1], r.StatusCode)
		} else if strings.Contains(body, "https://") && strings.HasSuffix(m[1], ".css") {
			t.Errorf("%s refers to the internet", m[1])
		}
	}
	if r, _ := get("/assets/", ""); r.StatusCode != 404 {
		t.Errorf("GET /assets/: %d, want 404 (no listing)", r.StatusCode)
	}
	if r, _ := get("/v1/dashboard/events", ""); r.StatusCode != 401 {
		t.Errorf("the stream without a key: %d, want 401", r.StatusCode)
	}
	if r, body := get("/v1/dashboard/events", "k-123"); r.StatusCode != 200 || body != "stream" {
		t.Errorf("the stream with the key: %d %q", r.StatusCode, body)
	}
	if r, _ := get("/state", ""); r.StatusCode != 401 {
		t.Errorf("GET /state without a key: %d, want 401 (only the page is public)", r.StatusCode)
	}
}

// noBackend serves no cluster: TestPageServed reaches none of its methods
// (the routes it asks for answer before, or are refused).
type noBackend struct{}

var errNone = errors.New("no cluster in this test")

func (noBackend) Generate(context.Context, request.Request) (<-chan request.Chunk, error) {
	return nil, errNone
}
func (noBackend) Models(context.Context) ([]request.ModelInfo, error) { return nil, errNone }
func (noBackend) Load(context.Context, string, *time.Duration) (bool, error) {
	return false, errNone
}
func (noBackend) State(context.Context) (any, error) { return nil, errNone }
func (noBackend) Place(context.Context, request.PlaceRequest) (request.PlaceResult, error) {
	return request.PlaceResult{}, errNone
}
func (noBackend) Previews(context.Context, ids.ModelID) (any, error) { return nil, errNone }
func (noBackend) DeleteInstances(context.Context, string) ([]ids.InstanceID, error) {
	return nil, errNone
}
func (noBackend) Catalog(context.Context) (any, error)     { return nil, errNone }
func (noBackend) SetTracing(context.Context, bool) error   { return errNone }
func (noBackend) Diagnostics(context.Context) (any, error) { return nil, errNone }
