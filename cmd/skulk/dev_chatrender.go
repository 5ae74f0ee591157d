package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/engine/chat"
)

// runDevChatRender renders one expected.json-style case: the rendered text
// on stdout and exit 0, or the template's error on stderr and exit 2.
func newDevChatRenderCmd(s stdio) *cobra.Command {
	c := &cobra.Command{Use: "chat-render --templates DIR --case FILE", Short: "Render one chat-template case (expected.json format)",
		Example: "  skulk dev chat-render --templates DIR --case CASE.json", Args: noArgs}
	fs := c.Flags()
	dir := fs.String("templates", "", "directory holding the template files")
	casePath := fs.String("case", "", "file with one case object (- for stdin)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if *dir == "" || *casePath == "" {
			return &exitError{code: 2, err: fmt.Errorf("--templates and --case are required")}
		}
		var data []byte
		var err error
		if *casePath == "-" {
			data, err = io.ReadAll(io.LimitReader(s.in, 16<<20))
		} else {
			data, err = os.ReadFile(*casePath)
		}
		if err != nil {
			return err
		}
		out, err := chat.RenderCase(*dir, data)
		if err != nil {
			var te *chat.TemplateError
			if errors.As(err, &te) {
				return &exitError{code: 2, err: fmt.Errorf("template raised: %s", te.Message)}
			}
			return &exitError{code: 2, err: err}
		}
		_, err = io.WriteString(s.out, out)
		return err
	}
	return c
}
