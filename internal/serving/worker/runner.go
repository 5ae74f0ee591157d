package worker

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// runRunner is one runner incarnation: guard memory, spawn, load, serve until
// the subprocess exits or ctx ends, reporting each phase to the master and
// recording it in the rank's flight recorder. A runner that fails leaves
// the recorder in the node's log.
func (w *Worker) runRunner(ctx context.Context, k key, id ids.RunnerID, inst state.Instance, rec *recorder) {
	status := func(s event.RunnerStatus, reason string) {
		w.report(ctx, event.RunnerStatusUpdated{Runner: id, Instance: k.inst, Rank: uint32(k.rank), Node: w.cfg.Node, Status: s, Reason: truncate(reason)})
	}
	exited := func(failed bool, reason string) {
		w.post(ctx, runnerExited{key: k, id: id, failed: failed, reason: reason})
	}
	failed := func(phase, reason string) {
		rec.add(id, phase, reason)
		w.cfg.Logger.Warn("runner failed; its flight recorder follows", "instance", k.inst, "rank", k.rank, "runner", id,
			"reason", reason, "flight_recorder", rec.String())
	}
	if w.cfg.Guard != nil {
		if need, avail, err := w.cfg.Guard(inst, k.rank); err != nil {
			rec.add(id, PhaseError, "refused for memory: "+err.Error())
			status(event.RunnerFailed, err.Error())
			w.execute(ctx, event.RefuseInstancePlacement{ID: ids.CommandID(w.cfg.NewID()), Instance: k.inst, Node: w.cfg.Node,
				Reason: truncate(err.Error()), NeededBytes: uint64(max(need, 0)), AvailableBytes: uint64(max(avail, 0))})
			return
		}
	}
	model, err := w.cfg.Resolve(ctx, inst.Model, inst.Placement[k.rank], func() {
		rec.add(id, PhaseDownload, string(inst.Model))
		status(event.RunnerDownloading, "")
	})
	if err != nil {
		reason := fmt.Sprintf("weights of %s are not available: %v", inst.Model, err)
		failed(PhaseError, reason)
		status(event.RunnerFailed, reason)
		exited(true, err.Error())
		return
	}
	status(event.RunnerLoading, "")
	r, err := w.cfg.Spawn(ctx, fmt.Sprintf("runner %s rank %d", k.inst, k.rank))
	if err != nil {
		failed(PhaseError, "could not start the runner process: "+err.Error())
		status(event.RunnerFailed, "could not start the runner process: "+err.Error())
		exited(true, err.Error())
		return
	}
	spawned := ""
	if p, ok := r.(interface{ Pid() int }); ok {
		spawned = "pid " + strconv.Itoa(p.Pid())
		w.post(ctx, runnerSpawned{key: k, id: id, pid: p.Pid()})
	}
	rec.add(id, PhaseSpawn, spawned)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		r.Close(cctx)
	}()
	switch {
	case inst.DraftModel != "":
		// The placement's draft model, made local like the model, whole:
		// every block, the embedding and the head.
		whole := event.Shard{LayerStart: 0, LayerEnd: math.MaxUint32, HoldsEmbedding: true, HoldsHead: true}
		d, err := w.cfg.Resolve(ctx, inst.DraftModel, whole, func() { rec.add(id, PhaseDownload, string(inst.DraftModel)) })
		if err != nil {
			reason := fmt.Sprintf("weights of the draft model %s are not available: %v", inst.DraftModel, err)
			failed(PhaseError, reason)
			status(event.RunnerFailed, reason)
			exited(true, err.Error())
			return
		}
		model.Speculative = &proto.SpeculativeSpec{Mode: proto.SpeculativeDraft, DraftModelPath: d.Path}
	case inst.Speculative == proto.SpeculativeLookup:
		model.Speculative = &proto.SpeculativeSpec{Mode: proto.SpeculativeLookup}
	}
	sh := inst.Placement[k.rank]
	spec := proto.LoadSpec{ModelPath: model.Path, ChatTemplateOverride: model.ChatTemplate, Start: int(sh.LayerStart), End: int(sh.LayerEnd), First: sh.HoldsEmbedding,
		Last: sh.HoldsHead, Threads: w.cfg.Threads, ContextTokens: int(inst.ContextTokens), Instance: string(k.inst), Rank: k.rank,
		CacheType: inst.CacheType, Speculative: model.Speculative}
	rec.add(id, PhaseLoad, fmt.Sprintf("%s layers [%d, %d)", inst.Model, sh.LayerStart, sh.LayerEnd))
	if n := len(inst.Placement); n > 1 && w.cfg.Edges != nil {
		spec.Pipeline = &proto.PipelineSpec{Ranks: n, Socket: w.cfg.Edges(k.inst, inst.Placement),
			ConnectTimeoutMS: int(w.cfg.EdgeConnectTimeout.Milliseconds())}
	}
	st, err := r.Load(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			rec.add(id, PhaseStop, "stopped while loading")
			return
		}
		failed(PhaseError, "load failed: "+err.Error())
		status(event.RunnerFailed, "load failed: "+err.Error())
		exited(true, err.Error())
		return
	}
	// The loop notes the runner before the cluster hears it is ready: a
	// request a gateway routes here once the State says ready must find it.
	noted := make(chan struct{})
	w.post(ctx, runnerReady{key: k, id: id, r: r, status: st, noted: noted})
	select {
	case <-noted:
		rec.add(id, PhaseReady, fmt.Sprintf("%d tokens of context", st.ContextTokens))
		status(event.RunnerReady, "")
	case <-ctx.Done():
	}
	select {
	case <-ctx.Done():
		rec.add(id, PhaseStop, "")
		status(event.RunnerStopped, "stopped")
	case <-r.Exited():
		reason := "the runner process exited"
		if err := r.Err(); err != nil {
			reason = err.Error()
		}
		failed(PhaseExit, reason)
		status(event.RunnerFailed, reason)
		exited(true, reason)
	}
}
