package event

import (
	"strings"

	"github.com/skulk/skulk/internal/platform/ids"
)

// sampleEvents returns one valid event of every kind, keyed by a stable
// name used for golden files.
func sampleEvents() map[string]Event {
	return map[string]Event{
		"instance_created": InstanceCreated{
			Instance: "inst-1", Model: "meta-llama/Llama-3.2-1B-Instruct", Backend: "native-cpu",
			Placement: []Shard{
				{Node: "node-a", LayerStart: 0, LayerEnd: 10, HoldsEmbedding: true},
				{Node: "node-b", LayerStart: 10, LayerEnd: 16, HoldsHead: true},
			},
			Layers: 16, ContextTokens: 32768, ExcludedNodes: []ids.NodeID{"node-c"},
			RefusalHops: 1, CreatedAtUnixMs: 1700000000000,
		},
		"instance_deleted":      InstanceDeleted{Instance: "inst-1", Reason: DeleteOperator},
		"instance_failed":       InstanceFailed{Instance: "inst-1", Category: FailureCrashLoop, Detail: "exit status 2 (3 times)", AtUnixMs: 1700000000500},
		"runner_status_updated": RunnerStatusUpdated{Runner: "run-1", Instance: "inst-1", Rank: 1, Node: "node-b", Status: RunnerReady, Reason: ""},
		"node_joined":           NodeJoined{Node: "node-a", AtUnixMs: 1699999999000},
		"node_left":             NodeLeft{Node: "node-c", Reason: LeaveTimedOut},
		"download_pending":      DownloadPending{Node: "node-a", Model: "qwen2.5:0.5b"},
		"download_completed":    DownloadCompleted{Node: "node-a", Model: "qwen2.5:0.5b", Bytes: 397000000},
		"download_failed":       DownloadFailed{Node: "node-a", Model: "qwen2.5:0.5b", Reason: "checksum mismatch"},
		"tracing_set":           TracingSet{Enabled: true},
		"master_elected":        MasterElected{Node: "node-a", Term: 3},
		"api_keys_set": APIKeysSet{Node: "node-a", Keys: []APIKey{
			{Name: "admin", Scope: ScopeAdmin, Digest: strings.Repeat("ab", 32)},
			{Name: "alice", Scope: ScopeInference, Digest: strings.Repeat("cd", 32)},
		}},
		"model_added":   ModelAdded{Card: sampleCard()},
		"model_removed": ModelRemoved{Model: "my-model"},
		"api_key_added": APIKeyAdded{Key: APIKey{Name: "ci-bot", Scope: ScopeInference, Digest: strings.Repeat("ef", 32)},
			Node: "node-a", AtUnixMs: 1700000001000},
		"api_key_removed": APIKeyRemoved{Name: "ci-bot"},
	}
}

// sampleCommands returns one valid command of every kind.
func sampleCommands() map[string]Command {
	return map[string]Command{
		"place_instance": PlaceInstance{ID: "cmd-1", Model: "qwen2.5:0.5b", MinNodes: 2, ExcludedNodes: []ids.NodeID{"node-c"}, ContextTokens: 8192},
		"create_instance": CreateInstance{
			ID: "cmd-2", Model: "qwen2.5:0.5b", Backend: "native-cpu",
			Placement: []Shard{{Node: "node-a", LayerStart: 0, LayerEnd: 24, HoldsEmbedding: true, HoldsHead: true}},
			Layers:    24, ContextTokens: 4096,
		},
		"delete_instance":     DeleteInstance{ID: "cmd-3", Instance: "inst-1"},
		"set_tracing_enabled": SetTracingEnabled{ID: "cmd-6", Enabled: true},
		"refuse_instance_placement": RefuseInstancePlacement{
			ID: "cmd-7", Instance: "inst-1", Node: "node-b", Reason: "shard needs more memory than is free",
			NeededBytes: 9 << 30, AvailableBytes: 7 << 30,
		},
		"fail_instance": FailInstance{ID: "cmd-8", Instance: "inst-1", Node: "node-b", Category: FailureUnresponsive, Detail: "no status in 120s"},
		"add_model":     AddModel{ID: "cmd-9", Card: sampleCard()},
		"remove_model":  RemoveModel{ID: "cmd-10", Model: "my-model"},
		"add_api_key": AddAPIKey{ID: "cmd-11", Key: APIKey{Name: "ops", Scope: ScopeAdmin, Digest: strings.Repeat("12", 32)},
			Node: "node-b"},
		"remove_api_key": RemoveAPIKey{ID: "cmd-12", Name: "ops"},
	}
}

// sampleCard is a card with every field set, so the golden files pin each
// field's name and encoding.
func sampleCard() ModelCard {
	return ModelCard{
		ID: "my-model", Name: "My Model", Repo: "owner/repo", Files: []string{"my-model-q8_0.gguf"},
		Revision: strings.Repeat("a1", 20), Arch: "llama", Layers: 2, HiddenSize: 256, Heads: 4, KVHeads: 2,
		HeadDim: 64, ValueDim: 32, VocabSize: 1024, ContextLength: 4096, StorageBytes: 3 << 20,
		LayerBytes: []int64{1 << 20, 1 << 20}, EmbeddingBytes: 1 << 19, HeadBytes: 1 << 19, TiedEmbeddings: true,
		Tasks: []string{"text-generation"}, Capabilities: []string{"tools"}, CompatibleBackends: []string{"native-cpu"},
		BackendPreference: []string{"native-cpu"},
		Runtime: ModelRuntime{MaxPipelineSplitLayer: 1, ServedContext: 2048, KVCacheType: "q8_0", Speculative: "lookup",
			DraftModel: "draft", DraftMax: 4},
		ChatTemplate: "{{ messages }}",
	}
}
