package modeladmin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/models/hub"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/vfs"
)

// DefaultUploadStaleAfter is how long a partial upload that nobody writes
// stays before the next upload removes it, when Config.UploadStaleAfter is 0.
const DefaultUploadStaleAfter = 24 * time.Hour

// UploadRequest is one PUT /models/upload/{sha256}: a range of a GGUF
// file's bytes, sent by a client that has the file where the node cannot
// read it.
type UploadRequest struct {
	Digest string // the whole file's SHA-256, 64 lower-case hex digits
	Name   string // the file's name, as the model's card lists it
	ID     string // the model id; "" derives one from Name
	Range  UploadRange
}

// uploadDir is where partial uploads collect: in the models directory, so
// a completed one is installed by a link, not a copy.
func (m *Service) uploadDir() string {
	return filepath.Join(m.cfg.Store.Config().ModelsDir, ".skulk", "upload")
}

// UploadStatus reports how many bytes of the file with this SHA-256 the
// node holds, so a client resumes from there.
func (m *Service) UploadStatus(ctx context.Context, digest string) (any, error) {
	if err := validDigest(digest); err != nil {
		return nil, err
	}
	var have int64
	fi, err := os.Stat(filepath.Join(m.uploadDir(), digest+partSuffix))
	switch {
	case err == nil:
		have = fi.Size()
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("upload %s: %w", digest, err)
	}
	m.upMu.Lock()
	busy := m.uploading[digest]
	m.upMu.Unlock()
	return map[string]any{"sha256": digest, "received_bytes": have, "uploading": busy}, nil
}

// UploadModel writes one range of a file into its partial upload, hashing as it
// writes, and once the partial holds the whole file checks its SHA-256 (a
// mismatch deletes it: *DigestMismatchError) and imports it as
// POST /models/import would a file under the import directories. A body
// that ends early keeps what arrived (*UploadIncompleteError); the client
// resumes from there. One upload of a file runs at a time
// (*UploadBusyError).
func (m *Service) UploadModel(ctx context.Context, req UploadRequest, body io.Reader) (any, error) {
	if err := validDigest(req.Digest); err != nil {
		return nil, err
	}
	if err := validUploadName(req.Name); err != nil {
		return nil, err
	}
	id := req.ID
	if id == "" {
		id = hub.DefaultID(req.Name)
	}
	release, err := m.claimUpload(req.Digest)
	if err != nil {
		return nil, err
	}
	defer release()
	dir := m.uploadDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, vfs.NoSpace(err, dir, "an upload")
	}
	m.sweepUploads(dir)
	part := filepath.Join(dir, req.Digest+partSuffix)
	received, h, err := m.receive(ctx, part, req.Range, body)
	if err != nil {
		return nil, err
	}
	if received < req.Range.Total {
		return map[string]any{"sha256": req.Digest, "received_bytes": received, "total_bytes": req.Range.Total, "complete": false}, nil
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != req.Digest {
		os.Remove(part)
		return nil, &DigestMismatchError{Want: req.Digest, Got: got}
	}
	return m.installUpload(ctx, id, part, req)
}

// receive appends the range's body to the partial file part and returns
// how many bytes of the file it holds, with their hash.
func (m *Service) receive(ctx context.Context, part string, r UploadRange, body io.Reader) (int64, hash.Hash, error) {
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, nil, vfs.NoSpace(err, part, "an upload")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	free, err := vfs.OS{}.FreeBytes(filepath.Dir(part))
	if err != nil {
		return 0, nil, fmt.Errorf("upload: the free space of %s: %w", filepath.Dir(part), err)
	}
	at, err := planUpload(fi.Size(), r, m.cfg.MaxUploadBytes, free)
	if err != nil {
		if fi.Size() == 0 {
			os.Remove(part) // created for this request alone
		}
		return 0, nil, err
	}
	if err := f.Truncate(at); err != nil {
		return 0, nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, io.NewSectionReader(f, 0, at)}); err != nil {
		return 0, nil, fmt.Errorf("upload: rehash the %d bytes held: %w", at, err)
	}
	if _, err := f.Seek(at, io.SeekStart); err != nil {
		return 0, nil, err
	}
	want := r.End - at
	n, cerr := io.CopyBuffer(io.MultiWriter(f, h), ctxReader{ctx, io.LimitReader(body, want)}, make([]byte, 1<<20))
	serr := f.Sync()
	received := at + n
	switch {
	case cerr != nil && vfs.IsNoSpace(cerr):
		return received, nil, vfs.NoSpace(cerr, part, fmt.Sprintf("an upload (%d bytes)", r.Total))
	case cerr != nil:
		return received, nil, &UploadIncompleteError{Received: received, Err: cerr}
	case n < want:
		return received, nil, &UploadIncompleteError{Received: received, Err: io.ErrUnexpectedEOF}
	case serr != nil:
		return received, nil, vfs.NoSpace(serr, part, "an upload")
	}
	return received, h, nil
}

// installUpload imports the complete, verified partial file part: linked
// into a staging directory under its name, checked as a GGUF model (a file
// that is not one is deleted) and published as an import of it is. Any
// other refusal (the id is taken, the cluster did not take the card) keeps
// the file, so the client finishes it under another id without sending it
// again.
func (m *Service) installUpload(ctx context.Context, id, part string, req UploadRequest) (any, error) {
	parent := filepath.Join(m.cfg.Store.Config().ModelsDir, ".skulk", "import")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, vfs.NoSpace(err, parent, "importing model "+id)
	}
	staged, err := os.MkdirTemp(parent, "upload-")
	if err != nil {
		return nil, vfs.NoSpace(err, parent, "importing model "+id)
	}
	defer os.RemoveAll(staged)
	src := filepath.Join(staged, req.Name)
	if err := os.Link(part, src); err != nil {
		return nil, fmt.Errorf("upload: stage %s: %w", req.Name, err)
	}
	if err := checkGGUF(id, src, fault.Quote(req.Name)); err != nil {
		os.Remove(part)
		return nil, err
	}
	doc, err := m.install(ctx, id, src, func(ctx context.Context) (catalog.Card, error) {
		c, err := catalog.ImportCard(id, src)
		if err != nil {
			return catalog.Card{}, err
		}
		if _, err := m.cfg.Store.Publish(c, staged, map[string]string{req.Name: req.Digest}); err != nil {
			return catalog.Card{}, err
		}
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	os.Remove(part)
	doc["sha256"] = req.Digest
	return doc, nil
}

// claimUpload marks digest's upload as running, or refuses when it is.
func (m *Service) claimUpload(digest string) (release func(), err error) {
	m.upMu.Lock()
	defer m.upMu.Unlock()
	if m.uploading[digest] {
		return nil, &UploadBusyError{Digest: digest}
	}
	if m.uploading == nil {
		m.uploading = map[string]bool{}
	}
	m.uploading[digest] = true
	return func() {
		m.upMu.Lock()
		delete(m.uploading, digest)
		m.upMu.Unlock()
	}, nil
}

// sweepUploads removes the stale partial uploads of dir.
func (m *Service) sweepUploads(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var files []partialFile
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			files = append(files, partialFile{Name: e.Name(), ModTime: fi.ModTime()})
		}
	}
	maxAge := m.cfg.UploadStaleAfter
	if maxAge <= 0 {
		maxAge = DefaultUploadStaleAfter
	}
	m.upMu.Lock() // held while removing, so no upload of a stale file starts meanwhile
	defer m.upMu.Unlock()
	for _, name := range stalePartials(files, m.uploading, time.Now(), maxAge) {
		os.Remove(filepath.Join(dir, name))
	}
}

// ctxReader stops a read once its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
