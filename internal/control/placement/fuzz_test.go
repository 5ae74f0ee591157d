package placement

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzNodes decodes up to eight nodes, four bytes each: available memory
// in 64 MiB units (little-endian u16), then a flags byte (bit 0 native-cpu,
// bit 1 llama-server-cuda, bit 2 mlx, bit 3 pending), then a byte that
// salts the id so duplicate ids occur and, divided by ten, counts the
// runners already placed there (512 MiB committed each; from 160 up the node
// is at the default limit).
func fuzzNodes(spec []byte) []Node {
	var nodes []Node
	for i := 0; i+4 <= len(spec) && len(nodes) < 8; i += 4 {
		flags := spec[i+2]
		n := Node{
			ID:             fmt.Sprintf("n%d", int(spec[i+3])%10),
			AvailableBytes: (int64(spec[i]) | int64(spec[i+1])<<8) << 26,
			Pending:        flags&8 != 0,
		}
		n.Runners = int(spec[i+3]) / 10
		n.CommittedBytes = int64(n.Runners) << 29
		n.TotalBytes = n.AvailableBytes + n.CommittedBytes/2
		for bit, b := range []string{"native-cpu", "llama-server-cuda", "mlx"} {
			if flags&(1<<bit) != 0 {
				n.Backends = append(n.Backends, b)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// FuzzPlan asserts the planner never panics, refuses only with a typed
// refusal, never depends on node order, and that every placement it makes
// (directly, widened, re-planned or previewed) satisfies admission.
func FuzzPlan(f *testing.F) {
	// layers, layer bytes, embedding MiB, head MiB, KV per token-layer,
	// card context, tied, min nodes, requested context, exclusion mask, nodes.
	f.Add(uint16(32), int64(200<<20), uint16(250), uint16(250), int64(4096), uint32(131072), false, int8(0), int32(0), uint8(0), []byte{0, 1, 1, 0})
	f.Add(uint16(32), int64(200<<20), uint16(250), uint16(250), int64(4096), uint32(131072), false, int8(0), int32(0), uint8(0), []byte{128, 0, 1, 1, 128, 0, 1, 2, 96, 0, 1, 3})
	f.Add(uint16(80), int64(400<<20), uint16(500), uint16(500), int64(8192), uint32(32768), true, int8(2), int32(16384), uint8(1), []byte{0, 1, 3, 1, 0, 2, 1, 2, 0, 1, 2, 3, 0, 4, 9, 4, 64, 0, 1, 5})
	f.Add(uint16(2), int64(1), uint16(0), uint16(0), int64(0), uint32(4096), false, int8(2), int32(0), uint8(0), []byte{1, 0, 1, 1, 1, 0, 1, 2})
	f.Add(uint16(1), int64(-1), uint16(0), uint16(0), int64(1), uint32(1), false, int8(-1), int32(-5), uint8(255), []byte{0, 0, 0, 0})
	f.Add(uint16(4000), int64(1<<62), uint16(65535), uint16(65535), int64(1<<62), uint32(1<<31-1), true, int8(127), int32(1<<31-1), uint8(0), []byte{255, 255, 15, 0, 255, 255, 7, 1})
	f.Add(uint16(8), int64(1<<30), uint16(10), uint16(10), int64(1<<20), uint32(8192), false, int8(0), int32(8192), uint8(6), []byte{0, 3, 1, 1, 0, 3, 1, 2, 0, 3, 1, 3, 0, 3, 1, 4})
	f.Add(uint16(32), int64(200<<20), uint16(250), uint16(250), int64(4096), uint32(131072), false, int8(0), int32(0), uint8(0), []byte{0, 2, 1, 161, 0, 1, 1, 52, 0, 1, 8, 3})

	f.Fuzz(func(t *testing.T, layers uint16, layerBytes int64, embMiB, headMiB uint16, kv int64, ctx uint32, tied bool, minNodes int8, reqCtx int32, excluded uint8, spec []byte) {
		m := Model{
			ID: "m", Layers: int(layers), LayerBytes: []int64{layerBytes},
			EmbeddingBytes: int64(embMiB) << 20, HeadBytes: int64(headMiB) << 20, TiedEmbedding: tied,
			KVBytesPerTokenLayer: kv, ContextLength: int(ctx),
			CompatibleBackends: []string{"native-cpu", "llama-server-cuda"},
			BackendPreference:  []string{"llama-server-cuda"},
		}
		nodes := fuzzNodes(spec)
		req := Request{MinNodes: int(minNodes), Context: int(reqCtx)}
		for i := range 8 {
			if excluded&(1<<i) != 0 {
				req.Excluded = append(req.Excluded, fmt.Sprintf("n%d", i))
			}
		}

		p, err := Plan(m, nodes, req)
		reversed := slices.Clone(nodes)
		slices.Reverse(reversed)
		q, qerr := Plan(m, reversed, req)
		if !reflect.DeepEqual(p, q) || fmt.Sprint(err) != fmt.Sprint(qerr) {
			t.Fatalf("node order changed the answer:\n%s %v\n%s %v", layout(p), err, layout(q), qerr)
		}
		if err != nil {
			checkRefusal(t, err)
			return
		}
		checkInvariants(t, m, nodes, req, p)

		if w, err := Widen(m, nodes, p, p.Ranks[0].Node, 0); err != nil {
			checkRefusal(t, err)
		} else {
			checkInvariants(t, m, nodes, w.Request, w)
			if slices.ContainsFunc(w.Ranks, func(r Rank) bool { return r.Node == p.Ranks[0].Node }) {
				t.Errorf("widened placement %s still uses the refusing node %s", layout(w), p.Ranks[0].Node)
			}
		}
		previews, err := Previews(m, nodes)
		if err != nil {
			t.Fatalf("Plan accepted the card but Previews refused it: %v", err)
		}
		for _, pv := range previews {
			checkInvariants(t, m, nodes, Request{MinNodes: pv.Width}, Placement{
				Model: m.ID, Backend: pv.Backend, Ranks: pv.Ranks, PerNode: pv.PerNode,
				ContextWindow: pv.DefaultContext, ContextCeiling: pv.ContextCeiling,
			})
		}
	})
}

func checkRefusal(t *testing.T, err error) {
	t.Helper()
	if s := Status(err); s != 400 && s != 409 && s != 503 {
		t.Fatalf("status %d for %T %v, want 400, 409 or 503", s, err, err)
	}
	if !strings.HasPrefix(err.Error(), "placement: ") {
		t.Fatalf("message %q lacks the package prefix", err)
	}
}
