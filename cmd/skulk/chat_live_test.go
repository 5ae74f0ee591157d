package main

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyChat is `skulk chat` on a pseudo-terminal.
type ptyChat struct {
	t    *testing.T
	tty  *os.File
	mu   sync.Mutex
	out  strings.Builder
	done chan error
}

func startPtyChat(t *testing.T, n *liveNode, args ...string) *ptyChat {
	t.Helper()
	cmd := exec.Command(skulkBinary(t), args...)
	cmd.Env = append(os.Environ(), "SKULK_HOST="+n.host, "SKULK_API_KEY=")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	c := &ptyChat{t: t, tty: tty, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := tty.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:k])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		tty.Close()
	})
	return c
}

func (c *ptyChat) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// waitPrompts waits until the chat has printed n ">>> " prompts.
func (c *ptyChat) waitPrompts(n int) {
	c.t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for strings.Count(c.output(), ">>> ") < n {
		if time.Now().After(deadline) {
			c.t.Fatalf("no prompt %d within 120 s; output:\n%s", n, c.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// say types a line and waits for the next prompt.
func (c *ptyChat) say(line string, prompt int) {
	c.t.Helper()
	c.tty.WriteString(line + "\n")
	c.waitPrompts(prompt)
}

// TestLiveChatTurns chats on a terminal: the model is placed with
// progress, four turns of full-length replies (more than the 2048-token
// context holds) go through, the oldest dropped with a note, and the chat
// commands are not sent to the model.
func TestLiveChatTurns(t *testing.T) {
	n := startLiveNode(t)
	c := startPtyChat(t, n, "chat", "stories260k", "--verbose")
	c.waitPrompts(1)
	if out := c.output(); !strings.Contains(out, "placing stories260k") || !strings.Contains(out, "ready in") {
		t.Fatalf("no placement progress:\n%s", out)
	}
	p := 1
	for _, line := range []string{"Once upon a time", "The dog ran", "Then the sun came out", "The end came"} {
		p++
		c.say(line, p)
	}
	out := c.output()
	if strings.Contains(out, "error:") {
		t.Fatalf("a turn failed:\n%s", out)
	}
	if strings.Count(out, "tokens/s") != 4 || !strings.Contains(out, "time to first token") {
		t.Errorf("--verbose printed no speed after every reply:\n%s", out)
	}
	if !strings.Contains(out, "dropped the oldest") {
		t.Errorf("four replies of 512 tokens dropped no turn from a 2048-token context:\n%s", out)
	}
	mark := len(out)
	for _, line := range []string{"/help", "/set temperature 0", "/set system Tell a story.", "/nope", "/clear"} {
		p++
		c.say(line, p)
	}
	rest := c.output()[mark:]
	for _, want := range []string{"/set system TEXT", "set the temperature to 0", "set the system message", "unknown command /nope", "cleared the conversation"} {
		if !strings.Contains(rest, want) {
			t.Errorf("no %q after the chat commands:\n%s", want, rest)
		}
	}
	if strings.Contains(rest, "tokens/s") {
		t.Errorf("a chat command went to the model:\n%s", rest)
	}
	p++
	c.say(`"""Once upon`, p-1)
	c.tty.WriteString("a time\"\"\"\n")
	c.waitPrompts(p)
	if last := c.output()[len(rest)+mark:]; !strings.Contains(last, "... ") || !strings.Contains(last, "tokens/s") {
		t.Errorf("a \"\"\" message got no reply:\n%s", last)
	}
	c.tty.WriteString("/bye\n")
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("chat ended with %v:\n%s", err, c.output())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("/bye did not end the chat:\n%s", c.output())
	}
}
