package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// Frame is one named document of the stream ("state", "nodes", ...): the
// page holds the latest of each name and redraws what depends on it.
type Frame struct {
	Name string
	Doc  any
}

// Defaults of a BrokerConfig.
const (
	DefaultInterval  = time.Second
	DefaultBuffer    = 64
	DefaultHeartbeat = 15 * time.Second
	// writeTimeout bounds one write to a stream.
	writeTimeout = 10 * time.Second
)

// BrokerConfig configures a Broker.
type BrokerConfig struct {
	// Frames returns the node's documents now. The broker calls it on its
	// own goroutine only, so it may keep state between calls (a history of
	// readings); it must return within ctx.
	Frames func(ctx context.Context) []Frame
	// Idle, when set, is called instead of Frames on the ticks when no
	// page is open (the node keeps its activity history with it), on the
	// broker's goroutine too. Frames is read only while a page watches.
	Idle func(ctx context.Context)
	// Changed signals that something the frames show changed (the control
	// plane's events, membership changes); coalesced. May be nil.
	Changed <-chan struct{}
	// Interval is how often the frames are read anyway: the telemetry's
	// cadence (default DefaultInterval).
	Interval time.Duration
	// Buffer is how many messages a page may be behind before it is
	// dropped (default DefaultBuffer); the page reconnects and starts from
	// the latest frames.
	Buffer int
	// Heartbeat is how often an idle stream gets a comment, so proxies and
	// the page see it alive (default DefaultHeartbeat).
	Heartbeat time.Duration
	Logger    *slog.Logger
}

// Broker reads the node's frames on one goroutine (Run), while a page
// watches, and sends each frame that changed to every open stream. A stream that falls Buffer
// messages behind is dropped rather than slowing the others or growing
// without bound.
type Broker struct {
	cfg   BrokerConfig
	join  chan *client
	leave chan *client
	done  chan struct{} // closed when Run returns
}

// client is one open stream; msgs is closed by Run when the client is
// dropped or the broker stops.
type client struct {
	msgs chan []byte
}

// NewBroker returns a Broker; Run must be started for streams to be served.
func NewBroker(cfg BrokerConfig) *Broker {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultBuffer
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Broker{cfg: cfg, join: make(chan *client), leave: make(chan *client), done: make(chan struct{})}
}

// Run owns the frames and the open streams until ctx ends, then closes
// every stream.
func (b *Broker) Run(ctx context.Context) {
	defer close(b.done)
	clients := map[*client]bool{}
	defer func() {
		for c := range clients {
			close(c.msgs)
		}
	}()
	var names []string            // in first-seen order, for a new stream's snapshot
	latest := map[string][]byte{} // name -> the SSE message last sent
	refresh := func() {
		for _, f := range b.cfg.Frames(ctx) {
			msg, err := message(f)
			if err != nil {
				b.cfg.Logger.Warn("dashboard frame not sent", "frame", f.Name, "err", err)
				continue
			}
			old, seen := latest[f.Name]
			if bytes.Equal(old, msg) {
				continue
			}
			if !seen {
				names = append(names, f.Name)
			}
			latest[f.Name] = msg
			for c := range clients {
				select {
				case c.msgs <- msg:
				default:
					delete(clients, c)
					close(c.msgs)
					b.cfg.Logger.Info("dashboard stream dropped: the page fell behind", "buffer", b.cfg.Buffer)
				}
			}
		}
	}
	tick := time.NewTicker(b.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-b.join:
			// The new stream starts with the latest of every frame, read
			// now (nothing was read while no page watched); its buffer is
			// empty, so this only drops it if the frames outnumber the
			// buffer.
			refresh()
			clients[c] = true
			for _, name := range names {
				select {
				case c.msgs <- latest[name]:
				default:
				}
			}
		case c := <-b.leave:
			if clients[c] {
				delete(clients, c)
				close(c.msgs)
			}
		case <-b.cfg.Changed:
			if len(clients) > 0 {
				refresh()
			}
		case <-tick.C:
			switch {
			case len(clients) > 0:
				refresh()
			case b.cfg.Idle != nil:
				b.cfg.Idle(ctx)
			}
		}
	}
}

// message formats a frame as one SSE message: the frame's name as the
// event, its JSON on one data line (JSON has no raw newlines).
func message(f Frame) ([]byte, error) {
	doc, err := json.Marshal(f.Doc)
	if err != nil {
		return nil, fmt.Errorf("dashboard: frame %s: %w", f.Name, err)
	}
	var buf bytes.Buffer
	buf.Grow(len(doc) + len(f.Name) + 16)
	buf.WriteString("event: ")
	buf.WriteString(f.Name)
	buf.WriteString("\ndata: ")
	buf.Write(doc)
	buf.WriteString("\n\n")
	return buf.Bytes(), nil
}

// ServeHTTP serves GET /v1/dashboard/events: a text/event-stream of
// frames, the latest of each first, then each change, until the client
// goes away, falls behind, or the node stops. Authentication is the API's,
// before this runs: the page reads the stream with fetch, which sends the
// key as a bearer token like any other request (EventSource cannot, and a
// key in the URL would end up in logs and history).
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &client{msgs: make(chan []byte, b.cfg.Buffer)}
	select {
	case b.join <- c:
	case <-b.done:
		http.Error(w, `{"error":{"message":"the node is stopping","type":"unavailable"}}`, http.StatusServiceUnavailable)
		return
	case <-r.Context().Done():
		return
	}
	defer func() {
		select {
		case b.leave <- c:
		case <-b.done:
		}
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return
	}
	beat := time.NewTicker(b.cfg.Heartbeat)
	defer beat.Stop()
	for {
		var out []byte
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-c.msgs:
			if !ok {
				return // dropped, or the node stops: the page reconnects
			}
			out = msg
		case <-beat.C:
			out = []byte(": keepalive\n\n")
		}
		// A page that stops reading must not hold this goroutine forever.
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := w.Write(out); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
