// Package hubstandin provides a local HTTP server that stands in for the
// Hugging Face Hub, which tests cannot reach. It implements the endpoints
// Skulk uses as the Hub does (see docs/model-cards.md, "What Skulk expects of
// the Hub"): search, repository info with siblings and the commit sha,
// resolve URLs that redirect LFS files to a CDN-like path with X-Repo-Commit
// and X-Linked-Etag, Range/Content-Range, 401 for gated repositories, 404,
// 416. The files it serves are read from local files, usually real GGUF
// files from testdata. CDN and direct responses can be paced, cut, corrupted
// or held to test downloads.
//
// A Server is safe for concurrent use. Only _test.go files may import this
// package.
package hubstandin

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

// Server is the stand-in Hub. Its URL is the endpoint a client is pointed at
// (HF_ENDPOINT).
type Server struct {
	// Immutable after New.
	t   testing.TB
	srv *httptest.Server

	mu    sync.Mutex             // guards the fields below
	repos map[string]*repository // by owner/name
	log   []Request
	// Fault injection and pacing on file bodies.
	cutAfter  int64         // >0: the next cutTimes responses stop after this many body bytes and drop the connection
	cutTimes  int           //
	corruptAt int64         // >=0: this byte is served flipped
	hold      chan struct{} // non-nil: responses send holdAfter bytes, then wait for hold to close
	holdAfter int64
	arrived   chan string // non-nil: each file request's Range header is sent here
	pace      int         // >0: bodies are written pace bytes every 20 ms
}

type repository struct {
	commit string
	gated  string // the token it requires; "" = public
	files  map[string]repoFile
	order  []string
}

type repoFile struct {
	data []byte
	lfs  bool
}

// File is a file to publish in a repository.
type File struct {
	Path  string // the path in the repository
	Local string // the local file to serve, read when published
	LFS   bool   // stored in LFS: resolve redirects to the CDN
}

// Request is a request the stand-in answered.
type Request struct {
	Path, Range, Auth string
}

// New starts a stand-in Hub that is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{t: t, repos: map[string]*repository{}, corruptAt: -1}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the stand-in's base URL.
func (s *Server) URL() string { return s.srv.URL }

// AddRepo publishes a repository and returns its commit. A non-empty token
// gates it: requests without "Bearer "+token get 401.
func (s *Server) AddRepo(name, token string, files ...File) string {
	sum := sha1.Sum([]byte(name))
	r := &repository{commit: hex.EncodeToString(sum[:]), gated: token, files: map[string]repoFile{}}
	for _, f := range files {
		b, err := os.ReadFile(f.Local)
		if err != nil {
			s.t.Fatal(err)
		}
		r.files[f.Path] = repoFile{data: b, lfs: f.LFS}
		r.order = append(r.order, f.Path)
	}
	s.mu.Lock()
	s.repos[name] = r
	s.mu.Unlock()
	return r.commit
}

// Requests returns the requests answered so far whose path starts with
// prefix, in order.
func (s *Server) Requests(prefix string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.log {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// CutAfter makes the next times file responses stop after n body bytes and
// drop the connection.
func (s *Server) CutAfter(n int64, times int) {
	s.mu.Lock()
	s.cutAfter, s.cutTimes = n, times
	s.mu.Unlock()
}

// CorruptAt makes file responses serve byte off of the file flipped; -1
// turns corruption off.
func (s *Server) CorruptAt(off int64) {
	s.mu.Lock()
	s.corruptAt = off
	s.mu.Unlock()
}

// Hold makes file responses send after bytes and then wait for hold to
// close; each file request's Range header is sent to arrived first. A nil
// hold and arrived turn this off.
func (s *Server) Hold(hold chan struct{}, after int64, arrived chan string) {
	s.mu.Lock()
	s.hold, s.holdAfter, s.arrived = hold, after, arrived
	s.mu.Unlock()
}

// SetPace makes file bodies arrive n bytes every 20 ms, so a download lasts
// long enough to be watched; 0 sends them at once.
func (s *Server) SetPace(n int) {
	s.mu.Lock()
	s.pace = n
	s.mu.Unlock()
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func gitBlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.log = append(s.log, Request{Path: r.URL.Path, Range: r.Header.Get("Range"), Auth: r.Header.Get("Authorization")})
	s.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/api/models":
		w.Header().Set("Content-Type", "application/json")
		var out []map[string]any
		s.mu.Lock()
		for name := range s.repos {
			if strings.Contains(strings.ToLower(name), strings.ToLower(r.URL.Query().Get("search"))) {
				out = append(out, map[string]any{"_id": "x", "id": name, "modelId": name, "downloads": 7, "likes": 1, "tags": []string{"gguf"}, "private": false})
			}
		}
		s.mu.Unlock()
		json.NewEncoder(w).Encode(out)
	case strings.HasPrefix(p, "/api/models/"):
		s.serveInfo(w, r, strings.TrimPrefix(p, "/api/models/"))
	case strings.HasPrefix(p, "/cdn/"):
		s.serveCDN(w, r, strings.TrimPrefix(p, "/cdn/"))
	default:
		s.serveResolve(w, r, strings.TrimPrefix(p, "/"))
	}
}

// repo finds a repository and applies the gate: 401 (as the Hub answers for
// gated and private repositories) or 404.
func (s *Server) repo(w http.ResponseWriter, r *http.Request, name string) *repository {
	s.mu.Lock()
	repo := s.repos[name]
	s.mu.Unlock()
	if repo == nil {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return nil
	}
	if repo.gated != "" && r.Header.Get("Authorization") != "Bearer "+repo.gated {
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+name+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
		http.Error(w, `{"error":"gated"}`, http.StatusUnauthorized)
		return nil
	}
	return repo
}

func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 4) // owner, name, "revision", rev
	if len(parts) != 4 || parts[2] != "revision" {
		http.NotFound(w, r)
		return
	}
	repo := s.repo(w, r, parts[0]+"/"+parts[1])
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
		e := map[string]any{"rfilename": name, "size": len(f.data), "blobId": gitBlobID(f.data)}
		if f.lfs {
			e["lfs"] = map[string]any{"sha256": sha256Hex(f.data), "size": len(f.data), "pointerSize": 134}
			e["blobId"] = gitBlobID([]byte("version https://git-lfs.github.com/spec/v1\n"))
		}
		sib = append(sib, e)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"_id": "x", "id": parts[0] + "/" + parts[1], "sha": repo.commit, "private": false, "gated": repo.gated != "", "siblings": sib, "tags": []string{"gguf"}})
}

func (s *Server) serveResolve(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 5) // owner, name, "resolve", rev, path
	if len(parts) != 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repo := s.repo(w, r, parts[0]+"/"+parts[1])
	if repo == nil {
		return
	}
	f, ok := repo.files[parts[4]]
	if !ok || (parts[3] != "main" && parts[3] != repo.commit) {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", repo.commit)
	if f.lfs {
		sum := sha256Hex(f.data)
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.data)))
		w.Header().Set("Location", "/cdn/"+sum+"?X-Amz-Signature=standin")
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitBlobID(f.data)+`"`)
	s.serveBytes(w, r, f.data)
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request, sum string) {
	s.mu.Lock()
	var data []byte
	for _, repo := range s.repos {
		for _, f := range repo.files {
			if f.lfs && sha256Hex(f.data) == sum {
				data = f.data
			}
		}
	}
	s.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", `"`+sum+`"`)
	s.serveBytes(w, r, data)
}

// serveBytes answers a GET with an optional single "bytes=A-" or "bytes=A-B"
// range as a CDN does, applying the configured faults and pace.
func (s *Server) serveBytes(w http.ResponseWriter, r *http.Request, data []byte) {
	size := int64(len(data))
	start, end := int64(0), size-1
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" {
		spec, ok := strings.CutPrefix(rg, "bytes=")
		a, b, _ := strings.Cut(spec, "-")
		var err error
		if start, err = strconv.ParseInt(a, 10, 64); !ok || err != nil {
			http.Error(w, "bad range", http.StatusBadRequest)
			return
		}
		if b != "" {
			if end, err = strconv.ParseInt(b, 10, 64); err != nil {
				http.Error(w, "bad range", http.StatusBadRequest)
				return
			}
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
	body := append([]byte(nil), data[start:end+1]...)
	s.mu.Lock()
	if s.corruptAt >= start && s.corruptAt <= end {
		body[s.corruptAt-start] ^= 0x01
	}
	cut := int64(-1)
	if s.cutTimes > 0 && s.cutAfter < int64(len(body)) {
		s.cutTimes--
		cut = s.cutAfter
	}
	hold, holdAfter, arrived, pace := s.hold, s.holdAfter, s.arrived, s.pace
	s.mu.Unlock()
	if arrived != nil {
		arrived <- r.Header.Get("Range")
	}
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	switch {
	case cut >= 0:
		w.Write(body[:cut])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the connection drops mid-file
		}
		return
	case hold != nil && holdAfter < int64(len(body)):
		w.Write(body[:holdAfter])
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
		body = body[holdAfter:]
	}
	writePaced(w, r, body, pace)
}

// writePaced writes body pace bytes every 20 ms, or at once when pace is 0,
// and gives up when the client goes away.
func writePaced(w http.ResponseWriter, r *http.Request, body []byte, pace int) {
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
