package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skulk/skulk/internal/platform/config"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// `skulk models import` by upload: the file is hashed here, the node says
// how much of it it holds already, and the rest is streamed to
// PUT /models/upload/{sha256} with a progress bar on stderr.

// uploadAttempts is how many times one run sends the rest of a file after
// the connection broke; running the command again resumes too.
const uploadAttempts = 3

// uploadPause is the wait before another attempt: the node may still be
// taking in the broken request (it answers upload_busy until it is done).
const uploadPause = time.Second

// progressTick is how often the upload's progress bar is redrawn.
const progressTick = 200 * time.Millisecond

func uploadImport(ctx context.Context, c *apiClient, path, id string, s stdio) (importResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return importResult{}, fmt.Errorf("cannot read %s here to upload it: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return importResult{}, err
	case !fi.Mode().IsRegular():
		return importResult{}, fmt.Errorf("%s is not a regular file", path)
	case fi.Size() == 0:
		return importResult{}, fmt.Errorf("%s is empty, not a GGUF model", path)
	}
	digest, err := hashFile(ctx, f, fi.Size(), s.err)
	if err != nil {
		return importResult{}, fmt.Errorf("hash %s: %w", path, err)
	}
	var last error
	for attempt := range uploadAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return importResult{}, ctx.Err()
			case <-time.After(uploadPause):
			}
		}
		res, err := uploadRest(ctx, c, f, fi.Size(), digest, filepath.Base(path), id, s)
		if err == nil {
			return res, nil
		}
		if ae, ok := errors.AsType[*apiError](err); (ok && !retryableUpload(ae.Code)) || ctx.Err() != nil {
			return importResult{}, err
		}
		last = err
	}
	return importResult{}, fmt.Errorf("%w; run the same command again to resume the upload", last)
}

// retryableUpload reports whether a refusal with this code clears when the
// upload is sent again from where the node's bytes end.
func retryableUpload(code string) bool {
	return code == "upload_busy" || code == "upload_offset"
}

// hashFile returns the SHA-256 of f's size bytes, drawing a progress bar on w.
func hashFile(ctx context.Context, f *os.File, size int64, w io.Writer) (string, error) {
	bar := &progressLine{w: w}
	defer bar.end()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.ReadAt(buf, done)
		h.Write(buf[:n])
		done += int64(n)
		bar.show(done, size, "hashing")
		if err == io.EOF || done >= size {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// uploadRest asks the node how many bytes of the file it holds and sends
// the rest.
func uploadRest(ctx context.Context, c *apiClient, f *os.File, size int64, digest, name, id string, s stdio) (importResult, error) {
	var st struct {
		Received int64 `json:"received_bytes"`
	}
	if err := c.call(ctx, http.MethodGet, "/models/upload/"+digest, nil, &st); err != nil {
		return importResult{}, err
	}
	from := st.Received
	if from > size {
		from = 0 // not this file's bytes: start over
	}
	if from > 0 {
		fmt.Fprintf(s.err, "the node holds %s of %s already; resuming there\n", config.FormatBytes(from), config.FormatBytes(size))
	}
	q := url.Values{"name": {name}}
	if id != "" {
		q.Set("id", id)
	}
	path := "/models/upload/" + digest + "?" + q.Encode()
	sent := &countingReader{r: io.NewSectionReader(f, from, size-from)}
	var body io.Reader = sent
	if from == size {
		body = http.NoBody // all there: the node only finishes it
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base+path, body)
	if err != nil {
		return importResult{}, err
	}
	req.ContentLength = size - from
	req.Header.Set("Content-Type", "application/octet-stream")
	if from == size {
		req.Header.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
	} else {
		req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, size-1, size))
	}
	stop := drawProgress(s.err, func() int64 { return from + sent.n.Load() }, size, "uploading "+name)
	resp, err := c.roundTrip(req, path)
	stop()
	if err != nil {
		return importResult{}, err
	}
	defer resp.Body.Close()
	var res importResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return importResult{}, fmt.Errorf("unexpected upload answer: %w", err)
	}
	if res.ModelID == "" {
		return importResult{}, fmt.Errorf("the node took the upload but did not import it; run the command again")
	}
	return res, nil
}

// drawProgress redraws a progress bar of done() bytes of total on w from
// its own goroutine until the returned stop is called, which draws it a
// last time and ends its line.
func drawProgress(w io.Writer, done func() int64, total int64, label string) (stop func()) {
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		bar := &progressLine{w: w}
		defer bar.end()
		t := time.NewTicker(progressTick)
		defer t.Stop()
		for {
			bar.show(done(), total, label)
			select {
			case <-quit:
				bar.show(done(), total, label)
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit); <-ended }
}

// countingReader counts the bytes read through it, for a progress bar
// drawn by another goroutine.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
