package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Format constants; see the package doc for the layout.
const (
	// MaxPayload bounds a record's payload, so a corrupt length can never
	// make the reader allocate more than this.
	MaxPayload = 16 << 20

	fileMagic      = "SKULKL"
	formatVersion  = 1
	headerLen      = 20
	recordPrefix   = 12 // length + index
	recordOverhead = recordPrefix + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendHeader appends a file header for a file whose first record is base.
func appendHeader(dst []byte, base uint64) []byte {
	start := len(dst)
	dst = append(dst, fileMagic...)
	dst = binary.BigEndian.AppendUint16(dst, formatVersion)
	dst = binary.BigEndian.AppendUint64(dst, base)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// parseHeader validates a file header and returns its base index.
func parseHeader(b []byte) (uint64, error) {
	switch {
	case len(b) < headerLen:
		return 0, fmt.Errorf("file header: %d of %d bytes", len(b), headerLen)
	case string(b[:6]) != fileMagic:
		return 0, fmt.Errorf("file header: bad magic %q", b[:6])
	case binary.BigEndian.Uint16(b[6:8]) != formatVersion:
		return 0, fmt.Errorf("file header: unsupported version %d", binary.BigEndian.Uint16(b[6:8]))
	case binary.BigEndian.Uint32(b[16:20]) != crc32.Checksum(b[:16], castagnoli):
		return 0, errors.New("file header: CRC mismatch")
	case binary.BigEndian.Uint64(b[8:16]) == 0:
		return 0, errors.New("file header: base index 0") // indices start at 1
	}
	return binary.BigEndian.Uint64(b[8:16]), nil
}

// appendRecord appends one framed record.
func appendRecord(dst []byte, index uint64, payload []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint64(dst, index)
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// decoder reads records from a stream positioned after the file header.
// Payloads it returns are valid until the next call.
type decoder struct {
	r     io.Reader
	name  string // file name, for errors
	off   int64  // offset of the next record in the (decompressed) file
	limit int64  // file size when known, else -1: a length past it is a tear
	buf   []byte
	// prefix is here, not on the stack, because io.ReadFull would make a
	// local escape: one allocation per record.
	prefix [recordPrefix]byte
}

// next returns the next record, io.EOF at a clean end, or a
// *CorruptionError (Torn for data that ends early).
func (d *decoder) next() (uint64, []byte, error) {
	prefix := d.prefix[:]
	n, err := io.ReadFull(d.r, prefix)
	switch {
	case err == io.EOF:
		return 0, nil, io.EOF
	case err == io.ErrUnexpectedEOF:
		return 0, nil, d.torn(fmt.Sprintf("record header cut after %d bytes", n))
	case err != nil:
		return 0, nil, fmt.Errorf("eventlog: read %s: %w", d.name, err)
	}
	length := int64(binary.BigEndian.Uint32(prefix[:4]))
	index := binary.BigEndian.Uint64(prefix[4:])
	if length > MaxPayload {
		return 0, nil, d.corrupt(fmt.Sprintf("record length %d over the limit %d", length, MaxPayload))
	}
	// Check the length against the file before allocating for it.
	if d.limit >= 0 && d.off+recordOverhead+length > d.limit {
		return 0, nil, d.torn(fmt.Sprintf("record of %d bytes cut by the end of file at %d", length, d.limit))
	}
	need := int(length) + 4
	if cap(d.buf) < recordPrefix+need {
		d.buf = make([]byte, recordPrefix+need)
	}
	d.buf = d.buf[:recordPrefix+need]
	copy(d.buf, prefix)
	if n, err := io.ReadFull(d.r, d.buf[recordPrefix:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, nil, d.torn(fmt.Sprintf("record of %d bytes cut after %d", length, recordPrefix+n))
		}
		return 0, nil, fmt.Errorf("eventlog: read %s: %w", d.name, err)
	}
	body := d.buf[:recordPrefix+int(length)]
	if got := binary.BigEndian.Uint32(d.buf[len(body):]); got != crc32.Checksum(body, castagnoli) {
		return 0, nil, d.corrupt(fmt.Sprintf("CRC mismatch in record %d", index))
	}
	d.off += int64(len(d.buf))
	return index, body[recordPrefix:], nil
}

func (d *decoder) torn(reason string) error {
	return &CorruptionError{File: d.name, Offset: d.off, Reason: reason, Torn: true}
}

func (d *decoder) corrupt(reason string) error {
	return &CorruptionError{File: d.name, Offset: d.off, Reason: reason}
}
