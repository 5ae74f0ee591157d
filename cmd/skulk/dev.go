package main

import (
	"context"
	"fmt"
	"sort"
)

// devCommands are the developer tools under "skulk dev"; each in its own file.
func devCommands() map[string]command {
	return map[string]command{
		"logits":      {"print the full logits at every position of a token batch", runDevLogits},
		"chat-render": {"render one chat-template case (expected.json format)", runDevChatRender},
		"embed":       {"embed text with a bert GGUF: token ids and the normalised embedding", runDevEmbed},
		"synth":       {"write a random-weight GGUF model with a real shape", runDevSynth},
	}
}

func runDev(ctx context.Context, args []string, s stdio) error {
	cmds := devCommands()
	if len(args) == 0 {
		names := make([]string, 0, len(cmds))
		for n := range cmds {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintln(s.err, "usage: skulk dev <tool> [flags]")
		for _, n := range names {
			fmt.Fprintf(s.err, "  %-12s %s\n", n, cmds[n].summary)
		}
		return &exitError{code: 2, err: fmt.Errorf("missing tool name")}
	}
	c, ok := cmds[args[0]]
	if !ok {
		return &exitError{code: 2, err: fmt.Errorf("unknown tool %q", args[0])}
	}
	return c.run(ctx, args[1:], s)
}
