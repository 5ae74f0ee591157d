package tensorfetch

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"github.com/skulk/skulk/internal/control/catalog"
)

// Wire format: one request per stream. The fetcher writes a frame (a 4-byte
// big-endian length, then JSON) holding a request; the member answers with
// a reply frame and, for a read, exactly Length raw bytes after it.
const (
	opManifest = "manifest" // the model's card, file and tensor sums
	opRead     = "read"     // bytes [Offset, Offset+Length) of the file

	// MaxRead bounds one read; a larger part is fetched in several.
	MaxRead = 16 << 20
	// maxRequest bounds a request frame.
	maxRequest = 4 << 10
	// maxReply bounds a reply frame (a card and a few thousand tensor sums).
	maxReply = 8 << 20
)

type request struct {
	Op     string `json:"op"`
	Model  string `json:"model"`
	Offset int64  `json:"offset,omitempty"`
	Length int64  `json:"length,omitempty"`
}

// manifest is what a member says about its copy of a model.
type manifest struct {
	Card   catalog.Card        `json:"card"`
	File   string              `json:"file"` // the file's name in the card
	Size   int64               `json:"size"`
	SHA256 string              `json:"sha256"` // of the whole file
	Sums   *catalog.TensorSums `json:"sums"`
}

type reply struct {
	Error    *RemoteError `json:"error,omitempty"`
	Manifest *manifest    `json:"manifest,omitempty"`
	Length   int64        `json:"length,omitempty"` // raw bytes that follow a read's reply
}

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(append(n[:], b...)); err != nil {
		return err
	}
	return nil
}

func readFrame(r io.Reader, limit int, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if int64(size) > int64(limit) {
		return fmt.Errorf("tensorfetch: a %d-byte frame (at most %d)", size, limit)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
