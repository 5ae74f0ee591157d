package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
)

// relog logs one stderr line. A child that logs with slog's JSON handler
// writes one object per line with "level" and "msg"; such a line keeps its
// level, message and attributes (its "time" gives way to ours), so a
// child's warning is a warning in the node's log and its debug lines follow
// the node's level. Any other line is an Info record of the text.
func relog(log *slog.Logger, line []byte) {
	if level, msg, attrs, ok := parseRecord(line); ok {
		log.LogAttrs(context.Background(), level, msg, attrs...)
		return
	}
	log.Info(string(line))
}

// parseRecord reads a slog JSON record, keeping the attributes in order.
func parseRecord(line []byte) (level slog.Level, msg string, attrs []slog.Attr, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' {
		return 0, "", nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // the opening brace
		return 0, "", nil, false
	}
	var haveLevel, haveMsg bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, "", nil, false
		}
		key, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return 0, "", nil, false
		}
		switch s, isString := v.(string); {
		case key == slog.LevelKey && isString && !haveLevel:
			if level.UnmarshalText([]byte(s)) != nil {
				return 0, "", nil, false
			}
			haveLevel = true
		case key == slog.MessageKey && isString && !haveMsg:
			msg, haveMsg = s, true
		case key == slog.TimeKey:
		default:
			attrs = append(attrs, slog.Any(key, plain(v)))
		}
	}
	// The closing brace must end the line: text after it is not a record.
	if _, err := dec.Token(); err != nil || dec.InputOffset() != int64(len(line)) || !haveLevel || !haveMsg {
		return 0, "", nil, false
	}
	return level, msg, attrs, true
}

// plain turns a decoded number back into an int64 or float64, so the node's
// handler prints it as a number rather than as a json.Number's string.
func plain(v any) any {
	n, isNumber := v.(json.Number)
	if !isNumber {
		return v
	}
	if i, err := n.Int64(); err == nil {
		return i
	}
	if f, err := n.Float64(); err == nil {
		return f
	}
	return n.String()
}
