// Package proto is the wire protocol between a node and its runner
// children: the commands, messages and limits both sides share, and the
// strict line codec.
//
// The worker starts a runner as our own binary re-executed ("skulk runner",
// see runner.Main) through package supervise, and speaks to it with newline-delimited
// JSON over the child's stdin and stdout. Activations and other payload bytes
// never ride this channel; token text does. Every line is one JSON object,
// decoded strictly (unknown fields are errors) and at most MaxLine bytes long.
//
// Parent to child, one object per line, op selects the payload:
//
//	{"op":"load","load":{"model_path":..., "start":0, "end":0, "first":true, "last":true,
//	    "threads":0, "context_tokens":0, "chat_template_override":"", "instance":..., "rank":0}}
//	{"op":"generate","generate":{"task":"t1","request":<request.Request>}}
//	{"op":"embed","embed":{"task":"t2","request":<request.EmbedRequest>}}
//	{"op":"cancel","cancel":{"task":"t1"}}
//	{"op":"shutdown"}
//
// Child to parent:
//
//	{"type":"status","status":{"state":"loading|warming|ready|failed|stopped","reason":...,
//	    "weight_bytes":..., "context_tokens":...}}
//	{"type":"chunk","task":"t1","chunk":<request.Chunk>}
//	{"type":"embedding","task":"t2","embedding":<request.EmbedResult>} (or "error":<fault.Error>)
//	{"type":"error","task":"t1","error":<fault.Error>}
//	{"type":"progress","progress":{"steps":N,"in_step":true}}   (every HeartbeatInterval)
//
// A load is answered at once with status loading, then warming, then ready or
// failed (with the reason). A generate task streams chunks and always ends
// with exactly one chunk of kind done or error; a task the parent cancels ends
// with a done chunk whose finish_reason is "cancelled" (with the usage so
// far). An embed task is answered by exactly one "embedding" message, carrying
// the vectors or the error. An "error" message answers a line the child could
// not act on: a malformed or oversized line, an unknown op, a duplicate task
// id. It never ends a task, and the child keeps serving. shutdown (or the end
// of stdin) cancels every task, waits for their last chunks, reports stopped
// and exits.
package proto
