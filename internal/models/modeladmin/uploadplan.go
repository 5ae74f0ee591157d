package modeladmin

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
)

// The pure parts of uploads: what a request's range means, where a
// request may write given what the node holds, and which partial files are
// stale. upload.go does the I/O.

// Codes of the upload refusals a client branches on (error.code).
const (
	CodeDigestMismatch = "digest_mismatch" // the bytes do not hash to the URL's SHA-256 (400)
	CodeUploadOffset   = "upload_offset"   // the range starts elsewhere than the node's bytes end (409)
	CodeUploadBusy     = "upload_busy"     // another upload of the same file is running (409)
	CodeUploadTooLarge = "upload_too_large"
)

// UploadRange is the part of a file one upload request carries: the bytes
// [Start, End) of a file of Total bytes. Start == End carries none (it asks
// the node to finish the file from what it holds).
type UploadRange struct {
	Start, End, Total int64
}

// ParseContentRange reads an upload request's Content-Range header
// ("bytes START-END/TOTAL", END inclusive, or "bytes */TOTAL" for no bytes)
// against its body's length (-1 when unknown). Without the header the body
// is the whole file from byte 0, and its length must be known.
func ParseContentRange(h string, length int64) (UploadRange, error) {
	h = strings.TrimSpace(h)
	if h == "" {
		if length <= 0 {
			return UploadRange{}, fault.ParamErrorf("Content-Range", "send the file's length: a Content-Length header (the whole file) or Content-Range: bytes START-END/TOTAL")
		}
		return UploadRange{Start: 0, End: length, Total: length}, nil
	}
	bad := func(why string) (UploadRange, error) {
		return UploadRange{}, fault.ParamErrorf("Content-Range", "Content-Range %s: %s; send bytes START-END/TOTAL (END inclusive) or bytes */TOTAL", fault.Quote(h), why)
	}
	spec, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return bad("the unit is not bytes")
	}
	rng, tot, ok := strings.Cut(strings.TrimSpace(spec), "/")
	if !ok {
		return bad("no /TOTAL")
	}
	total, err := parseCount(tot)
	if err != nil || total <= 0 {
		return bad("TOTAL must be a positive number of bytes")
	}
	if rng == "*" {
		if length > 0 {
			return bad("bytes */TOTAL carries no body")
		}
		return UploadRange{Start: total, End: total, Total: total}, nil
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return bad("no START-END")
	}
	start, err1 := parseCount(a)
	last, err2 := parseCount(b)
	switch {
	case err1 != nil || err2 != nil:
		return bad("START and END must be numbers of bytes")
	case start > last:
		return bad("START is after END")
	case last >= total:
		return bad("END is past the end of the file")
	case length >= 0 && length != last-start+1:
		return bad(fmt.Sprintf("the body has %d bytes, the range %d", length, last-start+1))
	}
	return UploadRange{Start: start, End: last + 1, Total: total}, nil
}

// parseCount reads a non-negative decimal number of bytes.
func parseCount(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// planUpload decides where a request of range r writes in a partial file
// of have bytes, and refuses one that cannot go on: a range that starts
// elsewhere than where the bytes end (*UploadOffsetError; a range from 0
// starts the file over), a file over limit bytes (limit 0: none), or more
// bytes than free on the disk.
func planUpload(have int64, r UploadRange, limit int64, free uint64) (at int64, err error) {
	if limit > 0 && r.Total > limit {
		return 0, &fault.Error{Class: fault.ClassTooLarge, Code: CodeUploadTooLarge,
			Message: fmt.Sprintf("the file has %d bytes, more than the %d this node takes by upload; copy it into the node's import directory instead", r.Total, limit)}
	}
	at = have
	if r.Start == 0 && r.End > 0 {
		at = 0 // the file from its start: what is there goes
	}
	if r.Start != at || at > r.Total {
		return 0, &UploadOffsetError{Have: have, Start: r.Start}
	}
	if need := r.Total - at; need > 0 && uint64(need) > free {
		return 0, &fault.Error{Class: fault.ClassNoStorage, Code: "insufficient_storage",
			Message: fmt.Sprintf("the node's models disk has %d bytes free and the upload needs %d more; free disk space there and retry", free, need)}
	}
	return at, nil
}

// UploadOffsetError refuses an upload request whose range does not start
// where the node's bytes of the file end: the client resumes from Have.
type UploadOffsetError struct {
	Have, Start int64
}

func (e *UploadOffsetError) Error() string {
	return fmt.Sprintf("the node holds %d bytes of this file and the range starts at %d; resume from byte %d (GET /models/upload/{sha256} says where), or send the file again from byte 0", e.Have, e.Start, e.Have)
}

func (e *UploadOffsetError) Unwrap() error {
	return &fault.Error{Class: fault.ClassConflict, Code: CodeUploadOffset, Message: e.Error()}
}

// DigestMismatchError refuses a complete upload whose bytes do not hash to
// the SHA-256 its URL names; the node deleted them.
type DigestMismatchError struct {
	Want, Got string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("the uploaded bytes hash to sha256 %s, not %s as the URL says; the node deleted them: check the file and upload it again", e.Got, e.Want)
}

func (e *DigestMismatchError) Unwrap() error {
	return &fault.Error{Class: fault.ClassInvalid, Code: CodeDigestMismatch, Message: e.Error()}
}

// UploadBusyError refuses an upload of a file whose upload is running.
type UploadBusyError struct {
	Digest string
}

func (e *UploadBusyError) Error() string {
	return fmt.Sprintf("an upload of sha256 %s is already running on this node; wait for it to end, then resume", e.Digest)
}

func (e *UploadBusyError) Unwrap() error {
	return &fault.Error{Class: fault.ClassConflict, Code: CodeUploadBusy, Message: e.Error()}
}

// UploadIncompleteError is an upload request whose body ended (or broke)
// before its range did; the node keeps the bytes it received.
type UploadIncompleteError struct {
	Received int64 // the bytes of the file the node holds now
	Err      error
}

func (e *UploadIncompleteError) Error() string {
	return fmt.Sprintf("the upload stopped with %d bytes of the file on the node (%v); resume from there", e.Received, e.Err)
}

func (e *UploadIncompleteError) Unwrap() error { return e.Err }

func (e *UploadIncompleteError) HTTPStatus() int { return http.StatusBadRequest }

// validDigest checks a SHA-256 in lower-case hex.
func validDigest(d string) error {
	if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
		return fault.ParamErrorf("sha256", "the URL must name the file's SHA-256 in 64 lower-case hex digits, got %s", fault.Quote(d))
	}
	return nil
}

// validUploadName checks the name an uploaded file is installed under: one
// path element ending in .gguf.
func validUploadName(name string) error {
	switch {
	case name == "":
		return fault.ParamErrorf("name", "name is required: the file's name, e.g. ?name=model.gguf")
	case len(name) > 255 || strings.ContainsAny(name, "/\\\x00") || name != filepath.Base(name) || strings.HasPrefix(name, "."):
		return fault.ParamErrorf("name", "name must be a plain file name (no directories, not hidden), got %s", fault.Quote(name))
	case !strings.HasSuffix(strings.ToLower(name), ".gguf"):
		return fault.ParamErrorf("name", "name must end in .gguf, got %s", fault.Quote(name))
	}
	return nil
}

// partialFile is one partial upload in the staging directory.
type partialFile struct {
	Name    string // SHA256.part
	ModTime time.Time
}

// stalePartials lists the partial files not written for maxAge, other than
// those of running uploads (busy, by digest), sorted.
func stalePartials(files []partialFile, busy map[string]bool, now time.Time, maxAge time.Duration) []string {
	var out []string
	for _, f := range files {
		digest, ok := strings.CutSuffix(f.Name, partSuffix)
		if !ok || busy[digest] || now.Sub(f.ModTime) < maxAge {
			continue
		}
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// partSuffix ends the name of a partial upload's file.
const partSuffix = ".part"
