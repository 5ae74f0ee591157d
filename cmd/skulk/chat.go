package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
)

// runChat is an interactive terminal chat. It places the model first when
// no instance serves it, streams each reply, stops a reply on Ctrl-C, and
// ends on /bye, end of input, or Ctrl-C at the prompt.
func runChat(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("chat", s)
	host := fs.String("host", DefaultHost, "node API address")
	system := fs.String("system", "", "system message")
	maxTokens := fs.Int("max-tokens", 0, "most tokens per reply (0 = the server default)")
	temperature := fs.Float64("temperature", -1, "sampling temperature (default: the server's)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		return &exitError{code: 2, err: fmt.Errorf("usage: skulk chat MODEL (see `skulk models list`)")}
	}
	model := pos[0]
	c := newAPIClient(*host)

	// Ctrl-C is ours from here: it stops a reply, or ends the chat at the prompt.
	session := context.WithoutCancel(ctx)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)

	if err = ensurePlaced(session, c, model, s, sig); err != nil {
		return err
	}
	var history []map[string]any
	if *system != "" {
		history = append(history, map[string]any{"role": "system", "content": *system})
	}
	fmt.Fprintf(s.err, "chatting with %s — type /bye to leave, Ctrl-C stops a reply\n", model)
	in := bufio.NewScanner(s.in)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(s.out, ">>> ")
		line, ok := readLine(in, sig)
		if !ok {
			fmt.Fprintln(s.out)
			return nil
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case line == "/bye":
			return nil
		}
		history = append(history, map[string]any{"role": "user", "content": line})
		body := map[string]any{"model": model, "messages": history}
		if *maxTokens > 0 {
			body["max_tokens"] = *maxTokens
		}
		if *temperature >= 0 {
			body["temperature"] = *temperature
		}
		reply, err := streamReply(session, c, body, s, sig)
		fmt.Fprintln(s.out)
		if err != nil {
			fmt.Fprintf(s.err, "error: %v\n", err)
			history = history[:len(history)-1]
			continue
		}
		history = append(history, map[string]any{"role": "assistant", "content": reply})
	}
}

// readLine reads one line, or reports false on end of input or Ctrl-C.
func readLine(in *bufio.Scanner, sig <-chan os.Signal) (string, bool) {
	type result struct {
		line string
		ok   bool
	}
	ch := make(chan result, 1)
	go func() {
		ok := in.Scan()
		ch <- result{in.Text(), ok}
	}()
	select {
	case r := <-ch:
		return r.line, r.ok
	case <-sig:
		return "", false
	}
}

// streamReply streams one answer to stdout; Ctrl-C cancels the request and
// keeps what arrived.
func streamReply(ctx context.Context, c *apiClient, body map[string]any, s stdio, sig <-chan os.Signal) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	var reply strings.Builder
	_, err := c.streamChat(ctx, body, func(content, reasoning string) {
		fmt.Fprint(s.out, content)
		reply.WriteString(content)
	})
	if errors.Is(err, context.Canceled) || (err != nil && ctx.Err() != nil) {
		fmt.Fprint(s.err, " [stopped]")
		return reply.String(), nil
	}
	return reply.String(), err
}

// ensurePlaced places model unless an instance already serves it, showing
// progress until it is ready.
func ensurePlaced(ctx context.Context, c *apiClient, model string, s stdio, sig <-chan os.Signal) error {
	st, err := c.state(ctx)
	if err != nil {
		return err
	}
	for id, inst := range st.Instances {
		if inst.Model != model || inst.Status == "failed" {
			continue
		}
		if inst.Status == "ready" {
			return nil
		}
		return c.waitReady(ctx, id, s.err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err = placeModel(ctx, c, model, 0, s)
	return err
}
