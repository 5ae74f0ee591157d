package tensorfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
)

// Served is a member's verified copy of a model, as Serve needs it.
type Served struct {
	Card   catalog.Card
	Path   string // the file a runner loads
	Size   int64
	SHA256 string
	Sums   *catalog.TensorSums
}

// Lookup finds this member's verified copy of a model; an error wrapping
// ErrNotInstalled (or a *catalog.NotInstalledError) says it has none.
type Lookup func(ctx context.Context, model string) (Served, error)

// requestTimeout bounds one request's exchange on the serving side.
const requestTimeout = 2 * time.Minute

// Serve answers one request on s (an authenticated member's stream):
// the manifest of a model, or a read of its header or of whole-or-part of
// one tensor. Anything else is a typed refusal.
func Serve(ctx context.Context, s io.ReadWriter, lookup Lookup) error {
	if d, ok := s.(interface{ SetDeadline(time.Time) error }); ok {
		d.SetDeadline(time.Now().Add(requestTimeout))
	}
	if c, ok := s.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
	}
	var req request
	if err := readFrame(s, maxRequest, &req); err != nil {
		return writeFrame(s, reply{Error: &RemoteError{Code: CodeBadRequest, Message: "cannot read the request: " + err.Error()}})
	}
	if req.Op != opManifest && req.Op != opRead {
		return writeFrame(s, reply{Error: &RemoteError{Code: CodeBadRequest, Message: fmt.Sprintf("unknown op %q", req.Op)}})
	}
	sv, err := lookup(ctx, req.Model)
	if err != nil {
		code := CodeInternal
		if nie := (*catalog.NotInstalledError)(nil); errors.As(err, &nie) || errors.Is(err, ErrNotInstalled) {
			code = CodeNotInstalled
		}
		return writeFrame(s, reply{Error: &RemoteError{Code: code, Message: err.Error()}})
	}
	if req.Op == opManifest {
		return writeFrame(s, reply{Manifest: &manifest{Card: sv.Card, File: sv.Card.Files[0], Size: sv.Size, SHA256: sv.SHA256, Sums: sv.Sums}})
	}
	if err := checkRead(sv.Sums, req.Offset, req.Length); err != nil {
		return writeFrame(s, reply{Error: &RemoteError{Code: CodeBadRequest, Message: err.Error()}})
	}
	f, err := os.Open(sv.Path)
	if err != nil {
		return writeFrame(s, reply{Error: &RemoteError{Code: CodeInternal, Message: "cannot open the model file"}})
	}
	defer f.Close()
	if err := writeFrame(s, reply{Length: req.Length}); err != nil {
		return err
	}
	_, err = io.Copy(s, io.NewSectionReader(f, req.Offset, req.Length))
	return err
}

// checkRead admits a read of at most MaxRead bytes that lies inside the
// header or inside one tensor: a member serves the parts of its file, not
// arbitrary bytes.
func checkRead(sums *catalog.TensorSums, off, n int64) error {
	if n <= 0 || n > MaxRead || off < 0 {
		return fmt.Errorf("a read of %d bytes at %d (1 to %d bytes)", n, off, MaxRead)
	}
	if off+n <= sums.HeaderBytes {
		return nil
	}
	for _, t := range sums.Tensors {
		if off >= t.Offset && off+n <= t.Offset+t.Size {
			return nil
		}
	}
	return fmt.Errorf("[%d, +%d) is not inside the header or one tensor", off, n)
}
