package ollama

import (
	"testing"
	"time"
)

// catalogDoc has the shape of the node's GET /models document.
const catalogDoc = `{"object":"list","data":[
 {"model_id":"qwen","name":"Qwen2.5 0.5B Instruct","source_repository":"Qwen/Qwen2.5-0.5B-Instruct-GGUF",
  "files":["qwen2.5-0.5b-instruct-q4_k_m.gguf"],"architecture":"qwen2","layers":24,"hidden_size":896,"heads":14,
  "kv_heads":2,"head_dim":64,"vocab_size":151936,"context_length":32768,"storage_bytes":491400032,
  "tasks":["text-generation"],"capabilities":["tools","reasoning","vision"],"runtime":{"served_context":8192},
  "placement":"ready","instances":["i1"]},
 {"model_id":"stories260k","name":"stories260K (TinyStories demo, built in)","files":["stories260K.gguf"],
  "architecture":"llama","layers":5,"hidden_size":64,"heads":8,"kv_heads":4,"head_dim":8,"vocab_size":512,
  "context_length":512,"storage_bytes":1185376,"tasks":["text-generation"],"chat_template":"{{ bos_token }}",
  "placement":"none","instances":[]},
 {"name":"no id"}]}`

func cards(t *testing.T) []Card {
	t.Helper()
	c, err := ParseCatalog([]byte(catalogDoc))
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 2 {
		t.Fatalf("parsed %d cards, want 2 (the entry without model_id skipped)", len(c))
	}
	return c
}

func TestParseCatalogShapes(t *testing.T) {
	for _, doc := range []string{`[{"model_id":"a"}]`, `{"models":[{"model_id":"a"}]}`, `{"data":[{"model_id":"a"}]}`} {
		c, err := ParseCatalog([]byte(doc))
		if err != nil || len(c) != 1 || c[0].ID != "a" {
			t.Errorf("%s: got %+v, %v", doc, c, err)
		}
	}
	if _, err := ParseCatalog([]byte(`"x"`)); err == nil {
		t.Error("a string parsed as a catalog")
	}
}

func TestTags(t *testing.T) {
	created := time.Date(2026, 5, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))
	got := marshal(t, Tags([]ReadyModel{{Name: "qwen", Created: created}, {Name: "uncatalogued"}}, cards(t)))
	want := `{"models":[` +
		`{"name":"qwen","model":"qwen","modified_at":"2026-04-30T23:00:00Z","size":491400032,"details":{"parent_model":"","format":"gguf","family":"qwen2","families":["qwen2"],"parameter_size":"0.5B","quantization_level":"Q4_K_M"}},` +
		`{"name":"uncatalogued","model":"uncatalogued"}]}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if got := marshal(t, Tags(nil, nil)); got != `{"models":[]}` {
		t.Errorf("empty tags: %s", got)
	}
}

func TestDetailsFromNames(t *testing.T) {
	tests := []struct {
		card        Card
		size, quant string
	}{
		{Card{Files: []string{"SmolLM2-135M-Instruct-Q8_0.gguf"}}, "135M", "Q8_0"},
		{Card{Files: []string{"sub/Llama-3.2-1B-Instruct-IQ4_XS.gguf"}}, "1B", "IQ4_XS"},
		{Card{Files: []string{"model-f16.gguf"}, Repo: "org/Mistral-7B-v0.3"}, "7B", "F16"},
		{Card{Files: []string{"model-00001-of-00002.gguf"}, ID: "m"}, "", ""},
		{Card{Files: []string{"stories260K.gguf"}}, "", ""},
	}
	for _, tt := range tests {
		d := details(tt.card)
		if d.ParameterSize != tt.size || d.QuantizationLevel != tt.quant {
			t.Errorf("%v: got size %q quant %q, want %q %q", tt.card.Files, d.ParameterSize, d.QuantizationLevel, tt.size, tt.quant)
		}
	}
}

func TestShow(t *testing.T) {
	c := cards(t)
	got := marshal(t, Show(c[0], time.Unix(1700000000, 0)))
	want := `{"parameters":"num_ctx 8192","details":{"parent_model":"","format":"gguf","family":"qwen2","families":["qwen2"],"parameter_size":"0.5B","quantization_level":"Q4_K_M"},` +
		`"model_info":{"general.architecture":"qwen2","qwen2.attention.head_count":14,"qwen2.attention.head_count_kv":2,"qwen2.attention.key_length":64,"qwen2.block_count":24,"qwen2.context_length":32768,"qwen2.embedding_length":896,"qwen2.vocab_size":151936},` +
		`"capabilities":["completion","tools","thinking"],"modified_at":"2023-11-14T22:13:20Z"}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	got = marshal(t, Show(c[1], time.Time{}))
	want = `{"template":"{{ bos_token }}","details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"]},` +
		`"model_info":{"general.architecture":"llama","llama.attention.head_count":8,"llama.attention.head_count_kv":4,"llama.attention.key_length":8,"llama.block_count":5,"llama.context_length":512,"llama.embedding_length":64,"llama.vocab_size":512},` +
		`"capabilities":["completion"]}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

func TestPS(t *testing.T) {
	state := `{"term":3,"instances":{
		"i2":{"model":"stories260k","backend":"native-cpu","context_tokens":512,"status":"ready"},
		"i1":{"model":"qwen","backend":"llama-server","context_tokens":8192,"status":"ready"},
		"i3":{"model":"qwen","backend":"native-cpu","context_tokens":8192,"status":"pending"}}}`
	inst, err := ParseInstances([]byte(state))
	if err != nil {
		t.Fatal(err)
	}
	got := marshal(t, PS(inst, cards(t)))
	want := `{"models":[` +
		`{"name":"qwen","model":"qwen","size":491400032,"details":{"parent_model":"","format":"gguf","family":"qwen2","families":["qwen2"],"parameter_size":"0.5B","quantization_level":"Q4_K_M"},"context_length":8192},` +
		`{"name":"stories260k","model":"stories260k","size":1185376,"details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"]},"size_vram":0,"context_length":512}]}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if _, err := ParseInstances([]byte(`[]`)); err == nil {
		t.Error("an array parsed as a state document")
	}
}
