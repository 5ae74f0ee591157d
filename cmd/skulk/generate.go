package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/chat"
	"github.com/skulk/skulk/internal/serving/prompt"
	"github.com/skulk/skulk/internal/serving/request"
)

func newGenerateCmd(s stdio) *cobra.Command {
	c := &cobra.Command{Use: "generate --model FILE --prompt TEXT", Short: "Generate text from a prompt with a local GGUF model",
		Example: "  skulk generate --model testdata/models/stories260K.gguf --prompt \"Once upon a time\" --max-tokens 100\n  skulk generate --model MODEL.gguf --chat --system \"Be brief.\" --prompt \"Why is the sky blue?\"", Args: noArgs}
	fs := c.Flags()
	modelPath := fs.String("model", "", "GGUF model file")
	promptText := fs.String("prompt", "", "prompt text")
	// The sampling flags default as a node does for a request that leaves
	// them out (prompt.RequestParams maps both), so that the same request
	// gets the same answer here and from the server.
	maxTokens := fs.Int("max-tokens", request.DefaultMaxTokens, "most tokens to generate; 0 means the default, as a request's max_tokens does")
	temp := fs.Float64("temperature", request.DefaultTemperature, "sampling temperature, 0 for greedy; the default is what a node (like llama-server) uses for a request without one")
	topK := fs.Int("top-k", 0, "keep the K most likely tokens (0 = off)")
	topP := fs.Float64("top-p", request.DefaultTopP, "nucleus sampling mass (0 or 1 = off)")
	minP := fs.Float64("min-p", 0, "drop tokens below this fraction of the best (0 = off)")
	seed := fs.Uint64("seed", 0, "random seed for sampling (default: a random seed, as a node draws for a request without one; --json prints it)")
	threads := fs.Int("threads", 0, "worker threads (0 = physical cores)")
	asJSON := fs.Bool("json", false, "print one JSON object with tokens, text, seed and speeds")
	asChat := fs.Bool("chat", false, "render the prompt as a user message through the model's chat template")
	system := fs.String("system", "", "system message (with --chat)")
	cacheType := fs.String("cache-type", "", "K/V cache type: f16 (default), f32, q8_0 or q4_0, as llama.cpp's -ctk/-ctv")
	lookup := fs.Bool("lookup", false, "speculative decoding by prompt lookup (the same text, faster when the answer repeats the prompt)")
	draftModel := fs.String("draft-model", "", "speculative decoding with this GGUF of the same vocabulary drafting")
	draftMax := fs.Int("draft-max", 0, "tokens drafted per verification pass (0 = 8)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if *modelPath == "" {
			return &exitError{code: 2, err: fmt.Errorf("--model is required")}
		}
		if *maxTokens < 0 {
			return &exitError{code: 2, err: fmt.Errorf("--max-tokens must not be negative")}
		}
		if *system != "" && !*asChat {
			return &exitError{code: 2, err: fmt.Errorf("--system needs --chat")}
		}
		ecfg, err := engineConfig()
		if err != nil {
			return err
		}
		sampling := request.Sampling{MaxTokens: *maxTokens, Temperature: temp, TopP: topP, TopK: *topK, MinP: *minP, Seed: seedFlag(cmd, *seed)}
		params := prompt.RequestParams(sampling, rand.Uint64)
		m, err := engine.Open(*modelPath, engine.Options{Threads: *threads, Kernels: ecfg.Kernels, NoPack: ecfg.NoPack, CacheType: *cacheType})
		if err != nil {
			return err
		}
		defer m.Close()
		params.DraftMax = *draftMax
		switch {
		case *draftModel != "":
			d, err := engine.Open(*draftModel, engine.Options{Threads: *threads, Kernels: ecfg.Kernels, NoPack: ecfg.NoPack, CacheType: *cacheType})
			if err != nil {
				return err
			}
			defer d.Close()
			if params.Draft, err = engine.NewDraftModel(m, d, m.Config.ContextLength); err != nil {
				return err
			}
		case *lookup:
			params.Draft = engine.PromptLookup{}
		}
		text := *promptText
		if *asChat {
			if text, err = chatPrompt(m, *system, *promptText); err != nil {
				return err
			}
		}
		ids := m.EncodePrompt(text)
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
			Seed         uint64  `json:"seed"`
			Prefill      float64 `json:"prefill_tokens_per_s"`
			Decode       float64 `json:"decode_tokens_per_s"`
			DraftN       int     `json:"draft_n,omitempty"`
			DraftAccN    int     `json:"draft_n_accepted,omitempty"`
		}{ids, gen, string(generated), st.FinishReason, params.Sample.Seed, st.PrefillTokensPerSecond(), st.DecodeTokensPerSecond(),
			st.DraftTokens, st.DraftAccepted})
	}
	return c
}

// seedFlag is --seed when it was given, else nil (a random seed, as a
// request without one gets).
func seedFlag(cmd *cobra.Command, v uint64) *uint64 {
	if cmd.Flags().Changed("seed") {
		return &v
	}
	return nil
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
	return m.RenderChat(context.Background(), t, chat.Objects(msgs), nil, nil, time.Now())
}
