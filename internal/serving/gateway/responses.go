package gateway

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// Stored Responses conversations live with the node that answered them
// (in its memory and its journal). A node asked to continue one it does
// not hold asks its peers, one stream each:
//
//	→ {"id": "resp_…"}
//	← {"found": true, "messages": […]} | {"found": false}
//
// Frames are writeJSONFrame's. A conversation is bounded by the store's
// byte limit, so a frame may be as large as that plus its JSON.

// maxResponseFrame bounds one lookup answer.
const maxResponseFrame = 96 << 20

// responseLookupTimeout bounds the whole fan-out: a peer that does not
// answer in time counts as not holding the response.
const responseLookupTimeout = 3 * time.Second

type responseLookupReq struct {
	ID string `json:"id"`
}

type responseLookupResp struct {
	Found    bool              `json:"found"`
	Messages []request.Message `json:"messages,omitempty"`
}

// ServeResponseLookup answers one peer's lookup from local, this node's
// store.
func ServeResponseLookup(ctx context.Context, st io.ReadWriteCloser, local func(id string) ([]request.Message, bool)) error {
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	var req responseLookupReq
	if err := readJSONFrame(st, &req); err != nil {
		return err
	}
	msgs, ok := local(req.ID)
	return writeJSONFrame(st, responseLookupResp{Found: ok, Messages: msgs})
}

// PeerResponses looks stored conversations up on the other live nodes.
type PeerResponses struct {
	Self    ids.NodeID
	Members func() []ids.NodeID
	// Dial opens a stream to a node's response-lookup handler.
	Dial func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error)
}

// Lookup asks every other live node for id at once and returns the first
// conversation found. Peers that fail or time out count as not holding it.
func (p PeerResponses) Lookup(ctx context.Context, id string) ([]request.Message, bool) {
	ctx, cancel := context.WithTimeout(ctx, responseLookupTimeout)
	defer cancel()
	found := make(chan []request.Message, 1)
	var wg sync.WaitGroup
	for _, n := range p.Members() {
		if n == p.Self {
			continue
		}
		wg.Go(func() {
			msgs, ok := p.ask(ctx, n, id)
			if !ok {
				return
			}
			select {
			case found <- msgs:
				cancel() // the others can stop
			default:
			}
		})
	}
	wg.Wait()
	select {
	case msgs := <-found:
		return msgs, true
	default:
		return nil, false
	}
}

func (p PeerResponses) ask(ctx context.Context, node ids.NodeID, id string) ([]request.Message, bool) {
	st, err := p.Dial(ctx, node)
	if err != nil {
		return nil, false
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	if err := writeJSONFrame(st, responseLookupReq{ID: id}); err != nil {
		return nil, false
	}
	var resp responseLookupResp
	if err := readJSONFrameMax(st, &resp, maxResponseFrame); err != nil || !resp.Found {
		return nil, false
	}
	return resp.Messages, true
}
