package eventlog

import (
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// maxDecoderMemory bounds what a corrupt archive can make the zstd decoder
// allocate.
const maxDecoderMemory = 64 << 20

// rotate compresses the live file into the next archive, starts a new live
// file and applies the archive cap. The order makes every crash point
// recoverable: the archive is complete and durable before the live file is
// replaced, and Open recognises a live file that an archive duplicates.
func (l *Log) rotate() error {
	seq := l.nextSeq
	size, err := l.replaceFile(archiveName(seq), func(f vfs.File) error {
		enc, err := zstd.NewWriter(f, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return err
		}
		if _, err := io.Copy(enc, io.NewSectionReader(l.live, 0, l.liveSize)); err != nil {
			enc.Close()
			return err
		}
		return enc.Close()
	})
	if err != nil {
		return fmt.Errorf("eventlog: rotate: %w", err)
	}
	l.nextSeq++
	l.archives = append(l.archives, archive{seq: seq, base: l.liveBase, size: size})
	if err := l.startLive(l.written + 1); err != nil {
		return fmt.Errorf("eventlog: rotate: %w", err)
	}
	return l.enforceCap()
}

// enforceCap deletes the oldest archives until their total fits the cap.
func (l *Log) enforceCap() error {
	var total int64
	for _, a := range l.archives {
		total += a.size
	}
	n := 0
	for ; n < len(l.archives) && total > l.opts.ArchiveCapBytes; n++ {
		total -= l.archives[n].size
	}
	return l.removeArchives(n)
}

// Compact deletes the archives whose records are all covered by the newest
// snapshot. Reads from before the new first index then return ErrCompacted.
func (l *Log) Compact() error {
	switch {
	case l.closed:
		return ErrClosed
	case l.cause != nil:
		return fmt.Errorf("eventlog: compact: %w", ErrDegraded)
	case len(l.snaps) == 0:
		return nil
	}
	snap := l.snaps[len(l.snaps)-1]
	n := 0
	for ; n < len(l.archives) && l.segmentEnd(n) <= snap+1; n++ {
	}
	if err := l.removeArchives(n); err != nil {
		l.degrade(err)
		return err
	}
	return nil
}

// segmentEnd is the index after archive i's last record.
func (l *Log) segmentEnd(i int) uint64 {
	if i+1 < len(l.archives) {
		return l.archives[i+1].base
	}
	return l.liveBase
}

// removeArchives deletes the oldest n archives.
func (l *Log) removeArchives(n int) error {
	if n == 0 {
		return nil
	}
	for range n {
		if err := l.fs.Remove(l.path(archiveName(l.archives[0].seq))); err != nil {
			return fmt.Errorf("eventlog: remove archive: %w", err)
		}
		l.archives = slices.Delete(l.archives, 0, 1)
		l.layout++
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("eventlog: sync dir: %w", err)
	}
	return nil
}

// newDecoder makes a zstd decoder that runs on the caller's goroutine.
func newDecoder() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecoderMemory))
}

// openArchive opens archive a and returns a decoder positioned after the
// header, the header's base and the file, which the caller closes.
func (l *Log) openArchive(a archive, zd *zstd.Decoder) (*decoder, uint64, vfs.File, error) {
	name := archiveName(a.seq)
	f, err := l.fs.Open(l.path(name))
	if err != nil {
		return nil, 0, nil, fmt.Errorf("eventlog: %w", err)
	}
	if err := zd.Reset(f); err != nil {
		f.Close()
		return nil, 0, nil, &CorruptionError{File: name, Reason: "zstd: " + err.Error()}
	}
	var hdr [headerLen]byte
	if n, err := io.ReadFull(zd, hdr[:]); err != nil {
		f.Close()
		return nil, 0, nil, &CorruptionError{File: name, Reason: fmt.Sprintf("file header: read %d bytes: %v", n, err)}
	}
	base, err := parseHeader(hdr[:])
	if err != nil {
		f.Close()
		return nil, 0, nil, &CorruptionError{File: name, Reason: err.Error()}
	}
	return &decoder{r: zd, name: name, off: headerLen, limit: -1}, base, f, nil
}

func (l *Log) decoder() (*zstd.Decoder, error) {
	if l.zdec == nil {
		zd, err := newDecoder()
		if err != nil {
			return nil, fmt.Errorf("eventlog: zstd: %w", err)
		}
		l.zdec = zd
	}
	return l.zdec, nil
}

// readArchiveHeader fills in a's base and size.
func (l *Log) readArchiveHeader(a *archive) error {
	zd, err := l.decoder()
	if err != nil {
		return err
	}
	_, base, f, err := l.openArchive(*a, zd)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	a.base, a.size = base, fi.Size()
	return nil
}

// archiveLast reads all of a and returns its last index.
func (l *Log) archiveLast(a archive) (uint64, error) {
	zd, err := l.decoder()
	if err != nil {
		return 0, err
	}
	d, base, f, err := l.openArchive(a, zd)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	want := base
	for {
		off := d.off
		index, _, err := d.next()
		if err == io.EOF {
			return want - 1, nil
		}
		if err != nil {
			return 0, zstdCorrupt(d.name, off, err)
		}
		if index != want {
			return 0, &CorruptionError{File: d.name, Offset: off, Reason: fmt.Sprintf("record index %d, want %d", index, want)}
		}
		want++
	}
}

// zstdCorrupt turns a decompression error inside an archive into a
// CorruptionError; other errors pass through.
func zstdCorrupt(name string, off int64, err error) error {
	if _, ok := err.(*CorruptionError); ok {
		return err
	}
	return &CorruptionError{File: name, Offset: off, Reason: err.Error()}
}
