package supervise

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
)

// logLines logs each line of r as one record until r ends. A line longer
// than max bytes is logged cut to max bytes with truncated=true, and the
// rest of it is skipped without being buffered.
func logLines(r io.Reader, log *slog.Logger, max int) {
	br := bufio.NewReaderSize(r, max)
	skipping := false
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !skipping {
				log.Info(string(line), "truncated", true)
				skipping = true
			}
			continue
		case skipping:
			skipping = false // the tail of a cut line
		case len(line) > 0:
			relog(log, trimEOL(line))
		}
		if err != nil {
			return
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
