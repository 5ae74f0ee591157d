package main

import (
	"bufio"
	"time"

	"context"
	"encoding/json"
	"fmt"
	"github.com/skulk/skulk/internal/engine/chat"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

func runGenerate(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("generate", s)
	modelPath := fs.String("model", "", "GGUF model file")
	prompt := fs.String("prompt", "", "prompt text")
	maxTokens := fs.Int("max-tokens", 256, "most tokens to generate")
	temp := fs.Float64("temperature", 0, "sampling temperature; 0 is greedy")
	topK := fs.Int("top-k", 0, "keep the K most likely tokens (0 = off)")
	topP := fs.Float64("top-p", 0, "nucleus sampling mass (0 or 1 = off)")
	minP := fs.Float64("min-p", 0, "drop tokens below this fraction of the best (0 = off)")
	seed := fs.Uint64("seed", 0, "random seed for sampling")
	threads := fs.Int("threads", 0, "worker threads (0 = physical cores)")
	asJSON := fs.Bool("json", false, "print one JSON object with tokens, text and speeds")
	asChat := fs.Bool("chat", false, "render the prompt as a user message through the model's chat template")
	system := fs.String("system", "", "system message (with --chat)")
	if err := fs.Parse(args); err != nil {
		return usageError(err)
	}
	if *modelPath == "" {
		return &exitError{code: 2, err: fmt.Errorf("--model is required")}
	}
	if *maxTokens < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--max-tokens must not be negative")}
	}
	m, err := engine.Open(*modelPath, engine.Options{Threads: *threads})
	if err != nil {
		return err
	}
	defer m.Close()
	text := *prompt
	addSpecial := true
	if *asChat {
		if text, err = chatPrompt(m, *system, *prompt); err != nil {
			return err
		}
		// The template writes BOS itself where the model wants it.
		addSpecial = false
	} else if *system != "" {
		return &exitError{code: 2, err: fmt.Errorf("--system needs --chat")}
	}
	ids := m.Tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: addSpecial, ParseSpecial: true})
	params := engine.GenerateParams{
		MaxTokens: *maxTokens,
		Sample: sample.Params{Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP),
			MinP: float32(*minP), Seed: *seed},
	}
	out := bufio.NewWriter(s.out)
	var gen []int32
	var generated []byte
	st, err := m.Generate(ctx, ids, params, func(t engine.Token) error {
		if t.ID >= 0 {
			gen = append(gen, t.ID)
		}
		generated = append(generated, t.Text...)
		if !*asJSON {
			out.WriteString(t.Text)
			return out.Flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !*asJSON {
		out.WriteString("\n")
		return out.Flush()
	}
	if gen == nil {
		gen = []int32{}
	}
	return json.NewEncoder(s.out).Encode(struct {
		PromptTokens []int32 `json:"prompt_tokens"`
		Tokens       []int32 `json:"tokens"`
		Text         string  `json:"text"`
		FinishReason string  `json:"finish_reason"`
		Prefill      float64 `json:"prefill_tokens_per_s"`
		Decode       float64 `json:"decode_tokens_per_s"`
	}{ids, gen, string(generated), st.FinishReason, st.PrefillTokensPerSecond(), st.DecodeTokensPerSecond()})
}

// chatPrompt renders one user turn (and an optional system turn) through the
// model's chat template.
func chatPrompt(m *engine.Model, system, user string) (string, error) {
	t, err := m.ChatTemplate("")
	if err != nil {
		return "", err
	}
	var msgs []chat.Message
	if system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: system})
	}
	msgs = append(msgs, chat.Message{Role: "user", Content: user})
	return m.RenderChat(t, chat.Objects(msgs), nil, nil, time.Now())
}
