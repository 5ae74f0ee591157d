package main

import "github.com/spf13/cobra"

// newDevCmd holds the developer tools under "skulk dev"; each in its own file.
func newDevCmd(s stdio) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "dev",
		Short: "Developer tools: logits, chat-render, embed, synth",
		Example: `  skulk dev logits --model MODEL.gguf --tokens 1,403,407
  skulk dev chat-render --templates DIR --case CASE.json
  skulk dev synth --shape tiny --out /tmp/tiny.gguf`,
	})
	c.AddCommand(newDevLogitsCmd(s), newDevChatRenderCmd(s), newDevEmbedCmd(s), newDevSynthCmd(s))
	return c
}
