package node_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hubStandIn is a local HTTP server that stands in for the Hugging Face Hub,
// which these tests cannot reach; nodes find it through HF_ENDPOINT. It
// serves what docs/model-cards.md ("What Skulk expects of the Hub") lists:
// repository info with siblings and the commit, resolve URLs that redirect
// LFS files to a CDN path with X-Repo-Commit and X-Linked-Etag, single
// Range requests, 404 for a missing repository, search. The files are real
// GGUF files from testdata. CDN bodies are paced (pace bytes every 20 ms)
// so a download lasts long enough to be watched.
type hubStandIn struct {
	t   *testing.T
	srv *httptest.Server

	mu    sync.Mutex // guards the fields below
	repos map[string]*standInRepo
	log   []string // request paths with their Range
	pace  int
}

type standInRepo struct {
	commit string
	files  map[string]standInFile
	order  []string
}

type standInFile struct {
	data []byte
	lfs  bool
}

func newHubStandIn(t *testing.T) *hubStandIn {
	h := &hubStandIn{t: t, repos: map[string]*standInRepo{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

// addRepo publishes a repository of files: repository path -> local file,
// every .gguf in LFS. It returns the commit.
func (h *hubStandIn) addRepo(name string, files map[string]string) string {
	sum := sha1.Sum([]byte(name))
	r := &standInRepo{commit: hex.EncodeToString(sum[:]), files: map[string]standInFile{}}
	for p, local := range files {
		b, err := os.ReadFile(local)
		if err != nil {
			h.t.Fatal(err)
		}
		r.files[p] = standInFile{data: b, lfs: strings.HasSuffix(p, ".gguf")}
		r.order = append(r.order, p)
	}
	h.mu.Lock()
	h.repos[name] = r
	h.mu.Unlock()
	return r.commit
}

// requests returns how many requests the stand-in has answered.
func (h *hubStandIn) requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.log)
}

func (h *hubStandIn) setPace(n int) {
	h.mu.Lock()
	h.pace = n
	h.mu.Unlock()
}

func hexSHA256(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func gitBlob(b []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(b))
	s.Write(b)
	return hex.EncodeToString(s.Sum(nil))
}

func (h *hubStandIn) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.log = append(h.log, r.URL.Path+" "+r.Header.Get("Range"))
	h.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/api/models":
		var out []map[string]any
		h.mu.Lock()
		for name := range h.repos {
			if strings.Contains(strings.ToLower(name), strings.ToLower(r.URL.Query().Get("search"))) {
				out = append(out, map[string]any{"id": name, "downloads": 7, "likes": 1, "tags": []string{"gguf"}})
			}
		}
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	case strings.HasPrefix(p, "/api/models/"):
		h.serveInfo(w, r, strings.TrimPrefix(p, "/api/models/"))
	case strings.HasPrefix(p, "/cdn/"):
		h.serveCDN(w, r, strings.TrimPrefix(p, "/cdn/"))
	default:
		h.serveResolve(w, r, strings.TrimPrefix(p, "/"))
	}
}

func (h *hubStandIn) repo(w http.ResponseWriter, name string) *standInRepo {
	h.mu.Lock()
	defer h.mu.Unlock()
	repo := h.repos[name]
	if repo == nil {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
	}
	return repo
}

func (h *hubStandIn) serveInfo(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 4) // owner, name, "revision", rev
	if len(parts) != 4 || parts[2] != "revision" {
		http.NotFound(w, r)
		return
	}
	repo := h.repo(w, parts[0]+"/"+parts[1])
	if repo == nil {
		return
	}
	if rev := parts[3]; rev != "main" && rev != repo.commit {
		http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
		return
	}
	var sib []map[string]any
	for _, name := range repo.order {
		f := repo.files[name]
		e := map[string]any{"rfilename": name, "size": len(f.data), "blobId": gitBlob(f.data)}
		if f.lfs {
			e["lfs"] = map[string]any{"sha256": hexSHA256(f.data), "size": len(f.data), "pointerSize": 134}
		}
		sib = append(sib, e)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": parts[0] + "/" + parts[1], "sha": repo.commit, "siblings": sib})
}

func (h *hubStandIn) serveResolve(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 5) // owner, name, "resolve", rev, path
	if len(parts) != 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repo := h.repo(w, parts[0]+"/"+parts[1])
	if repo == nil {
		return
	}
	f, ok := repo.files[parts[4]]
	if !ok || (parts[3] != "main" && parts[3] != repo.commit) {
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", repo.commit)
	if f.lfs {
		sum := hexSHA256(f.data)
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("Location", "/cdn/"+sum+"?X-Amz-Signature=standin")
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitBlob(f.data)+`"`)
	h.serveBytes(w, r, f.data)
}

func (h *hubStandIn) serveCDN(w http.ResponseWriter, r *http.Request, sum string) {
	var data []byte
	h.mu.Lock()
	for _, repo := range h.repos {
		for _, f := range repo.files {
			if f.lfs && hexSHA256(f.data) == sum {
				data = f.data
			}
		}
	}
	h.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", `"`+sum+`"`)
	h.serveBytes(w, r, data)
}

// serveBytes answers an optional single "bytes=A-" or "bytes=A-B" range.
func (h *hubStandIn) serveBytes(w http.ResponseWriter, r *http.Request, data []byte) {
	size := int64(len(data))
	start, end := int64(0), size-1
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" {
		spec, _ := strings.CutPrefix(rg, "bytes=")
		a, b, _ := strings.Cut(spec, "-")
		start, _ = strconv.ParseInt(a, 10, 64)
		if b != "" {
			end, _ = strconv.ParseInt(b, 10, 64)
			end = min(end, size-1)
		}
		if start >= size || end < start {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, size))
		status = http.StatusPartialContent
	}
	body := data[start : end+1]
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	h.mu.Lock()
	pace := h.pace
	h.mu.Unlock()
	for len(body) > 0 {
		n := len(body)
		if pace > 0 {
			n = min(n, pace)
		}
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		body = body[n:]
		if pace > 0 && len(body) > 0 {
			w.(http.Flusher).Flush()
			select {
			case <-time.After(20 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}
}
