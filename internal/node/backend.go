package node

import (
	"context"
	"io"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/models/modeladmin"
	"github.com/skulk/skulk/internal/models/tensorfetch"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/transport"
	"github.com/skulk/skulk/internal/serving/access"
	"github.com/skulk/skulk/internal/serving/api"
	"github.com/skulk/skulk/internal/serving/diagnostics"
	"github.com/skulk/skulk/internal/serving/gateway"
	"github.com/skulk/skulk/internal/serving/runner/proto"
	"github.com/skulk/skulk/internal/serving/worker"
)

// backend is what the API's routes need: the gateway for the requests to the
// cluster, model administration for the catalog (GET /models and the
// /models routes), and the node's own diagnostics.
type backend struct {
	*gateway.Gateway
	*modeladmin.Service
	*diagnostics.Recorder // GET /v1/diagnostics/cluster/timeline
	// node builds GET /v1/diagnostics/node.
	node func(context.Context) (any, error)
	// recoverCluster is POST /v1/cluster/recover.
	recoverCluster func(context.Context) error
	// keys is the /v1/keys routes: the cluster's run-time API keys.
	keys *access.Keys
}

// RecoverCluster answers POST /v1/cluster/recover: this node becomes the
// control plane's only voter (skulk cluster recover).
func (b backend) RecoverCluster(ctx context.Context) error { return b.recoverCluster(ctx) }

// NodeDiagnostics answers GET /v1/diagnostics/node.
func (b backend) NodeDiagnostics(ctx context.Context) (any, error) { return b.node(ctx) }

// backends hands the API each route family's backend: all of them this
// one.
func (b backend) backends() api.Backends {
	return api.Backends{Inference: b, Cluster: b, Placement: b, Tracing: b, Diagnostics: b, Models: b, Keys: b.keys}
}

// resolve is the worker's Resolve: the library's weights for the stage,
// as a runner loads them.
func (n *fabric) resolve(ctx context.Context, model ids.ModelID, sh event.Shard, downloading func()) (worker.Model, error) {
	w, err := n.mods.ResolveStage(ctx, model, sh, downloading)
	if err != nil {
		return worker.Model{}, err
	}
	wm := worker.Model{Path: w.Path, ChatTemplate: w.ChatTemplate}
	switch sp := w.Speculative; {
	case sp == nil:
	case sp.Lookup:
		wm.Speculative = &proto.SpeculativeSpec{Mode: proto.SpeculativeLookup, DraftMax: sp.DraftMax}
	default:
		wm.Speculative = &proto.SpeculativeSpec{Mode: proto.SpeculativeDraft, DraftModelPath: sp.DraftPath, DraftMax: sp.DraftMax}
	}
	return wm, nil
}

// serveTensors answers a member's fetch of tensors of a model installed here.
func (n *fabric) serveTensors(ctx context.Context, _ *transport.Conn, s io.ReadWriteCloser) {
	if err := tensorfetch.Serve(ctx, s, n.mods.Served); err != nil {
		n.log.Debug("tensor fetch stream", "err", err)
	}
}
