// Package hub talks to the Hugging Face Hub (or a mirror of it): it resolves
// a repository and revision to an immutable commit, lists its files with
// their checksums, reads a GGUF file's header with Range requests to build a
// card without downloading the weights, and downloads artifacts (Manager):
// resumable, verified, published atomically through catalog.Store.
//
// Every Hub behaviour the package relies on is listed in docs/model-cards.md
// ("What Skulk expects of the Hub"), so a mirror or the test stand-in can be
// compared with the real service.
//
// A Client is safe for concurrent use. The package reads no environment
// variables: internal/platform/config reads HF_TOKEN, HF_ENDPOINT and SKULK_OFFLINE,
// and the node passes them in a Config.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// Defaults.
const (
	DefaultEndpoint = "https://huggingface.co"
	// DefaultMaxHeaderBytes is the most of a GGUF file read to find its
	// header end; real headers (with a 150k-token vocabulary) are under 16 MiB.
	DefaultMaxHeaderBytes = 64 << 20
	// DefaultInitialHeaderBytes is the first Range request's size; it doubles
	// until the header fits.
	DefaultInitialHeaderBytes = 1 << 20
	maxRedirects              = 5
	maxInfoBytes              = 32 << 20 // a repository listing
)

// Config configures a Client.
type Config struct {
	Endpoint           string // HF_ENDPOINT; DefaultEndpoint when empty
	Token              string // HF_TOKEN; sent as a bearer token to Endpoint's host only
	Offline            bool   // SKULK_OFFLINE: never touch the network
	HTTP               *http.Client
	MaxHeaderBytes     int64 // 0: DefaultMaxHeaderBytes
	InitialHeaderBytes int64 // 0: DefaultInitialHeaderBytes
	UserAgent          string
}

// Client is a Hub client.
type Client struct {
	cfg      Config // immutable
	endpoint *url.URL
	http     *http.Client
}

// New validates cfg and returns a client.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	u, err := url.Parse(strings.TrimRight(cfg.Endpoint, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("hub: endpoint %q is not an http(s) URL (HF_ENDPOINT)", cfg.Endpoint)
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.InitialHeaderBytes <= 0 {
		cfg.InitialHeaderBytes = DefaultInitialHeaderBytes
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "skulk"
	}
	base := cfg.HTTP
	if base == nil {
		base = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: 60 * time.Second,
			TLSHandshakeTimeout: 15 * time.Second, IdleConnTimeout: 90 * time.Second, MaxIdleConnsPerHost: 4,
		}}
	}
	hc := *base
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{cfg: cfg, endpoint: u, http: &hc}, nil
}

// Offline reports whether the client refuses network access.
func (c *Client) Offline() bool { return c.cfg.Offline }

var (
	repoPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// RepoFile is one file of a repository at a commit.
type RepoFile struct {
	Path   string // repository-relative
	Size   int64
	SHA256 string // the LFS object's SHA-256; "" for a file kept in git
	BlobID string // the git blob id (SHA-1 of "blob SIZE\0" + content)
}

// RepoInfo is a repository at one commit.
type RepoInfo struct {
	Repo   string
	Commit string // full 40-character commit hash
	Gated  bool
	Files  []RepoFile
}

// File returns the named file.
func (r RepoInfo) File(path string) (RepoFile, bool) {
	for _, f := range r.Files {
		if f.Path == path {
			return f, true
		}
	}
	return RepoFile{}, false
}

// wire shapes of GET /api/models/{repo}/revision/{rev}?blobs=true; unknown
// fields are ignored because the Hub adds fields freely.
type apiInfo struct {
	ID       string          `json:"id"`
	SHA      string          `json:"sha"`
	Gated    json.RawMessage `json:"gated"` // false, "auto" or "manual"
	Siblings []struct {
		RFilename string `json:"rfilename"`
		Size      *int64 `json:"size"`
		BlobID    string `json:"blobId"`
		LFS       *struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"lfs"`
	} `json:"siblings"`
}

// Repo resolves repo at rev ("" = main) to a commit and lists its files.
func (c *Client) Repo(ctx context.Context, repo, rev string) (RepoInfo, error) {
	if c.cfg.Offline {
		return RepoInfo{}, &OfflineError{Op: "resolving " + repo}
	}
	if !repoPattern.MatchString(repo) || strings.Contains(repo, "..") {
		return RepoInfo{}, fmt.Errorf("hub: %q is not a repository name (owner/name)", repo)
	}
	if rev == "" {
		rev = "main"
	}
	// A branch like refs/pr/1 is one path element.
	u := c.endpoint.String() + "/api/models/" + repo + "/revision/" + url.PathEscape(rev) + "?blobs=true"
	resp, _, err := c.get(ctx, u, -1, -1)
	if err != nil {
		return RepoInfo{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return RepoInfo{}, c.statusError("repository info", repo, u, resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxInfoBytes+1))
	if err != nil {
		return RepoInfo{}, fmt.Errorf("hub: repository info %s: %w", repo, err)
	}
	if len(b) > maxInfoBytes {
		return RepoInfo{}, fmt.Errorf("hub: repository info %s is larger than %d bytes", repo, maxInfoBytes)
	}
	var ai apiInfo
	if err := json.Unmarshal(b, &ai); err != nil {
		return RepoInfo{}, fmt.Errorf("hub: repository info %s: %w", repo, err)
	}
	if !commitPattern.MatchString(ai.SHA) {
		return RepoInfo{}, fmt.Errorf("hub: repository info %s@%s has no full commit hash (sha %q)", repo, rev, ai.SHA)
	}
	if commitPattern.MatchString(rev) && ai.SHA != rev {
		return RepoInfo{}, fmt.Errorf("hub: asked for commit %s of %s, the Hub answered for %s", rev, repo, ai.SHA)
	}
	info := RepoInfo{Repo: repo, Commit: ai.SHA, Gated: len(ai.Gated) > 0 && string(ai.Gated) != "false" && string(ai.Gated) != "null"}
	for _, s := range ai.Siblings {
		f := RepoFile{Path: s.RFilename, BlobID: s.BlobID}
		if s.Size != nil {
			f.Size = *s.Size
		}
		if s.LFS != nil {
			f.SHA256, f.Size = strings.ToLower(s.LFS.SHA256), s.LFS.Size
		}
		info.Files = append(info.Files, f)
	}
	return info, nil
}

// hubHeaders are the Hub's own response headers on a resolve request: on
// the redirect to the CDN when there is one, else on the final response.
type hubHeaders struct {
	commit     string // X-Repo-Commit
	linkedETag string // X-Linked-Etag (LFS: the SHA-256), else ETag
}

// fileURL is the resolve URL of a file at a commit.
func (c *Client) fileURL(repo, commit, path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.endpoint.String() + "/" + repo + "/resolve/" + commit + "/" + strings.Join(segs, "/")
}

// openFile GETs a file from byte offset from (and up to to, inclusive, when
// to >= 0), following the Hub's redirect.
func (c *Client) openFile(ctx context.Context, repo, commit, path string, from, to int64) (*http.Response, hubHeaders, error) {
	if c.cfg.Offline {
		return nil, hubHeaders{}, &OfflineError{Op: "reading " + repo + "/" + path}
	}
	return c.get(ctx, c.fileURL(repo, commit, path), from, to)
}

// get performs a GET with an optional byte range, following up to
// maxRedirects redirects itself so that the Hub's headers on the redirect
// are kept and the token goes to the Hub's host only.
func (c *Client) get(ctx context.Context, rawURL string, from, to int64) (*http.Response, hubHeaders, error) {
	var hh hubHeaders
	first := true
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
		if err != nil {
			return nil, hh, fmt.Errorf("hub: %w", err)
		}
		req.Header.Set("User-Agent", c.cfg.UserAgent)
		if c.cfg.Token != "" && req.URL.Host == c.endpoint.Host && req.URL.Scheme == c.endpoint.Scheme {
			req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
		}
		switch {
		case from >= 0 && to >= 0:
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", from, to))
		case from > 0:
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", from))
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, hh, fmt.Errorf("hub: GET %s: %w", redact(rawURL), err)
		}
		if first {
			hh.commit = resp.Header.Get("X-Repo-Commit")
			hh.linkedETag = cleanETag(resp.Header.Get("X-Linked-Etag"))
			if hh.linkedETag == "" && resp.StatusCode/100 == 2 {
				hh.linkedETag = cleanETag(resp.Header.Get("ETag"))
			}
			first = false
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return resp, hh, nil
		}
		loc, err := resp.Location()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err != nil {
			return nil, hh, fmt.Errorf("hub: redirect from %s without a usable Location: %w", redact(rawURL), err)
		}
		if hop >= maxRedirects {
			return nil, hh, fmt.Errorf("hub: more than %d redirects from %s", maxRedirects, redact(rawURL))
		}
		if loc.Scheme != "https" && loc.Scheme != "http" {
			return nil, hh, fmt.Errorf("hub: redirect to a %q URL refused", loc.Scheme)
		}
		rawURL = loc.String()
	}
}

// redact drops a URL's query (CDN URLs carry signatures).
func redact(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		return raw[:i] + "?…"
	}
	return raw
}

// cleanETag strips quotes and a weak prefix, and lowercases.
func cleanETag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	return strings.ToLower(strings.Trim(s, `"`))
}

func (c *Client) statusError(op, repo, rawURL string, resp *http.Response) error {
	detail := resp.Header.Get("X-Error-Message")
	if len(detail) > 200 {
		detail = detail[:200]
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return &StatusError{Op: op, Repo: repo, URL: redact(rawURL), Code: resp.StatusCode, HasToken: c.cfg.Token != "", Detail: detail}
}

// ReadHeader reads only the header of a GGUF file at a commit: Range
// requests starting at InitialHeaderBytes, doubling until gguf.ParseHeader
// succeeds, refusing a header longer than MaxHeaderBytes.
func (c *Client) ReadHeader(ctx context.Context, repo, commit, path string) (*gguf.File, error) {
	if !commitPattern.MatchString(commit) {
		return nil, fmt.Errorf("hub: read header of %s/%s: %q is not a full commit hash; resolve it first", repo, path, commit)
	}
	n := min(c.cfg.InitialHeaderBytes, c.cfg.MaxHeaderBytes)
	for {
		prefix, total, err := c.readPrefix(ctx, repo, commit, path, n)
		if err != nil {
			return nil, err
		}
		f, err := gguf.ParseHeader(prefix)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, gguf.ErrTruncated) {
			return nil, fmt.Errorf("hub: %s/%s: %w", repo, path, err)
		}
		if int64(len(prefix)) < n || (total >= 0 && int64(len(prefix)) >= total) {
			return nil, fmt.Errorf("hub: %s/%s: the whole %d-byte file holds no complete GGUF header: %w", repo, path, len(prefix), err)
		}
		if n >= c.cfg.MaxHeaderBytes {
			return nil, &HeaderTooLargeError{Repo: repo, File: path, Limit: c.cfg.MaxHeaderBytes}
		}
		n = min(2*n, c.cfg.MaxHeaderBytes)
	}
}

// readPrefix returns up to n bytes from the start of a file and the file's
// total size from Content-Range (-1 when unknown).
func (c *Client) readPrefix(ctx context.Context, repo, commit, path string, n int64) ([]byte, int64, error) {
	resp, hh, err := c.openFile(ctx, repo, commit, path, 0, n-1)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	total := int64(-1)
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, _, size, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil || start != 0 {
			return nil, 0, fmt.Errorf("hub: %s/%s: bad Content-Range %q for a prefix request", repo, path, resp.Header.Get("Content-Range"))
		}
		total = size
	case http.StatusOK: // the server ignored Range: read only what we asked for
		total = resp.ContentLength
	default:
		return nil, 0, c.statusError("read header", repo, c.fileURL(repo, commit, path), resp)
	}
	if hh.commit != "" && hh.commit != commit {
		return nil, 0, fmt.Errorf("hub: %s/%s: asked for commit %s, served from %s", repo, path, commit, hh.commit)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, n))
	if err != nil {
		return nil, 0, fmt.Errorf("hub: read header of %s/%s: %w", repo, path, err)
	}
	return b, total, nil
}

// parseContentRange parses "bytes START-END/SIZE"; SIZE may be "*" (-1).
func parseContentRange(s string) (start, end, size int64, err error) {
	var sz string
	if _, err := fmt.Sscanf(s, "bytes %d-%d/%s", &start, &end, &sz); err != nil {
		return 0, 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	size = -1
	if sz != "*" {
		if _, err := fmt.Sscanf(sz, "%d", &size); err != nil {
			return 0, 0, 0, fmt.Errorf("bad Content-Range %q", s)
		}
	}
	if start < 0 || end < start || (size >= 0 && end >= size) {
		return 0, 0, 0, fmt.Errorf("bad Content-Range %q", s)
	}
	return start, end, size, nil
}

// SearchResult is one repository found by Search.
type SearchResult struct {
	ID        string   `json:"id"`
	Downloads int64    `json:"downloads"`
	Likes     int64    `json:"likes"`
	Tags      []string `json:"tags"`
}

// maxSearchLimit bounds Search's page.
const maxSearchLimit = 100

// Search lists GGUF repositories matching query (GET /api/models?search=).
func (c *Client) Search(ctx context.Context, query string, limit int) ([]SearchResult, error) {
	if c.cfg.Offline {
		return nil, &OfflineError{Op: "searching the Hub"}
	}
	if limit <= 0 || limit > maxSearchLimit {
		limit = 20
	}
	u := c.endpoint.JoinPath("api", "models")
	q := url.Values{"search": {query}, "filter": {"gguf"}, "limit": {fmt.Sprint(limit)}}
	u.RawQuery = q.Encode()
	resp, _, err := c.get(ctx, u.String(), -1, -1)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError("search", query, u.String(), resp)
	}
	var out []SearchResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxInfoBytes)).Decode(&out); err != nil {
		return nil, fmt.Errorf("hub: search %q: %w", query, err)
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
