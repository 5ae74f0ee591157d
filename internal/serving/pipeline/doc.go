// Package pipeline runs one model split by layers into N stages
// (pipeline parallelism), each stage a model.Shard with its own KV cache
// per sequence, the stages joined by links that carry one object at a time:
//
//	rank 0 --link 0--> rank 1 --link 1--> ... rank N-1 --link N-1 (tokens)--> rank 0
//
// Rank 0 (the head) owns the sequences: Submit admits up to HeadConfig.Slots
// of them at once (later ones wait in order), opens each on every rank, and
// cuts its prompt into prefill chunks, so that rank 1 computes chunk k while
// rank 0 computes chunk k+1. Every rank runs its blocks and sends the
// hidden rows on; the last rank applies the head, samples with the
// sequence's sampler (internal/engine/sample, seeded per sequence) under
// the sequence's constraint (a grammar the runner builds from the source
// the open object carries: StageConfig.Constrain) and returns the token,
// with its logprobs when asked, to rank 0, which delivers it to the
// Sequence, ends the sequence (end of generation, MaxTokens, context, as
// sequence.Judge decides for every sequencer; or Cancel) or feeds the
// token back in as the sequence's next decode step. Rank 0's Stage is a
// sequence.Sequencer (Stage.Generate), the runner's to run a task on as it
// runs one on a model held whole. When a sequence ends a
// release object follows it down the pipeline and every rank frees its
// cache. The greedy and seeded output equals the same model on one shard
// token for token: a split, a prefill chunking and a model.Shard.Step in
// any company all give bit-identical logits.
//
// Several sequences are in flight at once. Each stage plans its next batch
// with plan, a pure function of its pending work: opens and releases first,
// then the decode steps of ready sequences as one model.Shard.Step,
// alternating with prefill chunks so neither starves the other. Rank 0
// forms the micro-batches: the live sequences divided by the ranks, so
// that the ranks work on different micro-batches at the same time (a short
// one waits while as many as there are ranks are in flight, so that
// sequences that started one by one come together); every later rank
// steps each micro-batch as it came, never merged with the next one. Links
// keep order, so a sequence's objects reach every rank in the order rank 0
// sent them.
//
// # Objects
//
// Every message is one object, little-endian:
//
//	0   magic    u32  "SKPL"
//	4   version  u8   3
//	5   kind     u8   1 open, 2 prefill, 3 decode, 4 token, 5 release,
//	                  6 report
//	6   reserved u16  0
//	8   count    u32  entries, 1..4096 (open, prefill, release, report: 1)
//	12  width    u32  floats per hidden row (prefill, decode; ≥ 1),
//	                  logprob records per entry (token; 0..21), timing
//	                  records (release: 0..256, report: 1..256), else 0
//	16  entries  count × {seq u64, pos u32, rows u32}
//	    payload:
//	      open     the Spec, 56 bytes: prompt_len u32, capacity u32,
//	               temperature f32, top_p f32, min_p f32, top_k i32,
//	               repeat_penalty f32, presence f32, frequency f32,
//	               repeat_last_n i32, seed u64, logprobs u8 (0 or 1),
//	               top_logprobs u8 (0..20, 0 unless logprobs),
//	               flags u16 (bit 0: trace; the rest 0),
//	               constraint_len u32 (≤ 4 MiB);
//	               then constraint_len bytes of constraint source
//	      prefill  rows × width float32 (rows ≥ 1)
//	      decode   count × width float32 (rows = 1 each)
//	      token    count × int32 sampled ids (rows = 1; pos is the
//	               position the token takes), then count × width
//	               logprob records {id i32, logprob f32}: the token's
//	               own (its id), then its most likely alternatives,
//	               padded at the end with {-1, 0}
//	      release  width timing records (rows = 0)
//	      report   width timing records (rows = 0)
//
// A traced sequence (the open's trace flag) is timed on every rank: a
// timing record, 48 bytes, is {rank u32, prefill_rows u32, decode_steps
// u32, reserved u32 0, opened i64, released i64 (Unix ns, the rank's
// clock), prefill_busy i64, decode_busy i64 (ns)}. Each rank appends its
// own to the sequence's release as it passes it on; the last rank sends
// them all back to rank 0 as a report, which Stage.Generate waits for
// (one trip, bounded) and returns as sequence.Stats.Ranks. An untraced
// sequence's release carries none and no report follows it.
//
// A sampled id is a vocabulary id, or -1 (nothing could be sampled: every
// logit masked or not finite) or -2 (the constraint could not be built or
// refused the token drawn): rank 0 ends the sequence with ErrNoToken or
// ErrConstraint. A sequence's tokens carry 1 + top_logprobs records when
// it asked for logprobs and none otherwise, so a batch of sequences that
// differ returns one token object per record count. Logprobs are of the
// model's raw logits (before the constraint and penalties), as on one node.
//
// pos is the cache position of an entry's first row; a rank checks it
// against the sequence's cache, so a lost, repeated or reordered object is
// a protocol fault, not a silent divergence. Decoding is strict: anything
// else is a *ProtocolError.
//
// # Links and faults
//
// A Link carries objects one way: NewChanLink in process, or
// internal/serving/link's ConnLink over a byte stream (a runner's Unix
// socket to its node, whose link.Relay relays it to the next rank's node
// over QUIC). The pipeline is
// fail-stop: a stage whose link closes or fails, which
// receives a malformed object, or whose step fails, closes both of its
// links and stops; the closing travels around the ring of links, and rank 0
// ends every sequence with a *FaultError. No call waits without a context.
//
// # Concurrency
//
// A Stage's state is owned by the goroutine in Run; a receiving and a
// sending goroutine per stage, owned and waited for by Run, do the
// blocking link calls. Submit, Stats and Sequence methods are safe for
// concurrent use. Pipeline runs every stage of a model in one process.
//
// Imports: the standard library and internal/engine/{gguf,model,sample}.
// The constraint source is opaque here: the runner
// compiles it (internal/engine/grammar) on the last rank.
package pipeline
