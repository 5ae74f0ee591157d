package event

import (
	"errors"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/ids"
)

func TestValidatePlacement(t *testing.T) {
	emb, head := true, true
	tests := []struct {
		name     string
		shards   []Shard
		layers   uint32
		excluded []ids.NodeID
		field    string // the InvalidError.Field expected; "" means valid
	}{
		{"single_node", []Shard{{"a", 0, 8, emb, head}}, 8, nil, ""},
		{"three_stages", []Shard{{"a", 0, 3, emb, false}, {"b", 3, 5, false, false}, {"c", 5, 8, false, head}}, 8, []ids.NodeID{"d"}, ""},
		{"empty", nil, 8, nil, "placement"},
		{"zero_layers", []Shard{{"a", 0, 0, emb, head}}, 0, nil, "layers"},
		{"too_many_layers", []Shard{{"a", 0, 8, emb, head}}, MaxLayers + 1, nil, "layers"},
		{"gap", []Shard{{"a", 0, 3, emb, false}, {"b", 4, 8, false, head}}, 8, nil, "placement"},
		{"overlap", []Shard{{"a", 0, 5, emb, false}, {"b", 4, 8, false, head}}, 8, nil, "placement"},
		{"not_from_zero", []Shard{{"a", 1, 8, emb, head}}, 8, nil, "placement"},
		{"short", []Shard{{"a", 0, 7, emb, head}}, 8, nil, "placement"},
		{"long", []Shard{{"a", 0, 9, emb, head}}, 8, nil, "placement"},
		{"empty_range", []Shard{{"a", 0, 0, emb, false}, {"b", 0, 8, false, head}}, 8, nil, "placement"},
		{"no_embedding", []Shard{{"a", 0, 8, false, head}}, 8, nil, "placement"},
		{"embedding_on_last", []Shard{{"a", 0, 4, emb, false}, {"b", 4, 8, emb, head}}, 8, nil, "placement"},
		{"no_head", []Shard{{"a", 0, 8, emb, false}}, 8, nil, "placement"},
		{"head_on_first", []Shard{{"a", 0, 4, emb, head}, {"b", 4, 8, false, head}}, 8, nil, "placement"},
		{"same_node_twice", []Shard{{"a", 0, 4, emb, false}, {"a", 4, 8, false, head}}, 8, nil, "placement"},
		{"bad_node_id", []Shard{{"a b", 0, 8, emb, head}}, 8, nil, "placement[0].node"},
		{"excluded_holds_rank", []Shard{{"a", 0, 8, emb, head}}, 8, []ids.NodeID{"a"}, "placement"},
		{"excluded_duplicate", []Shard{{"a", 0, 8, emb, head}}, 8, []ids.NodeID{"b", "b"}, "excluded_nodes"},
		{"excluded_invalid", []Shard{{"a", 0, 8, emb, head}}, 8, []ids.NodeID{""}, "excluded_nodes[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := InstanceCreated{Instance: "i", Model: "m", Backend: "native-cpu", Placement: tt.shards,
				Layers: tt.layers, ContextTokens: 2048, ExcludedNodes: tt.excluded}
			err := ev.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Field != tt.field || ie.Kind != KindInstanceCreated {
				t.Fatalf("got %v, want *InvalidError on field %q", err, tt.field)
			}
		})
	}
}

func TestValidateFields(t *testing.T) {
	long := strings.Repeat("x", MaxReasonBytes+1)
	tests := []struct {
		name  string
		v     interface{ Validate() error }
		field string
	}{
		{"created_no_backend", InstanceCreated{Instance: "i", Model: "m", Placement: []Shard{{"a", 0, 1, true, true}}, Layers: 1, ContextTokens: 1}, "backend"},
		{"created_backend_upper", InstanceCreated{Instance: "i", Model: "m", Backend: "Native", Placement: []Shard{{"a", 0, 1, true, true}}, Layers: 1, ContextTokens: 1}, "backend"},
		{"created_zero_context", InstanceCreated{Instance: "i", Model: "m", Backend: "native-cpu", Placement: []Shard{{"a", 0, 1, true, true}}, Layers: 1}, "context_tokens"},
		{"created_hops", InstanceCreated{Instance: "i", Model: "m", Backend: "native-cpu", Placement: []Shard{{"a", 0, 1, true, true}}, Layers: 1, ContextTokens: 1, RefusalHops: 3}, "refusal_hops"},
		{"created_negative_time", InstanceCreated{Instance: "i", Model: "m", Backend: "native-cpu", Placement: []Shard{{"a", 0, 1, true, true}}, Layers: 1, ContextTokens: 1, CreatedAtUnixMs: -1}, "created_at_unix_ms"},
		{"runner_bad_status", RunnerStatusUpdated{Runner: "r", Instance: "i", Node: "n", Status: "dancing"}, "status"},
		{"runner_rank_limit", RunnerStatusUpdated{Runner: "r", Instance: "i", Rank: MaxRanks, Node: "n", Status: RunnerReady}, "rank"},
		{"runner_long_reason", RunnerStatusUpdated{Runner: "r", Instance: "i", Node: "n", Status: RunnerFailed, Reason: long}, "reason"},
		{"retired_live_kind", RetiredTask{Retired: KindInstanceCreated, Body: []byte{0xa0}}, "kind"},
		{"retired_no_body", RetiredTask{Retired: KindTaskFinished}, "body"},
		{"retired_scalar_body", RetiredTask{Retired: KindTaskFinished, Body: []byte{0x01}}, "body"},
		{"download_failed_no_reason", DownloadFailed{Node: "n", Model: "m"}, "reason"},
		{"master_term_zero", MasterElected{Node: "n"}, "term"},
		{"failed_bad_category", InstanceFailed{Instance: "i", Category: "sad"}, "category"},
		{"left_bad_reason", NodeLeft{Node: "n", Reason: "bored"}, "reason"},
		{"place_min_nodes", PlaceInstance{ID: "c", Model: "m", MinNodes: MaxRanks + 1}, "min_nodes"},
		{"place_context", PlaceInstance{ID: "c", Model: "m", ContextTokens: MaxContextTokens + 1}, "context_tokens"},
		{"refuse_no_reason", RefuseInstancePlacement{ID: "c", Instance: "i", Node: "n"}, "reason"},
		{"fail_no_id", FailInstance{Instance: "i", Node: "n", Category: FailureWedged}, "id"},
		{"key_added_no_node", APIKeyAdded{Key: APIKey{Name: "ops", Scope: ScopeAdmin, Digest: strings.Repeat("ab", 32)}}, "node"},
		{"key_added_bad_scope", APIKeyAdded{Key: APIKey{Name: "ops", Scope: "root", Digest: strings.Repeat("ab", 32)}, Node: "n"}, "key"},
		{"key_added_short_digest", APIKeyAdded{Key: APIKey{Name: "ops", Scope: ScopeAdmin, Digest: "abcd"}, Node: "n"}, "key"},
		{"key_added_negative_time", APIKeyAdded{Key: APIKey{Name: "ops", Scope: ScopeAdmin, Digest: strings.Repeat("ab", 32)}, Node: "n", AtUnixMs: -1}, "at_unix_ms"},
		{"add_key_slash_in_name", AddAPIKey{ID: "c", Key: APIKey{Name: "a/b", Scope: ScopeAdmin, Digest: strings.Repeat("ab", 32)}, Node: "n"}, "key"},
		{"remove_key_no_name", RemoveAPIKey{ID: "c"}, "name"},
		{"remove_key_long_name", RemoveAPIKey{ID: "c", Name: strings.Repeat("k", MaxKeyNameBytes+1)}, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ie *InvalidError
			err := tt.v.Validate()
			if !errors.As(err, &ie) || ie.Field != tt.field || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want *InvalidError on field %q", err, tt.field)
			}
		})
	}
}

func TestRunnerStatusPredicates(t *testing.T) {
	for _, s := range []RunnerStatus{RunnerPending, RunnerDownloading, RunnerLoading, RunnerWarming, RunnerReady, RunnerRunning, RunnerFailed, RunnerStopped} {
		if err := s.validate(); err != nil {
			t.Errorf("%s: %v", s, err)
		}
		if s.Terminal() && s.Serving() {
			t.Errorf("%s is both terminal and serving", s)
		}
	}
	if !RunnerFailed.Terminal() || !RunnerStopped.Terminal() || RunnerReady.Terminal() {
		t.Error("Terminal is wrong")
	}
	if !RunnerReady.Serving() || !RunnerRunning.Serving() || RunnerWarming.Serving() {
		t.Error("Serving is wrong")
	}
}

func TestValidateKeyName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"ops", true}, {"ci-bot_2.prod", true}, {"A1", true}, {strings.Repeat("k", MaxKeyNameBytes), true},
		{"", false}, {"-lead", false}, {".hidden", false}, {"a b", false}, {"a/b", false}, {"ключ", false},
		{strings.Repeat("k", MaxKeyNameBytes+1), false},
	} {
		if err := ValidateKeyName(tt.name); (err == nil) != tt.ok {
			t.Errorf("%q: %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}
