package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/skulk/skulk/internal/models/modeladmin"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/access"
)

// modelBackend is the deterministic testBackend plus ModelAdmin: each method
// records its call as text and answers it; a model id or ref that starts
// with "status-NNN" fails with that HTTP status.
type modelBackend struct {
	*testBackend
	mu    sync.Mutex
	calls []string
}

func (b *modelBackend) record(call string, key string) (any, error) {
	b.mu.Lock()
	b.calls = append(b.calls, call)
	b.mu.Unlock()
	var status int
	if _, err := fmt.Sscanf(key, "status-%d", &status); err == nil {
		return nil, &codeError{status}
	}
	return map[string]string{"call": call}, nil
}

func (b *modelBackend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

func (b *modelBackend) last() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) == 0 {
		return ""
	}
	return b.calls[len(b.calls)-1]
}

// codeError is an error that chooses its HTTP status.
type codeError struct{ status int }

func (e *codeError) Error() string   { return fmt.Sprintf("refused with %d: do this instead", e.status) }
func (e *codeError) HTTPStatus() int { return e.status }

func (b *modelBackend) AddModel(ctx context.Context, req modeladmin.AddModelRequest) (any, error) {
	return b.record(fmt.Sprintf("add %s id=%s", req.Ref, req.ID), strings.TrimPrefix(req.Ref, "hf:"))
}
func (b *modelBackend) ImportModel(ctx context.Context, req modeladmin.ImportModelRequest) (any, error) {
	return b.record(fmt.Sprintf("import %s id=%s loopback=%v", req.Path, req.ID, req.FromLoopback), req.ID)
}
func (b *modelBackend) PullModel(ctx context.Context, id ids.ModelID) (any, error) {
	return b.record("pull "+string(id), string(id))
}
func (b *modelBackend) ShowModel(ctx context.Context, id ids.ModelID) (any, error) {
	return b.record("show "+string(id), string(id))
}
func (b *modelBackend) RemoveModel(ctx context.Context, id ids.ModelID, files bool) (any, error) {
	return b.record(fmt.Sprintf("rm %s files=%v", id, files), string(id))
}
func (b *modelBackend) ModelRequirements(ctx context.Context, id ids.ModelID, contextTokens int) (any, error) {
	return b.record(fmt.Sprintf("requirements %s context=%d", id, contextTokens), string(id))
}
func (b *modelBackend) Library(ctx context.Context) (any, error) {
	return b.record("library", "")
}
func (b *modelBackend) SearchModels(ctx context.Context, query string, limit int) (any, error) {
	return b.record(fmt.Sprintf("search %s limit=%d", query, limit), query)
}
func (b *modelBackend) UploadStatus(ctx context.Context, digest string) (any, error) {
	return b.record("upload-status "+digest, digest)
}
func (b *modelBackend) UploadModel(ctx context.Context, req modeladmin.UploadRequest, body io.Reader) (any, error) {
	n, err := io.Copy(io.Discard, body)
	if err != nil {
		return nil, err
	}
	return b.record(fmt.Sprintf("upload %s name=%s id=%s range=%d-%d/%d body=%d", req.Digest[:4], req.Name, req.ID, req.Range.Start, req.Range.End, req.Range.Total, n), req.ID)
}

func send(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestModelRoutes(t *testing.T) {
	digest := strings.Repeat("0123456789abcdef", 4)
	b := &modelBackend{testBackend: newTestBackend(t)}
	srv := httptest.NewServer(New(Config{}, every(b), slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	tests := []struct {
		name, method, path, body string
		status                   int
		call                     string // the backend call, when it is reached
		msg                      string // in the answer, when refused
	}{
		{"add", "POST", "/models/add", `{"ref":"hf:o/r","id":"m"}`, 200, "add hf:o/r id=m", ""},
		{"add_no_id", "POST", "/models/add", `{"ref":"hf:o/r/f.gguf@v1"}`, 200, "add hf:o/r/f.gguf@v1 id=", ""},
		{"add_empty_body", "POST", "/models/add", ``, 400, "", "send a JSON object with ref, id"},
		{"add_no_ref", "POST", "/models/add", `{"id":"m"}`, 400, "", "ref is required"},
		{"add_unknown_field", "POST", "/models/add", `{"ref":"hf:o/r","revision":"x"}`, 400, "", `unknown field \"revision\"; known fields are ref, id`},
		{"add_bad_id", "POST", "/models/add", `{"ref":"hf:o/r","id":"Bad Id"}`, 400, "", "id:"},
		{"add_two_values", "POST", "/models/add", `{"ref":"hf:o/r"}{}`, 400, "", "more than one JSON value"},
		{"add_gated", "POST", "/models/add", `{"ref":"hf:status-403"}`, 403, "add hf:status-403 id=", "refused with 403: do this instead"},
		{"add_exists", "POST", "/models/add", `{"ref":"hf:status-409"}`, 409, "add hf:status-409 id=", "refused with 409"},
		{"import", "POST", "/models/import", `{"path":"/m/x.gguf","id":"x"}`, 200, "import /m/x.gguf id=x loopback=true", ""},
		{"import_relative", "POST", "/models/import", `{"path":"x.gguf"}`, 400, "", "absolute path"},
		{"import_relative_long", "POST", "/models/import", `{"path":"` + strings.Repeat("a", 5000) + `"}`, 400, "", `aaaa\"…(5000 bytes)`},
		{"import_claims_loopback", "POST", "/models/import", `{"path":"/m/x.gguf","FromLoopback":true}`, 400, "", `unknown field \"FromLoopback\"`},
		{"pull", "POST", "/models/pull", `{"model_id":"m"}`, 200, "pull m", ""},
		{"pull_no_id", "POST", "/models/pull", `{}`, 400, "", "model_id is required"},
		{"show_with_slash", "GET", "/models/org/m:q4", ``, 200, "show org/m:q4", ""},
		{"show_unknown", "GET", "/models/status-404", ``, 404, "show status-404", "refused with 404"},
		{"rm", "DELETE", "/models/m", ``, 200, "rm m files=false", ""},
		{"rm_files", "DELETE", "/models/org/m?files=true", ``, 200, "rm org/m files=true", ""},
		{"rm_bad_files", "DELETE", "/models/m?files=maybe", ``, 400, "", "files must be true or false"},
		{"rm_in_use", "DELETE", "/models/status-409", ``, 409, "rm status-409 files=false", "refused with 409"},
		{"requirements", "GET", "/models/requirements?model_id=m&context=4096", ``, 200, "requirements m context=4096", ""},
		{"requirements_default", "GET", "/models/requirements?model_id=m", ``, 200, "requirements m context=0", ""},
		{"requirements_no_model", "GET", "/models/requirements", ``, 400, "", "model_id is required"},
		{"requirements_bad_context", "GET", "/models/requirements?model_id=m&context=-1", ``, 400, "", "context must be"},
		{"search", "GET", "/models/search?q=qwen&limit=5", ``, 200, "search qwen limit=5", ""},
		{"search_no_query", "GET", "/models/search", ``, 400, "", "q must be"},
		{"search_bad_limit", "GET", "/models/search?q=x&limit=0", ``, 400, "", "limit must be"},
		{"library", "GET", "/models/library", ``, 200, "library", ""},
		{"search_offline", "GET", "/models/search?q=status-503", ``, 503, "search status-503 limit=0", "refused with 503"},
		{"upload", "PUT", "/models/upload/" + digest + "?name=m.gguf&id=m", `0123456789`, 200, "upload 0123 name=m.gguf id=m range=0-10/10 body=10", ""},
		{"upload_bad_id", "PUT", "/models/upload/" + digest + "?name=m.gguf&id=Bad%20Id", `0123456789`, 400, "", "id:"},
		{"upload_refused", "PUT", "/models/upload/" + digest + "?name=m.gguf&id=status-409", `x`, 409, "upload 0123 name=m.gguf id=status-409 range=0-1/1 body=1", "refused with 409"},
		{"upload_status", "GET", "/models/upload/" + digest, ``, 200, "upload-status " + digest, ""},
		{"upload_status_is_a_model", "GET", "/models/upload/m", ``, 200, "show upload/m", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := b.count()
			status, body := send(t, srv, tt.method, tt.path, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, body)
			}
			switch {
			case tt.call == "" && b.count() != before:
				t.Fatalf("the backend was called (%s) for a refused request", b.last())
			case tt.call != "" && b.last() != tt.call:
				t.Fatalf("backend call %q, want %q", b.last(), tt.call)
			}
			if tt.msg != "" && !strings.Contains(body, tt.msg) {
				t.Fatalf("answer %s does not say %q", body, tt.msg)
			}
		})
	}
}

// TestModelRoutesWithoutModelAdmin: a Backend that does not manage models
// answers the routes with 404 and says so; GET /models stays the catalog.
func TestModelRoutesWithoutModelAdmin(t *testing.T) {
	srv := httptest.NewServer(New(Config{}, every(newTestBackend(t)), slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	if status, body := send(t, srv, "POST", "/models/add", `{"ref":"hf:o/r"}`); status != 404 || !strings.Contains(body, "does not manage a model catalog") {
		t.Fatalf("add: %d %s", status, body)
	}
	if status, _ := send(t, srv, "GET", "/models", ``); status != 200 {
		t.Fatalf("GET /models: %d", status)
	}
}

// TestModelRoutesNeedTheKey: the routes are behind the API key like every
// other route.
func TestModelRoutesNeedTheKey(t *testing.T) {
	b := &modelBackend{testBackend: newTestBackend(t)}
	srv := httptest.NewServer(New(Config{APIKey: "k"}, every(b), slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	for _, r := range [][2]string{{"POST", "/models/add"}, {"DELETE", "/models/m"}, {"POST", "/models/import"}, {"GET", "/models/search?q=x"}, {"PUT", "/models/upload/" + strings.Repeat("ab", 32) + "?name=m.gguf"}} {
		if status, _ := send(t, srv, r[0], r[1], `{"ref":"hf:o/r","path":"/x"}`); status != 401 {
			t.Errorf("%s %s without the key: %d", r[0], r[1], status)
		}
	}
	if n := b.count(); n != 0 {
		t.Fatalf("the backend was called %d times without the key", n)
	}
}

// TestImportFromLoopback: the handler tells the backend whether the
// connection came from loopback, from the remote address alone.
func TestImportFromLoopback(t *testing.T) {
	b := &modelBackend{testBackend: newTestBackend(t)}
	// An opened API, so that the other addresses reach the handler.
	open := func() access.Policy { return access.Policy{Open: true} }
	h := New(Config{Access: open}, every(b), slog.New(slog.DiscardHandler))
	for _, c := range []struct {
		remote   string
		loopback bool
	}{
		{"127.0.0.1:40000", true},
		{"127.8.9.10:1", true},
		{"[::1]:40000", true},
		{"[::ffff:127.0.0.1]:40000", true},
		{"192.0.2.7:40000", false},
		{"[2001:db8::1]:40000", false},
		{"[::ffff:192.0.2.7]:40000", false},
		{"localhost:40000", false},
		{"", false},
	} {
		t.Run(c.remote, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/models/import", strings.NewReader(`{"path":"/m/x.gguf"}`))
			req.RemoteAddr = c.remote
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if want := fmt.Sprintf("import /m/x.gguf id= loopback=%v", c.loopback); w.Code != 200 || b.last() != want {
				t.Fatalf("%d %s: backend call %q, want %q", w.Code, w.Body, b.last(), want)
			}
		})
	}
}
